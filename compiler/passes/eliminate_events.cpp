// eliminate-events: simplifies the task-level event structure without losing any ordering.
// Runs after infer-events, and on hand-written events alike; four rules, in this order:
//
//  1. Coarsening. An event whose every notify covers the whole event (every waiter then waits
//     for every notifier), or whose every wait covers the whole event while every notify is
//     one element, becomes one counter: `[1] init <total notifies>`, every notify and wait `[0]`.
//     A producer tile then does one atomic instead of one per element.
//  2. Duplicates. Two events with the same shape, the same initial counts and the same notify
//     statements (same task, same subscript, same place in the body modulo other notifies)
//     reach zero at the same moments, element for element: the waits of the later one move to
//     the earlier one, and the later one goes.
//  3. Transitive reduction. A wait W of task grid C on event E is removed when every tile that
//     notifies an element some C tile waits on through W is already ordered before that C tile
//     through the remaining waits and notifies. The proof is symbolic, over every sym value: the
//     tiles a (notify, wait) pair links are described per notifier coordinate as "any" or
//     "equal to waiter coordinate m" (exact for the patterns infer-events makes: single
//     counters, whole-event notifies, one-to-one and many-to-one points); paths compose these
//     relations, and W goes only when a path's relation contains W's own (an over-approximation
//     of it). Along a path a wait must come before the notify that continues it, the first
//     notify may not come before W's notifier's notify and the last wait not after W, so the
//     writes W published and the statements W guarded stay ordered.
//  4. Joining. Two events that infer-events made and that one task grid alone waits on, each
//     through one wait, with the same shape and the same subscript, the waits next to each
//     other (no call between them), become one event whose initial counts are the sums: the
//     notifies of the second count towards the first, and the second wait goes. Each wait is a round trip to L2 even when
//     already satisfied, one after the other: a decode step's kv_append waited on its q, k and
//     v matmuls in turn, three on every layer's critical path.
//  5. Clean-up. An event that no task waits on any more (after rules 2 and 3 took its waits)
//     loses its notifies and its declaration.
//
// Safety rests on what a wait means: with every element receiving exactly its initial count of
// notifies (verify-schedule checks the totals), `wait E[e]` returns after every notifier of e.
// Only events and waits of tasks that run in exactly one graph are touched: a task shared by
// graphs (or run by none) keeps its statements and the events it mentions.
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "compiler/ir/prover.h"
#include "compiler/passes/module_rebuild.h"
#include "compiler/passes/passes.h"
#include "compiler/passes/tiling.h"

namespace etc {

namespace {

using namespace ir;

// One statement of a task body.
struct Site {
  uint32_t task;
  uint32_t index;
  bool operator<(const Site& o) const { return std::tie(task, index) < std::tie(o.task, o.index); }
  bool operator==(const Site& o) const { return task == o.task && index == o.index; }
};

// How the tiles of a notifying grid P relate to the tiles of a waiting grid C through one
// (notify, wait) pair: per P coordinate, kAny (no constraint), the C coordinate m it equals, or
// (a notify of T elements a tile, `[p * T : p * T + T]`) m + T * kBlock: p = c_m / T.
constexpr int kAny = -1;
constexpr int kBlock = 1 << 16;
using Relation = std::vector<int>;
bool isBlock(int v) { return v >= kBlock; }

// e with every part that names no coordinate nor data and that the ranges hold at one value
// replaced by that value (`cdiv(16, B)` is 1 where B is in [16, 31]), for simplify to finish.
Expr foldPoints(const Expr& e, const RangeEnv& env) {
  if (!e || e->ops.empty() || hasLoad(e)) return e;
  if (!hasCoord(e)) {
    Interval b = bounds(e, env);
    if (b.lo == b.hi) return intConst(b.lo);
  }
  std::vector<Expr> ops;
  for (const Expr& op : e->ops) ops.push_back(foldPoints(op, env));
  auto fold = [&](Expr (*f)(Expr, Expr)) {
    Expr out = ops[0];
    for (size_t i = 1; i < ops.size(); ++i) out = f(out, ops[i]);
    return out;
  };
  switch (e->kind) {
    case ExprKind::Add: return fold(add);
    case ExprKind::Mul: return fold(mul);
    case ExprKind::Min: return fold(min);
    case ExprKind::Max: return fold(max);
    case ExprKind::Div: return floorDiv(ops[0], ops[1]);
    case ExprKind::Mod: return mod(ops[0], ops[1]);
    case ExprKind::CDiv: return cdiv(ops[0], ops[1]);
    default: return e;
  }
}

class Eliminator {
 public:
  explicit Eliminator(Module& m) : m_(m), whole_(m), prover_(&whole_) {}

  ModulePtr run(ModulePtr self) {
    dropped_.resize(m_.tasks.size());
    for (uint32_t t = 0; t < m_.tasks.size(); ++t) dropped_[t].assign(m_.tasks[t].body.size(), false);
    assignGraphs();
    for (uint32_t e = 0; e < m_.events.size(); ++e)
      if (eligible_[e]) coarsen(e);
    mergeDuplicates();
    for (uint32_t g = 0; g < m_.graphs.size(); ++g) reduce(g);
    joinWaits();
    return cleanUp(std::move(self));
  }

 private:
  // ---- which graph each task and event belongs to ----------------------------------------

  void assignGraphs() {
    task_graph_.assign(m_.tasks.size(), -1);
    std::vector<int> runs(m_.tasks.size(), 0);
    for (uint32_t g = 0; g < m_.graphs.size(); ++g)
      for (const GraphStmt& st : m_.graphs[g].body)
        if (const auto* r = std::get_if<RunStmt>(&st)) {
          ++runs[r->task];
          task_graph_[r->task] = static_cast<int>(g);
        }
    for (uint32_t t = 0; t < m_.tasks.size(); ++t)
      if (runs[t] != 1) task_graph_[t] = -1;
    event_graph_.assign(m_.events.size(), -2);  // -2: not mentioned yet
    eligible_.assign(m_.events.size(), true);
    had_waits_.assign(m_.events.size(), false);
    for (uint32_t t = 0; t < m_.tasks.size(); ++t)
      for (const TaskStmt& st : m_.tasks[t].body) {
        std::optional<uint32_t> ev;
        if (const auto* w = std::get_if<WaitStmt>(&st)) ev = w->event.target;
        if (const auto* n = std::get_if<NotifyStmt>(&st)) ev = n->event.target;
        if (!ev) continue;
        if (std::holds_alternative<WaitStmt>(st)) had_waits_[*ev] = true;
        int& g = event_graph_[*ev];
        if (task_graph_[t] < 0 || (g != -2 && g != task_graph_[t])) eligible_[*ev] = false;
        g = task_graph_[t];
      }
    for (uint32_t e = 0; e < m_.events.size(); ++e)
      if (event_graph_[e] < 0) eligible_[e] = false;
  }

  // ---- statements ---------------------------------------------------------------------------

  bool deleted(const Site& s) const { return dropped_[s.task][s.index]; }
  void drop(const Site& s) { dropped_[s.task][s.index] = true; }
  const TaskStmt& stmt(const Site& s) const { return m_.tasks[s.task].body[s.index]; }
  const Slice& eventSlice(const Site& s) const {
    const TaskStmt& st = m_.tasks[s.task].body[s.index];
    if (const auto* w = std::get_if<WaitStmt>(&st)) return w->event;
    return std::get<NotifyStmt>(st).event;
  }
  // Gives statement s the event slice `slice`, moving s in the sites' index when its event changes
  // (rebuilding the index after every retarget made the rules quadratic again in the number of
  // statements they retarget: Qwen3-0.6B with --reuse-temps and the folds, 10.6 s).
  void setEventSlice(const Site& s, Slice slice) {
    TaskStmt& st = m_.tasks[s.task].body[s.index];
    const bool is_wait = std::holds_alternative<WaitStmt>(st);
    Slice& cur = is_wait ? std::get<WaitStmt>(st).event : std::get<NotifyStmt>(st).event;
    if (index_valid_ && cur.target != slice.target) {
      std::vector<std::vector<Site>>& index = is_wait ? wait_sites_ : notify_sites_;
      std::vector<Site>& from = index[cur.target];
      from.erase(std::find(from.begin(), from.end(), s));
      std::vector<Site>& to = index[slice.target];
      to.insert(std::lower_bound(to.begin(), to.end(), s), s);
    }
    cur = std::move(slice);
  }
  void retarget(const Site& s, uint32_t event) {
    Slice slice = eventSlice(s);
    slice.target = event;
    setEventSlice(s, std::move(slice));
  }

  // The live notifies and waits of event e, in task and statement order.
  std::vector<Site> sites(uint32_t e, bool waits) const {
    if (!index_valid_) indexSites();
    std::vector<Site> out;
    for (const Site& s : (waits ? wait_sites_ : notify_sites_)[e])
      if (!deleted(s)) out.push_back(s);
    return out;
  }
  // Every event's wait and notify statements. sites() is asked for each hop of the transitive
  // reduction's search; scanning the module for each made that rule quadratic in the model's
  // depth (Qwen3-0.6B's 28 layers: 10.8 s of eliminate-events, where Llama's 16 took 1.0).
  void indexSites() const {
    wait_sites_.assign(m_.events.size(), {});
    notify_sites_.assign(m_.events.size(), {});
    for (uint32_t t = 0; t < m_.tasks.size(); ++t)
      for (uint32_t i = 0; i < m_.tasks[t].body.size(); ++i) {
        const TaskStmt& st = m_.tasks[t].body[i];
        if (const auto* w = std::get_if<WaitStmt>(&st)) wait_sites_[w->event.target].push_back({t, i});
        if (const auto* n = std::get_if<NotifyStmt>(&st)) notify_sites_[n->event.target].push_back({t, i});
      }
    index_valid_ = true;
  }

  // Statements of the same kind in a row are interchangeable: what precedes a notify (apart
  // from other notifies) is what it publishes, what follows a wait (apart from other waits) is
  // what it guards. Deleted statements are still counted: deleting only moves others closer.
  template <class Kind>
  uint32_t segment(const Site& s) const {
    uint32_t n = 0;
    for (uint32_t i = 0; i < s.index; ++i) n += !std::holds_alternative<Kind>(m_.tasks[s.task].body[i]);
    return n;
  }
  // A notify at `a` publishes at least what one at `b` of the same task publishes.
  bool publishesAtLeast(const Site& a, const Site& b) const {
    return a.task == b.task && segment<NotifyStmt>(a) >= segment<NotifyStmt>(b);
  }
  // A wait at `a` guards at least what one at `b` of the same task guards.
  bool guardsAtLeast(const Site& a, const Site& b) const {
    return a.task == b.task && segment<WaitStmt>(a) <= segment<WaitStmt>(b);
  }

  // ---- subscripts -----------------------------------------------------------------------

  // Over a piece, the parts of e that are one value there are that value: the prover's
  // interval bounds lose `B * min(max(32 - B, 0), 1) - B` (0 where B < 32) otherwise.
  Expr here(const Expr& e) { return piece_ ? foldPoints(e, prover_->rangeEnv()) : e; }
  bool provedEqual(const Task* t, const Expr& a, const Expr& b) {
    if (equal(a, b)) return true;
    if (hasLoad(a) || hasLoad(b)) return false;
    prover_->setTask(t);
    return prover_->equalValues(here(a), here(b)).proved();
  }
  bool provedLessEqual(const Expr& a, const Expr& b) {
    if (equal(a, b)) return true;
    if (hasLoad(a) || hasLoad(b)) return false;
    prover_->setTask(nullptr);
    return prover_->lessEqual(here(a), here(b)).proved();
  }
  bool provedPositive(const Expr& a) {
    if (hasLoad(a)) return false;
    prover_->setTask(nullptr);
    return prover_->positive(here(a)).proved();
  }

  // Every subscript entry covers the whole event.
  bool coversWhole(const Task& t, const Slice& s, const Event& e) {
    if (!s.has_subscript) return true;
    for (size_t d = 0; d < s.dims.size(); ++d) {
      const SliceDim& sd = s.dims[d];
      if (sd.is_range) {
        if (!provedEqual(&t, sd.lo, intConst(0)) || !provedEqual(&t, sd.hi, e.shape[d])) return false;
      } else if (!provedEqual(&t, sd.lo, intConst(0)) || !provedEqual(nullptr, e.shape[d], intConst(1))) {
        return false;
      }
    }
    return true;
  }

  // One subscript entry of a notify or wait, classified.
  struct DimKind {
    enum { Whole, Coord, Point, Block, Other } kind = Other;
    uint32_t coord = 0;  // Coord, Block: the task coordinate it is / the tile is of
    int64_t tile = 0;    // Block: the tile's elements, `[c * tile : c * tile + tile]`
    Expr point;          // Point: a value free of coordinates and data
  };

  // G is at least the extent of t's grid dimension k (so min(c, G) is c there, and min(c + 1, G)
  // is c + 1): G is that extent, or the prover shows it (over the piece being proved in: a
  // notify of a grid that is empty outside a range is clamped at that grid's extent, which is
  // the notifier's over the range).
  bool atLeastExtent(const Task& t, uint32_t k, const Expr& g) {
    return equal(g, t.grid[k]) || (!hasCoord(g) && provedLessEqual(t.grid[k], g));
  }
  // `min(x, G...)` is x: every other operand G is at least the extent of t's grid dimension k
  // (x is at most that, being c or c + 1), or x plus a constant of at least 0.
  bool minIs(const Task& t, uint32_t k, const Expr& e, const Expr& x) {
    if (equal(e, x)) return true;
    if (e->kind != ExprKind::Min) return false;
    bool found = false;
    for (const Expr& op : e->ops) {
      if (!found && equal(op, x)) {
        found = true;
        continue;
      }
      auto above = asInt(inlineConsts(sub(op, x)));
      if (!(above && *above >= 0) && !atLeastExtent(t, k, op)) return false;
    }
    return found;
  }
  // `c` itself, or `min(c, G)` with G at least the extent of c's grid dimension (so c < G).
  bool isCoord(const Task& t, const Expr& e, uint32_t& k) {
    if (e->kind == ExprKind::Coord) {
      k = e->id;
      return true;
    }
    if (e->kind != ExprKind::Min) return false;
    for (const Expr& c : e->ops)
      if (c->kind == ExprKind::Coord && c->id < t.grid.size() && minIs(t, c->id, e, c)) {
        k = c->id;
        return true;
      }
    return false;
  }
  // `c + 1`, or `min(c + 1, G)` as above.
  bool isCoordPlusOne(const Task& t, const Expr& e, uint32_t k) {
    return minIs(t, k, e, add(coordRef(k, t.coords[k]), intConst(1)));
  }

  DimKind classifyDim(const Task& t, const Slice& s, const Event& e, size_t d) {
    DimKind out;
    if (!s.has_subscript || d >= s.dims.size()) {
      out.kind = DimKind::Whole;
      return out;
    }
    SliceDim sd = s.dims[d];
    if (hasLoad(sd.lo) || (sd.is_range && hasLoad(sd.hi))) return out;
    if (piece_) {
      // Over a piece, a subscript clamped at grids that are empty there, or whole there, is
      // simpler: `min(B * min(cdiv(16, B) - 1, 1), i)` is `i` where B < 16.
      prover_->setTask(&t);
      RangeEnv env = prover_->rangeEnv();
      sd.lo = simplify(foldPoints(sd.lo, env), env);
      if (sd.is_range) sd.hi = simplify(foldPoints(sd.hi, env), env);
    }
    uint32_t k = 0;
    if (sd.is_range) {
      if (provedEqual(&t, sd.lo, intConst(0)) && provedEqual(&t, sd.hi, e.shape[d])) {
        out.kind = DimKind::Whole;
      } else if (isCoord(t, sd.lo, k) && isCoordPlusOne(t, sd.hi, k)) {  // one element: [c, c + 1)
        out.kind = DimKind::Coord;
        out.coord = k;
      } else if (sd.lo->kind == ExprKind::Mul && sd.lo->ops.size() == 2 && sd.lo->ops[0]->kind == ExprKind::Coord) {
        // [c * T : c * T + T], T > 1 (an attention task of several cache heads before the
        // o projection's K parts of one head).
        auto tile = asInt(inlineConsts(sd.lo->ops[1]));
        if (tile && *tile > 1 && *tile < 1024 && equal(sd.hi, add(sd.lo, intConst(*tile)))) {
          out.kind = DimKind::Block;
          out.coord = sd.lo->ops[0]->id;
          out.tile = *tile;
        }
      }
      return out;
    }
    if (!hasCoord(sd.lo)) {
      // A point in a dimension of extent 1 is the whole dimension (the verifier keeps it in).
      out.kind = provedEqual(nullptr, e.shape[d], intConst(1)) ? DimKind::Whole : DimKind::Point;
      out.point = sd.lo;
    } else if (isCoord(t, sd.lo, k)) {
      out.kind = DimKind::Coord;
      out.coord = k;
    }
    return out;
  }

  // The tiles of P (the notify's task) linked to a tile c of C (the wait's task): p's notify
  // covers an element c's wait covers. `exact`: the result is exactly that set (nullopt when
  // it cannot be described); otherwise a superset. An empty optional with `*empty` set: no
  // tile is linked at all.
  std::optional<Relation> relate(const Site& n, const Site& w, bool exact, bool* empty = nullptr) {
    const Task& p = m_.tasks[n.task];
    const Task& c = m_.tasks[w.task];
    const Slice& ns = std::get<NotifyStmt>(stmt(n)).event;
    const Slice& ws = std::get<WaitStmt>(stmt(w)).event;
    const Event& e = m_.events[ns.target];
    Relation rel(p.grid.size(), kAny);
    for (size_t d = 0; d < e.shape.size(); ++d) {
      DimKind a = classifyDim(p, ns, e, d), b = classifyDim(c, ws, e, d);
      if (a.kind == DimKind::Whole && b.kind == DimKind::Whole) {
        // Both cover the dimension: linked as long as it has an element.
        if (exact && !provedPositive(e.shape[d])) return std::nullopt;
      } else if (a.kind == DimKind::Whole && (b.kind == DimKind::Coord || b.kind == DimKind::Point)) {
        // A point is inside the event (the verifier checks subscripts).
      } else if ((a.kind == DimKind::Coord || a.kind == DimKind::Point) && b.kind == DimKind::Whole) {
      } else if (a.kind == DimKind::Coord && b.kind == DimKind::Coord) {
        if (rel[a.coord] != kAny && rel[a.coord] != static_cast<int>(b.coord)) {
          if (exact) return std::nullopt;
          continue;  // dropping a constraint only enlarges the set
        }
        rel[a.coord] = static_cast<int>(b.coord);
      } else if (a.kind == DimKind::Block && b.kind == DimKind::Coord && exact) {
        const int v = static_cast<int>(b.coord + a.tile * kBlock);
        if (rel[a.coord] != kAny && rel[a.coord] != v) return std::nullopt;
        rel[a.coord] = v;
      } else if (a.kind == DimKind::Point && b.kind == DimKind::Point) {
        if (provedEqual(nullptr, a.point, b.point)) continue;
        if (!exact && empty && !hasLoad(a.point) && !hasLoad(b.point)) {
          prover_->setTask(nullptr);
          if (prover_->lessThan(a.point, b.point).proved() || prover_->lessThan(b.point, a.point).proved()) {
            *empty = true;
            return std::nullopt;
          }
        }
        if (exact) return std::nullopt;
      } else if (exact) {
        return std::nullopt;
      }
    }
    return rel;
  }

  // ---- rule 1: coarsening ----------------------------------------------------------------

  Expr gridSize(const Task& t) const {
    Expr n = intConst(1);
    for (const Expr& x : t.grid) n = mul(n, x);
    return n;
  }

  void coarsen(uint32_t ev) {
    Event& e = m_.events[ev];
    bool single = true;
    for (const Expr& d : e.shape) single &= asInt(d) == 1;
    if (single) return;  // already one counter (or a `[]` event, which is one)
    if (hasCoord(e.init) || hasLoad(e.init)) return;
    // An event that may be empty (a grid whose rows the syms can make 0) coarsens only when
    // every notify covers it whole: the one counter then gets the count every element has.
    Expr elements = intConst(1);
    bool nonempty = true;
    for (const Expr& d : e.shape) {
      nonempty = nonempty && provedPositive(d);
      elements = mul(elements, d);
    }
    std::vector<Site> notifies = sites(ev, false), waits = sites(ev, true);
    if (notifies.empty() || waits.empty()) return;
    Expr total = intConst(0);
    for (const Site& s : notifies) total = add(total, gridSize(m_.tasks[s.task]));
    if (hasLoad(total)) return;
    bool notifies_whole = true, waits_whole = true, notifies_points = true;
    for (const Site& s : notifies) {
      const Slice& sl = std::get<NotifyStmt>(stmt(s)).event;
      notifies_whole = notifies_whole && coversWhole(m_.tasks[s.task], sl, e);
      bool points = sl.has_subscript && sl.dims.size() == e.shape.size();
      for (const SliceDim& d : sl.dims) points &= !d.is_range;
      notifies_points &= points;
    }
    for (const Site& s : waits)
      waits_whole = waits_whole && coversWhole(m_.tasks[s.task], std::get<WaitStmt>(stmt(s)).event, e);
    Expr init;
    if (notifies_whole && provedEqual(nullptr, e.init, total)) {
      // Every notify reaches every element: each element counts all of them, as will the one.
      init = e.init;
    } else if (nonempty && waits_whole && notifies_points && provedEqual(nullptr, mul(e.init, elements), total)) {
      // Every wait needs every element, each notify reaches one: the one counts them all.
      init = simplify(total, m_.symRanges());
    } else {
      return;
    }
    e.shape = {intConst(1)};
    e.shape_ranges.clear();
    e.init_coords.clear();
    e.init = init;
    for (const Site& s : notifies) setEventSlice(s, firstElement(ev, eventSlice(s).range));
    for (const Site& s : waits) setEventSlice(s, firstElement(ev, eventSlice(s).range));
  }

  static Slice firstElement(uint32_t ev, SourceRange range) {
    Slice s;
    s.target = ev;
    s.has_subscript = true;
    s.range = range;
    SliceDim d;
    d.lo = intConst(0);
    d.range = range;
    s.dims.push_back(d);
    return s;
  }

  // ---- rule 2: duplicates ----------------------------------------------------------------

  static bool sameShape(const Event& a, const Event& b) {
    if (a.shape.size() != b.shape.size()) return false;
    for (size_t d = 0; d < a.shape.size(); ++d)
      if (!equal(a.shape[d], b.shape[d])) return false;
    return true;
  }

  static bool sameSlice(const Slice& a, const Slice& b) {
    if (a.has_subscript != b.has_subscript || a.dims.size() != b.dims.size()) return false;
    for (size_t d = 0; d < a.dims.size(); ++d) {
      const SliceDim &x = a.dims[d], &y = b.dims[d];
      if (x.is_range != y.is_range || !equal(x.lo, y.lo)) return false;
      if (x.is_range && !equal(x.hi, y.hi)) return false;
    }
    return true;
  }

  bool sameNotifies(uint32_t a, uint32_t b) {
    std::vector<Site> na = sites(a, false), nb = sites(b, false);
    if (na.empty() || na.size() != nb.size()) return false;
    std::vector<bool> used(na.size(), false);
    for (const Site& y : nb) {
      bool found = false;
      for (size_t i = 0; i < na.size() && !found; ++i) {
        const Site& x = na[i];
        if (used[i] || x.task != y.task || segment<NotifyStmt>(x) != segment<NotifyStmt>(y)) continue;
        if (!sameSlice(std::get<NotifyStmt>(stmt(x)).event, std::get<NotifyStmt>(stmt(y)).event)) continue;
        used[i] = found = true;
      }
      if (!found) return false;
    }
    return true;
  }

  void mergeDuplicates() {
    // Duplicates have the same notifying tasks (sameNotifies), so each event is compared only
    // with the earlier events of its graph notified by the same tasks, in event order as before,
    // rather than with every earlier event (quadratic in a model's events). A merge drops only
    // the merged event's notifies, so the others' tasks stay as grouped here.
    std::map<std::pair<int, std::vector<uint32_t>>, std::vector<uint32_t>> by_notifiers;
    for (uint32_t b = 0; b < m_.events.size(); ++b) {
      if (!eligible_[b]) continue;
      std::vector<uint32_t> notifiers;
      for (const Site& s : sites(b, false)) notifiers.push_back(s.task);
      if (notifiers.empty()) continue;  // nothing to be the same as
      std::vector<uint32_t>& earlier = by_notifiers[{event_graph_[b], std::move(notifiers)}];
      for (uint32_t a : earlier) {
        if (merged_into_.count(a)) continue;
        const Event &ea = m_.events[a], &eb = m_.events[b];
        if (!sameShape(ea, eb) || !equal(ea.init, eb.init) || !sameNotifies(a, b)) continue;
        for (const Site& s : sites(b, true)) retarget(s, a);
        for (const Site& s : sites(b, false)) drop(s);
        merged_into_[b] = a;
        break;
      }
      earlier.push_back(b);
    }
  }

  // ---- rule 4: joining -------------------------------------------------------------------

  void joinWaits() {
    // Each event's one live wait, if it has exactly one. A join drops the wait of the event that
    // goes (which is then skipped) and moves only notifies, so the others' stay as listed here.
    std::vector<std::optional<Site>> only_wait(m_.events.size());
    for (uint32_t e = 0; e < m_.events.size(); ++e)
      if (eligible_[e] && m_.events[e].inferred && !merged_into_.count(e)) {
        const std::vector<Site> w = sites(e, true);
        if (w.size() == 1) only_wait[e] = w[0];
      }
    for (uint32_t b = 0; b < m_.events.size(); ++b) {
      if (!only_wait[b] || joined_.count(b)) continue;
      const Site wb = *only_wait[b];
      for (uint32_t a = 0; a < b; ++a) {
        if (!only_wait[a] || only_wait[a]->task != wb.task || event_graph_[a] != event_graph_[b] || joined_.count(a))
          continue;
        const Site wa = *only_wait[a];
        if (segment<WaitStmt>(wa) != segment<WaitStmt>(wb)) continue;
        Event &ea = m_.events[a], &eb = m_.events[b];
        if (sameShape(ea, eb) &&
            sameSlice(std::get<WaitStmt>(stmt(wa)).event, std::get<WaitStmt>(stmt(wb)).event)) {
          // Coordinates are positional: both inits read the same element's coordinates.
          if (ea.init_coords.size() < eb.init_coords.size()) ea.init_coords = eb.init_coords;
          ea.init = add(ea.init, eb.init);
          for (const Site& n : sites(b, false)) retarget(n, a);
          drop(wb);
          joined_.insert(b);
          break;
        }
        // One counter beside an event of any shape (a grid whose tasks notify every waiter, such
        // as attention's one-part grid of all cache heads a task before the o projection, beside
        // one that notifies its columns' waiters): its notifies become notifies of the other event
        // whole, every element of which then also counts them.
        const bool a_single = singleCounter(a), b_single = singleCounter(b);
        if (a_single == b_single) continue;
        const uint32_t keep = a_single ? b : a, gone = a_single ? a : b;
        if (wholeNotifyAdds(keep, gone) > kMaxJoinedAdds) continue;
        Event& ek = m_.events[keep];
        ek.init = add(ek.init, m_.events[gone].init);
        Slice whole;
        whole.target = keep;
        whole.has_subscript = true;
        for (const Expr& d : ek.shape) {
          SliceDim sd;
          sd.is_range = true;
          sd.lo = intConst(0);
          sd.hi = d;
          whole.dims.push_back(sd);
        }
        for (const Site& n : sites(gone, false)) {
          whole.range = eventSlice(n).range;
          setEventSlice(n, whole);
        }
        drop(a_single ? wa : wb);
        joined_.insert(gone);
        if (gone == b) break;
        // `a` went: b may still join an earlier event.
      }
    }
  }

  // The atomic adds that `gone`'s notifies would make as notifies of `keep` whole, at the
  // syms' upper bounds: each of its notifying tasks adds to every element of keep.
  int64_t wholeNotifyAdds(uint32_t keep, uint32_t gone) const {
    Expr elements = intConst(1);
    for (const Expr& d : m_.events[keep].shape) elements = mul(elements, d);
    Expr tasks = intConst(0);
    for (const Site& s : sites(gone, false)) tasks = add(tasks, gridSize(m_.tasks[s.task]));
    if (hasLoad(tasks) || hasLoad(elements)) return std::numeric_limits<int64_t>::max();
    return tiling::upperBound(m_, mul(tasks, elements));
  }
  // A join that would cost more adds than this is not made (a wait is about one round trip to
  // L2; a notify's adds are fire-and-forget, 32 at a time).
  static constexpr int64_t kMaxJoinedAdds = int64_t{1} << 16;

  // An event of one element (`[1]`, or `[]`) whose initial count names no coordinate and whose
  // every notify adds one (a point, or no subscript). A keyed event whose waiter dimension has
  // extent 1 has that shape too, but its notifies are clamped ranges, empty for the tiles that
  // miss the one waiter: as notifies of another event whole they would all count.
  bool singleCounter(uint32_t ev) const {
    const Event& e = m_.events[ev];
    for (const Expr& d : e.shape)
      if (asInt(d) != 1) return false;
    if (hasCoord(e.init) || hasLoad(e.init)) return false;
    for (const Site& s : sites(ev, false)) {
      const Slice& sl = std::get<NotifyStmt>(stmt(s)).event;
      for (const SliceDim& d : sl.dims)
        if (d.is_range) return false;
    }
    return true;
  }

  // ---- rule 3: transitive reduction ------------------------------------------------------

  // R: P -> X composed with S: X -> Y, as a relation P -> Y contained in the composition (every
  // p, y it links have an x between them), or nullopt when that cannot be shown.
  std::optional<Relation> compose(const Relation& r, const Task& p, const Relation& s, const Task& x,
                                  const Task& y) {
    Relation out(r.size(), kAny);
    std::vector<int> from_p(x.grid.size(), kAny);  // X coordinate j -> the P coordinate fixing it
    for (size_t k = 0; k < r.size(); ++k)
      if (r[k] != kAny) {
        if (isBlock(r[k])) return std::nullopt;  // p_k = x_m / T: not followed further
        if (from_p[r[k]] != kAny) return std::nullopt;  // two P coordinates tied together
        from_p[r[k]] = static_cast<int>(k);
      }
    for (size_t j = 0; j < x.grid.size(); ++j) {
      int k = from_p[j], m = s[j];
      if (m != kAny && isBlock(m)) {
        // x_j = y_c / T for y's coordinate c: one for every y tile where y's extent is at most
        // T times x's; x_j tied to a P coordinate would tie p to y_c / T, which is not kept.
        const int c = m % kBlock, tile = m / kBlock;
        if (k != kAny || !provedLessEqual(y.grid[c], mul(x.grid[j], intConst(tile)))) return std::nullopt;
        continue;
      }
      if (k != kAny && m != kAny) {
        out[k] = m;  // x_j = p_k and x_j = y_m
      } else if (k != kAny) {
        if (!provedLessEqual(p.grid[k], x.grid[j])) return std::nullopt;  // x_j = p_k must exist
      } else if (m != kAny) {
        if (!provedLessEqual(y.grid[m], x.grid[j])) return std::nullopt;  // x_j = y_m must exist
      } else if (!provedPositive(x.grid[j])) {
        return std::nullopt;  // some x_j must exist
      }
    }
    return out;
  }

  // `got` links at least the tiles `need` links: each of its constraints is one of need's.
  static bool contains(const Relation& got, const Relation& need) {
    for (size_t k = 0; k < got.size(); ++k)
      if (got[k] != kAny && got[k] != need[k]) return false;
    return true;
  }

  // Is every tile p of n's task that `need` links to a tile c of w's task ordered before c by
  // a chain of live waits other than w, starting at a notify that publishes at least what n
  // does and ending at a wait that guards at least what w does?
  // The search only follows waits of tasks run no later than w's task in the graph: a path
  // through a later task is not looked for (a missed path only keeps a wait). Lowered programs
  // order every event forwards, and without the bound a deep model (a decode step of 28
  // layers) explores everything downstream of each notifier for each wait.
  bool orderedElsewhere(const Site& n, const Site& w, const Relation& need, const std::set<uint32_t>& in_graph) {
    struct State {
      Site wait;
      Relation rel;
      bool operator<(const State& o) const { return std::tie(wait, rel) < std::tie(o.wait, o.rel); }
    };
    std::set<State> seen;
    std::vector<State> stack;
    const Task& p = m_.tasks[n.task];
    // Hops from the notifies at `from` (a task) that `ok` accepts.
    auto hops = [&](uint32_t from, auto ok, auto each) {
      const Task& t = m_.tasks[from];
      for (uint32_t i = 0; i < t.body.size(); ++i) {
        const auto* ns = std::get_if<NotifyStmt>(&t.body[i]);
        Site nsite{from, i};
        if (!ns || deleted(nsite) || !ok(nsite)) continue;
        for (const Site& ws : sites(ns->event.target, true)) {
          if (ws == w || ws.task == from || !in_graph.count(ws.task) || emptyHere(ws.task)) continue;
          if (run_position_[ws.task] > run_position_[w.task]) continue;
          if (auto rel = relate(nsite, ws, true)) each(ws, *rel);
        }
      }
    };
    hops(n.task, [&](const Site& s) { return publishesAtLeast(s, n); },
         [&](const Site& ws, const Relation& rel) {
           if (seen.insert({ws, rel}).second) stack.push_back({ws, rel});
         });
    while (!stack.empty()) {
      State st = stack.back();
      stack.pop_back();
      if (st.wait.task == w.task && guardsAtLeast(st.wait, w) && contains(st.rel, need)) return true;
      const Task& x = m_.tasks[st.wait.task];
      hops(st.wait.task, [&](const Site& s) { return s.index > st.wait.index; },
           [&](const Site& ws, const Relation& rel) {
             auto composed = compose(st.rel, p, rel, x, m_.tasks[ws.task]);
             if (composed && seen.insert({ws, *composed}).second) stack.push_back({ws, *composed});
           });
    }
    return false;
  }

  // A wait that a data grid's task past its extent skips: one that does not order the data its
  // extents read (cached: the answer looks at every task's notifies).
  bool skippableWait(const Site& w) {
    const Task& t = m_.tasks[w.task];
    if (!gridReadsData(t)) return false;
    const uint32_t ev = std::get<WaitStmt>(stmt(w)).event.target;
    auto [it, fresh] = orders_data_.try_emplace({w.task, ev}, false);
    if (fresh) it->second = waitOrdersGridData(m_, t, ev);
    return !it->second;
  }

  // The task has no tile over the piece being proved in.
  bool emptyHere(uint32_t task) const { return piece_ && piece_->empty[task]; }

  // Over the whole range, or else piece by piece: a path through a grid that is empty for some
  // sym values orders nothing there (a plan by range's grids, a megakernel per range's), and
  // another path, through the grids of that range, may order the same tiles.
  bool redundant(const Site& w, const std::set<uint32_t>& in_graph) {
    if (redundantHere(w, in_graph)) return true;
    if (pieces_.size() < 2) return false;
    bool all = true;
    for (const Piece& p : pieces_) {
      piece_ = &p;
      prover_ = p.prover.get();
      all = p.empty[w.task] || redundantHere(w, in_graph);
      if (!all) break;
    }
    piece_ = nullptr;
    prover_ = &whole_;
    return all;
  }

  bool redundantHere(const Site& w, const std::set<uint32_t>& in_graph) {
    uint32_t ev = std::get<WaitStmt>(stmt(w)).event.target;
    std::vector<Site> notifies;
    for (const Site& n : sites(ev, false))
      if (in_graph.count(n.task)) notifies.push_back(n);
    if (notifies.empty()) return false;  // nothing to be redundant with; verify-schedule's business
    for (const Site& n : notifies) {
      if (emptyHere(n.task)) continue;
      if (n.task == w.task) return false;
      bool empty = false;
      std::optional<Relation> need = relate(n, w, false, &empty);
      if (empty) continue;
      if (!need || !orderedElsewhere(n, w, *need, in_graph)) return false;
    }
    return true;
  }

  // The pieces of graph g's one sym: maximal runs of its values over which each grid is empty
  // throughout or non-empty throughout, found by evaluating the extents at every value (at
  // most kMaxTriedSymValues of them). None where the grids use another sym or read data, or where
  // every grid keeps its state over the whole range.
  void findPieces(const std::vector<uint32_t>& order) {
    pieces_.clear();
    std::set<uint32_t> syms;
    for (uint32_t t : order)
      for (const Expr& e : m_.tasks[t].grid) {
        if (hasLoad(e)) return;
        forEachLeaf(e, [&](const ExprNode& n) {
          if (n.kind == ExprKind::Sym) syms.insert(n.id);
        });
      }
    if (syms.size() != 1) return;
    const uint32_t sym = *syms.begin();
    const Sym& s = m_.syms[sym];
    if (!s.triable()) return;
    SamplePoint point{std::vector<int64_t>(m_.syms.size(), 0), {}};  // the grids read only `sym`
    auto emptyAt = [&](int64_t v) {
      std::vector<bool> empty(m_.tasks.size(), false);
      point.syms[sym] = v;
      for (uint32_t t : order)
        for (const Expr& e : m_.tasks[t].grid) {
          auto x = whole_.valueAt(e, point);
          if (x && *x <= 0) empty[t] = true;
        }
      return empty;
    };
    std::vector<std::pair<int64_t, std::vector<bool>>> runs;  // first value, emptiness
    for (int64_t v = s.lo; v <= s.hi; ++v) {
      std::vector<bool> e = emptyAt(v);
      if (runs.empty() || runs.back().second != e) runs.emplace_back(v, std::move(e));
    }
    if (runs.size() < 2) return;
    for (size_t k = 0; k < runs.size(); ++k) {
      const int64_t hi = k + 1 < runs.size() ? runs[k + 1].first - 1 : s.hi;
      pieces_.push_back({std::make_unique<Prover>(m_, sym, runs[k].first, hi), std::move(runs[k].second)});
    }
  }

  void reduce(uint32_t g) {
    std::set<uint32_t> in_graph;
    std::vector<uint32_t> order;
    run_position_.assign(m_.tasks.size(), 0);
    for (const GraphStmt& st : m_.graphs[g].body)
      if (const auto* r = std::get_if<RunStmt>(&st)) {
        in_graph.insert(r->task);
        run_position_[r->task] = order.size();
        order.push_back(r->task);
      }
    findPieces(order);
    for (uint32_t t : order) {
      if (task_graph_[t] != static_cast<int>(g)) continue;
      for (uint32_t i = 0; i < m_.tasks[t].body.size(); ++i) {
        const auto* w = std::get_if<WaitStmt>(&m_.tasks[t].body[i]);
        if (!w || !eligible_[w->event.target] || deleted({t, i})) continue;
        // The waits before a data grid's extent is read stay, whatever else orders them, unless
        // the same wait comes before (rule 2 moves a duplicate event's waits onto its twin): the
        // task reads the extent right after them (emit_cuda.cpp). A path through a data grid's
        // task needs no such care: compose() takes only tiles proved to exist at every value of
        // the data, and those run their waits.
        if (gridReadsData(m_.tasks[t]) && !skippableWait({t, i})) {
          for (uint32_t j = 0; j < i; ++j) {
            const auto* v = std::get_if<WaitStmt>(&m_.tasks[t].body[j]);
            if (v && !deleted({t, j}) && v->event.target == w->event.target && sameSlice(v->event, w->event)) {
              drop({t, i});
              break;
            }
          }
          continue;
        }
        if (redundant({t, i}, in_graph)) drop({t, i});
      }
    }
  }

  // ---- rule 4: clean-up ------------------------------------------------------------------

  ModulePtr cleanUp(ModulePtr self) {
    std::vector<bool> gone(m_.events.size(), false);
    for (uint32_t e = 0; e < m_.events.size(); ++e) {
      if (!eligible_[e]) continue;
      if (joined_.count(e)) {  // its notifies count towards another event now
        gone[e] = true;
        continue;
      }
      std::vector<Site> notifies = sites(e, false);
      // An event nobody waited on to begin with is left alone: verify-schedule still checks
      // its notify totals, which may be the point of a hand-written one.
      if (merged_into_.count(e) || (had_waits_[e] && sites(e, true).empty() && !notifies.empty())) {
        gone[e] = true;
        for (const Site& s : notifies) drop(s);
      }
    }
    for (uint32_t t = 0; t < m_.tasks.size(); ++t) {
      std::vector<TaskStmt> body;
      for (uint32_t i = 0; i < m_.tasks[t].body.size(); ++i)
        if (!deleted({t, i})) body.push_back(std::move(m_.tasks[t].body[i]));
      m_.tasks[t].body = std::move(body);
    }
    if (std::find(gone.begin(), gone.end(), true) == gone.end()) return self;
    return moduleWithout(m_, gone, {});
  }

  Module& m_;
  Prover whole_;     // facts over every sym value
  Prover* prover_;   // the one proofs use: whole_, or a piece's (rule 3)
  std::map<std::pair<uint32_t, uint32_t>, bool> orders_data_;  // (task, event): skippableWait's cache
  // Rule 3's pieces of the graph being reduced: ranges of its one sym over which every task
  // grid of the graph is empty throughout or non-empty throughout (none: one piece).
  struct Piece {
    std::unique_ptr<Prover> prover;
    std::vector<bool> empty;  // per task of the module: no tile over the piece
  };
  std::vector<Piece> pieces_;
  const Piece* piece_ = nullptr;  // the piece being proved in (null: the whole range)
  std::vector<int> task_graph_;   // the one graph that runs the task, or -1
  std::vector<int> event_graph_;  // the graph of the tasks that mention the event
  std::vector<bool> eligible_;    // every task that mentions the event runs in that one graph
  std::vector<bool> had_waits_;   // some task waited on the event before this pass
  std::vector<std::vector<bool>> dropped_;  // per task and statement: dropped at the end (indices stay valid until then)
  std::map<uint32_t, uint32_t> merged_into_;
  std::set<uint32_t> joined_;     // rule 4: events whose notifies and wait moved to another
  std::vector<size_t> run_position_;   // per task: its run statement's index in the graph being reduced
  // sites()'s index, built at its first use and kept in step by setEventSlice.
  mutable std::vector<std::vector<Site>> wait_sites_, notify_sites_;
  mutable bool index_valid_ = false;
};

}  // namespace

ModulePtr eliminateEvents(ModulePtr m, DiagnosticEngine& diags) {
  Module& ref = *m;
  return Eliminator(ref).run(std::move(m));
}

}  // namespace etc
