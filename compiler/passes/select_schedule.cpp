// select-schedule: static or dynamic for every graph whose schedule is auto.
//
// The static schedule costs nothing to dispatch but fixes which CTA runs which task before
// anything is known about the data: tasks that do not exist still take their slot, and a CTA
// that drew expensive tasks finishes last while others idle. The dynamic schedule pays a queue
// pop and a pending count per task (about a microsecond of latency each on an H100, measured
// by tools/etc-bench-schedule) but keeps every CTA busy with tasks that are ready. The model
// below estimates both makespans from the bytes each task moves at the sym upper bounds.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "compiler/backend/cuda_expr.h"
#include "compiler/ir/op_check.h"
#include "compiler/passes/passes.h"

namespace etc {

namespace {

using namespace ir;

// Calibration (H100, docs/benchmarks.md "Schedules"): CTAs the kernel runs with, bytes one CTA
// moves per microsecond when all stream, and the dynamic schedule's cost per task.
constexpr double kCtas = 132;
constexpr double kBytesPerCtaUs = 22000;
constexpr double kDynamicTaskUs = 3.0;
constexpr double kStaticTaskUs = 0.5;

struct GridCost {
  uint32_t task;
  double tasks;    // at the sym upper bounds
  double task_us;  // one task's data movement
};

double sliceBytes(const Module& m, const Slice& s, const RangeEnv& env) {
  OperandType t = sliceType(m, s);
  double n = dtypeBytes(t.dtype);
  for (const Expr& d : t.shape) n *= static_cast<double>(std::max<int64_t>(0, bounds(backend::dataBound(m, d), env).hi));
  return n;
}

// The bytes one call moves. A paged call touches the pages its table names, not the whole
// pools it is given: attention_decode reads table entries x page size rows of each pool and
// kv_append writes one row of each.
double callBytes(const Module& m, const CallStmt& c, const RangeEnv& env) {
  auto hi = [&](const Expr& e) {
    return static_cast<double>(std::max<int64_t>(0, bounds(backend::dataBound(m, e), env).hi));
  };
  const std::vector<Slice>& args = c.call.args;
  const bool paged_attention = c.call.op == "attention_decode" && args.size() == 5;
  const bool paged_append = c.call.op == "kv_append" && args.size() == 4;
  auto poolRows = [&](const Slice& pool, double rows) {
    OperandType t = sliceType(m, pool);
    return t.shape.size() == 3 ? dtypeBytes(t.dtype) * rows * hi(t.shape[2]) : sliceBytes(m, pool, env);
  };
  double bytes = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    if (paged_attention && (i == 1 || i == 2)) {
      OperandType pool = sliceType(m, args[i]), table = sliceType(m, args[4]);
      double entries = table.shape.empty() ? 1 : hi(table.shape.back());
      bytes += poolRows(args[i], entries * (pool.shape.size() == 3 ? hi(pool.shape[1]) : 1));
      continue;
    }
    bytes += sliceBytes(m, args[i], env);
  }
  for (const Slice& s : c.dests) bytes += paged_append ? poolRows(s, 1) : sliceBytes(m, s, env);
  return bytes;
}

GridCost gridCost(const Module& m, uint32_t ti) {
  const Task& t = m.tasks[ti];
  GridCost c{ti, 1, 0};
  RangeEnv syms = m.symRanges();
  for (const Expr& g : t.grid) c.tasks *= static_cast<double>(std::max<int64_t>(0, bounds(backend::dataBound(m, g), syms).hi));
  RangeEnv env = m.gridRanges(t.grid);
  double bytes = 0;
  for (const TaskStmt& st : t.body)
    if (const auto* call = std::get_if<CallStmt>(&st)) bytes += callBytes(m, *call, env);
  c.task_us = bytes / kBytesPerCtaUs;
  return c;
}

std::string choose(const Module& m, const Graph& g, Schedule& out) {
  std::vector<GridCost> grids;
  for (const GraphStmt& st : g.body)
    if (const auto* r = std::get_if<RunStmt>(&st)) grids.push_back(gridCost(m, r->task));
  // A grid whose extent reads data is costed at its bound, as the static schedule runs it: its
  // surplus tasks only notify, which the model does not discount, so the estimate leans towards
  // dynamic. Measured on an H100 (docs/benchmarks.md, 2026-11-23), the MoE block's static
  // schedule was 40% faster at 1 token and at most 2.3% slower up to 128: data dependence alone
  // is no reason for the queue.
  std::string data_dependent;
  for (const GridCost& c : grids)
    for (const Expr& e : m.tasks[c.task].grid)
      if (hasLoad(e) && data_dependent.empty()) data_dependent = m.tasks[c.task].name;
  // Grid after grid (a grid mostly waits for the one before it). Static: ceil(tasks / CTAs)
  // rounds of the grid's task time, as the round-robin order leaves the last round's CTAs
  // idle. Dynamic: the grid's work spread evenly over the CTAs, but never less than one task.
  double static_us = 0, dynamic_us = 0, tasks = 0;
  for (const GridCost& c : grids) {
    static_us += std::ceil(c.tasks / kCtas) * (c.task_us + kStaticTaskUs);
    if (c.tasks > 0) dynamic_us += std::max(c.tasks / kCtas, 1.0) * (c.task_us + kDynamicTaskUs);
    tasks += c.tasks;
  }
  out = dynamic_us < 0.7 * static_us ? Schedule::Dynamic : Schedule::Static;
  return fmt::format("cost model at the sym upper bounds{}: {:.0f} tasks, static ~{:.1f} us, dynamic ~{:.1f} us",
                     data_dependent.empty() ? "" : fmt::format(" and the data-dependent grid of @{} at its bound", data_dependent),
                     tasks, static_us, dynamic_us);
}

}  // namespace

ModulePtr selectSchedule(ModulePtr m, DiagnosticEngine& diags) {
  (void)diags;
  for (Graph& g : m->graphs) {
    if (g.schedule != Schedule::Auto) {
      if (g.schedule_reason.empty()) g.schedule_reason = "written in the source";
      continue;
    }
    g.schedule_reason = choose(*m, g, g.schedule);
  }
  return m;
}

}  // namespace etc
