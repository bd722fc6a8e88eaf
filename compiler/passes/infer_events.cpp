// infer-events: for every pair of task grids P before C in a graph whose accesses conflict
// (P writes what C reads or writes, or P reads what C writes), an event tensor indexed by C's
// coordinates: C's task waits on its element, each P task notifies the elements of the C
// tasks its tile overlaps, and an element's initial count is the number of P tasks that
// notify it. Counts and notify ranges come from the same tile-overlap formula, so they agree
// exactly (many-to-one, one-to-many, one-to-one, all-to-all and split-K patterns are cases of
// it). Slices that are neither fixed nor tiled get one counter that every P task notifies.
// Pairs the source already orders (C waits on an event P notifies) are left as written.
//
// A pair's conflict on a tensor T needs no event of its own where, at every sym value, a grid K
// between P and C in run order writes all of T: P is ordered before K and K before C (both
// pairs conflict on T), tile for tile through the K tile that writes each element, so the
// chain orders every element P and C share. Without this rule a tensor written in place by
// every layer (the residual stream) or one that several layers' temps share would pair every
// layer's grids with every later layer's, and leave eliminate-events the chains to find.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "compiler/backend/cuda_expr.h"
#include "compiler/ir/prover.h"
#include "compiler/passes/access_pattern.h"
#include "compiler/passes/passes.h"
#include "compiler/passes/tiling.h"

namespace etc {

namespace {

using namespace ir;

// What one conflicting access pair asks for.
struct Dep {
  std::vector<uint32_t> keys;             // C's coordinates that index the event
  Expr count;                             // over the event's coordinates (ids = positions in keys)
  std::vector<tiling::DimRange> notify;   // per key: C coordinates a P task notifies (over P's coords)
};

class Inference {
 public:
  Inference(Module& m) : m_(m), prover_(m) {}

  void run() {
    findSymValues();
    for (Graph& g : m_.graphs) {
      order_.clear();
      for (const GraphStmt& st : g.body)
        if (const auto* r = std::get_if<RunStmt>(&st)) order_.push_back(r->task);
      findCoveringWriters(order_);
      for (size_t c = 0; c < order_.size(); ++c)
        for (size_t p = 0; p < c; ++p) pair(order_[p], order_[c], p, c);
    }
  }

 private:
  using Access = SliceAccess;

  static std::vector<Access> accesses(const Task& t) { return taskAccesses(t); }

  // C already waits on an event that P notifies: the source orders the pair itself.
  bool orderedByHand(const Task& p, const Task& c) const {
    std::set<uint32_t> notified;
    for (const TaskStmt& st : p.body)
      if (const auto* n = std::get_if<NotifyStmt>(&st)) notified.insert(n->event.target);
    for (const TaskStmt& st : c.body)
      if (const auto* w = std::get_if<WaitStmt>(&st))
        if (notified.count(w->event.target)) return true;
    return false;
  }

  // Whether at every sym value one of the two grids has no task, so that no tile of one ever
  // runs beside a tile of the other (attention's one-part grids for different cache heads a
  // task, each empty outside its rows). Shown by some sym s of few values (Sym::triable): with s at
  // each of its values, one grid has an extent whose upper bound over the other syms is 0, or
  // the two grids' extents are products of indicators of the same data that are never both 1
  // (dataExclusive: attention's split-KV merge and its one-part grid, chosen by the longest row).
  bool neverBothRun(const Task& p, const Task& c, size_t ppos, size_t cpos) const {
    std::vector<uint32_t> syms;
    bool coords = false;
    std::set<uint32_t> loaded;
    for (const Task* t : {&p, &c})
      for (const Expr& e : t->grid)
        forEachLeaf(e, [&](const ExprNode& n) {
          if (n.kind == ExprKind::Coord) coords = true;
          if (n.kind == ExprKind::Load) loaded.insert(n.id);
          if (n.kind == ExprKind::Sym && std::find(syms.begin(), syms.end(), n.id) == syms.end()) syms.push_back(n.id);
        });
    if (coords) return false;
    // The data must be the same for both: no grid between them in run order writes it.
    bool same_data = !loaded.empty();
    for (size_t k = ppos + 1; k < cpos && same_data; ++k)
      for (uint32_t t : touchedTensors(m_.tasks[order_[k]], true)) same_data = same_data && !loaded.count(t);
    auto substituted = [&](const Expr& e, uint32_t s, int64_t v) {
      return substitute(e, [&](const ExprNode& n) { return n.kind == ExprKind::Sym && n.id == s ? intConst(v) : Expr{}; });
    };
    auto at = [&](const Expr& e, uint32_t s, int64_t v) { return simplify(substituted(e, s, v), m_.symRanges()); };
    auto empty_at = [&](const Task& t, uint32_t s, int64_t v) {
      for (const Expr& e : t.grid)
        if (tiling::upperBound(m_, substituted(e, s, v)) <= 0) return true;
      return false;
    };
    const bool data = same_data;
    // The extents as written first: a sym value can fold a factor into the others (at B = 2,
    // 2 * min(max(x, 0), 1) becomes min(max(2 * x, 0), 2)).
    if (data)
      for (const Expr& x : p.grid)
        for (const Expr& y : c.grid)
          if (dataExclusive(x, y)) return true;
    auto exclusive_at = [&](uint32_t s, int64_t v) {
      if (!data) return false;
      for (const Expr& x : p.grid)
        for (const Expr& y : c.grid)
          if (dataExclusive(at(x, s, v), at(y, s, v))) return true;
      return false;
    };
    for (uint32_t s : syms) {
      const Sym& sym = m_.syms[s];
      if (!sym.triable()) continue;
      bool disjoint = true;
      for (int64_t v = sym.lo; v <= sym.hi && disjoint; ++v)
        disjoint = empty_at(p, s, v) || empty_at(c, s, v) || exclusive_at(s, v);
      if (disjoint) return true;
    }
    return false;
  }

  // Extents x and y are never both non-zero: each is a product with an indicator factor, of a
  // and b, where a + b is at most 1, so that a >= 1 and b >= 1 never both hold.
  bool dataExclusive(const Expr& x, const Expr& y) const {
    for (const DataIndicator& a : dataIndicators(x))
      for (const DataIndicator& b : dataIndicators(y)) {
        const std::optional<int64_t> sum = asInt(simplify(add(a.arg, b.arg), m_.symRanges()));
        if (sum && *sum <= 1) return true;
      }
    return false;
  }

  // ---- writes of a whole tensor -------------------------------------------------------------

  // The sym values the coverage of a tensor is decided at: every value of the module's one sym
  // (Sym::triable), or the one point of a module without syms. Empty: undecided (the
  // rule is not used).
  void findSymValues() {
    sym_values_.clear();
    if (m_.syms.empty()) {
      sym_values_.push_back({});
      return;
    }
    if (m_.syms.size() != 1 || !m_.syms[0].triable()) return;
    for (int64_t v = m_.syms[0].lo; v <= m_.syms[0].hi; ++v) sym_values_.push_back({v});
  }

  // At which of sym_values_ slice `s` of task t, over every tile of its grid, is all of its
  // tensor: each dimension either whole or tiled from 0 by one coordinate of its own whose tiles
  // reach the end (a tile's end clamped at most at the dimension's extent).
  std::vector<bool> coversAll(const Task& t, const Slice& s) const {
    std::vector<bool> at(sym_values_.size(), false);
    auto access = matchAccess(m_, s);
    if (!access) return at;
    const Tensor& tensor = m_.tensors[s.target];
    // What does not depend on the syms: one coordinate a tiled dimension, and a clamp of a
    // tile's end only at the dimension's extent.
    std::set<uint32_t> coords;
    for (size_t d = 0; d < access->size(); ++d) {
      const DimAccess& a = (*access)[d];
      if (!a.tiled) continue;
      if (!coords.insert(a.coord).second) return at;
      if (d < s.dims.size() && s.dims[d].is_range && s.dims[d].hi->kind == ExprKind::Min) {
        const Expr& hi = s.dims[d].hi;
        bool at_extent = false;
        for (const Expr& op : hi->ops)
          if (!hasCoord(op)) at_extent = at_extent || equal(inlineConsts(op), inlineConsts(tensor.shape[d]));
        if (!at_extent || hi->ops.size() != 2) return at;
      }
    }
    for (size_t v = 0; v < sym_values_.size(); ++v) {
      const SamplePoint point{sym_values_[v], {}};
      auto value = [&](const Expr& e) { return prover_.valueAt(e, point); };
      std::vector<int64_t> extents;
      bool covers = true;
      for (const Expr& e : t.grid) {
        auto x = value(e);
        covers = covers && x && *x > 0;
        extents.push_back(x.value_or(0));
      }
      for (size_t d = 0; d < access->size() && covers; ++d) {
        const DimAccess& a = (*access)[d];
        auto extent = value(tensor.shape[d]);
        if (!extent) {
          covers = false;
        } else if (!a.tiled) {
          auto lo = value(a.lo), hi = value(a.hi);
          covers = lo && hi && *lo == 0 && *hi >= *extent;
        } else {
          auto offset = value(a.offset);
          covers = offset && *offset == 0 && a.tile * extents[a.coord] >= *extent;
        }
      }
      at[v] = covers;
    }
    return at;
  }

  // Per tensor and sym value, the positions in run order of the graph's grids that write all of
  // the tensor at that value, ascending.
  void findCoveringWriters(const std::vector<uint32_t>& order) {
    covering_.clear();
    if (sym_values_.empty()) return;
    for (size_t k = 0; k < order.size(); ++k) {
      const Task& t = m_.tasks[order[k]];
      for (const Access& a : accesses(t)) {
        if (!a.write) continue;
        std::vector<bool> at = coversAll(t, *a.slice);
        if (std::find(at.begin(), at.end(), true) == at.end()) continue;
        std::vector<std::vector<size_t>>& by_value = covering_[a.slice->target];
        by_value.resize(sym_values_.size());
        for (size_t v = 0; v < at.size(); ++v)
          if (at[v] && (by_value[v].empty() || by_value[v].back() != k)) by_value[v].push_back(k);
      }
    }
  }

  // At every sym value, some grid strictly between positions p and c writes all of tensor t. A
  // search per value rather than a walk over the writers: with --reuse-temps every layer writes
  // the same temps, and pair() asks this for every pair of grids (Qwen3-0.6B: 1.1 s of the pass).
  bool coveredBetween(uint32_t t, size_t p, size_t c) const {
    auto it = covering_.find(t);
    if (it == covering_.end()) return false;
    for (const std::vector<size_t>& writers : it->second) {
      auto k = std::upper_bound(writers.begin(), writers.end(), p);
      if (k == writers.end() || *k >= c) return false;
    }
    return true;
  }

  void pair(uint32_t pi, uint32_t ci, size_t ppos, size_t cpos) {
    if (pi == ci || orderedByHand(m_.tasks[pi], m_.tasks[ci])) return;
    std::vector<Dep> deps;
    for (const Access& a : accesses(m_.tasks[pi]))
      for (const Access& b : accesses(m_.tasks[ci])) {
        if (a.slice->target != b.slice->target || (!a.write && !b.write)) continue;
        if (coveredBetween(a.slice->target, ppos, cpos)) continue;
        // A count that is 0 everywhere: no P tile meets a C tile (grids over complementary
        // row ranges, such as attention's split and whole grids).
        if (auto d = dependency(m_.tasks[pi], *a.slice, m_.tasks[ci], *b.slice); d && asInt(d->count) != 0)
          deps.push_back(std::move(*d));
      }
    // Tried only for pairs that conflict: it walks a sym's values, and most pairs of grids
    // share no tensor.
    if (deps.empty() || neverBothRun(m_.tasks[pi], m_.tasks[ci], ppos, cpos)) return;
    // One event per distinct key list: counts of deps with the same keys add up, and every
    // P task performs each dep's notify. Deps alike in count and notify ranges (C reading
    // several tensors that P writes with the same tiling: a decode step's rotated q and its two
    // cache rows) order the same tiles at the same moment, so one of them stands for all: one
    // notify a P task instead of one per tensor, and the counts not multiplied.
    std::map<std::vector<uint32_t>, std::vector<const Dep*>> by_keys;
    for (const Dep& d : deps) {
      std::vector<const Dep*>& group = by_keys[d.keys];
      if (std::none_of(group.begin(), group.end(), [&](const Dep* g) { return sameDep(*g, d); })) group.push_back(&d);
    }
    for (const auto& [keys, group] : by_keys) addEvent(pi, ci, keys, group);
  }

  // A grid whose extents read data, as the megakernel numbers it: at the extents' bounds.
  Task atBound(const Task& t) const {
    Task b;
    b.name = t.name;
    b.coords = t.coords;
    for (const Expr& e : t.grid) b.grid.push_back(backend::dataBound(m_, e));
    return b;
  }

  // Grids whose extents read data are ordered through their tasks at the bound (every task of
  // a megakernel's grid up to the bound waits and notifies; past the actual extent it skips
  // its ops), which the interpreter's actual tasks are a part of. A consumer's event is shaped
  // and its notifies clamped by its grid at the bound, so that every waiting task gets its
  // count. A producer's count is its actual extent's (what the interpreter's tasks send), kept
  // per tile where the megakernel's evaluation of it at the bound (dataBound) is exactly the
  // count of the tasks at the bound, else one counter that every task notifies (the product of
  // the extents, which dataBound evaluates exactly). Tiles that do not meet even at the bounds
  // need no event.
  std::optional<Dep> dependency(const Task& p, const Slice& ps, const Task& c, const Slice& cs) {
    const bool p_data = gridReadsData(p), c_data = gridReadsData(c);
    if (!p_data && !c_data) return tiledDependency(p, ps, c, cs);
    const Task pb = p_data ? atBound(p) : Task{}, cb = c_data ? atBound(c) : Task{};
    const Task& cc = c_data ? cb : c;
    std::optional<Dep> at_bound = tiledDependency(p_data ? pb : p, ps, cc, cs);
    if (!at_bound || asInt(at_bound->count) == 0 || !p_data) return at_bound;
    std::optional<Dep> actual = tiledDependency(p, ps, cc, cs);
    if (actual && actual->keys == at_bound->keys && !actual->keys.empty() && sameNotifies(*actual, *at_bound)) {
      std::vector<Expr> event_grid;
      for (uint32_t kc : actual->keys) event_grid.push_back(cc.grid[kc]);
      const RangeEnv env = m_.gridRanges(event_grid);
      if (equal(simplify(backend::dataBound(m_, actual->count), env), simplify(at_bound->count, env))) return actual;
    }
    return allToAll(p);
  }

  static bool sameNotifies(const Dep& a, const Dep& b) {
    if (a.notify.size() != b.notify.size()) return false;
    for (size_t k = 0; k < a.notify.size(); ++k)
      if (!equal(a.notify[k].lo, b.notify[k].lo) || !equal(a.notify[k].hi, b.notify[k].hi)) return false;
    return true;
  }

  // The dependency of grids whose extents read no data (or taken at their bounds).
  std::optional<Dep> tiledDependency(const Task& p, const Slice& ps, const Task& c, const Slice& cs) {
    auto pa = matchAccess(m_, ps), ca = matchAccess(m_, cs);
    if (!pa || !ca) return allToAll(p);
    // Disjoint fixed ranges in some dimension: no conflict at all.
    for (size_t d = 0; d < pa->size(); ++d) {
      const DimAccess &x = (*pa)[d], &y = (*ca)[d];
      if (!x.tiled && !y.tiled && (prover_.lessEqual(x.hi, y.lo).proved() || prover_.lessEqual(y.hi, x.lo).proved()))
        return std::nullopt;
    }
    std::map<uint32_t, std::pair<uint32_t, size_t>> paired;  // P coord -> (C coord, dim)
    std::set<uint32_t> keys;
    for (size_t d = 0; d < pa->size(); ++d) {
      const DimAccess &x = (*pa)[d], &y = (*ca)[d];
      if (!y.tiled) continue;
      if (!keys.insert(y.coord).second) return allToAll(p);
      if (!x.tiled) continue;
      if (paired.count(x.coord)) return allToAll(p);
      paired[x.coord] = {y.coord, d};
    }
    Dep dep;
    dep.keys.assign(keys.begin(), keys.end());
    auto key_index = [&](uint32_t kc) {
      return static_cast<uint32_t>(std::find(dep.keys.begin(), dep.keys.end(), kc) - dep.keys.begin());
    };
    Expr count = intConst(1);
    for (uint32_t kp = 0; kp < p.grid.size(); ++kp) {
      auto it = paired.find(kp);
      if (it == paired.end()) {
        count = mul(count, p.grid[kp]);
        continue;
      }
      const DimAccess &x = (*pa)[it->second.second], &y = (*ca)[it->second.second];
      uint32_t kc = it->second.first;
      Expr cc = coordRef(key_index(kc), c.coords[kc]);
      // P tiles [tp*q + bp, +tp) overlapping C's tile [tc*cc + bc, +tc).
      Expr tp = intConst(x.tile), tc = intConst(y.tile);
      Expr start = add(mul(cc, tc), sub(y.offset, x.offset));
      Expr lo = max(intConst(0), floorDiv(start, tp));
      Expr hi = min(p.grid[kp], cdiv(add(start, tc), tp));
      count = mul(count, max(intConst(0), sub(hi, lo)));
    }
    std::vector<Expr> event_grid;
    for (uint32_t kc : dep.keys) event_grid.push_back(c.grid[kc]);
    dep.count = simplify(count, m_.gridRanges(event_grid));
    RangeEnv penv = m_.gridRanges(p.grid);
    for (uint32_t kc : dep.keys) {
      tiling::DimRange r;
      r.lo = intConst(0);
      r.hi = c.grid[kc];
      for (const auto& [kp, cd] : paired) {
        if (cd.first != kc) continue;
        const DimAccess &x = (*pa)[cd.second], &y = (*ca)[cd.second];
        Expr q = coordRef(kp, p.coords[kp]);
        Expr tp = intConst(x.tile), tc = intConst(y.tile);
        Expr start = add(mul(q, tp), sub(x.offset, y.offset));
        Expr hi = simplify(min(c.grid[kc], max(intConst(0), cdiv(add(start, tp), tc))), penv);
        Expr lo = simplify(max(intConst(0), floorDiv(start, tc)), penv);
        r.hi = hi;
        r.lo = simplify(min(lo, hi), penv);
      }
      dep.notify.push_back(r);
    }
    return dep;
  }

  static bool sameDep(const Dep& a, const Dep& b) { return equal(a.count, b.count) && sameNotifies(a, b); }

  // One counter: every P task notifies it, every C task waits for all of them.
  Dep allToAll(const Task& p) const {
    Dep d;
    d.count = intConst(1);
    for (const Expr& e : p.grid) d.count = mul(d.count, e);
    return d;
  }

  // A subscript of event `ev` to be filled in; a single-counter event is indexed [0].
  static Slice eventSlice(uint32_t ev, bool single_counter, SourceRange range) {
    Slice s;
    s.target = ev;
    s.has_subscript = true;
    s.range = range;
    if (single_counter) {
      SliceDim d;
      d.lo = intConst(0);
      s.dims.push_back(d);
    }
    return s;
  }

  void addEvent(uint32_t pi, uint32_t ci, const std::vector<uint32_t>& keys, const std::vector<const Dep*>& group) {
    Task& p = m_.tasks[pi];
    Task& c = m_.tasks[ci];
    Event e;
    e.inferred = true;
    e.name = tiling::freshValueName(m_, "ev_" + p.name + "_" + c.name);
    e.range = c.range;
    Expr count = intConst(0);
    for (const Dep* d : group) count = add(count, d->count);
    e.init = count;
    if (keys.empty()) {
      e.shape.push_back(intConst(1));
    } else {
      for (uint32_t kc : keys) {
        e.shape.push_back(backend::dataBound(m_, c.grid[kc]));  // a task at the bound waits too
        e.init_coords.push_back(c.coords[kc]);
      }
      if (!hasCoord(e.init)) e.init_coords.clear();
    }
    uint32_t ev = m_.addEvent(std::move(e));
    tiling::declareBeforeTasks(m_);

    Slice wait = eventSlice(ev, keys.empty(), c.range);
    for (uint32_t kc : keys) {
      SliceDim d;
      d.lo = coordRef(kc, c.coords[kc]);
      wait.dims.push_back(d);
    }
    // Waits go before the first call of C, notifies at the end of P; a wait on the writer of the
    // data C's extents read goes first, so that a task past the extent reads it before the
    // other waits and skips them (emit_cuda.cpp).
    auto first_call = writesGridData(p, c) ? c.body.begin()
                                           : std::find_if(c.body.begin(), c.body.end(), [](const TaskStmt& s) {
                                               return std::holds_alternative<CallStmt>(s);
                                             });
    c.body.insert(first_call, WaitStmt{wait, c.range});
    for (const Dep* d : group) {
      Slice n = eventSlice(ev, keys.empty(), p.range);
      for (const tiling::DimRange& r : d->notify) {
        SliceDim sd;
        sd.lo = r.lo;
        sd.hi = r.hi;
        sd.is_range = true;
        if (auto one = asInt(sub(r.hi, r.lo)); one && *one == 1) {  // a single element: print it as a point
          sd.is_range = false;
          sd.hi = nullptr;
        }
        n.dims.push_back(sd);
      }
      p.body.push_back(NotifyStmt{n, p.range});
    }
  }

  Module& m_;
  Prover prover_;
  std::vector<std::vector<int64_t>> sym_values_;
  std::map<uint32_t, std::vector<std::vector<size_t>>> covering_;
  std::vector<uint32_t> order_;  // the graph's grids in run order (run())
};

}  // namespace

ModulePtr inferEvents(ModulePtr m, DiagnosticEngine& diags) {
  Inference(*m).run();
  return m;
}

}  // namespace etc
