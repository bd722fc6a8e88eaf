// The arithmetic factories: sums, products, min/max, floor division, modulo and cdiv, each
// returning the canonical form described in expr.h.
//
// Sums are handled as lists of terms (coefficient x monomial, see Term); the common small
// shapes (`i * 1024`, `i + 1`, `i + j`) take direct paths that build the node at once.
#include <algorithm>

#include "compiler/ir/expr.h"
#include "compiler/ir/expr_internal.h"

namespace etc::ir {

using namespace expr_detail;

namespace {

// A product of two sums is expanded only while the expansion stays this small; a larger
// one is kept as a product (canonical, but not merged with its expanded equivalent).
constexpr size_t kMaxExpandedTerms = 64;

ExprKind flipMinMax(ExprKind k) { return k == ExprKind::Min ? ExprKind::Max : ExprKind::Min; }

// Not a literal, sum, product, min or max: a factor that no rule looks into.
bool isSimpleFactor(const ExprNode& e) {
  switch (e.kind) {
    case ExprKind::Int:
    case ExprKind::Add:
    case ExprKind::Mul:
    case ExprKind::Min:
    case ExprKind::Max: return false;
    default: return true;
  }
}

// A term with a monomial that no sum rule rewrites (not a literal, sum, min or max).
bool isPlainTerm(const ExprNode& e) {
  return e.kind != ExprKind::Int && e.kind != ExprKind::Add && !isMinMax(e.kind);
}

Expr binaryNode(ExprKind kind, const Expr& a, const Expr& b) {
  std::vector<Expr> ops;
  ops.reserve(2);
  ops.push_back(a);
  ops.push_back(b);
  return makeNode(kind, std::move(ops));
}

bool hasMinMaxTerm(const Expr& e) {
  if (isMinMax(e->kind)) return true;
  if (e->kind != ExprKind::Add) return false;
  return std::any_of(e->ops.begin(), e->ops.end(), [](const Expr& t) { return isMinMax(t->kind); });
}

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

// Sorts and merges like terms in place, dropping those that cancel. When the coefficients
// of a monomial do not sum to an int64 (a fold that would overflow), they are merged only as
// far as the partial sums fit: the term that would overflow starts a new run.
void combineLikeTerms(TermVec& terms) {
  sortTerms(terms);
  size_t n = 0;
  for (size_t i = 0; i < terms.size();) {
    size_t end = i + 1;
    __int128 total = terms[i].coef;
    while (end < terms.size() && compareMonomials(terms[i], terms[end]) == 0) total += terms[end++].coef;
    Term cur = terms[i];
    if (end - i > 1 && total >= kMin && total <= kMax) {
      cur.coef = static_cast<int64_t>(total);
      cur.whole = nullptr;
      i = end;
    } else {
      for (++i; i < end; ++i) {
        auto s = checkedAdd(cur.coef, terms[i].coef);
        if (!s) break;
        cur.coef = *s;
        cur.whole = nullptr;
      }
    }
    if (cur.coef != 0) terms[n++] = cur;
  }
  terms.truncate(n);
}

Expr materialize(const Term& t) { return t.whole ? *t.whole : makeTerm(t.factors, t.nfactors, t.coef); }

// A scaled min/max (or sum) is rebuilt by mul, and the result may sort elsewhere.
bool rebuiltByMul(const Term& t) {
  return !t.whole && t.nfactors == 1 && t.coef != 1 &&
         (isMinMax(t.factors[0]->kind) || t.factors[0]->kind == ExprKind::Add);
}

// min(a, b) + max(-a, -b) is what x - x becomes for x = min(a, b): remove such pairs so that
// a min/max minus itself is 0.
void cancelOppositeMinMax(std::vector<Expr>& terms) {
  for (size_t i = 0; i < terms.size(); ++i) {
    if (!isMinMax(terms[i]->kind)) continue;
    for (size_t j = i + 1; j < terms.size(); ++j) {
      const Expr& u = terms[j];
      if (u->kind != flipMinMax(terms[i]->kind) || u->ops.size() != terms[i]->ops.size()) continue;
      if (equal(negE(terms[i]), u)) {
        terms.erase(terms.begin() + static_cast<std::ptrdiff_t>(j));
        terms.erase(terms.begin() + static_cast<std::ptrdiff_t>(i));
        --i;  // wraps for i == 0; the loop's ++i brings it back
        break;
      }
    }
  }
}

// c + min(a, b) = min(c + a, c + b): the one min/max term absorbs the rest of the sum, so
// that extents such as `min(N, i * 1024 + 1024) - i * 1024` become `min(N - i * 1024, 1024)`.
Expr distributeIntoMinMax(const std::vector<Expr>& terms) {
  size_t m = 0;
  while (!isMinMax(terms[m]->kind)) ++m;
  const ExprNode& mm = *terms[m];
  std::vector<Expr> ops;
  ops.reserve(mm.ops.size());
  for (const Expr& op : mm.ops) {
    TermVec t;
    for (size_t k = 0; k < terms.size(); ++k) {
      if (k != m) t.push_back(decomposeTerm(terms[k]));
    }
    appendTerms(op, t);
    ops.push_back(sumOfTerms(t));
  }
  return minMaxOf(mm.kind, ops.data(), ops.size());
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
  // The exact product decides, not the order of the factors: with no zero factor the
  // magnitude never shrinks, so once it exceeds 2^63 it cannot come back into int64.
  for (int64_t v : ints) {
    if (v == 0) return intConst(0);
  }
  const __int128 limit = static_cast<__int128>(1) << 63;
  __int128 exact = 1;
  for (int64_t v : ints) {
    exact *= v;
    if (exact > limit || exact < -limit) break;
  }
  const bool folded = exact >= kMin && exact <= kMax;
  const auto coef = static_cast<int64_t>(folded ? exact : 1);
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
      if (isMinMax(ops[0]->kind) || ops[0]->kind == ExprKind::Add) return mulE(ops[0], intConst(coef));
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
      for (const Expr& u : o->ops) products.push_back(mulE(t, u));
    } else {
      products.push_back(mulE(t, o));
    }
  }
  return sumOf(products.data(), products.size());
}

// c * min(a, b) = min(c * a, c * b) for c > 0, max(c * a, c * b) for c < 0.
Expr scaleMinMax(const ExprNode& m, const Expr& c) {
  std::vector<Expr> ops;
  ops.reserve(m.ops.size());
  for (const Expr& op : m.ops) ops.push_back(mulE(op, c));
  return minMaxOf(c->value > 0 ? m.kind : flipMinMax(m.kind), ops.data(), ops.size());
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
  return divideE(kind, sumOfTerms(terms), intConst(c / gs));
}

// (x / a) / b = x / (a * b) and cdiv(cdiv(x, a), b) = cdiv(x, a * b) for a, b > 0.
Expr mergeNestedDivision(const Expr& a, int64_t c, ExprKind kind) {
  if (a->kind != kind || a->ops[1]->kind != ExprKind::Int || a->ops[1]->value <= 0) return nullptr;
  auto p = checkedMul(a->ops[1]->value, c);
  if (!p) return nullptr;
  return divideE(kind, a->ops[0], intConst(*p));
}

// Floor and ceil division by c >= 2 share their rules; they differ in the division applied
// to what is not divisible.
Expr divideByPositive(ExprKind kind, const Expr& a, const Expr& b) {
  int64_t c = b->value;
  if (Expr r = mergeNestedDivision(a, c, kind)) return r;
  if (Expr r = reduceByGcd(a, c, kind)) return r;
  // (c * q + r) / c = q + r / c, exactly, for floor and ceil division.
  DivSplit s;
  splitByDivisor(a, c, /*split_constant=*/true, s);
  if (s.quotient.empty()) return binaryNode(kind, a, b);
  return addE(sumOfTerms(s.quotient), divideE(kind, sumOfTerms(s.rest), b));
}

Expr modByPositive(const Expr& a, const Expr& b) {
  int64_t c = b->value;
  // (x % (k * c)) % c = x % c
  if (a->kind == ExprKind::Mod && a->ops[1]->kind == ExprKind::Int && a->ops[1]->value > 0 &&
      a->ops[1]->value % c == 0) {
    return divideE(ExprKind::Mod, a->ops[0], b);
  }
  // (c * q + r) % c = r % c
  DivSplit s;
  splitByDivisor(a, c, /*split_constant=*/true, s);
  if (s.quotient.empty()) return binaryNode(ExprKind::Mod, a, b);
  return divideE(ExprKind::Mod, sumOfTerms(s.rest), b);
}

// A divisor whose sign is known without ranges: named consts with positive values, times a
// positive coefficient (`BM`, `BM * BN`, `BM * 2`).
bool positiveConstMonomial(const Expr& b, Term& out) {
  out = decomposeTerm(b);
  if (out.nfactors == 0 || out.coef <= 0) return false;
  for (uint32_t i = 0; i < out.nfactors; ++i) {
    const ExprNode& f = *out.factors[i];
    if (f.kind != ExprKind::Const || f.value <= 0) return false;
  }
  return true;
}

// t / d as a term when d divides t (its factors a sub-multiset of t's, its coefficient
// dividing t's); null otherwise. Both factor lists are sorted.
Expr divideTerm(const Term& t, const Term& d) {
  if (t.coef % d.coef != 0 || t.nfactors < d.nfactors) return nullptr;
  std::vector<Expr> rest;
  uint32_t j = 0;
  for (uint32_t i = 0; i < t.nfactors; ++i) {
    int c = j < d.nfactors ? compareNodes(*t.factors[i], *d.factors[j]) : -1;
    if (c == 0) {
      ++j;
    } else if (c < 0) {
      rest.push_back(t.factors[i]);
    } else {
      return nullptr;  // d's factor j is missing from t
    }
  }
  if (j < d.nfactors) return nullptr;
  return mulE(productOf(rest.data(), rest.size()), intConst(t.coef / d.coef));
}

// (d * q + r) / d = q + r / d and (d * q + r) % d = r % d for a divisor d > 0 that is a
// product of named consts: `(i * BM + j) / BM` is `i + j / BM`.
Expr divideByConstMonomial(ExprKind kind, const Expr& a, const Expr& b, const Term& d) {
  if (a->kind == ExprKind::Int && a->value == 0) return a;
  TermVec terms, rest;
  appendTerms(a, terms);
  std::vector<Expr> quotient;
  for (const Term& t : terms) {
    if (Expr q = divideTerm(t, d)) {
      quotient.push_back(std::move(q));
    } else {
      rest.push_back(t);
    }
  }
  if (quotient.empty()) return binaryNode(kind, a, b);
  Expr r = sumOfTerms(rest);
  if (kind == ExprKind::Mod) return divideE(kind, r, b);
  return addE(sumOf(quotient.data(), quotient.size()), divideE(kind, r, b));
}

}  // namespace

// ---- detail: terms -------------------------------------------------------------------------

namespace expr_detail {

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
    if (isMinMax(factors[0]->kind) || factors[0]->kind == ExprKind::Add) return mulE(factors[0], intConst(coef));
  }
  std::vector<Expr> ops;
  ops.reserve(n + 1);
  ops.insert(ops.end(), factors, factors + n);
  if (coef != 1) ops.push_back(intConst(coef));
  return makeNode(ExprKind::Mul, std::move(ops));
}

Expr sumOfTerms(TermVec& terms) {
  combineLikeTerms(terms);
  if (terms.empty()) return intConst(0);
  if (terms.size() == 1) return materialize(terms[0]);
  std::vector<Expr> out;
  out.reserve(terms.size());
  bool needs_resort = false;
  size_t nminmax = 0;
  for (const Term& t : terms) {
    out.push_back(materialize(t));
    needs_resort |= rebuiltByMul(t);
    nminmax += isMinMax(out.back()->kind);
  }
  if (needs_resort) return sumOf(out.data(), out.size());
  if (nminmax >= 2) {
    cancelOppositeMinMax(out);
    nminmax = static_cast<size_t>(
        std::count_if(out.begin(), out.end(), [](const Expr& t) { return isMinMax(t->kind); }));
  }
  if (out.size() >= 2 && nminmax == 1) return distributeIntoMinMax(out);
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
  for (size_t i = 1; i < n; ++i) r = mulE(r, ops[i]);
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
  size_t nalive = v.size();
  for (size_t i = 0; i < v.size(); ++i) {
    for (size_t j = i + 1; j < v.size() && alive[i]; ++j) {
      if (!alive[j] || !sameRest(views[i], views[j])) continue;
      bool i_wins = kind == ExprKind::Min ? views[i].offset <= views[j].offset
                                          : views[i].offset >= views[j].offset;
      alive[i_wins ? j : i] = false;
      --nalive;
    }
  }
  if (nalive == 1) {
    for (size_t i = 0; i < v.size(); ++i) {
      if (alive[i]) return *v[i];
    }
  }
  std::vector<Expr> out;
  out.reserve(nalive);
  for (size_t i = 0; i < v.size(); ++i) {
    if (alive[i]) out.push_back(*v[i]);
  }
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

Expr addE(const Expr& a, const Expr& b) {
  const bool ia = a->kind == ExprKind::Int, ib = b->kind == ExprKind::Int;
  if (ia && a->value == 0) return b;
  if (ib && b->value == 0) return a;
  if (ia && ib) {
    if (auto s = checkedAdd(a->value, b->value)) return intConst(*s);
  }
  // Direct paths: a term plus a literal, and two terms with different monomials.
  if (ib && isPlainTerm(*a)) return binaryNode(ExprKind::Add, a, b);
  if (ia && isPlainTerm(*b)) return binaryNode(ExprKind::Add, b, a);
  if (isPlainTerm(*a) && isPlainTerm(*b)) {
    int c = compareMonomials(decomposeTerm(a), decomposeTerm(b));
    if (c < 0) return binaryNode(ExprKind::Add, a, b);
    if (c > 0) return binaryNode(ExprKind::Add, b, a);
  }
  TermVec terms;
  appendTerms(a, terms);
  appendTerms(b, terms);
  return sumOfTerms(terms);
}

Expr subE(const Expr& a, const Expr& b) {
  if (b->kind == ExprKind::Int && b->value != kMin) {
    if (b->value == 0) return a;
    return addE(a, intConst(-b->value));
  }
  // Negating a min/max flips it; everything else negates term by term, without building
  // -b first.
  if (hasMinMaxTerm(b)) return addE(a, negE(b));
  TermVec terms;
  appendTerms(a, terms);
  size_t first_b = terms.size();
  appendTerms(b, terms);
  for (size_t i = first_b; i < terms.size(); ++i) {
    if (terms[i].coef == kMin) return addE(a, negE(b));  // -kMin overflows
    terms[i].coef = -terms[i].coef;
    terms[i].whole = nullptr;
  }
  return sumOfTerms(terms);
}

Expr negE(const Expr& a) { return mulE(a, intConst(-1)); }

Expr mulE(const Expr& a, const Expr& b) {
  const bool ia = a->kind == ExprKind::Int, ib = b->kind == ExprKind::Int;
  if (ia && ib) {
    if (auto p = checkedMul(a->value, b->value)) return intConst(*p);
    return productOfFactors(a, b);  // overflow: kept unfolded
  }
  if (ia && (a->value == 0 || a->value == 1)) return a->value == 0 ? a : b;
  if (ib && (b->value == 0 || b->value == 1)) return b->value == 0 ? b : a;
  // Direct paths: a factor times a literal, and two factors.
  if (ib && isSimpleFactor(*a)) return binaryNode(ExprKind::Mul, a, b);
  if (ia && isSimpleFactor(*b)) return binaryNode(ExprKind::Mul, b, a);
  if (isSimpleFactor(*a) && isSimpleFactor(*b)) {
    return compareNodes(*a, *b) <= 0 ? binaryNode(ExprKind::Mul, a, b) : binaryNode(ExprKind::Mul, b, a);
  }
  if (a->kind == ExprKind::Add || b->kind == ExprKind::Add) {
    if (Expr r = distribute(a, b)) return r;
  }
  if (ia && isMinMax(b->kind)) return scaleMinMax(*b, a);
  if (ib && isMinMax(a->kind)) return scaleMinMax(*a, b);
  return productOfFactors(a, b);
}

Expr divideE(ExprKind kind, const Expr& a, const Expr& b) {
  if (b->kind != ExprKind::Int) {
    Term d;
    if (positiveConstMonomial(b, d)) {
      // 0 / d, 0 % d and cdiv(0, d) are 0 for a positive divisor (left by pulling out terms).
      if (a->kind == ExprKind::Int && a->value == 0) return a;
      return divideByConstMonomial(kind, a, b, d);
    }
    return binaryNode(kind, a, b);
  }
  const int64_t c = b->value;
  if (a->kind == ExprKind::Int) {
    std::optional<int64_t> r = kind == ExprKind::Div   ? floorDivChecked(a->value, c)
                               : kind == ExprKind::Mod ? floorModChecked(a->value, c)
                                                       : ceilDivChecked(a->value, c);
    if (r) return intConst(*r);
    return binaryNode(kind, a, b);  // division by 0, or overflow: evaluate reports it
  }
  if (c == 1 || c == -1) {
    if (kind == ExprKind::Mod) return intConst(0);
    return c == 1 ? a : negE(a);
  }
  if (c <= 0) return binaryNode(kind, a, b);
  return kind == ExprKind::Mod ? modByPositive(a, b) : divideByPositive(kind, a, b);
}

}  // namespace expr_detail

// ---- factories -----------------------------------------------------------------------------

Expr add(Expr a, Expr b) { return addE(a, b); }
Expr sub(Expr a, Expr b) { return subE(a, b); }
Expr neg(Expr a) { return negE(a); }
Expr mul(Expr a, Expr b) { return mulE(a, b); }
Expr floorDiv(Expr a, Expr b) { return divideE(ExprKind::Div, a, b); }
Expr mod(Expr a, Expr b) { return divideE(ExprKind::Mod, a, b); }
Expr cdiv(Expr a, Expr b) { return divideE(ExprKind::CDiv, a, b); }

Expr min(Expr a, Expr b) {
  Expr ops[2] = {std::move(a), std::move(b)};
  return minMaxOf(ExprKind::Min, ops, 2);
}

Expr max(Expr a, Expr b) {
  Expr ops[2] = {std::move(a), std::move(b)};
  return minMaxOf(ExprKind::Max, ops, 2);
}

}  // namespace etc::ir
