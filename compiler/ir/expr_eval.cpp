// Exact, checked evaluation.
//
// Division semantics, for any signs: a / b = floor(a / b); a % b = a - b * floor(a / b) (the
// sign follows b, as in Python); cdiv(a, b) = ceil(a / b) = -floor(-a / b), which for b > 0 is
// floor((a + b - 1) / b). A zero divisor is DivByZero; a result outside int64 is Overflow.
#include "compiler/ir/expr.h"
#include "compiler/ir/expr_internal.h"

namespace etc::ir {

using namespace expr_detail;

namespace {

EvalResult failure(EvalError e) { return {0, e}; }

class Evaluator {
 public:
  explicit Evaluator(const Bindings& b) : b_(b) {}

  EvalResult run(const ExprNode& n) {
    switch (n.kind) {
      case ExprKind::Int:
      case ExprKind::Const: return {n.value};
      case ExprKind::Sym: return leaf(b_.sym, n.id);
      case ExprKind::Coord: return leaf(b_.coord, n.id);
      case ExprKind::Load: return loadValue(n);
      case ExprKind::Bounded: return boundedValue(n);
      case ExprKind::Add: return sum(n);
      case ExprKind::Mul: return product(n);
      case ExprKind::Div:
      case ExprKind::Mod:
      case ExprKind::CDiv: return division(n);
      case ExprKind::Min:
      case ExprKind::Max: return minMax(n);
    }
    return failure(EvalError::Unbound);
  }

 private:
  static EvalResult leaf(const std::function<std::optional<int64_t>(uint32_t)>& fn, uint32_t id) {
    if (!fn) return failure(EvalError::Unbound);
    std::optional<int64_t> v = fn(id);
    if (!v) return failure(EvalError::Unbound);
    return {*v};
  }

  EvalResult loadValue(const ExprNode& n) {
    std::vector<int64_t> index;
    index.reserve(n.ops.size());
    for (const Expr& op : n.ops) {
      EvalResult r = run(*op);
      if (!r.ok()) return r;
      index.push_back(r.value);
    }
    if (!b_.load) return failure(EvalError::Unbound);
    std::optional<int64_t> v = b_.load(n.id, index);
    if (!v) return failure(EvalError::Unbound);
    return {*v};
  }

  EvalResult boundedValue(const ExprNode& n) {
    EvalResult v = run(*n.ops[0]);
    if (!v.ok()) return v;
    EvalResult bound = run(*n.ops[1]);
    if (!bound.ok()) return bound;
    if (v.value > bound.value) return failure(EvalError::BoundExceeded);
    return v;
  }

  // Accumulated in 128 bits, so the result does not depend on the order of the terms: only
  // a sum that does not fit in int64 overflows.
  EvalResult sum(const ExprNode& n) {
    __int128 acc = 0;
    for (const Expr& op : n.ops) {
      EvalResult r = run(*op);
      if (!r.ok()) return r;
      acc += r.value;
    }
    if (acc < kMin || acc > kMax) return failure(EvalError::Overflow);
    return {static_cast<int64_t>(acc)};
  }

  // Likewise order-independent: a zero factor makes 0; otherwise |product| only grows, so
  // leaving int64 on the way means the product does not fit.
  EvalResult product(const ExprNode& n) {
    int64_t values[16];
    std::vector<int64_t> more;
    bool zero = false;
    for (size_t i = 0; i < n.ops.size(); ++i) {
      EvalResult r = run(*n.ops[i]);
      if (!r.ok()) return r;
      zero |= r.value == 0;
      if (i < 16) {
        values[i] = r.value;
      } else {
        more.push_back(r.value);
      }
    }
    if (zero) return {0};
    __int128 acc = 1;
    for (size_t i = 0; i < n.ops.size(); ++i) {
      acc *= i < 16 ? values[i] : more[i - 16];
      if (acc < kMin || acc > kMax) return failure(EvalError::Overflow);
    }
    return {static_cast<int64_t>(acc)};
  }

  EvalResult division(const ExprNode& n) {
    EvalResult a = run(*n.ops[0]);
    if (!a.ok()) return a;
    EvalResult b = run(*n.ops[1]);
    if (!b.ok()) return b;
    if (b.value == 0) return failure(EvalError::DivByZero);
    std::optional<int64_t> r;
    switch (n.kind) {
      case ExprKind::Div: r = floorDivChecked(a.value, b.value); break;
      case ExprKind::Mod: r = floorModChecked(a.value, b.value); break;
      default: r = ceilDivChecked(a.value, b.value); break;
    }
    if (!r) return failure(EvalError::Overflow);
    return {*r};
  }

  EvalResult minMax(const ExprNode& n) {
    int64_t acc = 0;
    for (size_t i = 0; i < n.ops.size(); ++i) {
      EvalResult r = run(*n.ops[i]);
      if (!r.ok()) return r;
      if (i == 0 || (n.kind == ExprKind::Min ? r.value < acc : r.value > acc)) acc = r.value;
    }
    return {acc};
  }

  const Bindings& b_;
};

}  // namespace

EvalResult evaluate(const Expr& e, const Bindings& b) { return Evaluator(b).run(*e); }

}  // namespace etc::ir
