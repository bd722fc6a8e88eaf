#include "compiler/passes/task_graph.h"

#include <functional>
#include <map>

namespace etc {

using namespace ir;

TaskGraph buildTaskGraph(const Module& m, const Graph& g) {
  TaskGraph tg;
  for (const GraphStmt& st : g.body)
    if (const auto* r = std::get_if<RunStmt>(&st)) tg.grids.push_back(r->task);
  std::map<uint32_t, std::vector<std::pair<uint32_t, SourceRange>>> notifiers;  // event -> (grid pos, stmt)
  for (uint32_t pos = 0; pos < tg.grids.size(); ++pos)
    for (const TaskStmt& st : m.tasks[tg.grids[pos]].body)
      if (const auto* n = std::get_if<NotifyStmt>(&st)) notifiers[n->event.target].push_back({pos, n->range});
  for (uint32_t pos = 0; pos < tg.grids.size(); ++pos)
    for (const TaskStmt& st : m.tasks[tg.grids[pos]].body)
      if (const auto* w = std::get_if<WaitStmt>(&st)) {
        auto it = notifiers.find(w->event.target);
        if (it == notifiers.end()) continue;
        for (const auto& [from, range] : it->second) tg.edges.push_back({from, pos, w->event.target, w->range, range});
      }
  return tg;
}

std::vector<uint32_t> topologicalOrder(const TaskGraph& tg) {
  size_t n = tg.grids.size();
  std::vector<int> indegree(n, 0);
  for (const GridEdge& e : tg.edges)
    if (e.from != e.to) ++indegree[e.to];
  for (const GridEdge& e : tg.edges)
    if (e.from == e.to) return {};
  std::vector<uint32_t> order;
  std::vector<bool> done(n, false);
  while (order.size() < n) {
    // The first ready grid in run order: keeps the written order wherever it is valid.
    uint32_t next = static_cast<uint32_t>(n);
    for (uint32_t v = 0; v < n; ++v)
      if (!done[v] && indegree[v] == 0) {
        next = v;
        break;
      }
    if (next == n) return {};
    done[next] = true;
    order.push_back(next);
    for (const GridEdge& e : tg.edges)
      if (e.from == next) --indegree[e.to];
  }
  return order;
}

std::vector<uint32_t> findCycle(const TaskGraph& tg) {
  size_t n = tg.grids.size();
  std::vector<int> state(n, 0);  // 0 new, 1 on the stack, 2 finished
  std::vector<uint32_t> stack;   // edges
  std::vector<uint32_t> cycle;
  std::function<bool(uint32_t)> dfs = [&](uint32_t v) {
    state[v] = 1;
    for (uint32_t k = 0; k < tg.edges.size(); ++k) {
      const GridEdge& e = tg.edges[k];
      if (e.from != v) continue;
      stack.push_back(k);
      if (state[e.to] == 1) {
        // The cycle is the suffix of the stack that starts at the edge leaving e.to.
        size_t start = stack.size() - 1;
        while (start > 0 && tg.edges[stack[start]].from != e.to) --start;
        cycle.assign(stack.begin() + static_cast<long>(start), stack.end());
        return true;
      }
      if (state[e.to] == 0 && dfs(e.to)) return true;
      stack.pop_back();
    }
    state[v] = 2;
    return false;
  };
  for (uint32_t v = 0; v < n; ++v)
    if (state[v] == 0 && dfs(v)) return cycle;
  return {};
}

}  // namespace etc
