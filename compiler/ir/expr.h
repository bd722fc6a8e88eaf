// Symbolic integer expressions over syms, named consts, task coordinates and data loads.
//
// An Expr is immutable and always in canonical form: every factory below simplifies as it
// builds (constant folding, flattening of + and *, like terms combined, terms in a canonical
// order, cdiv/min/max/div/mod rules that hold without knowing any ranges). Two expressions
// that are structurally equal after construction are therefore the same value; `equal` is
// that test. Named consts stay named (so `[B, H]` prints as written); `inlineConsts` replaces
// them by their values for semantic comparisons.
//
// Semantics: / and % are floor division and modulo; cdiv(a, b) = floor((a + b - 1) / b).
// (For any sign of b, cdiv(a, b) is ceil(a / b) = -floor(-a / b); the two agree for b > 0.)
// They are meant for non-negative operands (syms and coordinates are non-negative).
// Folding never overflows silently: a fold that would overflow int64 is left unfolded, and
// `evaluate` reports the overflow.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace etc::ir {

enum class ExprKind : uint8_t {
  Int,      // value
  Sym,      // id = sym index in the module, name
  Const,    // id = const index, name, value = its value
  Coord,    // id = coordinate index within its task, name
  Load,     // id = tensor index, name = tensor name, ops = indices (an i32 element read)
  Bounded,  // ops = {value, bound}: value, with the stated upper bound `value <= bound`
  Add,      // ops: n >= 2 terms (canonical order, constant term last)
  Mul,      // ops: n >= 2 factors (canonical order, constant coefficient last)
  Div,      // ops = {a, b}: floor(a / b)
  Mod,      // ops = {a, b}
  CDiv,     // ops = {a, b}: ceil(a / b)
  Min,      // ops: n >= 2 (canonical order)
  Max,      // ops: n >= 2 (canonical order)
};

struct ExprNode;
using Expr = std::shared_ptr<const ExprNode>;

struct ExprNode {
  ExprKind kind;
  int64_t value = 0;   // Int: value; Const: the const's value
  uint32_t id = 0;     // Sym, Const, Coord, Load (see ExprKind)
  std::string name;    // Sym, Const, Coord, Load
  std::vector<Expr> ops;
  size_t hash = 0;     // structural hash, computed at construction
};

// ---- factories (always return canonical expressions) ----------------------------------------
Expr intConst(int64_t v);
Expr symRef(uint32_t id, std::string name);
Expr constRef(uint32_t id, std::string name, int64_t value);
Expr coordRef(uint32_t id, std::string name);
Expr load(uint32_t tensor_id, std::string tensor_name, std::vector<Expr> indices);
Expr bounded(Expr value, Expr bound);
Expr add(Expr a, Expr b);
Expr sub(Expr a, Expr b);
Expr neg(Expr a);
Expr mul(Expr a, Expr b);
Expr floorDiv(Expr a, Expr b);
Expr mod(Expr a, Expr b);
Expr cdiv(Expr a, Expr b);
Expr min(Expr a, Expr b);
Expr max(Expr a, Expr b);

// ---- queries ---------------------------------------------------------------------------
bool equal(const Expr& a, const Expr& b);     // structural equality of canonical forms
int compare(const Expr& a, const Expr& b);    // the canonical total order (<0, 0, >0)
std::optional<int64_t> asInt(const Expr& e);  // the value if e is an Int literal
bool isConstant(const Expr& e);               // only Int and Const leaves (no syms, coords, loads)
bool hasLoad(const Expr& e);
bool hasCoord(const Expr& e);
// The factors of product e (or e itself) of the form min(max(a, 0), 1) that read data: an
// indicator, 1 where a >= 1 and 0 where a <= 0 (a data-dependent grid's extent, chosen by what
// its producers wrote). Each as {a, e without that factor}.
struct DataIndicator {
  Expr arg, rest;
};
std::vector<DataIndicator> dataIndicators(const Expr& e);
// Every leaf (Sym, Const, Coord, Load) in e, pre-order, including those inside load indices.
void forEachLeaf(const Expr& e, const std::function<void(const ExprNode&)>& fn);

// ---- rewriting -------------------------------------------------------------------------
// Rebuilds e bottom-up through the factories, replacing each leaf for which fn returns a
// non-null Expr.
Expr substitute(const Expr& e, const std::function<Expr(const ExprNode& leaf)>& fn);
Expr inlineConsts(const Expr& e);  // every Const leaf becomes its Int value

// ---- evaluation ------------------------------------------------------------------------
enum class EvalError { None, DivByZero, Overflow, Unbound, BoundExceeded };

struct EvalResult {
  int64_t value = 0;
  EvalError error = EvalError::None;
  bool ok() const { return error == EvalError::None; }
};

// Values of the leaves. Unset callbacks make the corresponding leaves Unbound.
struct Bindings {
  std::function<std::optional<int64_t>(uint32_t id)> sym;
  std::function<std::optional<int64_t>(uint32_t id)> coord;
  std::function<std::optional<int64_t>(uint32_t tensor, const std::vector<int64_t>& index)> load;
};

// Exact int64 evaluation; overflow and division by zero are reported, never undefined.
// Bounded checks value <= bound and reports BoundExceeded when it does not hold.
EvalResult evaluate(const Expr& e, const Bindings& b);

// ---- interval bounds -------------------------------------------------------------------
// Closed interval; the extremes of int64 stand for -inf / +inf.
struct Interval {
  int64_t lo;
  int64_t hi;
  static Interval all();
  static Interval point(int64_t v) { return {v, v}; }
  bool isPoint() const { return lo == hi; }
  bool lowerUnbounded() const;
  bool upperUnbounded() const;
};

struct RangeEnv {
  // Range of a sym / coordinate; unset or nullopt = unbounded.
  std::function<std::optional<Interval>(uint32_t id)> sym;
  std::function<std::optional<Interval>(uint32_t id)> coord;
};

// A sound enclosure of e's values over the environment (saturating arithmetic). A Load is
// unbounded (any i32) unless it sits under a Bounded node, whose upper bound is used.
Interval bounds(const Expr& e, const RangeEnv& env);

// Range-aware simplification: drops min/max operands that the ranges prove dominated, and
// simplifies div/mod whose remainder part the ranges keep in [0, divisor).
Expr simplify(const Expr& e, const RangeEnv& env);

// ---- printing --------------------------------------------------------------------------
// Canonical text with minimal parentheses, in the .etir expression syntax; re-parsing it
// gives an equal expression. Example: `min(N, i * 1024 + 1024) - i * 1024` prints as
// `min(N - i * 1024, 1024)`.
std::string toString(const Expr& e);

}  // namespace etc::ir
