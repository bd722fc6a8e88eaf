// The dependency graph between the task grids of one graph: an edge P -> C for every event
// that a task of P notifies and a task of C waits on. Used by the schedule and its checks.
#pragma once

#include <vector>

#include "compiler/ir/ir.h"
#include "compiler/support/source.h"

namespace etc {

struct GridEdge {
  uint32_t from, to;     // positions in `grids`
  uint32_t event;        // the event that links them
  SourceRange wait;  // C's wait statement
  SourceRange notify;  // P's notify statement
};

struct TaskGraph {
  std::vector<uint32_t> grids;  // task indices, in the graph's run order
  std::vector<GridEdge> edges;
};

TaskGraph buildTaskGraph(const ir::Module& m, const ir::Graph& g);

// A topological order of the grids (positions), stable with respect to run order; empty when
// the graph has a cycle.
std::vector<uint32_t> topologicalOrder(const TaskGraph& tg);

// One cycle as a list of edges (index into tg.edges), empty when there is none.
std::vector<uint32_t> findCycle(const TaskGraph& tg);

}  // namespace etc
