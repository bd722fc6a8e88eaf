// The operator registry: for every op of the language, its operands, attributes and the rule
// that gives its results' dtypes and shapes. The same rules serve the op level (whole tensors,
// `h = rmsnorm(x, w)`) and the task level (tiles: slices of tensors, `rmsnorm(x[i, :], w) ->
// h[i, :]`). Reference semantics and tile kernels live elsewhere and key on the same names.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/ir.h"

namespace etc::ir {

// The type of an operand or result: element type and (symbolic) shape.
struct OperandType {
  DType dtype = DType::F32;
  std::vector<Expr> shape;
};

struct AttrSpec {
  std::string_view name;
  AttrType type;
  bool required = false;
  AttrValue default_value;  // used when not required and not written
  std::string_view doc;
};

// What an op's rule sees and how it reports problems.
class OpContext {
 public:
  virtual ~OpContext() = default;
  virtual const std::vector<OperandType>& inputs() const = 0;
  // The declared types of the results, when the results are declared tensors (always at the
  // task level; at the op level for an assignment to a declared tensor). Entries are null
  // where unknown. Ops whose result shape cannot be inferred (fill, kv_append) read these.
  virtual const std::vector<const OperandType*>& declaredOutputs() const = 0;
  // Number of results the statement asks for (LHS names or `->` destinations).
  virtual int numOutputs() const = 0;

  // Attribute values (the written value, else the spec's default). The rule may only ask for
  // attributes its spec lists; integer attributes are compile-time constants.
  virtual bool attrBool(std::string_view name) const = 0;
  virtual int64_t attrInt(std::string_view name) const = 0;
  virtual double attrFloat(std::string_view name) const = 0;
  virtual DType attrDType(std::string_view name) const = 0;
  virtual std::string attrString(std::string_view name) const = 0;
  virtual bool attrWritten(std::string_view name) const = 0;
  // An integer attribute as an expression. A context that keeps the written expression
  // (`num_experts = E`) should return it, so that result shapes keep named consts; the
  // default wraps attrInt.
  virtual Expr attrIntExpr(std::string_view name) const { return intConst(attrInt(name)); }

  // True unless a and b can differ for some sym values in their ranges (proved equal, or no
  // counterexample found). Use it for every shape comparison.
  virtual bool sameExtent(const Expr& a, const Expr& b) const = 0;

  // Reports an error at operand `operand` (0-based input index), at result `-1 - k` for
  // result k, or at the op call itself for kOpItself. Messages are lower-case sentences
  // without the op's name (the caller adds context), e.g.
  // "operand 2 has rank 3; expected rank 2 (the weight, [N, K] or [K, N])".
  static constexpr int kOpItself = 1 << 30;
  virtual void error(int operand, std::string message) = 0;
  // An attribute-specific error, reported at the attribute (or the call if not written).
  virtual void attrError(std::string_view name, std::string message) = 0;
};

struct OpInfo {
  std::string_view name;
  int min_inputs = 0, max_inputs = 0;
  int min_outputs = 1, max_outputs = 1;
  std::vector<AttrSpec> attrs;
  std::string_view summary;  // one line: signature and meaning, for docs and diagnostics
  // Computes the results' types into `outputs` (exactly numOutputs() entries). Returns false
  // after reporting at least one error through ctx. Arity and attribute names/types are
  // checked by the caller before this runs.
  std::function<bool(OpContext& ctx, std::vector<OperandType>& outputs)> infer;
};

const OpInfo* findOp(std::string_view name);
const std::vector<OpInfo>& allOps();

// Whether a result computed in `computed` may be stored into a tensor of type `stored`:
// float results round to any float dtype (f32 accumulation, rounding on store); integer
// results need the exact dtype.
bool storableAs(DType computed, DType stored);

}  // namespace etc::ir
