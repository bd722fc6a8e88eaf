#include "compiler/passes/lowered_grids.h"

#include <algorithm>
#include <variant>

#include "compiler/ir/expr.h"

namespace etc {

using namespace ir;

std::vector<uint32_t> runOrder(const Module& m, uint32_t g) {
  std::vector<uint32_t> out;
  for (const GraphStmt& st : m.graphs[g].body)
    if (const auto* r = std::get_if<RunStmt>(&st)) out.push_back(r->task);
  return out;
}

std::vector<int> runCounts(const Module& m) {
  std::vector<int> runs(m.tasks.size(), 0);
  for (const Graph& g : m.graphs)
    for (const GraphStmt& st : g.body)
      if (const auto* r = std::get_if<RunStmt>(&st)) ++runs[r->task];
  return runs;
}

bool rewritableGrid(const Module& m, uint32_t task, int runs, bool data_extent) {
  if (runs != 1) return false;
  const Task& t = m.tasks[task];
  if (!data_extent && gridReadsData(t)) return false;
  for (const TaskStmt& st : t.body)
    if (!std::holds_alternative<CallStmt>(st)) return false;
  return !t.body.empty();
}

void dropRuns(Module& m, uint32_t g, uint32_t t) {
  auto& body = m.graphs[g].body;
  body.erase(std::remove_if(body.begin(), body.end(),
                            [&](const GraphStmt& st) {
                              const auto* r = std::get_if<RunStmt>(&st);
                              return r && r->task == t;
                            }),
             body.end());
}

bool isTaskRow(const SliceDim& d, const Expr& grid_extent, const Expr& dim_extent) {
  if (d.lo->kind != ExprKind::Coord || d.lo->id != 0) return false;
  if (!d.is_range) return true;
  const Expr next = add(d.lo, intConst(1));
  const Expr rows = inlineConsts(grid_extent);
  return equal(d.hi, next) ||
         (equal(rows, inlineConsts(dim_extent)) && equal(inlineConsts(d.hi), inlineConsts(min(grid_extent, next))));
}

SliceDim wholeDim(const Expr& extent) {
  SliceDim d;
  d.is_range = true;
  d.lo = intConst(0);
  d.hi = extent;
  d.lo_written = d.hi_written = false;
  return d;
}

std::vector<SliceDim> explicitDims(const Module& m, const Slice& s) {
  const Tensor& t = m.tensors[s.target];
  std::vector<SliceDim> out = s.dims;
  for (size_t k = out.size(); k < t.shape.size(); ++k) out.push_back(wholeDim(t.shape[k]));
  return out;
}

bool wholeRange(const SliceDim& d, const Expr& extent) {
  return d.is_range && asInt(d.lo) == 0 && equal(inlineConsts(d.hi), inlineConsts(extent));
}

}  // namespace etc
