// Checks one op call against the op's rule (compiler/ir/ops.h): operand types from the
// slices, attribute values, the rule's inferred results, and the results against their
// declared destinations. Shared by the front end (which needs the inferred types of
// op-level results that are not declared) and the verifier.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/ir/ir.h"
#include "compiler/ir/ops.h"
#include "compiler/ir/prover.h"
#include "compiler/support/diagnostics.h"

namespace etc::ir {

// The type of a slice: the target tensor's dtype; one extent per range entry (hi - lo) and per
// dimension past the subscript; point entries drop their dimension.
OperandType sliceType(const Module& m, const Slice& s);

struct OpResultSlot {
  const OperandType* declared = nullptr;  // null: not declared (an op-level implicit result)
  std::string name;                       // for messages
  SourceRange range;
  // With no name: the destination slice, printed as written (`y[b, 0:128]`) only for a message.
  const Slice* slice = nullptr;
};

// Calls that checked clean, keyed by everything the check depends on: the op, the attributes
// as written, the operand and declared result types, and the grid the prover's coordinates
// range over (the sym ranges are the module's, fixed for the memo's lifetime: one memo per
// module). Models repeat the same layer many times; each repeat is then a lookup instead of
// a run of the op's rule. Calls that fail are not remembered: they report every time.
class OpCheckMemo {
 public:
  // An operand as the check sees it: its tensor's dtype and shape, and the subscript (operand
  // types are derived from these; keying on them spares building the types of a repeat).
  struct Operand {
    DType dtype;
    std::vector<Expr> shape;
    std::vector<SliceDim> dims;
  };
  struct Entry {
    std::string op;
    std::vector<Attr> attrs;
    std::vector<Operand> args;
    std::vector<std::optional<OperandType>> declared;
    std::vector<Expr> grid;
    std::vector<OperandType> results;
  };
  // The remembered call equal to this one, or null; `key` is set for remember().
  const Entry* recall(const Module& m, const OpCall& call, const std::vector<OpResultSlot>& slots, const Task* task,
                      size_t* key) const;
  void remember(size_t key, const Module& m, const OpCall& call, const std::vector<OpResultSlot>& slots,
                const Task* task, std::vector<OperandType> results);
  size_t size() const { return entries_.size(); }

 private:
  std::unordered_multimap<size_t, Entry> entries_;
};

// Returns false (after reporting) if the call is ill-typed; otherwise fills `results` with the
// inferred types, one per slot. With a memo, a call equal to one that checked clean before
// is not checked again.
bool checkOpCall(const Module& m, const OpCall& call, const std::vector<OpResultSlot>& slots, const Prover& prover,
                 DiagnosticEngine& diags, std::vector<OperandType>* results, OpCheckMemo* memo = nullptr);

std::string shapeToString(const std::vector<Expr>& shape);
std::string typeToString(const OperandType& t);  // "bf16[B, 2048]"

}  // namespace etc::ir
