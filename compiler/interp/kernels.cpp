#include "compiler/interp/kernels.h"

#include <cmath>
#include <unordered_map>

namespace etc::interp {

const ir::AttrValue& OpArgs::value(std::string_view name) const {
  if (const ir::Attr* a = call_.findAttr(name)) return a->value;
  for (const ir::AttrSpec& spec : info_.attrs)
    if (spec.name == name) return spec.default_value;
  static const ir::AttrValue none;
  return none;
}

int64_t OpArgs::attrInt(std::string_view name) const {
  const ir::AttrValue& v = value(name);
  if (!v.i) return 0;
  ir::EvalResult r = ir::evaluate(ir::inlineConsts(v.i), {});
  return r.ok() ? r.value : 0;
}

double silu(double g) { return g / (1.0 + std::exp(-g)); }

OpKernel findKernel(std::string_view op) {
  // An explicit table rather than self-registration: the kernels live in a static library,
  // where unreferenced registering objects would be dropped by the linker.
  static const std::unordered_map<std::string_view, OpKernel> table = {
      {"copy", opCopy},
      {"fill", opFill},
      {"cast", opCast},
      {"add", opAdd},
      {"mul", opMul},
      {"silu_mul", opSiluMul},
      {"reduce_sum", opReduceSum},
      {"reduce_max", opReduceMax},
      {"rmsnorm", opRmsnorm},
      {"add_rmsnorm", opAddRmsnorm},
      {"matmul", opMatmul},
      {"rope", opRope},
      {"kv_append", opKvAppend},
      {"attention_decode", opAttentionDecode},
      {"attention_merge", opAttentionMerge},
      {"split_lens", opSplitLens},
      {"kv_ranges", opKvRanges},
      {"embedding", opEmbedding},
      {"argmax", opArgmax},
      {"topk_softmax", opTopkSoftmax},
      {"moe_align", opMoeAlign},
      {"grouped_matmul", opGroupedMatmul},
      {"moe_combine", opMoeCombine},
  };
  auto it = table.find(op);
  return it == table.end() ? nullptr : it->second;
}

}  // namespace etc::interp
