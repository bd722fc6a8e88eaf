// The CPU references of the ops: one function per op of the registry (compiler/ir/ops.h),
// called by the interpreter with the operand and destination views of one op call.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "compiler/interp/view.h"
#include "compiler/ir/ir.h"
#include "compiler/ir/ops.h"

namespace etc::interp {

// One op call: the operand views, the destination views (one per result) and the attributes
// (the written value, else the registry's default).
class OpArgs {
 public:
  OpArgs(const ir::OpCall& call, const ir::OpInfo& info, std::vector<View> in, std::vector<View> out)
      : in(std::move(in)), out(std::move(out)), call_(call), info_(info) {}

  std::vector<View> in;
  std::vector<View> out;

  bool attrBool(std::string_view name) const { return value(name).b; }
  int64_t attrInt(std::string_view name) const;  // integer attributes are compile-time constants
  double attrFloat(std::string_view name) const { return value(name).f; }
  std::string attrString(std::string_view name) const { return value(name).text; }
  ir::DType attrDType(std::string_view name) const { return value(name).dtype; }
  bool attrWritten(std::string_view name) const { return call_.findAttr(name) != nullptr; }

 private:
  const ir::AttrValue& value(std::string_view name) const;
  const ir::OpCall& call_;
  const ir::OpInfo& info_;
};

// Returns "" on success, else the reason (a lower-case phrase without the op's name, e.g.
// "id 70 of row 2 is outside the table [0, 64)").
using OpKernel = std::string (*)(OpArgs& a);

// The kernel of an op of the registry; null for an op without a reference.
OpKernel findKernel(std::string_view op);

// ops_elementwise.cpp
std::string opCopy(OpArgs& a);
std::string opFill(OpArgs& a);
std::string opCast(OpArgs& a);
std::string opAdd(OpArgs& a);
std::string opMul(OpArgs& a);
std::string opSiluMul(OpArgs& a);
std::string opEmbedding(OpArgs& a);
// ops_reduce.cpp
std::string opReduceSum(OpArgs& a);
std::string opReduceMax(OpArgs& a);
std::string opArgmax(OpArgs& a);
std::string opTopkSoftmax(OpArgs& a);
// ops_norm.cpp
std::string opRmsnorm(OpArgs& a);
std::string opAddRmsnorm(OpArgs& a);
std::string opRope(OpArgs& a);
// ops_matmul.cpp
std::string opMatmul(OpArgs& a);
std::string opGroupedMatmul(OpArgs& a);
std::string opMoeAlign(OpArgs& a);
std::string opMoeCombine(OpArgs& a);
// ops_attention.cpp
std::string opKvAppend(OpArgs& a);
std::string opAttentionDecode(OpArgs& a);
std::string opAttentionMerge(OpArgs& a);
std::string opSplitLens(OpArgs& a);
std::string opKvRanges(OpArgs& a);

// silu(g) = g / (1 + exp(-g)), shared by silu_mul and grouped_matmul.
double silu(double g);

}  // namespace etc::interp
