// Interval bounds and range-aware simplification.
//
// A lower endpoint of INT64_MIN is -inf and an upper endpoint of INT64_MAX is +inf; both stay
// infinite through the arithmetic. The opposite extremes are ordinary values (an upper
// endpoint of INT64_MIN means exactly INT64_MIN). Results that leave int64 saturate, which
// keeps every interval an enclosure of the exact mathematical value.
#include <algorithm>

#include "compiler/ir/expr.h"
#include "compiler/ir/expr_internal.h"

namespace etc::ir {

using namespace expr_detail;

Interval Interval::all() { return {kMin, kMax}; }
bool Interval::lowerUnbounded() const { return lo == kMin; }
bool Interval::upperUnbounded() const { return hi == kMax; }

namespace {

bool isInf(int64_t v) { return v == kMin || v == kMax; }

// -x for x in [lo, hi] is in [-hi, -lo]. -INT64_MIN does not fit: INT64_MAX is the best lower
// bound for it.
Interval negate(Interval x) {
  int64_t lo = x.hi == kMax ? kMin : (x.hi == kMin ? kMax : -x.hi);
  int64_t hi = x.lo == kMin ? kMax : -x.lo;
  return {lo, hi};
}

int64_t saturate(bool negative) { return negative ? kMin : kMax; }

// Lower endpoints: -inf absorbs. Upper endpoints: +inf absorbs.
int64_t addLo(int64_t a, int64_t b) {
  if (a == kMin || b == kMin) return kMin;
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return saturate(a < 0);
  return r;
}

int64_t addHi(int64_t a, int64_t b) {
  if (a == kMax || b == kMax) return kMax;
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return saturate(a < 0);
  return r;
}

// Product of endpoints (a_inf, b_inf: whether they are infinite); 0 * inf is 0 because the
// values themselves are finite.
int64_t mulExt(int64_t a, bool a_inf, int64_t b, bool b_inf) {
  if (a == 0 || b == 0) return 0;
  bool negative = (a < 0) != (b < 0);
  if (a_inf || b_inf) return saturate(negative);
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return saturate(negative);
  return r;
}

Interval mulIntervals(Interval x, Interval y) {
  bool xl = x.lo == kMin, xh = x.hi == kMax, yl = y.lo == kMin, yh = y.hi == kMax;
  int64_t c[4] = {mulExt(x.lo, xl, y.lo, yl), mulExt(x.lo, xl, y.hi, yh), mulExt(x.hi, xh, y.lo, yl),
                  mulExt(x.hi, xh, y.hi, yh)};
  return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
}

// floor(a / c) for c >= 1, of a lower (upper) endpoint: -inf (+inf) stays infinite.
int64_t floorDivLo(int64_t a, int64_t c) { return a == kMin ? a : *floorDivChecked(a, c); }
int64_t floorDivHi(int64_t a, int64_t c) { return a == kMax ? a : *floorDivChecked(a, c); }

// floor(x / y). For y > 0 the quotient grows with x; it shrinks with y when x >= 0 and grows
// with y when x < 0 (approaching -1 from below as y grows without bound).
Interval divIntervals(Interval x, Interval y) {
  if (y.lo <= 0 && y.hi >= 0) return Interval::all();
  if (y.hi < 0) {  // floor(x / y) = floor(-x / -y)
    x = negate(x);
    y = negate(y);
  }
  bool y_unbounded = y.hi == kMax;
  int64_t lo = x.lo >= 0 ? (y_unbounded ? 0 : floorDivLo(x.lo, y.hi)) : floorDivLo(x.lo, y.lo);
  int64_t hi = x.hi >= 0 ? floorDivHi(x.hi, y.lo) : (y_unbounded ? -1 : floorDivHi(x.hi, y.hi));
  return {lo, hi};
}

// ceil(x / y) = -floor(-x / y)
Interval cdivIntervals(Interval x, Interval y) { return negate(divIntervals(negate(x), y)); }

// x mod y lies in [0, y) for y > 0 and in (y, 0] for y < 0, and is x itself when x already
// lies there.
Interval modIntervals(Interval x, Interval y) {
  if (y.lo <= 0 && y.hi >= 0) return Interval::all();
  if (y.lo > 0) {
    if (x.lo >= 0 && x.hi < y.lo) return x;
    if (y.isPoint() && x.lo != kMin && x.hi != kMax) {
      // Within one block [k * y, k * y + y) the remainder grows with x.
      if (*floorDivChecked(x.lo, y.lo) == *floorDivChecked(x.hi, y.lo)) {
        return {*floorModChecked(x.lo, y.lo), *floorModChecked(x.hi, y.lo)};
      }
    }
    int64_t hi = y.hi == kMax ? kMax : y.hi - 1;
    if (x.lo >= 0) hi = std::min(hi, x.hi);  // x mod y <= x for x >= 0
    return {0, hi};
  }
  if (x.hi <= 0 && x.lo > y.hi) return x;
  int64_t lo = y.lo == kMin ? kMin : y.lo + 1;
  if (x.hi <= 0) lo = std::max(lo, x.lo);  // x mod y >= x for x <= 0
  return {lo, 0};
}

std::optional<Interval> lookup(const std::function<std::optional<Interval>(uint32_t)>& fn, uint32_t id) {
  if (!fn) return std::nullopt;
  return fn(id);
}

Interval boundsOf(const ExprNode& n, const RangeEnv& env) {
  switch (n.kind) {
    case ExprKind::Int:
    case ExprKind::Const: return Interval::point(n.value);
    case ExprKind::Sym: return lookup(env.sym, n.id).value_or(Interval::all());
    case ExprKind::Coord: return lookup(env.coord, n.id).value_or(Interval::all());
    case ExprKind::Load:
      return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
    case ExprKind::Bounded: {
      // evaluate fails unless value <= bound, so the bound's maximum caps the value.
      Interval v = boundsOf(*n.ops[0], env);
      Interval b = boundsOf(*n.ops[1], env);
      return {v.lo, std::max(v.lo, std::min(v.hi, b.hi))};
    }
    case ExprKind::Add: {
      Interval acc = Interval::point(0);
      for (const Expr& op : n.ops) {
        Interval x = boundsOf(*op, env);
        acc = {addLo(acc.lo, x.lo), addHi(acc.hi, x.hi)};
      }
      return acc;
    }
    case ExprKind::Mul: {
      Interval acc = Interval::point(1);
      for (const Expr& op : n.ops) acc = mulIntervals(acc, boundsOf(*op, env));
      return acc;
    }
    case ExprKind::Div: return divIntervals(boundsOf(*n.ops[0], env), boundsOf(*n.ops[1], env));
    case ExprKind::Mod: return modIntervals(boundsOf(*n.ops[0], env), boundsOf(*n.ops[1], env));
    case ExprKind::CDiv: return cdivIntervals(boundsOf(*n.ops[0], env), boundsOf(*n.ops[1], env));
    case ExprKind::Min:
    case ExprKind::Max: {
      bool is_min = n.kind == ExprKind::Min;
      Interval acc = boundsOf(*n.ops[0], env);
      for (size_t i = 1; i < n.ops.size(); ++i) {
        Interval x = boundsOf(*n.ops[i], env);
        acc = is_min ? Interval{std::min(acc.lo, x.lo), std::min(acc.hi, x.hi)}
                     : Interval{std::max(acc.lo, x.lo), std::max(acc.hi, x.hi)};
      }
      return acc;
    }
  }
  return Interval::all();
}

bool finitePoint(Interval x) { return x.isPoint() && !isInf(x.lo); }

// ---- simplification --------------------------------------------------------------------------

class Simplifier {
 public:
  explicit Simplifier(const RangeEnv& env) : env_(env) {}

  Expr run(const Expr& e) {
    switch (e->kind) {
      case ExprKind::Int:
      case ExprKind::Const: return e;
      case ExprKind::Sym:
      case ExprKind::Coord: {
        Interval r = boundsOf(*e, env_);
        return finitePoint(r) ? intConst(r.lo) : e;
      }
      default: break;
    }
    std::vector<Expr> ops;
    ops.reserve(e->ops.size());
    bool changed = false;
    for (const Expr& op : e->ops) {
      ops.push_back(run(op));
      changed |= ops.back() != op;
    }
    switch (e->kind) {
      case ExprKind::Div:
      case ExprKind::Mod:
      case ExprKind::CDiv:
        if (Expr r = division(e->kind, ops[0], ops[1])) return r;
        break;
      case ExprKind::Min:
      case ExprKind::Max: return pruneMinMax(changed ? rebuild(*e, std::move(ops)) : e);
      default: break;
    }
    if (!changed) return e;
    return rebuild(*e, std::move(ops));
  }

 private:
  Interval range(const Expr& e) const { return boundsOf(*e, env_); }

  // x / y and x % y whose quotient the ranges fix. For a constant divisor c > 0 the terms
  // that c divides are taken out first: (c * q + r) / c = q + r / c, and when r stays in one
  // block [k * c, k * c + c) that is q + k, and (c * q + r) % c is r - k * c.
  Expr division(ExprKind kind, const Expr& a, const Expr& b) {
    auto c = asInt(b);
    if (!c || *c <= 0) return smallNumerator(kind, a, b);
    DivSplit s;
    splitByDivisor(a, *c, /*split_constant=*/false, s);
    Expr r = sumOfTerms(s.rest);
    Interval ir = range(r);
    if (isInf(ir.lo) || isInf(ir.hi) || ir.lo > ir.hi) return nullptr;
    if (kind == ExprKind::CDiv) {
      int64_t k = *ceilDivChecked(ir.lo, *c);
      if (k != *ceilDivChecked(ir.hi, *c)) return nullptr;
      return addE(sumOfTerms(s.quotient), intConst(k));
    }
    int64_t k = *floorDivChecked(ir.lo, *c);
    if (k != *floorDivChecked(ir.hi, *c)) return nullptr;
    if (kind == ExprKind::Div) return addE(sumOfTerms(s.quotient), intConst(k));
    auto base = checkedMul(k, *c);
    if (!base) return nullptr;
    return subE(r, intConst(*base));
  }

  // 0 <= x < y: x / y = 0 and x % y = x, whatever y is.
  Expr smallNumerator(ExprKind kind, const Expr& a, const Expr& b) {
    if (kind == ExprKind::CDiv) return nullptr;
    Interval ia = range(a), ib = range(b);
    if (ia.lo < 0 || ib.lo <= 0 || ia.hi >= ib.lo) return nullptr;
    return kind == ExprKind::Div ? intConst(0) : a;
  }

  // Drops the operands of a min (max) that another operand is provably <= (>=).
  Expr pruneMinMax(const Expr& m) {
    if (!isMinMax(m->kind)) return m;
    const bool is_min = m->kind == ExprKind::Min;
    const size_t n = m->ops.size();
    std::vector<bool> alive(n, true);
    bool dropped = false;
    for (size_t i = 0; i < n; ++i) {
      for (size_t j = 0; j < n; ++j) {
        if (j == i || !alive[j]) continue;
        if (is_min ? provedLe(m->ops[j], m->ops[i]) : provedLe(m->ops[i], m->ops[j])) {
          alive[i] = false;
          dropped = true;
          break;
        }
      }
    }
    if (!dropped) return m;
    std::vector<Expr> ops;
    for (size_t i = 0; i < n; ++i) {
      if (alive[i]) ops.push_back(m->ops[i]);
    }
    return minMaxOf(m->kind, ops.data(), ops.size());
  }

  // a <= b over the ranges: compare the bounds, then those of the difference, which is
  // tighter when a and b share terms.
  bool provedLe(const Expr& a, const Expr& b) const {
    if (range(a).hi <= range(b).lo) return true;
    Interval d = range(subE(a, b));
    return d.hi <= 0;
  }

  const RangeEnv& env_;
};

}  // namespace

Interval bounds(const Expr& e, const RangeEnv& env) { return boundsOf(*e, env); }

Expr simplify(const Expr& e, const RangeEnv& env) {
  Expr r = Simplifier(env).run(e);
  // A load's value is data: even a range that pins it down must not remove the read (nor the
  // bound check around it).
  if (r->kind != ExprKind::Int && !hasLoad(r)) {
    Interval x = boundsOf(*r, env);
    if (finitePoint(x)) return intConst(x.lo);
  }
  return r;
}

}  // namespace etc::ir
