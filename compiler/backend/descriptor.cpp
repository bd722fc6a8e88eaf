#include "compiler/backend/descriptor.h"

#include <nlohmann/json.hpp>

#include "compiler/backend/cuda_expr.h"
#include "compiler/backend/profile.h"
#include "compiler/ir/printer.h"
#include "etc/abi.h"

namespace etc::backend {

using namespace ir;
using nlohmann::json;

std::vector<EventLayout> eventLayout(const Module& m, int64_t* total_words) {
  std::vector<EventLayout> out;
  int64_t offset = 0;
  RangeEnv env = m.symRanges();
  for (const Event& e : m.events) {
    EventLayout l;
    l.offset = offset;
    l.max_elements = 1;
    for (const Expr& d : e.shape) {
      int64_t hi = std::max<int64_t>(0, bounds(d, env).hi);
      l.max_extent.push_back(hi);
      l.max_elements *= hi;
    }
    offset += l.max_elements;
    out.push_back(std::move(l));
  }
  if (total_words) *total_words = offset;
  return out;
}

int64_t maxTasks(const Module& m, const Kernel& k) {
  RangeEnv env = m.symRanges();
  int64_t total = 0;
  for (uint32_t t : k.tasks) {
    int64_t n = 1;
    for (const Expr& g : m.tasks[t].grid) {
      int64_t hi = std::max<int64_t>(0, bounds(dataBound(m, g), env).hi);
      if (__builtin_mul_overflow(n, hi, &n)) return INT64_MAX;
    }
    if (__builtin_add_overflow(total, n, &total)) return INT64_MAX;
  }
  return total;
}

std::vector<SchedLayout> schedLayout(const Module& m, int64_t* total_words) {
  int64_t words = 0;
  eventLayout(m, &words);
  std::vector<SchedLayout> out(m.kernels.size());
  for (size_t k = 0; k < m.kernels.size(); ++k) {
    const Kernel& kernel = m.kernels[k];
    if (!kernel.mega || m.graphs[kernel.graph].schedule != Schedule::Dynamic) continue;
    out[k].offset = words;
    out[k].max_tasks = maxTasks(m, kernel);
    words += out[k].words();
  }
  if (total_words) *total_words = words;
  return out;
}

int64_t paramsBytes(const Module& m, size_t nderived) {
  int64_t ns = std::max<int64_t>(1, static_cast<int64_t>(m.syms.size()));
  int64_t nt = std::max<int64_t>(1, static_cast<int64_t>(m.tensors.size()));
  return 8 * (ns + nt) + ETC_PARAMS_TAIL_BYTES + 8 * static_cast<int64_t>(nderived);
}

namespace {

json exprJson(const Expr& e0) {
  Expr e = inlineConsts(e0);
  switch (e->kind) {
    case ExprKind::Int: return e->value;
    case ExprKind::Sym: return json::array({"sym", e->id});
    default: break;
  }
  const char* op = nullptr;
  switch (e->kind) {
    case ExprKind::Add: op = "add"; break;
    case ExprKind::Mul: op = "mul"; break;
    case ExprKind::Div: op = "div"; break;
    case ExprKind::Mod: op = "mod"; break;
    case ExprKind::CDiv: op = "cdiv"; break;
    case ExprKind::Min: op = "min"; break;
    case ExprKind::Max: op = "max"; break;
    default: return json::array({"unsupported", toString(e)});  // coordinates or loads never reach shapes
  }
  json out = json::array({op});
  for (const Expr& x : e->ops) out.push_back(exprJson(x));
  return out;
}

json shapeJson(const std::vector<Expr>& shape, bool text) {
  json out = json::array();
  for (const Expr& d : shape) out.push_back(text ? json(toString(d)) : exprJson(d));
  return out;
}

}  // namespace

std::string buildDescriptor(const Module& m, const std::vector<Target>& targets, std::string_view ir_text,
                            const ProfileLayout* profile, const std::vector<Expr>& derived,
                            const std::vector<uint32_t>& tmaps) {
  json d;
  d["format"] = "etc.module";
  d["abi"] = ETC_ABI_VERSION;
  d["compiler"] = std::string("etcc ") + ETC_VERSION;
  d["module"] = m.name;
  json archs = json::array();
  for (const Target& t : targets) archs.push_back(t.name());
  d["archs"] = archs;
  json syms = json::array();
  for (const Sym& s : m.syms) syms.push_back({{"name", s.name}, {"lo", s.lo}, {"hi", s.hi}});
  d["syms"] = syms;
  json tensors = json::array();
  for (const Tensor& t : m.tensors)
    tensors.push_back({{"name", t.name},
                       {"dtype", std::string(dtypeName(t.dtype))},
                       {"role", std::string(roleName(t.role))},
                       {"shape", shapeJson(t.shape, false)},
                       {"shape_text", shapeJson(t.shape, true)}});
  d["tensors"] = tensors;
  if (!tmaps.empty()) d["tmaps"] = tmaps;
  int64_t words = 0;
  std::vector<EventLayout> layout = eventLayout(m, &words);
  json events = json::array();
  for (size_t k = 0; k < m.events.size(); ++k)
    events.push_back({{"name", m.events[k].name},
                      {"shape", shapeJson(m.events[k].shape, false)},
                      {"shape_text", shapeJson(m.events[k].shape, true)},
                      {"offset", layout[k].offset},
                      {"max_elements", layout[k].max_elements}});
  d["events"] = events;
  std::vector<SchedLayout> sched = schedLayout(m, &words);
  d["event_words"] = words;
  if (profile) {
    d["event_words"] = profile->offset + profile->words();
    d["profile"] = profileDescriptor(m, *profile);
  }
  json tasks = json::array();
  for (const Task& t : m.tasks) tasks.push_back({{"name", t.name}, {"grid_text", shapeJson(t.grid, true)}, {"coords", t.coords}});
  d["tasks"] = tasks;
  json graphs = json::array();
  for (uint32_t g = 0; g < m.graphs.size(); ++g) {
    json gj = {{"name", m.graphs[g].name}, {"schedule", std::string(scheduleName(m.graphs[g].schedule))}};
    json unfused = json::array(), megas = json::array();
    bool ranged = false;  // etcc --specialize: "mega" is then the list of one a range
    for (size_t ki = 0; ki < m.kernels.size(); ++ki) {
      const Kernel& k = m.kernels[ki];
      if (k.graph != g) continue;
      if (k.mega) {
        json mj = {{"kernel", k.name}, {"threads", kThreadsPerCta}};
        if (sched[ki].offset >= 0) {
          mj["max_ctas"] = kSchedMaxCtas;
          mj["max_tasks"] = sched[ki].max_tasks;
        }
        if (k.when_sym >= 0) {
          mj["when"] = {{"sym", k.when_sym}, {"lo", k.when_lo}, {"hi", k.when_hi}};
          ranged = true;
        }
        megas.push_back(std::move(mj));
      } else {
        unfused.push_back({{"kernel", k.name}, {"task", k.tasks.front()}, {"threads", kThreadsPerCta}});
      }
    }
    gj["mega"] = ranged ? megas : megas.at(0);
    // null, not [], under etcc --megakernel-only: the runtime then refuses an unfused launch by
    // name, and a runtime from before the option refuses the fatbin rather than launching nothing.
    gj["unfused"] = m.graphs[g].unfused_kernels ? unfused : json(nullptr);
    graphs.push_back(gj);
  }
  d["graphs"] = graphs;
  if (!derived.empty()) {
    json dj = json::array();
    for (const Expr& e : derived) dj.push_back({{"expr", exprJson(e)}, {"text", toString(e)}});
    d["derived"] = dj;
  }
  d["params_bytes"] = paramsBytes(m, derived.size());
  d["ir"] = std::string(ir_text);
  return d.dump();
}

}  // namespace etc::backend
