#include "compiler/ir/prover.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "compiler/support/splitmix.h"

namespace etc::ir {

namespace {

// Caps on the counterexample search, so a module with many unprovable facts still verifies
// quickly; the sampled points favour range ends and multiples of the constants in the
// expression (tile sizes), where off-by-one errors live.
constexpr size_t kMaxSymPoints = 256;
constexpr size_t kMaxValuesPerSym = 12;

}  // namespace

RangeEnv Prover::symRanges() const { return restricted_ ? m_.symRangesWith(sym_, lo_, hi_) : m_.symRanges(); }

std::pair<int64_t, int64_t> Prover::symRange(uint32_t id) const {
  if (restricted_ && id == sym_) return {lo_, hi_};
  return {m_.syms[id].lo, m_.syms[id].hi};
}

RangeEnv Prover::rangeEnv() const { return task_ ? m_.gridRanges(task_->grid, symRanges()) : symRanges(); }

Bindings Prover::bindingsAt(const SamplePoint& p) const {
  Bindings b;
  b.sym = [&p](uint32_t id) -> std::optional<int64_t> {
    if (id < p.syms.size()) return p.syms[id];
    return std::nullopt;
  };
  b.coord = [&p](uint32_t id) -> std::optional<int64_t> {
    if (id < p.coords.size()) return p.coords[id];
    return std::nullopt;
  };
  return b;
}

std::optional<int64_t> Prover::valueAt(const Expr& e, const SamplePoint& p) const {
  EvalResult r = evaluate(e, bindingsAt(p));
  if (!r.ok()) return std::nullopt;
  return r.value;
}

std::optional<int64_t> Prover::exactValueAt(const Expr& e, const SamplePoint& p) const {
  if (auto v = valueAt(e, p)) return v;
  return valueAt(simplify(inlineConsts(e), rangeEnv()), p);
}

std::vector<std::vector<int64_t>> Prover::symSamples(const Expr& e) const {
  std::set<uint32_t> used;
  std::set<int64_t> consts;
  auto collect = [&](const Expr& x) {
    forEachLeaf(x, [&](const ExprNode& n) {
      if (n.kind == ExprKind::Sym) used.insert(n.id);
      if (n.kind == ExprKind::Const && n.value > 1) consts.insert(n.value);
    });
    // Integer literals matter too (tile sizes written as numbers).
    std::vector<const ExprNode*> stack{x.get()};
    while (!stack.empty()) {
      const ExprNode* n = stack.back();
      stack.pop_back();
      if (n->kind == ExprKind::Int && n->value > 1) consts.insert(n->value);
      for (const Expr& op : n->ops) stack.push_back(op.get());
    }
  };
  collect(e);
  // A coordinate's range depends on the grid extents; their syms and constants matter too
  // (`grid [cdiv(N, 1024)]` has a second task from N = 1025 on), and so they do where the grid
  // may be empty (search skips the points where it is).
  if (task_)
    for (const Expr& g : task_->grid) collect(g);

  std::vector<std::vector<int64_t>> values(m_.syms.size());
  for (size_t id = 0; id < m_.syms.size(); ++id) {
    // Not a structured binding: the lambda below captures the bounds, which clang before 16
    // (the fuzz build's) does not allow of a binding.
    const auto range = symRange(static_cast<uint32_t>(id));
    const int64_t lo = range.first, hi = range.second;
    std::vector<int64_t>& v = values[id];
    if (!used.count(static_cast<uint32_t>(id))) {
      v.push_back(lo);
      continue;
    }
    auto put = [&](int64_t x) {
      if (x >= lo && x <= hi && std::find(v.begin(), v.end(), x) == v.end() && v.size() < kMaxValuesPerSym)
        v.push_back(x);
    };
    put(lo);
    put(hi);
    put(lo + 1);
    put(hi - 1);
    for (int64_t c : consts) {
      if (c > hi) continue;
      put(c - 1);
      put(c);
      put(c + 1);
      if (c <= hi / 2) put(2 * c + 1);
    }
    put(lo + (hi - lo) / 2);
    // Ascending, so that the first counterexample found is a small one (the one a reader
    // checks most easily: "at N = 1025" rather than "at N = 100000000").
    std::sort(v.begin(), v.end());
  }

  std::vector<std::vector<int64_t>> points;
  size_t total = 1;
  for (auto& v : values) total = std::min<size_t>(total * v.size(), kMaxSymPoints + 1);
  if (total <= kMaxSymPoints) {
    std::vector<size_t> idx(values.size(), 0);
    while (true) {
      std::vector<int64_t> p(values.size());
      for (size_t i = 0; i < values.size(); ++i) p[i] = values[i][idx[i]];
      points.push_back(std::move(p));
      size_t k = 0;
      while (k < idx.size() && ++idx[k] == values[k].size()) idx[k++] = 0;
      if (k == idx.size()) break;
    }
    return points;
  }
  // Too many combinations: all-low and all-high corners, then a fixed pseudo-random choice.
  uint64_t seed = 0x5EED;
  for (int corner = 0; corner < 2; ++corner) {
    std::vector<int64_t> p(values.size());
    for (size_t i = 0; i < values.size(); ++i) p[i] = corner ? values[i].back() : values[i].front();
    points.push_back(std::move(p));
  }
  while (points.size() < kMaxSymPoints) {
    std::vector<int64_t> p(values.size());
    for (size_t i = 0; i < values.size(); ++i) p[i] = values[i][splitmix(seed) % values[i].size()];
    points.push_back(std::move(p));
  }
  return points;
}

Fact Prover::search(const Expr& e, int64_t min_ok) const {
  bool has_coord = hasCoord(e);
  if (has_coord && !task_) return {};
  // The task's grid extents at a point, none where the grid is empty: a data-dependent extent
  // counts as its stated upper bound, and an extent that cannot be evaluated here (e.g. a
  // divisor of it is 0 here, which is reported on its own) as no task.
  auto extents = [&](const SamplePoint& p) -> std::optional<std::vector<int64_t>> {
    std::vector<int64_t> out;
    for (const Expr& g : task_->grid) {
      std::optional<int64_t> ext = valueAt(g, p);
      if (!ext && g->kind == ExprKind::Bounded) ext = valueAt(g->ops[1], p);
      if (!ext || *ext <= 0) return std::nullopt;
      out.push_back(*ext);
    }
    return out;
  };
  for (std::vector<int64_t>& syms : symSamples(e)) {
    SamplePoint p{std::move(syms), {}};
    // Inside a task a fact is about its statements: where its grid is empty nothing runs, so
    // nothing is refuted there (a slice that simplified to no coordinate too); other points
    // may still refute the fact.
    std::optional<std::vector<int64_t>> ext;
    if (task_ && !(ext = extents(p))) continue;
    if (!has_coord) {
      auto v = valueAt(e, p);
      if (v && *v < min_ok) return {Fact::Refuted, std::move(p)};
      continue;
    }
    // Coordinates at both ends of their grid dimension (and next to the ends), which is
    // where slices of a grid of tiles go wrong.
    std::vector<std::vector<int64_t>> coord_values;
    for (int64_t x : *ext) {
      std::vector<int64_t> cv{0};
      for (int64_t c : {int64_t{1}, x - 2, x - 1})
        if (c > 0 && c < x && std::find(cv.begin(), cv.end(), c) == cv.end()) cv.push_back(c);
      if (task_->grid.size() > 3) cv = {0, x - 1};
      coord_values.push_back(std::move(cv));
    }
    std::vector<size_t> idx(coord_values.size(), 0);
    while (true) {
      p.coords.resize(coord_values.size());
      for (size_t i = 0; i < coord_values.size(); ++i) p.coords[i] = coord_values[i][idx[i]];
      auto v = valueAt(e, p);
      if (v && *v < min_ok) return {Fact::Refuted, std::move(p)};
      size_t k = 0;
      while (k < idx.size() && ++idx[k] == coord_values[k].size()) idx[k++] = 0;
      if (k == idx.size()) break;
    }
  }
  return {};
}

namespace {

bool sameGrid(const std::vector<Expr>& a, const Task* b) {
  size_t n = b ? b->grid.size() : 0;
  if (a.size() != n) return false;
  for (size_t k = 0; k < n; ++k)
    if (!equal(a[k], b->grid[k])) return false;
  return true;
}

size_t gridHash(const Task* t) {
  size_t h = 0x9E3779B9;
  if (t)
    for (const Expr& g : t->grid) h = h * 31 + g->hash;
  return h;
}

}  // namespace

const Fact* Prover::recall(Query q, const Expr& a, const Expr& b, size_t* key) const {
  *key = (static_cast<size_t>(q) * 1000003u) ^ a->hash ^ (b ? b->hash * 7919u : 0) ^ (gridHash(task_) << 1);
  auto [lo, hi] = memo_.equal_range(*key);
  for (auto it = lo; it != hi; ++it) {
    const MemoEntry& m = it->second;
    if (m.q == q && equal(m.a, a) && (b ? m.b && equal(m.b, b) : !m.b) && sameGrid(m.grid, task_)) return &m.fact;
  }
  return nullptr;
}

Fact Prover::remember(Query q, const Expr& a, const Expr& b, size_t key, Fact f) const {
  // A refuted fact's coordinates are positions in the grid, the same for every task with an
  // equal grid.
  memo_.emplace(key, MemoEntry{q, a, b, task_ ? task_->grid : std::vector<Expr>{}, f});
  return f;
}

Fact Prover::decideNonNegative(const Expr& e, int64_t min_ok) const {
  Expr s = simplify(inlineConsts(e), rangeEnv());
  if (bounds(s, rangeEnv()).lo >= min_ok) return {Fact::Proved, {}};
  return search(s, min_ok);
}

Fact Prover::nonNegative(const Expr& e) const {
  size_t key;
  if (const Fact* f = recall(Query::NonNegative, e, nullptr, &key)) return *f;
  return remember(Query::NonNegative, e, nullptr, key, decideNonNegative(e, 0));
}

Fact Prover::positive(const Expr& e) const {
  size_t key;
  if (const Fact* f = recall(Query::Positive, e, nullptr, &key)) return *f;
  return remember(Query::Positive, e, nullptr, key, decideNonNegative(e, 1));
}

Fact Prover::equalValues(const Expr& a, const Expr& b) const {
  if (equal(a, b)) return {Fact::Proved, {}};
  size_t key;
  if (const Fact* f = recall(Query::Equal, a, b, &key)) return *f;
  Expr ia = inlineConsts(a), ib = inlineConsts(b);
  if (equal(ia, ib)) return remember(Query::Equal, a, b, key, {Fact::Proved, {}});
  RangeEnv env = rangeEnv();
  Expr d = simplify(sub(ia, ib), env);
  if (auto v = asInt(d); v && *v == 0) return remember(Query::Equal, a, b, key, {Fact::Proved, {}});
  Interval bd = bounds(d, env);
  if (bd.lo == 0 && bd.hi == 0) return remember(Query::Equal, a, b, key, {Fact::Proved, {}});
  Fact low = search(d, 0);  // finds a point where a < b
  if (low.refuted()) return remember(Query::Equal, a, b, key, low);
  return remember(Query::Equal, a, b, key, search(neg(d), 0));  // or where a > b
}

std::string Prover::describe(const SamplePoint& p, const std::vector<Expr>& exprs) const {
  std::set<uint32_t> syms, coords;
  for (const Expr& e : exprs)
    forEachLeaf(e, [&](const ExprNode& n) {
      if (n.kind == ExprKind::Sym) syms.insert(n.id);
      if (n.kind == ExprKind::Coord) coords.insert(n.id);
    });
  // Coordinates' ranges depend on the syms of the grid: name those too.
  if (task_ && !coords.empty())
    for (const Expr& g : task_->grid)
      forEachLeaf(g, [&](const ExprNode& n) {
        if (n.kind == ExprKind::Sym) syms.insert(n.id);
      });
  std::string out;
  for (uint32_t id : syms)
    if (id < p.syms.size()) out += fmt::format("{}{} = {}", out.empty() ? "" : ", ", m_.syms[id].name, p.syms[id]);
  for (uint32_t id : coords)
    if (task_ && id < p.coords.size() && id < task_->coords.size())
      out += fmt::format("{}{} = {}", out.empty() ? "" : ", ", task_->coords[id], p.coords[id]);
  return out;
}

}  // namespace etc::ir
