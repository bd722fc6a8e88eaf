// The arithmetic factories: sums, products, min/max, floor division, modulo and cdiv, each
// returning the canonical form described in expr.h.
#include <algorithm>

#include "compiler/ir/expr.h"
#include "compiler/ir/expr_internal.h"

namespace etc::ir {

using namespace detail;

namespace {

// A product of two sums is expanded only while the expansion stays this small; a larger
// one is kept as a product (canonical, but not merged with its expanded equivalent).
constexpr size_t kMaxExpandedTerms = 64;

// Terms are few, usually nearly sorted (two sorted sums merged): insertion sort is both
// stable and fastest there. Large sums fall back to a stable O(n log n) sort.
void sortTerms(TermVec& t) {
  if (t.size() > 32) {
    std::stable_sort(t.begin(), t.end(),
                     [](const Term& a, const Term& b) { return compareMonomials(a, b) < 0; });
    return;
  }
  for (size_t i = 1; i < t.size(); ++i) {
    Term x = t[i];
    size_t j = i;
    while (j > 0 && compareMonomials(t[j - 1], x) > 0) {
      t[j] = t[j - 1];
      --j;
    }
    t[j] = x;
  }
}

ExprKind flipMinMax(ExprKind k) { return k == ExprKind::Min ? ExprKind::Max : ExprKind::Min; }

size_t countMinMax(const std::vector<Expr>& terms) {
  size_t n = 0;
  for (const Expr& t : terms) n += isMinMax(t->kind);
  return n;
}

// min(a, b) + max(-a, -b) is what x - x becomes for x = min(a, b): remove such pairs so that
// a min/max minus itself is 0.
void cancelOppositeMinMax(std::vector<Expr>& terms) {
  for (size_t i = 0; i < terms.size(); ++i) {
    if (!isMinMax(terms[i]->kind)) continue;
    for (size_t j = i + 1; j < terms.size(); ++j) {
      const Expr& u = terms[j];
      if (u->kind != flipMinMax(terms[i]->kind) || u->ops.size() != terms[i]->ops.size()) continue;
      if (equal(neg(terms[i]), u)) {
        terms.erase(terms.begin() + static_cast<std::ptrdiff_t>(j));
        terms.erase(terms.begin() + static_cast<std::ptrdiff_t>(i));
        --i;
        break;
      }
    }
  }
}

// c + min(a, b) = min(c + a, c + b): the one min/max term absorbs the rest of the sum, so
// that extents such as `min(N, i * 1024 + 1024) - i * 1024` become `min(N - i * 1024, 1024)`.
Expr distributeIntoMinMax(std::vector<Expr>& terms) {
  auto it = std::find_if(terms.begin(), terms.end(),
                         [](const Expr& t) { return isMinMax(t->kind); });
  Expr m = *it;
  terms.erase(it);
  Expr rest = terms.size() == 1 ? terms[0] : makeNode(ExprKind::Add, std::move(terms));
  std::vector<Expr> ops;
  ops.reserve(m->ops.size());
  for (const Expr& op : m->ops) ops.push_back(add(rest, op));
  return minMaxOf(m->kind, ops.data(), ops.size());
}

// ---- products ------------------------------------------------------------------------------

using FactorVec = SmallVec<const Expr*, 8>;
using IntVec = SmallVec<int64_t, 4>;

void collectFactors(const Expr& e, FactorVec& factors, IntVec& ints) {
  if (e->kind == ExprKind::Mul) {
    for (const Expr& op : e->ops) {
      if (op->kind == ExprKind::Int) {
        ints.push_back(op->value);
      } else {
        factors.push_back(&op);
      }
    }
  } else if (e->kind == ExprKind::Int) {
    ints.push_back(e->value);
  } else {
    factors.push_back(&e);
  }
}

// The product of factors that are not sums: merge the sorted factor lists, fold the
// constants. If the constants' product overflows they all stay, sorted, unfolded.
Expr productOfFactors(const Expr& a, const Expr& b) {
  FactorVec fa, fb;
  IntVec ints;
  collectFactors(a, fa, ints);
  collectFactors(b, fb, ints);
  for (int64_t v : ints) {
    if (v == 0) return intConst(0);
  }
  int64_t coef = 1;
  bool folded = true;
  for (int64_t v : ints) {
    auto p = checkedMul(coef, v);
    if (!p) {
      folded = false;
      break;
    }
    coef = *p;
  }
  std::vector<Expr> ops;
  ops.reserve(fa.size() + fb.size() + (folded ? 1 : ints.size()));
  size_t i = 0, j = 0;
  while (i < fa.size() || j < fb.size()) {
    bool take_a = j == fb.size() || (i < fa.size() && compareNodes(**fa[i], **fb[j]) <= 0);
    ops.push_back(take_a ? *fa[i++] : *fb[j++]);
  }
  if (folded) {
    if (ops.empty()) return intConst(coef);
    if (ops.size() == 1) {
      if (coef == 1) return ops[0];
      if (isMinMax(ops[0]->kind) || ops[0]->kind == ExprKind::Add) return mul(ops[0], intConst(coef));
    }
    if (coef != 1) ops.push_back(intConst(coef));
  } else {
    std::sort(ints.begin(), ints.end());
    for (int64_t v : ints) ops.push_back(intConst(v));
  }
  return makeNode(ExprKind::Mul, std::move(ops));
}

// c * (a + b): scale each term's coefficient (the monomials keep their order).
Expr scaleSum(const Expr& s, int64_t c) {
  TermVec terms;
  appendTerms(s, terms);
  for (Term& t : terms) {
    auto p = checkedMul(t.coef, c);
    if (!p) return nullptr;
    t.coef = *p;
    t.whole = nullptr;
  }
  return sumOfTerms(terms);
}

// (a + b) * x = a * x + b * x; a product of two sums only while the result stays small.
Expr distribute(const Expr& a, const Expr& b) {
  const Expr& s = a->kind == ExprKind::Add ? a : b;
  const Expr& o = a->kind == ExprKind::Add ? b : a;
  if (o->kind == ExprKind::Int) {
    if (Expr r = scaleSum(s, o->value)) return r;
  }
  if (o->kind == ExprKind::Add && s->ops.size() * o->ops.size() > kMaxExpandedTerms) return nullptr;
  std::vector<Expr> products;
  products.reserve(s->ops.size() * (o->kind == ExprKind::Add ? o->ops.size() : 1));
  for (const Expr& t : s->ops) {
    if (o->kind == ExprKind::Add) {
      for (const Expr& u : o->ops) products.push_back(mul(t, u));
    } else {
      products.push_back(mul(t, o));
    }
  }
  return sumOf(products.data(), products.size());
}

// c * min(a, b) = min(c * a, c * b) for c > 0, max(c * a, c * b) for c < 0.
Expr scaleMinMax(const ExprNode& m, int64_t c) {
  std::vector<Expr> ops;
  ops.reserve(m.ops.size());
  Expr ce = intConst(c);
  for (const Expr& op : m.ops) ops.push_back(mul(op, ce));
  return minMaxOf(c > 0 ? m.kind : flipMinMax(m.kind), ops.data(), ops.size());
}

// ---- min / max -----------------------------------------------------------------------------

// An operand seen as rest + offset, the offset its constant term: two operands with the
// same rest differ by a constant, and the min/max of them is known.
struct OffsetView {
  const Expr* rest;
  uint32_t nrest;
  int64_t offset;
};

OffsetView offsetView(const Expr& e) {
  if (e->kind == ExprKind::Int) return {nullptr, 0, e->value};
  if (e->kind == ExprKind::Add) {
    const Expr& last = e->ops.back();
    if (last->kind == ExprKind::Int) return {e->ops.data(), uint32_t(e->ops.size() - 1), last->value};
    return {e->ops.data(), uint32_t(e->ops.size()), 0};
  }
  return {&e, 1, 0};
}

bool sameRest(const OffsetView& a, const OffsetView& b) {
  if (a.nrest != b.nrest) return false;
  for (uint32_t i = 0; i < a.nrest; ++i) {
    if (!equalNodes(*a.rest[i], *b.rest[i])) return false;
  }
  return true;
}

// ---- division ------------------------------------------------------------------------------

uint64_t magnitude(int64_t v) { return v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v); }

uint64_t gcdU(uint64_t a, uint64_t b) {
  while (b != 0) {
    uint64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

Expr binaryNode(ExprKind kind, Expr a, Expr b) {
  std::vector<Expr> ops;
  ops.reserve(2);
  ops.push_back(std::move(a));
  ops.push_back(std::move(b));
  return makeNode(kind, std::move(ops));
}

// (g * a) / (g * c) = a / c, for floor and ceil division alike: divides every coefficient
// and the divisor by their gcd. Null when the gcd is 1.
Expr reduceByGcd(const Expr& a, int64_t c, ExprKind kind) {
  TermVec terms;
  appendTerms(a, terms);
  uint64_t g = static_cast<uint64_t>(c);
  for (const Term& t : terms) {
    g = gcdU(g, magnitude(t.coef));
    if (g == 1) return nullptr;
  }
  auto gs = static_cast<int64_t>(g);
  for (Term& t : terms) {
    t.coef /= gs;
    t.whole = nullptr;
  }
  Expr reduced = sumOfTerms(terms);
  return kind == ExprKind::Div ? floorDiv(reduced, intConst(c / gs)) : cdiv(reduced, intConst(c / gs));
}

// (x / a) / b = x / (a * b) and cdiv(cdiv(x, a), b) = cdiv(x, a * b) for a, b > 0.
Expr mergeNestedDivision(const Expr& a, int64_t c, ExprKind kind) {
  if (a->kind != kind || a->ops[1]->kind != ExprKind::Int || a->ops[1]->value <= 0) return nullptr;
  auto p = checkedMul(a->ops[1]->value, c);
  if (!p) return nullptr;
  return kind == ExprKind::Div ? floorDiv(a->ops[0], intConst(*p)) : cdiv(a->ops[0], intConst(*p));
}

// floor and ceil division by c >= 2 share their rules; they differ in the division applied
// to what is not divisible.
Expr divideByPositive(const Expr& a, const Expr& b, ExprKind kind) {
  int64_t c = b->value;
  if (Expr r = mergeNestedDivision(a, c, kind)) return r;
  if (Expr r = reduceByGcd(a, c, kind)) return r;
  // (c * q + r) / c = q + r / c, exactly, for floor and ceil division.
  DivSplit s;
  splitByDivisor(a, c, /*split_constant=*/true, s);
  if (s.quotient.empty()) return binaryNode(kind, a, b);
  Expr q = sumOfTerms(s.quotient);
  Expr r = sumOfTerms(s.rest);
  return add(std::move(q), kind == ExprKind::Div ? floorDiv(std::move(r), b) : cdiv(std::move(r), b));
}

}  // namespace

// ---- detail: terms -------------------------------------------------------------------------

namespace detail {

Term decomposeTerm(const Expr& t) {
  const ExprNode& n = *t;
  if (n.kind == ExprKind::Int) return {nullptr, 0, n.value, &t};
  if (n.kind == ExprKind::Mul) {
    const Expr& last = n.ops.back();
    if (last->kind == ExprKind::Int) return {n.ops.data(), uint32_t(n.ops.size() - 1), last->value, &t};
    return {n.ops.data(), uint32_t(n.ops.size()), 1, &t};
  }
  return {&t, 1, 1, &t};
}

void appendTerms(const Expr& e, TermVec& out) {
  if (e->kind == ExprKind::Add) {
    for (const Expr& op : e->ops) out.push_back(decomposeTerm(op));
  } else {
    out.push_back(decomposeTerm(e));
  }
}

int compareMonomials(const Term& a, const Term& b) {
  if (a.nfactors == 0 || b.nfactors == 0) return (a.nfactors == 0) - (b.nfactors == 0);
  uint32_t n = std::min(a.nfactors, b.nfactors);
  for (uint32_t i = 0; i < n; ++i) {
    if (int c = compareNodes(*a.factors[i], *b.factors[i])) return c;
  }
  return a.nfactors < b.nfactors ? -1 : (a.nfactors > b.nfactors ? 1 : 0);
}

Expr makeTerm(const Expr* factors, uint32_t n, int64_t coef) {
  if (coef == 0) return intConst(0);
  if (n == 0) return intConst(coef);
  if (n == 1) {
    if (coef == 1) return factors[0];
    // A coefficient distributes into these; mul knows how.
    if (isMinMax(factors[0]->kind) || factors[0]->kind == ExprKind::Add) return mul(factors[0], intConst(coef));
  }
  std::vector<Expr> ops;
  ops.reserve(n + 1);
  ops.insert(ops.end(), factors, factors + n);
  if (coef != 1) ops.push_back(intConst(coef));
  return makeNode(ExprKind::Mul, std::move(ops));
}

Expr sumOfTerms(TermVec& terms) {
  sortTerms(terms);
  std::vector<Expr> out;
  out.reserve(terms.size());
  bool needs_resort = false;
  for (size_t i = 0; i < terms.size();) {
    Term cur = terms[i];
    size_t j = i + 1;
    while (j < terms.size() && compareMonomials(cur, terms[j]) == 0) {
      auto s = checkedAdd(cur.coef, terms[j].coef);
      if (!s) break;  // left unfolded: terms[j] starts the next run
      cur.coef = *s;
      cur.whole = nullptr;
      ++j;
    }
    i = j;
    if (cur.coef == 0) continue;
    if (cur.whole) {
      out.push_back(*cur.whole);
      continue;
    }
    out.push_back(makeTerm(cur.factors, cur.nfactors, cur.coef));
    // A scaled min/max is rebuilt by mul and may now sort elsewhere.
    needs_resort |= cur.nfactors == 1 && cur.coef != 1 &&
                    (isMinMax(cur.factors[0]->kind) || cur.factors[0]->kind == ExprKind::Add);
  }
  if (needs_resort) return sumOf(out.data(), out.size());
  if (countMinMax(out) >= 2) cancelOppositeMinMax(out);
  if (out.size() >= 2 && countMinMax(out) == 1) return distributeIntoMinMax(out);
  if (out.empty()) return intConst(0);
  if (out.size() == 1) return out[0];
  return makeNode(ExprKind::Add, std::move(out));
}

Expr sumOf(const Expr* ops, size_t n) {
  if (n == 0) return intConst(0);
  if (n == 1) return ops[0];
  TermVec terms;
  for (size_t i = 0; i < n; ++i) appendTerms(ops[i], terms);
  return sumOfTerms(terms);
}

Expr productOf(const Expr* ops, size_t n) {
  if (n == 0) return intConst(1);
  Expr r = ops[0];
  for (size_t i = 1; i < n; ++i) r = mul(r, ops[i]);
  return r;
}

Expr minMaxOf(ExprKind kind, const Expr* ops, size_t n) {
  SmallVec<const Expr*, 8> v;
  for (size_t i = 0; i < n; ++i) {
    if (ops[i]->kind == kind) {
      for (const Expr& sub : ops[i]->ops) v.push_back(&sub);
    } else {
      v.push_back(&ops[i]);
    }
  }
  std::sort(v.begin(), v.end(), [](const Expr* a, const Expr* b) { return compareNodes(**a, **b) < 0; });
  SmallVec<OffsetView, 8> views;
  SmallVec<bool, 8> alive;
  for (const Expr* e : v) {
    views.push_back(offsetView(*e));
    alive.push_back(true);
  }
  // Duplicates and operands a constant apart: only the dominating one stays.
  for (size_t i = 0; i < v.size(); ++i) {
    for (size_t j = i + 1; j < v.size() && alive[i]; ++j) {
      if (!alive[j] || !sameRest(views[i], views[j])) continue;
      bool i_wins = kind == ExprKind::Min ? views[i].offset <= views[j].offset
                                          : views[i].offset >= views[j].offset;
      alive[i_wins ? j : i] = false;
    }
  }
  std::vector<Expr> out;
  out.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    if (alive[i]) out.push_back(*v[i]);
  }
  if (out.size() == 1) return out[0];
  return makeNode(kind, std::move(out));
}

void splitByDivisor(const Expr& a, int64_t c, bool split_constant, DivSplit& out) {
  TermVec terms;
  appendTerms(a, terms);
  for (const Term& t : terms) {
    if (t.coef % c == 0) {
      out.quotient.push_back({t.factors, t.nfactors, t.coef / c, nullptr});
    } else if (split_constant && t.nfactors == 0 && t.coef >= c) {
      out.quotient.push_back({nullptr, 0, t.coef / c, nullptr});
      out.rest.push_back({nullptr, 0, t.coef % c, nullptr});
    } else {
      out.rest.push_back(t);
    }
  }
}

}  // namespace detail

// ---- factories -----------------------------------------------------------------------------

Expr add(Expr a, Expr b) {
  if (a->kind == ExprKind::Int) {
    if (a->value == 0) return b;
    if (b->kind == ExprKind::Int) {
      if (auto s = checkedAdd(a->value, b->value)) return intConst(*s);
    }
  } else if (b->kind == ExprKind::Int && b->value == 0) {
    return a;
  }
  TermVec terms;
  appendTerms(a, terms);
  appendTerms(b, terms);
  return sumOfTerms(terms);
}

Expr neg(Expr a) { return mul(std::move(a), intConst(-1)); }

Expr sub(Expr a, Expr b) { return add(std::move(a), neg(std::move(b))); }

Expr mul(Expr a, Expr b) {
  const bool ia = a->kind == ExprKind::Int, ib = b->kind == ExprKind::Int;
  if (ia && ib) {
    if (auto p = checkedMul(a->value, b->value)) return intConst(*p);
    return productOfFactors(a, b);  // overflow: kept unfolded
  }
  if (ia && (a->value == 0 || a->value == 1)) return a->value == 0 ? a : b;
  if (ib && (b->value == 0 || b->value == 1)) return b->value == 0 ? b : a;
  if (a->kind == ExprKind::Add || b->kind == ExprKind::Add) {
    if (Expr r = distribute(a, b)) return r;
  }
  if (ia && isMinMax(b->kind)) return scaleMinMax(*b, a->value);
  if (ib && isMinMax(a->kind)) return scaleMinMax(*a, b->value);
  return productOfFactors(a, b);
}

Expr min(Expr a, Expr b) {
  Expr ops[2] = {std::move(a), std::move(b)};
  return minMaxOf(ExprKind::Min, ops, 2);
}

Expr max(Expr a, Expr b) {
  Expr ops[2] = {std::move(a), std::move(b)};
  return minMaxOf(ExprKind::Max, ops, 2);
}

Expr floorDiv(Expr a, Expr b) {
  if (b->kind != ExprKind::Int) return binaryNode(ExprKind::Div, a, b);
  const int64_t c = b->value;
  if (a->kind == ExprKind::Int) {
    if (auto q = floorDivChecked(a->value, c)) return intConst(*q);
    return binaryNode(ExprKind::Div, a, b);  // division by 0, or overflow: evaluate reports it
  }
  if (c == 1) return a;
  if (c == -1) return neg(a);
  if (c <= 0) return binaryNode(ExprKind::Div, a, b);
  return divideByPositive(a, b, ExprKind::Div);
}

Expr cdiv(Expr a, Expr b) {
  if (b->kind != ExprKind::Int) return binaryNode(ExprKind::CDiv, a, b);
  const int64_t c = b->value;
  if (a->kind == ExprKind::Int) {
    if (auto q = ceilDivChecked(a->value, c)) return intConst(*q);
    return binaryNode(ExprKind::CDiv, a, b);
  }
  if (c == 1) return a;
  if (c == -1) return neg(a);
  if (c <= 0) return binaryNode(ExprKind::CDiv, a, b);
  return divideByPositive(a, b, ExprKind::CDiv);
}

Expr mod(Expr a, Expr b) {
  if (b->kind != ExprKind::Int) return binaryNode(ExprKind::Mod, a, b);
  const int64_t c = b->value;
  if (a->kind == ExprKind::Int) {
    if (auto r = floorModChecked(a->value, c)) return intConst(*r);
    return binaryNode(ExprKind::Mod, a, b);
  }
  if (c == 1 || c == -1) return intConst(0);
  if (c <= 0) return binaryNode(ExprKind::Mod, a, b);
  // (x % (k * c)) % c = x % c
  if (a->kind == ExprKind::Mod && a->ops[1]->kind == ExprKind::Int && a->ops[1]->value > 0 &&
      a->ops[1]->value % c == 0) {
    return mod(a->ops[0], b);
  }
  // (c * q + r) % c = r % c
  DivSplit s;
  splitByDivisor(a, c, /*split_constant=*/true, s);
  if (s.quotient.empty()) return binaryNode(ExprKind::Mod, a, b);
  return mod(sumOfTerms(s.rest), b);
}

}  // namespace etc::ir
