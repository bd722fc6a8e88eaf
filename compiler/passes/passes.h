// The passes of the lowering pipeline (compiler/passes/pipeline.cpp lists them in order).
// Each takes a verified module and returns the transformed one, or null after reporting
// errors.
#pragma once

#include <memory>

#include "compiler/ir/ir.h"
#include "compiler/support/diagnostics.h"

namespace etc {

using ModulePtr = std::unique_ptr<ir::Module>;

// A gated MLP's gate and up matmuls and their silu_mul become one gated matmul (op level).
ModulePtr fuseGatedMatmul(ModulePtr m, DiagnosticEngine& diags);
// Op-level assignments become task grids (tile sizes from attributes, else chosen here).
ModulePtr lowerOps(ModulePtr m, DiagnosticEngine& diags);
// Fewer task grids: a split-K reduce_sum moves into its one reader, and a grid merges into a
// later one over the same grid that needs it tile for tile.
ModulePtr mergeTasks(ModulePtr m, DiagnosticEngine& diags);
// A split-KV attention's merge grid moves into the matmul that reads its result: each matmul
// task merges the rows and columns it reads, then multiplies.
ModulePtr foldAttentionMerge(ModulePtr m, DiagnosticEngine& diags);
// The per-row grid of a layer's q/k/v sums, rope and kv_append moves into the attention grids
// that read it: each attention task runs it for its own row and heads.
ModulePtr foldIntoAttention(ModulePtr m, DiagnosticEngine& diags);
// Below a cut of the batch, a row norm moves into the matmul grids that read its result: each
// matmul task normalizes every row, then multiplies.
ModulePtr foldNorms(ModulePtr m, DiagnosticEngine& diags);
// Temps of one graph whose lives do not overlap in run order share one tensor (same dtype and
// shape): a workspace of about one layer's temps.
ModulePtr reuseTemps(ModulePtr m, DiagnosticEngine& diags);
// Event tensors, waits and notifies from the slices each task grid writes and later ones read.
ModulePtr inferEvents(ModulePtr m, DiagnosticEngine& diags);
// Removes waits other paths imply, merges duplicate events, coarsens many-to-all events to
// one counter, and drops events nobody waits on; every ordering between tiles is kept.
ModulePtr eliminateEvents(ModulePtr m, DiagnosticEngine& diags);
// Each graph becomes one persistent megakernel, plus one kernel per task grid (unfused form).
ModulePtr fuse(ModulePtr m, DiagnosticEngine& diags);
// Decides static or dynamic for every graph whose schedule is auto (docs/architecture.md).
ModulePtr selectSchedule(ModulePtr m, DiagnosticEngine& diags);
// Puts each graph's task grids (and its megakernel's) in topological order.
ModulePtr scheduleStatic(ModulePtr m, DiagnosticEngine& diags);
// Rejects cycles and waits on later tasks; checks notify totals against initial counts.
ModulePtr verifySchedule(ModulePtr m, DiagnosticEngine& diags);

struct SymCuts;
// After the passes, where a graph's `specialize` or etcc --specialize (`cli`, for every graph,
// over what the graphs wrote) asks: the megakernel becomes one per range of the sym, each
// without the task grids that are empty over its range.
ModulePtr specializeMegakernels(ModulePtr m, const SymCuts* cli, DiagnosticEngine& diags);

}  // namespace etc
