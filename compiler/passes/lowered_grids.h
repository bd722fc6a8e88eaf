// What the passes that rewrite lower-ops' task grids (merge-tasks, fold-into-attention) share:
// a graph's grids in run order, which grids they may touch, and slices with every dimension
// written out.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/ir/ir.h"

namespace etc {

// The tasks graph g runs, in order.
std::vector<uint32_t> runOrder(const ir::Module& m, uint32_t g);

// Per task: how many run statements name it, over every graph.
std::vector<int> runCounts(const ir::Module& m);

// Made by lower-ops (calls only, no waits or notifies) and run exactly once (runs = its run
// count), with a grid known before the launch unless `data_extent` allows one that reads data
// (a pass that only adds calls to a task's body keeps its grid as it is): a grid these passes
// may rewrite.
bool rewritableGrid(const ir::Module& m, uint32_t task, int runs, bool data_extent = false);

// Removes graph g's run statements of task t.
void dropRuns(ir::Module& m, uint32_t g, uint32_t t);

// A slice dimension at the row of the task's coordinate 0: the point `i`, or the range `i : i +
// 1`, or `i : min(N, i + 1)` where N is both the grid's extent and the dimension's (one row
// either way).
bool isTaskRow(const ir::SliceDim& d, const ir::Expr& grid_extent, const ir::Expr& dim_extent);

// The range `:` over a dimension of this extent.
ir::SliceDim wholeDim(const ir::Expr& extent);

// Every dimension of s written out: a dimension the subscript leaves off is the whole range.
std::vector<ir::SliceDim> explicitDims(const ir::Module& m, const ir::Slice& s);

// d is the range 0 : extent.
bool wholeRange(const ir::SliceDim& d, const ir::Expr& extent);

}  // namespace etc
