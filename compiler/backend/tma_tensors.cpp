#include "compiler/backend/tma_tensors.h"

#include <algorithm>

#include "compiler/ir/expr.h"
#include "compiler/passes/tiling.h"

namespace etc {

using namespace ir;

namespace {

bool mappable(const Tensor& t) {
  if (t.role != Role::Param || (t.dtype != DType::BF16 && t.dtype != DType::F16) || t.shape.size() != 2) return false;
  const std::optional<int64_t> rows = asInt(inlineConsts(t.shape[0])), cols = asInt(inlineConsts(t.shape[1]));
  return rows && cols && *rows >= 64 && *cols >= 64 && *rows < (int64_t{1} << 31) && *cols < (int64_t{1} << 31) &&
         (*cols * 2) % 16 == 0;
}

}  // namespace

bool defineOn(const std::vector<std::string>& defines, const std::string& name, bool absent) {
  bool on = absent;  // the last definition wins, as in the preprocessor's redefinition
  const std::string prefix = name + "=";
  for (const std::string& d : defines)
    if (d.rfind(prefix, 0) == 0) on = d.substr(prefix.size()).find_first_not_of("0") != std::string::npos;
  return on;
}

std::vector<uint32_t> tmaTensors(const Module& m, const std::vector<std::string>& defines) {
  std::vector<uint32_t> out;
  if (!defineOn(defines, "ETC_MM_TMA") && !defineOn(defines, "ETC_MM_STREAM")) return out;
  for (const Task& t : m.tasks)
    for (const TaskStmt& st : t.body) {
      const auto* c = std::get_if<CallStmt>(&st);
      if (!c || c->call.op != "matmul" || !tiling::attrBool(c->call, "transpose_b")) continue;
      for (size_t i = 1; i < c->call.args.size(); ++i)
        if (mappable(m.tensors[c->call.args[i].target])) out.push_back(c->call.args[i].target);
    }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace etc
