// reuse-temps: temps of one graph whose lives do not overlap in its run order share one tensor,
// so that the runtime's workspace holds about one layer's temps instead of every layer's
// (Llama-3.2-1B decode at B = 128: 33.5 MiB of temps instead of 530).
//
// A temp's life is the run statements from the first that touches it to the last. A temp
// whose life begins at least kFreeAfter statements after another's of the same dtype and shape
// has ended takes that tensor's place: every reference to it becomes a reference to the other,
// and its declaration goes. Of the free tensors that fit, the one freed first is taken; the
// old readers then lie more hops back on the chain, and the waits that order the new writer
// after them are more often implied by the chain itself. Not all are: the pass costs waits
// (Llama-3.2-1B: 311 against 281), and the step 5 to 10% of its time on an H200
// (docs/benchmarks.md, session 63), which is why it is opt-in.
//
// Why it is safe: the pass runs before infer-events, which pairs every two grids that touch
// one tensor (write after read and write after write as well as read after write): the new
// writer's tasks wait for the old readers' tiles they overlap, and eliminate-events drops what
// the chain already orders. In run order, which is the reference interpreter's, every read of
// the old temp comes before the first write of the new one.
//
// Kept apart: a temp whose first touching grid reads it (its value would come from an earlier
// launch, or the interpreter's zero fill); one that an expression loads (an index: the load
// names its tensor); one touched by a grid with hand-written waits or notifies (infer-events
// trusts those for the pairs they order), by a grid whose extent reads data (the interpreter
// runs those last, not in run order), by tasks of more than one graph, or by a task run other
// than once.
//
// Runs only with etcc --reuse-temps.
#include <map>
#include <string>
#include <vector>

#include "compiler/ir/expr.h"
#include "compiler/passes/access_pattern.h"
#include "compiler/passes/module_rebuild.h"
#include "compiler/passes/passes.h"

namespace etc {

namespace {

using namespace ir;

constexpr uint32_t kNone = ~0u;

// A tensor is free for another temp this many run statements after its last one. Right after,
// the new writer would often be the next grid but one, ordered after the old readers by no
// chain that eliminate-events finds: Llama-3.2-1B's decode step kept 528 waits with 1, 481
// with 4 (8 and 16: 526 and 616; 326 without the pass), for 24.5 and 33.5 MiB of temps at
// B = 128 (530 MiB without); with eliminate-events' pieces and blocks since, 311 with 4 and
// 281 without.
constexpr size_t kFreeAfter = 4;

// Tensors that some expression of the module loads from.
std::vector<bool> loadedTensors(const Module& m) {
  std::vector<bool> loaded(m.tensors.size(), false);
  auto see = [&](const Expr& e) {
    if (e && hasLoad(e))
      forEachLeaf(e, [&](const ExprNode& n) {
        if (n.kind == ExprKind::Load) loaded[n.id] = true;
      });
  };
  auto seeSlice = [&](const Slice& s) {
    for (const SliceDim& d : s.dims) see(d.lo), see(d.hi);
  };
  for (const Tensor& t : m.tensors)
    for (const Expr& e : t.shape) see(e);
  for (const Event& ev : m.events) {
    for (const Expr& e : ev.shape) see(e);
    see(ev.init);
  }
  for (const Task& t : m.tasks) {
    for (const Expr& e : t.grid) see(e);
    for (const TaskStmt& st : t.body) {
      if (const auto* w = std::get_if<WaitStmt>(&st)) seeSlice(w->event);
      if (const auto* n = std::get_if<NotifyStmt>(&st)) seeSlice(n->event);
      if (const auto* c = std::get_if<CallStmt>(&st)) {
        for (const Slice& s : c->call.args) seeSlice(s);
        for (const Slice& s : c->dests) seeSlice(s);
        for (const Attr& a : c->call.attrs)
          if (a.value.type == AttrType::Int) see(a.value.i);
      }
    }
  }
  return loaded;
}

bool hasEvents(const Task& t) {
  for (const TaskStmt& st : t.body)
    if (!std::holds_alternative<CallStmt>(st)) return true;
  return false;
}

// Temps of one dtype and shape are interchangeable.
std::string typeKey(const Tensor& t) {
  std::string key(dtypeName(t.dtype));
  for (const Expr& e : t.shape) key += "," + toString(e);
  return key;
}

}  // namespace

ModulePtr reuseTemps(ModulePtr m, DiagnosticEngine&) {
  const size_t n = m->tensors.size();
  std::vector<bool> eligible(n, false);
  for (size_t t = 0; t < n; ++t) eligible[t] = m->tensors[t].role == Role::Temp;
  const std::vector<bool> loaded = loadedTensors(*m);
  for (size_t t = 0; t < n; ++t)
    if (loaded[t]) eligible[t] = false;

  // Which graph runs each task, and how often.
  std::vector<int> runs(m->tasks.size(), 0);
  std::vector<uint32_t> graph_of(m->tasks.size(), kNone);
  for (uint32_t g = 0; g < m->graphs.size(); ++g)
    for (const GraphStmt& st : m->graphs[g].body)
      if (const auto* r = std::get_if<RunStmt>(&st)) ++runs[r->task], graph_of[r->task] = g;
  std::vector<uint32_t> tensor_graph(n, kNone);
  for (uint32_t k = 0; k < m->tasks.size(); ++k) {
    const Task& task = m->tasks[k];
    bool fixed = runs[k] == 1 && !hasEvents(task);
    for (const Expr& e : task.grid) fixed = fixed && !hasLoad(e);
    for (const SliceAccess& a : taskAccesses(task)) {
      uint32_t t = a.slice->target;
      if (!fixed || (tensor_graph[t] != kNone && tensor_graph[t] != graph_of[k])) eligible[t] = false;
      tensor_graph[t] = graph_of[k];
    }
  }
  // A temp that op-level statements still name stays (the pass runs on lowered graphs).
  for (const Graph& g : m->graphs)
    for (const GraphStmt& st : g.body)
      if (const auto* a = std::get_if<AssignStmt>(&st)) {
        for (uint32_t r : a->results) eligible[r] = false;
        for (const Slice& s : a->call.args) eligible[s.target] = false;
      }

  std::vector<uint32_t> into(n);
  for (uint32_t t = 0; t < n; ++t) into[t] = t;
  std::vector<bool> drop(n, false);
  for (const Graph& g : m->graphs) {
    // Each eligible temp's first and last run statement, and whether the first reads it.
    std::vector<size_t> first(n, SIZE_MAX), last(n, 0);
    std::vector<bool> read_first(n, false);
    std::vector<uint32_t> order;
    for (const GraphStmt& st : g.body)
      if (const auto* r = std::get_if<RunStmt>(&st)) order.push_back(r->task);
    for (size_t i = 0; i < order.size(); ++i)
      for (const SliceAccess& a : taskAccesses(m->tasks[order[i]])) {
        uint32_t t = a.slice->target;
        if (!eligible[t]) continue;
        if (first[t] == SIZE_MAX) {
          first[t] = i;
          read_first[t] = !a.write;  // the task's calls in order: an operand is read before the results are written
        }
        last[t] = i;
      }
    // Statement by statement: tensors whose temps ended kFreeAfter statements ago become free,
    // then temps that begin here take a free tensor of their type (the longest free).
    std::map<std::string, std::vector<uint32_t>> free_by_type;  // oldest first
    std::vector<std::vector<uint32_t>> begins(order.size()), ends(order.size());
    for (uint32_t t = 0; t < n; ++t)
      if (eligible[t] && first[t] != SIZE_MAX && !read_first[t]) {
        begins[first[t]].push_back(t);
        ends[last[t]].push_back(t);
      }
    for (size_t i = 0; i < order.size(); ++i) {
      if (i >= kFreeAfter)
        for (uint32_t t : ends[i - kFreeAfter]) free_by_type[typeKey(m->tensors[t])].push_back(into[t]);
      for (uint32_t t : begins[i]) {
        std::vector<uint32_t>& pool = free_by_type[typeKey(m->tensors[t])];
        if (pool.empty()) continue;
        into[t] = pool.front();
        drop[t] = true;
        pool.erase(pool.begin());
      }
    }
  }
  bool any = false;
  for (bool d : drop) any = any || d;
  if (!any) return m;
  return moduleWithout(*m, {}, {}, drop, into);
}

}  // namespace etc
