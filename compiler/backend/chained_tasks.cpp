#include "compiler/backend/chained_tasks.h"

#include <optional>
#include <set>

#include "compiler/ir/prover.h"

namespace etc::backend {

using namespace etc::ir;

namespace {

bool usesCoord(const Expr& e, uint32_t c) {
  bool found = false;
  forEachLeaf(e, [&](const ExprNode& leaf) { found = found || (leaf.kind == ExprKind::Coord && leaf.id == c); });
  return found;
}

// The most that e changes when coordinate c grows by 1 (the others held); nullopt: unbounded.
std::optional<int64_t> step(const Expr& e, uint32_t c) {
  if (!usesCoord(e, c)) return 0;
  switch (e->kind) {
    case ExprKind::Coord:
      return 1;
    case ExprKind::Bounded:
      return step(e->ops[0], c);
    case ExprKind::Add: {
      int64_t s = 0;
      for (const Expr& op : e->ops) {
        std::optional<int64_t> k = step(op, c);
        if (!k || *k > (1LL << 40)) return std::nullopt;
        s += *k;
      }
      return s;
    }
    case ExprKind::Mul: {
      // One factor with c; the others literals or named consts.
      int64_t scale = 1;
      std::optional<int64_t> inner;
      for (const Expr& op : e->ops) {
        if (usesCoord(op, c)) {
          if (inner) return std::nullopt;
          inner = step(op, c);
          if (!inner) return std::nullopt;
        } else if (op->kind == ExprKind::Int || op->kind == ExprKind::Const) {
          const int64_t v = op->value < 0 ? -op->value : op->value;
          if (v > (1LL << 20)) return std::nullopt;
          scale *= v;
        } else {
          return std::nullopt;
        }
      }
      if (!inner || *inner > (1LL << 20)) return std::nullopt;
      return scale * *inner;
    }
    case ExprKind::Div:
    case ExprKind::CDiv: {
      // |a/b - a'/b| rounds to at most ceil(|a - a'| / b) for a positive literal b.
      std::optional<int64_t> b = asInt(e->ops[1]);
      if (!b || *b <= 0 || usesCoord(e->ops[1], c)) return std::nullopt;
      std::optional<int64_t> a = step(e->ops[0], c);
      if (!a) return std::nullopt;
      return (*a + *b - 1) / *b;
    }
    case ExprKind::Min:
    case ExprKind::Max: {
      int64_t s = 0;
      for (const Expr& op : e->ops) {
        std::optional<int64_t> k = step(op, c);
        if (!k) return std::nullopt;
        s = std::max(s, *k);
      }
      return s;
    }
    default:  // Mod, Load of c
      return std::nullopt;
  }
}

// Whether a notify range [lo, hi) of task p holds at most one element: proved over p's
// coordinates, or as hi = lo one step of a coordinate on, lo growing by at most 1 a step.
bool atMostOne(Prover& prover, const Task& p, const Expr& lo, const Expr& hi) {
  prover.setTask(&p);
  const bool proved = prover.lessEqual(sub(hi, lo), intConst(1)).proved();
  prover.setTask(nullptr);
  if (proved) return true;
  for (uint32_t c = 0; c < p.coords.size(); ++c) {
    if (!usesCoord(lo, c)) continue;
    const Expr next = substitute(lo, [&](const ExprNode& leaf) -> Expr {
      return leaf.kind == ExprKind::Coord && leaf.id == c ? add(coordRef(c, leaf.name), intConst(1)) : nullptr;
    });
    std::optional<int64_t> s = step(lo, c);
    if (equal(next, hi) && s && *s <= 1) return true;
  }
  return false;
}

bool hasMatmulCall(const Task& t) {
  for (const TaskStmt& s : t.body)
    if (const auto* c = std::get_if<CallStmt>(&s); c && (c->call.op == "matmul" || c->call.op == "grouped_matmul"))
      return true;
  return false;
}

// The chaining of the task waiting on event `ev` with wait `w`, or nullopt.
std::optional<ChainedTask> chainOf(const Module& m, const Prover& prover, uint32_t ti, const WaitStmt& w) {
  const Task& t = m.tasks[ti];
  const Event& e = m.events[w.event.target];
  ChainedTask c;
  c.task = ti;
  c.coord_dim.assign(t.coords.size(), -1);
  c.fixed_index.assign(e.shape.size(), nullptr);
  if (w.event.dims.size() != e.shape.size()) return std::nullopt;  // a dimension left whole is a range
  for (size_t d = 0; d < w.event.dims.size(); ++d) {
    const SliceDim& sd = w.event.dims[d];
    if (sd.is_range || hasLoad(sd.lo)) return std::nullopt;
    if (sd.lo->kind == ExprKind::Coord) {
      if (c.coord_dim[sd.lo->id] >= 0) return std::nullopt;
      c.coord_dim[sd.lo->id] = static_cast<int>(d);
    } else if (hasCoord(sd.lo)) {
      return std::nullopt;
    } else {
      c.fixed_index[d] = sd.lo;
    }
  }
  for (size_t k = 0; k < t.coords.size(); ++k)
    if (c.coord_dim[k] < 0 && !prover.lessEqual(t.grid[k], intConst(1)).proved()) c.limits.push_back(t.grid[k]);
  return c;
}

void addLimit(std::vector<Expr>& limits, const Expr& e) {
  for (const Expr& l : limits)
    if (equal(l, e)) return;
  limits.push_back(e);
}

}  // namespace

std::map<uint32_t, ChainedTask> chainedTasks(const Module& m, const std::vector<bool>& static_mega) {
  // Who waits on and who notifies each event.
  std::vector<std::vector<uint32_t>> waiters(m.events.size()), notifiers(m.events.size());
  for (uint32_t ti = 0; ti < m.tasks.size(); ++ti)
    for (const TaskStmt& s : m.tasks[ti].body) {
      if (const auto* w = std::get_if<WaitStmt>(&s)) waiters[w->event.target].push_back(ti);
      if (const auto* n = std::get_if<NotifyStmt>(&s)) notifiers[n->event.target].push_back(ti);
    }
  std::map<uint32_t, ChainedTask> out;
  Prover prover(m);  // over the syms' ranges; inside atMostOne, a notifier's coordinates too
  for (uint32_t ti = 0; ti < m.tasks.size(); ++ti) {
    const Task& t = m.tasks[ti];
    if (!static_mega[ti] || t.body.empty() || hasMatmulCall(t)) continue;
    const auto* w = std::get_if<WaitStmt>(&t.body[0]);
    if (gridReadsData(t) || !w) continue;
    size_t nwaits = 0;
    for (const TaskStmt& s : t.body) nwaits += std::holds_alternative<WaitStmt>(s);
    const uint32_t ev = w->event.target;
    if (nwaits != 1 || waiters[ev].size() != 1) continue;
    std::optional<ChainedTask> c = chainOf(m, prover, ti, *w);
    if (!c) continue;
    const Event& e = m.events[ev];
    bool ok = !notifiers[ev].empty();
    std::set<uint32_t> seen;
    for (uint32_t pi : notifiers[ev]) {
      if (!seen.insert(pi).second) continue;
      const Task& p = m.tasks[pi];
      ok = ok && pi != ti && static_mega[pi];
      for (const TaskStmt& s : p.body) {
        const auto* n = std::get_if<NotifyStmt>(&s);
        if (!ok || !n || n->event.target != ev) continue;
        for (size_t d = 0; d < e.shape.size() && ok; ++d) {
          const bool whole = d >= n->event.dims.size();
          const bool range = whole || n->event.dims[d].is_range;
          const Expr lo = whole ? intConst(0) : n->event.dims[d].lo;
          if (hasLoad(lo) || (!whole && range && hasLoad(n->event.dims[d].hi))) ok = false;
          if (!ok || !range) continue;
          const Expr hi = whole ? e.shape[d] : n->event.dims[d].hi;
          if (atMostOne(prover, p, lo, hi)) continue;
          const Expr len = sub(hi, lo);
          if (hasCoord(len) || hasLoad(len)) ok = false;
          else addLimit(c->limits, len);
        }
      }
    }
    // A limit above 1 at every value of the syms (a notify of a whole row of heads) never lets
    // the chaining hold.
    for (const Expr& l : c->limits) ok = ok && !prover.lessEqual(intConst(2), l).proved();
    if (ok) out.emplace(ev, std::move(*c));
  }
  return out;
}

}  // namespace etc::backend
