// verify-schedule: the static schedule is deadlock-free when every wait targets tasks with
// lower numbers and every event element receives exactly its initial count of notifies.
// Cycles and waits on the waiting grid itself are rejected with the tasks and events named.
// Notify totals are proved symbolically where every notify of an event is the same element
// for every task; otherwise they are counted exactly at sample sym values (small ones, where
// a mismatch is cheap to find) and any mismatch is an error. Where grids and counts read data,
// the counting is the megakernel's: every task of a grid at its bound (dataBound) notifies, and
// each count is taken at the bound; notifies that read data are not counted. What sampling
// cannot reach is checked by the reference interpreter (which runs the tasks the data gives)
// and the GPU's debug mode.
#include <fmt/format.h>

#include <map>

#include "compiler/backend/cuda_expr.h"
#include "compiler/ir/prover.h"
#include "compiler/passes/passes.h"
#include "compiler/passes/task_graph.h"

namespace etc {

namespace {

using namespace ir;

constexpr int64_t kSampleTaskBudget = 1 << 20;
constexpr int64_t kSampleElementBudget = 1 << 20;

class ScheduleVerifier {
 public:
  ScheduleVerifier(const Module& m, DiagnosticEngine& diags) : m_(m), diags_(diags), prover_(m) {}

  bool run() {
    size_t before = diags_.errorCount();
    for (const Graph& g : m_.graphs) verifyGraph(g);
    return diags_.errorCount() == before;
  }

 private:
  void verifyGraph(const Graph& g) {
    TaskGraph tg = buildTaskGraph(m_, g);
    for (const GridEdge& e : tg.edges)
      if (e.from == e.to) {
        const Task& t = m_.tasks[tg.grids[e.from]];
        diags_.error(e.wait.begin,
                     fmt::format("task '@{}' waits on event '{}', which tasks of its own grid notify; the static "
                                 "schedule cannot order the tasks of one grid",
                                 t.name, m_.events[e.event].name),
                     {{e.notify.begin, "notified here"}});
        return;
      }
    if (std::vector<uint32_t> cycle = findCycle(tg); !cycle.empty()) {
      std::string path;
      std::vector<Note> notes;
      for (uint32_t k : cycle) {
        const GridEdge& e = tg.edges[k];
        const std::string& from = m_.tasks[tg.grids[e.from]].name;
        const std::string& to = m_.tasks[tg.grids[e.to]].name;
        path += fmt::format("@{} -> ", from);
        notes.push_back({e.wait.begin, fmt::format("'@{}' waits on '{}' here", to, m_.events[e.event].name)});
        notes.push_back({e.notify.begin, fmt::format("which '@{}' notifies here", from)});
      }
      path += "@" + m_.tasks[tg.grids[tg.edges[cycle.front()].from]].name;
      diags_.error(tg.edges[cycle.front()].wait.begin,
                   fmt::format("the task grids of graph '@{}' wait on each other in a cycle: {}", g.name, path),
                   std::move(notes));
      return;
    }
    // In the kernel's order every notifier must come before its waiter.
    std::map<uint32_t, size_t> position;
    for (const Kernel& k : m_.kernels)
      if (k.mega && &m_.graphs[k.graph] == &g)
        for (size_t i = 0; i < k.tasks.size(); ++i) position[k.tasks[i]] = i;
    for (const GridEdge& e : tg.edges) {
      uint32_t from = tg.grids[e.from], to = tg.grids[e.to];
      if (position.count(from) && position.count(to) && position[from] >= position[to])
        diags_.error(e.wait.begin,
                     fmt::format("task '@{}' waits on event '{}', notified by '@{}', which runs later in the static "
                                 "order",
                                 m_.tasks[to].name, m_.events[e.event].name, m_.tasks[from].name));
    }
    checkUnnotifiedWaits(tg);
    checkCounts(tg);
  }

  void checkUnnotifiedWaits(const TaskGraph& tg) {
    std::map<uint32_t, bool> notified;
    for (uint32_t t : tg.grids)
      for (const TaskStmt& st : m_.tasks[t].body)
        if (const auto* n = std::get_if<NotifyStmt>(&st)) notified[n->event.target] = true;
    for (uint32_t t : tg.grids)
      for (const TaskStmt& st : m_.tasks[t].body)
        if (const auto* w = std::get_if<WaitStmt>(&st); w && !notified[w->event.target]) {
          const Event& e = m_.events[w->event.target];
          if (asInt(e.init) == 0) continue;
          diags_.error(w->range.begin, fmt::format("task '@{}' waits on event '{}', which no task of the graph "
                                                   "notifies; it would wait forever",
                                                   m_.tasks[t].name, e.name),
                       {{e.name_range.valid() ? e.name_range.begin : e.range.begin, "declared here"}});
        }
  }

  // ---- notify totals ---------------------------------------------------------------------

  struct NotifySite {
    uint32_t task;
    const NotifyStmt* stmt;
  };

  void checkCounts(const TaskGraph& tg) {
    std::map<uint32_t, std::vector<NotifySite>> sites;
    for (uint32_t t : tg.grids)
      for (const TaskStmt& st : m_.tasks[t].body)
        if (const auto* n = std::get_if<NotifyStmt>(&st)) sites[n->event.target].push_back({t, n});
    for (const auto& [ev, list] : sites) {
      if (provedSingleElement(ev, list)) continue;
      sampleCounts(ev, list);
    }
  }

  // Every notify names one fixed element and the event has one element: the total is the sum
  // of the notifying grids' sizes, compared with the count symbolically.
  bool provedSingleElement(uint32_t ev, const std::vector<NotifySite>& list) {
    const Event& e = m_.events[ev];
    for (const Expr& d : e.shape)
      if (asInt(d) != 1) return false;
    Expr total = intConst(0);
    for (const NotifySite& s : list) {
      for (const SliceDim& d : s.stmt->event.dims)
        if (d.is_range || hasCoord(d.lo) || hasLoad(d.lo)) return false;
      Expr size = intConst(1);
      for (const Expr& x : m_.tasks[s.task].grid) size = mul(size, x);
      total = add(total, size);
    }
    if (hasLoad(total) || hasLoad(e.init)) return false;
    Fact f = prover_.equalValues(total, e.init);
    if (f.proved()) return true;
    if (f.refuted())
      diags_.error(e.name_range.valid() ? e.name_range.begin : e.range.begin,
                   fmt::format("event '{}' gets {} notifies but its initial count is '{}' ({}){}", e.name,
                               toString(total), toString(e.init), describeValues(f.at, total, e.init),
                               at(f.at, {total, e.init})),
                   {{list.front().stmt->range.begin, "notified here"}});
    return f.refuted();
  }

  std::string describeValues(const SamplePoint& p, const Expr& a, const Expr& b) const {
    auto va = prover_.valueAt(a, p), vb = prover_.valueAt(b, p);
    return fmt::format("{} != {}", va ? std::to_string(*va) : "?", vb ? std::to_string(*vb) : "?");
  }
  std::string at(const SamplePoint& p, const std::vector<Expr>& exprs) const {
    std::string where = prover_.describe(p, exprs);
    return where.empty() ? "" : " at " + where;
  }

  // Sym values to count at: all at their lower bounds, then a few small values above them.
  std::vector<std::vector<int64_t>> samplePoints() const {
    std::vector<std::vector<int64_t>> points;
    for (int64_t extra : {0, 1, 5, 37, 1000}) {
      std::vector<int64_t> p;
      for (const Sym& s : m_.syms) p.push_back(std::min(s.hi, s.lo + extra));
      if (points.empty() || points.back() != p) points.push_back(p);
    }
    return points;
  }

  void sampleCounts(uint32_t ev, const std::vector<NotifySite>& list) {
    const Event& e = m_.events[ev];
    // At the bound once, not per element and sym value.
    const Expr init = backend::dataBound(m_, e.init);
    std::vector<Expr> shape_at_bound;
    for (const Expr& d : e.shape) shape_at_bound.push_back(backend::dataBound(m_, d));
    for (const std::vector<int64_t>& syms : samplePoints()) {
      Bindings b;
      b.sym = [&](uint32_t id) -> std::optional<int64_t> { return id < syms.size() ? std::optional(syms[id]) : std::nullopt; };
      std::vector<int64_t> shape;
      int64_t elements = 1;
      for (const Expr& d : shape_at_bound) {
        EvalResult r = evaluate(d, b);
        if (!r.ok()) return;
        shape.push_back(r.value);
        elements *= std::max<int64_t>(0, r.value);
        if (elements > kSampleElementBudget) return;
      }
      std::vector<int64_t> got(static_cast<size_t>(elements), 0);
      int64_t tasks_seen = 0;
      for (const NotifySite& s : list)
        if (!countSite(s, b, shape, got, tasks_seen)) return;
      for (int64_t k = 0; k < elements; ++k) {
        std::vector<int64_t> coord(shape.size());
        unravel(k, shape, coord);
        Bindings bi = b;
        bi.coord = [&](uint32_t id) -> std::optional<int64_t> { return id < coord.size() ? std::optional(coord[id]) : std::nullopt; };
        EvalResult want = evaluate(init, bi);
        if (!want.ok()) return;
        if (want.value == got[static_cast<size_t>(k)]) continue;
        std::string elem, point;
        for (size_t d = 0; d < coord.size(); ++d) elem += (d ? ", " : "") + std::to_string(coord[d]);
        for (size_t i = 0; i < m_.syms.size(); ++i) point += (i ? ", " : "") + m_.syms[i].name + " = " + std::to_string(syms[i]);
        std::vector<Note> notes;
        for (const NotifySite& s : list) notes.push_back({s.stmt->range.begin, fmt::format("'@{}' notifies it here", m_.tasks[s.task].name)});
        diags_.error(e.name_range.valid() ? e.name_range.begin : e.range.begin,
                     fmt::format("event '{}' element [{}] gets {} notifies but its initial count is {}{}", e.name, elem,
                                 got[static_cast<size_t>(k)], want.value, point.empty() ? "" : " (at " + point + ")"),
                     std::move(notes));
        return;
      }
    }
  }

  // Adds the notifies of one statement over every task of its grid. False when it cannot be
  // counted here (data-dependent, or too many tasks).
  bool countSite(const NotifySite& s, const Bindings& b, const std::vector<int64_t>& shape, std::vector<int64_t>& got,
                 int64_t& tasks_seen) {
    const Task& t = m_.tasks[s.task];
    std::vector<int64_t> grid;
    int64_t n = 1;
    for (const Expr& x : t.grid) {
      EvalResult r = evaluate(backend::dataBound(m_, x), b);
      if (!r.ok()) return false;
      grid.push_back(r.value);
      n *= std::max<int64_t>(0, r.value);
    }
    tasks_seen += n;
    if (tasks_seen > kSampleTaskBudget) return false;
    std::vector<int64_t> coord(grid.size(), 0);
    for (int64_t k = 0; k < n; ++k) {
      unravel(k, grid, coord);
      Bindings bt = b;
      bt.coord = [&](uint32_t id) -> std::optional<int64_t> { return id < coord.size() ? std::optional(coord[id]) : std::nullopt; };
      std::vector<std::pair<int64_t, int64_t>> ranges;
      for (size_t d = 0; d < shape.size(); ++d) {
        if (d >= s.stmt->event.dims.size()) {
          ranges.push_back({0, shape[d]});
          continue;
        }
        const SliceDim& sd = s.stmt->event.dims[d];
        EvalResult lo = evaluate(sd.lo, bt);
        EvalResult hi = sd.is_range ? evaluate(sd.hi, bt) : EvalResult{lo.value + 1, lo.error};
        if (!lo.ok() || !hi.ok()) return false;
        if (lo.value < 0 || hi.value > shape[d]) return false;  // the verifier's business
        ranges.push_back({lo.value, hi.value});
      }
      addRange(ranges, shape, got);
    }
    return true;
  }

  // The row-major coordinates of linear index k in `shape` (every extent > 0 when k exists).
  static void unravel(int64_t k, const std::vector<int64_t>& shape, std::vector<int64_t>& coord) {
    for (size_t d = shape.size(); d-- > 0;) {
      coord[d] = k % shape[d];
      k /= shape[d];
    }
  }

  static void addRange(const std::vector<std::pair<int64_t, int64_t>>& r, const std::vector<int64_t>& shape,
                       std::vector<int64_t>& got) {
    for (const auto& [lo, hi] : r)
      if (lo >= hi) return;
    std::vector<int64_t> idx;
    for (const auto& p : r) idx.push_back(p.first);
    while (true) {
      int64_t lin = 0;
      for (size_t d = 0; d < shape.size(); ++d) lin = lin * shape[d] + idx[d];
      ++got[static_cast<size_t>(lin)];
      size_t d = shape.size();
      while (d > 0) {
        --d;
        if (++idx[d] < r[d].second) break;
        idx[d] = r[d].first;
        if (d == 0) return;
      }
      if (shape.empty()) return;
    }
  }

  const Module& m_;
  DiagnosticEngine& diags_;
  Prover prover_;
};

}  // namespace

ModulePtr verifySchedule(ModulePtr m, DiagnosticEngine& diags) {
  if (!ScheduleVerifier(*m, diags).run()) return nullptr;
  return m;
}

}  // namespace etc
