// Checks one op call against the op's rule (compiler/ir/ops.h): operand types from the
// slices, attribute values, the rule's inferred results, and the results against their
// declared destinations. Shared by the front end (which needs the inferred types of
// op-level results that are not declared) and the verifier.
#pragma once

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
};

// Returns false (after reporting) if the call is ill-typed; otherwise fills `results` with the
// inferred types, one per slot.
bool checkOpCall(const Module& m, const OpCall& call, const std::vector<OpResultSlot>& slots, const Prover& prover,
                 DiagnosticEngine& diags, std::vector<OperandType>* results);

std::string shapeToString(const std::vector<Expr>& shape);
std::string typeToString(const OperandType& t);  // "bf16[B, 2048]"

}  // namespace etc::ir
