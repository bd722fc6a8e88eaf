// Private helpers shared by the expr_*.cpp files: node construction, the term view of sums
// and products, checked integer arithmetic and a small inline vector. Not part of the API.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <type_traits>
#include <vector>

#include "compiler/ir/expr.h"

namespace etc::ir::expr_detail {

inline constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
inline constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// A vector with inline storage for trivially copyable elements. The factories gather a
// handful of terms or factors per call; a heap allocation per call would dominate.
template <class T, size_t N>
class SmallVec {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);

 public:
  SmallVec() = default;
  SmallVec(const SmallVec&) = delete;
  SmallVec& operator=(const SmallVec&) = delete;

  void push_back(const T& v) {
    if (size_ == cap_) grow();
    data_[size_++] = v;
  }
  void pop_back() { --size_; }
  void truncate(size_t n) { size_ = n; }
  void clear() { size_ = 0; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T& back() { return data_[size_ - 1]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  T* data() { return data_; }

 private:
  void grow() {
    size_t cap = cap_ * 2;
    auto p = std::make_unique<T[]>(cap);
    std::memcpy(static_cast<void*>(p.get()), data_, size_ * sizeof(T));
    heap_ = std::move(p);
    data_ = heap_.get();
    cap_ = cap;
  }

  T inline_[N];
  T* data_ = inline_;
  size_t size_ = 0;
  size_t cap_ = N;
  std::unique_ptr<T[]> heap_;
};

// ---- checked arithmetic (nullopt: overflow, or a zero divisor) ------------------------------

inline std::optional<int64_t> checkedAdd(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}
inline std::optional<int64_t> checkedSub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) return std::nullopt;
  return r;
}
inline std::optional<int64_t> checkedMul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}
// floor(a / b)
inline std::optional<int64_t> floorDivChecked(int64_t a, int64_t b) {
  if (b == 0 || (a == kMin && b == -1)) return std::nullopt;
  int64_t q = a / b, r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) --q;
  return q;
}
// a - b * floor(a / b): the sign follows b. Never overflows (kMin % -1 is 0).
inline std::optional<int64_t> floorModChecked(int64_t a, int64_t b) {
  if (b == 0) return std::nullopt;
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
// ceil(a / b) = -floor(-a / b), for either sign of b.
inline std::optional<int64_t> ceilDivChecked(int64_t a, int64_t b) {
  if (b == 0 || (a == kMin && b == -1)) return std::nullopt;
  int64_t q = a / b, r = a % b;
  if (r != 0 && ((r > 0) == (b > 0))) ++q;
  return q;
}

// ---- nodes ---------------------------------------------------------------------------------

size_t hashNode(const ExprNode& n);
// A composite node with exactly these operands (no simplification); computes the hash.
Expr makeNode(ExprKind kind, std::vector<Expr> ops);
int compareNodes(const ExprNode& a, const ExprNode& b);
bool equalNodes(const ExprNode& a, const ExprNode& b);

inline bool isMinMax(ExprKind k) { return k == ExprKind::Min || k == ExprKind::Max; }
inline bool isLeaf(ExprKind k) {
  return k == ExprKind::Sym || k == ExprKind::Const || k == ExprKind::Coord || k == ExprKind::Load;
}

// ---- the term view of a sum -----------------------------------------------------------------
// A term is coef * monomial, the monomial a product of non-constant factors (none for the
// constant term). In the tree a term is the monomial itself when coef == 1, else
// Mul{factors..., Int coef}.
struct Term {
  const Expr* factors;  // points into a live node's ops (or at a live Expr); null if none
  uint32_t nfactors;
  int64_t coef;
  const Expr* whole;  // the term as an expression while coef is the one it was built with
};
using TermVec = SmallVec<Term, 12>;

Term decomposeTerm(const Expr& t);
// Appends the terms of e (its operands if e is a sum, else e itself).
void appendTerms(const Expr& e, TermVec& out);
// Order of terms in a sum: by monomial, the constant term last.
int compareMonomials(const Term& a, const Term& b);
// The canonical expression for coef * monomial.
Expr makeTerm(const Expr* factors, uint32_t n, int64_t coef);
// The canonical sum of the terms (sorted, like terms combined, the min/max rule applied).
Expr sumOfTerms(TermVec& terms);

// The factories by reference (the public ones take their operands by value; internal calls
// would pay a reference-count round trip per operand).
Expr addE(const Expr& a, const Expr& b);
Expr subE(const Expr& a, const Expr& b);
Expr mulE(const Expr& a, const Expr& b);
Expr negE(const Expr& a);
Expr divideE(ExprKind kind, const Expr& a, const Expr& b);  // Div, Mod or CDiv

// n-ary factories.
Expr sumOf(const Expr* ops, size_t n);
Expr productOf(const Expr* ops, size_t n);
Expr minMaxOf(ExprKind kind, const Expr* ops, size_t n);
// Rebuilds a composite of e's kind from new operands through the factories.
Expr rebuild(const ExprNode& e, std::vector<Expr> ops);

// The split of a sum by a positive constant divisor c: quotient holds the terms whose
// coefficient c divides (their coefficients divided by c), rest the other terms unchanged.
// With split_constant, a constant term k >= c is split too: floor(k / c) to the quotient,
// k mod c to rest.
struct DivSplit {
  TermVec quotient;
  TermVec rest;
};
void splitByDivisor(const Expr& a, int64_t c, bool split_constant, DivSplit& out);

}  // namespace etc::ir::expr_detail
