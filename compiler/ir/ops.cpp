// The operator registry: specs and shape/dtype rules of every op (see docs/ops.md).
//
// Every rule works on whole tensors (op level) and on tiles (task level, where a point index
// drops a dimension), so ranks are checked relative to each other ("[..., H]") wherever the
// op allows leading dimensions. Extents are only ever compared through ctx.sameExtent.

#include "compiler/ir/ops.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <utility>

namespace etc::ir {

// ---- public helpers ---------------------------------------------------------------------

bool storableAs(DType computed, DType stored) {
  if (isFloat(computed)) return isFloat(stored);
  return computed == stored;
}

namespace {

using Shape = std::vector<Expr>;

std::string str(const Expr& e) { return toString(e); }
std::string num(double v) { return fmt::format("{}", v); }

std::optional<int64_t> constValue(const Expr& e) { return asInt(inlineConsts(e)); }

bool isPowerOfTwo(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

bool isArithmetic(DType t) { return isFloat(t) || t == DType::I32 || t == DType::I64; }

Shape dropDim(const Shape& s, size_t d) {
  Shape r;
  for (size_t i = 0; i < s.size(); ++i)
    if (i != d) r.push_back(s[i]);
  return r;
}

Shape leading(const Shape& s, size_t n) { return Shape(s.begin(), s.begin() + n); }

const OperandType* declared(const OpContext& ctx, int k) {
  const auto& d = ctx.declaredOutputs();
  return k >= 0 && static_cast<size_t>(k) < d.size() ? d[k] : nullptr;
}

// Fills `outputs` with exactly numOutputs() entries (the caller has checked the arity).
void setOutputs(const OpContext& ctx, std::vector<OperandType>& outputs,
                std::vector<OperandType> results) {
  size_t n = static_cast<size_t>(std::max(ctx.numOutputs(), 0));
  results.resize(n);
  outputs = std::move(results);
}

// The checks shared by the rules. Each reports one precise error and returns false; `ok`
// records whether any check failed so that a rule can go on reporting independent errors.
class Rule {
 public:
  Rule(OpContext& ctx, std::vector<std::string_view> roles,
       std::vector<std::string_view> results = {})
      : ctx(ctx), roles_(std::move(roles)), results_(std::move(results)) {}

  OpContext& ctx;
  bool ok = true;

  const OperandType& in(int i) const { return ctx.inputs()[i]; }
  int rank(int i) const { return static_cast<int>(in(i).shape.size()); }
  DType dtype(int i) const { return in(i).dtype; }
  const Expr& dim(int i, int d) const { return in(i).shape[d]; }
  const Expr& last(int i) const { return in(i).shape.back(); }

  std::string name(int i) const { return fmt::format("operand {} ({})", i, roles_[i]); }
  std::string resultName(int k) const {
    return k < static_cast<int>(results_.size()) ? fmt::format("result {} ({})", k, results_[k])
                                                 : fmt::format("result {}", k);
  }

  bool fail(int operand, std::string msg) {
    ctx.error(operand, std::move(msg));
    ok = false;
    return false;
  }
  bool attrFail(std::string_view attr, std::string msg) {
    ctx.attrError(attr, std::move(msg));
    ok = false;
    return false;
  }

  // ---- ranks ----
  bool rankIs(int i, int r) {
    if (rank(i) == r) return true;
    return fail(i, fmt::format("{} must have rank {}; got rank {}", name(i), r, rank(i)));
  }
  bool rankAtLeast(int i, int r) {
    if (rank(i) >= r) return true;
    return fail(i, fmt::format("{} must have rank at least {}; got rank {}", name(i), r, rank(i)));
  }
  bool rankIn(int i, int lo, int hi) {
    if (rank(i) >= lo && rank(i) <= hi) return true;
    return fail(i, fmt::format("{} must have rank {} or {}; got rank {}", name(i), lo, hi, rank(i)));
  }
  // Rank of i must be rank(j) + delta; `why` explains the relation.
  bool rankRelative(int i, int j, int delta, std::string_view why) {
    if (rank(i) == rank(j) + delta) return true;
    return fail(i, fmt::format("{} has rank {}; expected rank {} ({})", name(i), rank(i),
                               rank(j) + delta, why));
  }
  bool sameRank(int i, int j) {
    if (rank(i) == rank(j)) return true;
    return fail(i, fmt::format("{} has rank {}; expected rank {} to match {}", name(i), rank(i),
                               rank(j), name(j)));
  }

  // ---- dtypes ----
  bool isFloatOperand(int i) {
    if (isFloat(dtype(i))) return true;
    return fail(i, fmt::format("{} must have a float dtype (f32, f16 or bf16); got {}", name(i),
                               dtypeName(dtype(i))));
  }
  bool isArithmeticOperand(int i) {
    if (isArithmetic(dtype(i))) return true;
    return fail(i, fmt::format("{} must have dtype f32, f16, bf16, i32 or i64; got {}", name(i),
                               dtypeName(dtype(i))));
  }
  bool dtypeIs(int i, DType t) {
    if (dtype(i) == t) return true;
    return fail(i, fmt::format("{} must have dtype {}; got {}", name(i), dtypeName(t),
                               dtypeName(dtype(i))));
  }
  bool sameDType(int i, int j) {
    if (dtype(i) == dtype(j)) return true;
    return fail(i, fmt::format("{} has dtype {}; expected {} to match {}", name(i),
                               dtypeName(dtype(i)), dtypeName(dtype(j)), name(j)));
  }

  // ---- extents ----
  // Dimension di of operand i against dimension dj of operand j.
  bool extentMatches(int i, int di, int j, int dj, std::string_view hint = {}) {
    if (ctx.sameExtent(dim(i, di), dim(j, dj))) return true;
    return fail(i, fmt::format("{} has extent {} in dimension {}; expected {} to match dimension "
                               "{} of {}{}",
                               name(i), str(dim(i, di)), di, str(dim(j, dj)), dj, name(j), hint));
  }
  // Dimension di of operand i against an expected extent; `why` is a parenthesised reason.
  bool extentIs(int i, int di, const Expr& expected, std::string_view why = {}) {
    if (ctx.sameExtent(dim(i, di), expected)) return true;
    return fail(i, fmt::format("{} has extent {} in dimension {}; expected {}{}{}", name(i),
                               str(dim(i, di)), di, str(expected), why.empty() ? "" : " ", why));
  }
  // Dimensions 0..n-1 of i against those of j (the shared leading dimensions).
  bool leadingMatch(int i, int j, int n) {
    bool good = true;
    for (int d = 0; d < n; ++d) good = extentMatches(i, d, j, d) && good;
    return good;
  }
  bool sameShape(int i, int j) {
    if (!sameRank(i, j)) return false;
    return leadingMatch(i, j, rank(i));
  }
  // A constant extent that must be a multiple of `factor` (skipped when not constant).
  bool multipleOf(int i, int d, int64_t factor, std::string_view factor_name) {
    auto v = constValue(dim(i, d));
    if (!v || factor <= 0 || *v % factor == 0) return true;
    return fail(i, fmt::format("{} has extent {} in dimension {}, which is not a multiple of {} {}",
                               name(i), *v, d, factor_name, factor));
  }

  // ---- attributes ----
  bool positiveInt(std::string_view attr) {
    int64_t v = ctx.attrInt(attr);
    if (v > 0) return true;
    return attrFail(attr, fmt::format("must be positive; got {}", v));
  }
  bool nonNegativeInt(std::string_view attr) {
    int64_t v = ctx.attrInt(attr);
    if (v >= 0) return true;
    return attrFail(attr, fmt::format("must be >= 0; got {}", v));
  }
  bool powerOfTwoInt(std::string_view attr) {
    int64_t v = ctx.attrInt(attr);
    if (isPowerOfTwo(v)) return true;
    return attrFail(attr, fmt::format("must be a power of two; got {}", v));
  }
  bool positiveFloat(std::string_view attr) {
    double v = ctx.attrFloat(attr);
    if (std::isfinite(v) && v > 0) return true;
    return attrFail(attr, fmt::format("must be a finite number > 0; got {}", num(v)));
  }
  bool nonNegativeFloat(std::string_view attr) {
    double v = ctx.attrFloat(attr);
    if (std::isfinite(v) && v >= 0) return true;
    return attrFail(attr, fmt::format("must be a finite number >= 0; got {}", num(v)));
  }
  bool oneOf(std::string_view attr, std::initializer_list<std::string_view> allowed) {
    std::string v = ctx.attrString(attr);
    for (auto a : allowed)
      if (v == a) return true;
    std::string list;
    size_t k = 0;
    for (auto a : allowed) {
      if (k) list += (k + 1 == allowed.size()) ? " or " : ", ";
      list += fmt::format("\"{}\"", a);
      ++k;
    }
    return attrFail(attr, fmt::format("must be {}; got \"{}\"", list, v));
  }

 private:
  std::vector<std::string_view> roles_;
  std::vector<std::string_view> results_;
};

// ---- attribute spec helpers -------------------------------------------------------------

AttrValue boolV(bool b) {
  AttrValue v;
  v.type = AttrType::Bool;
  v.b = b;
  return v;
}
AttrValue intV(int64_t i) {
  AttrValue v;
  v.type = AttrType::Int;
  v.i = intConst(i);
  return v;
}
AttrValue floatV(double f, std::string text) {
  AttrValue v;
  v.type = AttrType::Float;
  v.f = f;
  v.text = std::move(text);
  return v;
}
AttrValue stringV(std::string s) {
  AttrValue v;
  v.type = AttrType::String;
  v.text = std::move(s);
  return v;
}
AttrValue dtypeV(DType t) {
  AttrValue v;
  v.type = AttrType::DType;
  v.dtype = t;
  return v;
}
AttrValue noDefault(AttrType t) {
  AttrValue v;
  v.type = t;
  if (t == AttrType::Int) v.i = intConst(0);
  return v;
}

AttrSpec required(std::string_view name, AttrType t, std::string_view doc) {
  return AttrSpec{name, t, true, noDefault(t), doc};
}
AttrSpec optional(std::string_view name, AttrValue def, std::string_view doc) {
  AttrType t = def.type;
  return AttrSpec{name, t, false, std::move(def), doc};
}

AttrSpec epsAttr() { return optional("eps", floatV(1e-6, "1e-6"), "added to the mean square"); }

// ---- rules ------------------------------------------------------------------------------

bool inferCopy(OpContext& ctx, std::vector<OperandType>& out) {
  setOutputs(ctx, out, {ctx.inputs()[0]});
  return true;
}

// Whether a fill value can be stored in `t`; reports through r otherwise.
bool checkFillValue(Rule& r, double v, DType t) {
  std::string_view dn = dtypeName(t);
  if (isInteger(t)) {
    if (!std::isfinite(v) || std::floor(v) != v)
      return r.attrFail("value", fmt::format("{} cannot be stored in the {} destination "
                                             "(it is not an integer)",
                                             num(v), dn));
    double lo = 0, hi = 255;
    std::string range = "[0, 255]";
    if (t == DType::I32) {
      lo = -2147483648.0, hi = 2147483647.0;
      range = "[-2147483648, 2147483647]";
    } else if (t == DType::I64) {
      lo = -9223372036854775808.0, hi = std::nextafter(9223372036854775808.0, 0.0);
      range = "[-9223372036854775808, 9223372036854775807]";
    }
    if (v < lo || v > hi)
      return r.attrFail("value",
                        fmt::format("{} is out of range for the {} destination {}", num(v),
                                    dn, range));
    return true;
  }
  if (!std::isfinite(v)) return true;  // +-inf and nan are representable in every float type
  double max = t == DType::F16    ? 65504.0
               : t == DType::BF16 ? 3.3895313892515355e38
                                  : static_cast<double>(std::numeric_limits<float>::max());
  if (std::fabs(v) > max)
    return r.attrFail("value", fmt::format("{} overflows the {} destination (largest finite "
                                           "value {})",
                                           num(v), dn, num(max)));
  return true;
}

bool inferFill(OpContext& ctx, std::vector<OperandType>& out) {
  Rule r(ctx, {});
  const OperandType* d = declared(ctx, 0);
  if (!d) {
    ctx.error(-1, "fill needs a declared destination (its shape cannot be inferred)");
    return false;
  }
  if (!checkFillValue(r, ctx.attrFloat("value"), d->dtype)) return false;
  setOutputs(ctx, out, {*d});
  return true;
}

bool inferCast(OpContext& ctx, std::vector<OperandType>& out) {
  DType to;
  if (ctx.attrWritten("to")) {
    to = ctx.attrDType("to");
  } else if (const OperandType* d = declared(ctx, 0)) {
    to = d->dtype;
  } else {
    ctx.error(OpContext::kOpItself, "cast needs the attribute 'to' or a declared destination "
                                    "(the target dtype cannot be inferred)");
    return false;
  }
  setOutputs(ctx, out, {{to, ctx.inputs()[0].shape}});
  return true;
}

// add, mul: same arithmetic dtype, same shape.
bool inferBinary(OpContext& ctx, std::vector<OperandType>& out) {
  Rule r(ctx, {"a", "b"});
  bool a_ok = r.isArithmeticOperand(0);
  bool b_ok = r.isArithmeticOperand(1);
  if (a_ok && b_ok) r.sameDType(1, 0);
  r.sameShape(1, 0);
  if (!r.ok) return false;
  setOutputs(ctx, out, {r.in(0)});
  return true;
}

bool inferSiluMul(OpContext& ctx, std::vector<OperandType>& out) {
  Rule r(ctx, {"gate", "up"});
  bool g_ok = r.isFloatOperand(0);
  bool u_ok = r.isFloatOperand(1);
  if (g_ok && u_ok) r.sameDType(1, 0);
  r.sameShape(1, 0);
  if (!r.ok) return false;
  setOutputs(ctx, out, {r.in(0)});
  return true;
}

// reduce_sum, reduce_max: drop one axis.
bool inferReduce(OpContext& ctx, std::vector<OperandType>& out) {
  Rule r(ctx, {"x"});
  r.isArithmeticOperand(0);
  if (!r.rankAtLeast(0, 1)) return false;
  int64_t rank = r.rank(0);
  int64_t axis = ctx.attrInt("axis");
  if (axis < -rank || axis >= rank) {
    r.attrFail("axis", fmt::format("must be in [{}, {}) for operand 0 (x) of rank {}; got {}",
                                   -rank, rank, rank, axis));
  }
  if (!r.ok) return false;
  if (axis < 0) axis += rank;
  setOutputs(ctx, out, {{r.dtype(0), dropDim(r.in(0).shape, static_cast<size_t>(axis))}});
  return true;
}

// The weight [H] of a norm against the last dimension of x.
void checkNormWeight(Rule& r, int x, int w) {
  r.isFloatOperand(w);
  if (r.rankIs(w, 1) && r.rank(x) >= 1) r.extentMatches(w, 0, x, r.rank(x) - 1);
}

bool inferRmsnorm(OpContext& ctx, std::vector<OperandType>& out) {
  Rule r(ctx, {"x", "weight"});
  r.isFloatOperand(0);
  bool x_rank = r.rankAtLeast(0, 1);
  // head_dim > 0: every group of head_dim elements of the last axis is normalized on its own
  // (Qwen3's per-head q/k norm over [B, H * D] without a reshape).
  int64_t hd = ctx.attrInt("head_dim");
  if (hd < 0) {
    r.attrFail("head_dim", fmt::format("must be >= 0 (0: the whole last dimension); got {}", hd));
  } else if (hd == 0) {
    checkNormWeight(r, 0, 1);
  } else {
    r.isFloatOperand(1);
    if (r.rankIs(1, 1)) r.extentIs(1, 0, intConst(hd), "(head_dim)");
    if (x_rank) r.multipleOf(0, r.rank(0) - 1, hd, "head_dim");
  }
  r.nonNegativeFloat("eps");
  if (!r.ok) return false;
  setOutputs(ctx, out, {r.in(0)});
  return true;
}

bool inferAddRmsnorm(OpContext& ctx, std::vector<OperandType>& out) {
  Rule r(ctx, {"x", "residual", "weight"});
  // The residual may be wider than x: a decode step keeps its residual stream in f32 while the
  // projections it adds and the normed output that feeds the next matmul stay bf16.
  r.isFloatOperand(0);
  r.isFloatOperand(1);
  r.rankAtLeast(0, 1);
  r.sameShape(1, 0);
  checkNormWeight(r, 0, 2);
  r.nonNegativeFloat("eps");
  if (!r.ok) return false;
  setOutputs(ctx, out, {r.in(0), r.in(1)});
  return true;
}

bool inferMatmul(OpContext& ctx, std::vector<OperandType>& out) {
  Rule r(ctx, {"a", "b", "b_up"});
  bool a_float = r.isFloatOperand(0);
  bool b_float = r.isFloatOperand(1);
  if (a_float && b_float) r.sameDType(1, 0);
  // The gated form: a third operand holds the up projection, and y = silu_mul(a @ b, a @ b_up).
  const bool gated = ctx.inputs().size() == 3;
  bool silu = false;
  if (r.oneOf("act", {"none", "silu_mul"})) {
    silu = ctx.attrString("act") == "silu_mul";
    if (gated && !silu)
      r.fail(2, "operand 2 (b_up) is only allowed with act = \"silu_mul\" (it holds the up projection)");
    else if (!gated && silu)
      r.attrFail("act", "\"silu_mul\" needs a third operand (b_up, the up projection, shaped like b)");
  }
  if (gated && b_float && r.isFloatOperand(2) && r.sameDType(2, 1)) r.sameShape(2, 1);
  bool a_rank = r.rankIn(0, 1, 2);
  bool b_rank = r.rankIs(1, 2);
  bool tb = ctx.attrBool("transpose_b");
  int kdim = tb ? 1 : 0, ndim = tb ? 0 : 1;
  if (a_rank && b_rank) {
    int ak = r.rank(0) - 1;
    std::string hint;
    if (ctx.sameExtent(r.dim(1, ndim), r.dim(0, ak)))
      hint = fmt::format("; did you mean transpose_b = {}?", tb ? "false" : "true");
    r.extentMatches(1, kdim, 0, ak, hint);
  }
  for (std::string_view t : {"tile_m", "tile_n"}) {
    if (!ctx.attrWritten(t)) continue;
    int64_t v = ctx.attrInt(t);
    // The gated form keeps both products of a tile in one pass of the warps: 128 x (2 x 64).
    const int64_t hi = silu ? (t == "tile_m" ? 128 : 64) : 256;
    // tile_n may be any multiple of 8 (the device tile is the next power of two, its columns past
    // tile_n never loaded nor stored): a grid of 128 tasks over Qwen3-0.6B's 3072 gated columns
    // takes 24.
    const bool cols = t == "tile_n";
    if (!(cols ? v % 8 == 0 : isPowerOfTwo(v)) || v < 8 || v > hi)
      r.attrFail(t, fmt::format("must be {} in [8, {}]{}; got {}", cols ? "a multiple of 8" : "a power of two", hi,
                                silu ? " with act = \"silu_mul\"" : "", v));
  }
  if (ctx.attrWritten("tile_k")) {
    int64_t v = ctx.attrInt("tile_k");
    if (!isPowerOfTwo(v) || v < 16 || v > 1024)
      r.attrFail("tile_k", fmt::format("must be a power of two in [16, 1024]; got {}", v));
  }
  if (ctx.attrWritten("split_k")) {
    int64_t v = ctx.attrInt("split_k");
    if (v < 1) {
      r.attrFail("split_k", fmt::format("must be >= 1; got {}", v));
    } else if (silu && v > 1) {
      r.attrFail("split_k", fmt::format("must be 1 with act = \"silu_mul\" (silu_mul needs whole sums); got {}", v));
    } else if (a_rank) {
      int ak = r.rank(0) - 1;
      auto k = constValue(r.dim(0, ak));
      if (k && v > *k)
        r.attrFail("split_k", fmt::format("must not exceed the reduction extent {} (dimension {} "
                                          "of operand 0 (a)); got {}",
                                          *k, ak, v));
    }
  }
  if (!r.ok) return false;
  Shape shape;
  if (r.rank(0) == 2) shape.push_back(r.dim(0, 0));
  shape.push_back(r.dim(1, ndim));
  setOutputs(ctx, out, {{r.dtype(0), std::move(shape)}});
  return true;
}

// A head_dim attribute and the operands whose last dimension packs heads of that size.
// Returns the head_dim when it is valid.
std::optional<int64_t> checkHeadDim(Rule& r, bool even, std::initializer_list<int> packed) {
  int64_t d = r.ctx.attrInt("head_dim");
  if (d <= 0 || (even && d % 2 != 0)) {
    r.attrFail("head_dim", fmt::format("must be a positive{} number; got {}",
                                       even ? " even" : "", d));
    return std::nullopt;
  }
  for (int i : packed)
    if (r.rank(i) >= 1) r.multipleOf(i, r.rank(i) - 1, d, "head_dim");
  return d;
}

bool inferRope(OpContext& ctx, std::vector<OperandType>& out) {
  Rule r(ctx, {"q", "k", "pos"});
  r.isFloatOperand(0);
  r.isFloatOperand(1);
  r.dtypeIs(2, DType::I32);
  bool q_rank = r.rankAtLeast(0, 1);
  if (q_rank) {
    int lead = r.rank(0) - 1;
    if (r.sameRank(1, 0)) r.leadingMatch(1, 0, lead);
    if (r.rankRelative(2, 0, -1, "one position per row of operand 0 (q)"))
      r.leadingMatch(2, 0, lead);
  }
  checkHeadDim(r, /*even=*/true, {0, 1});
  r.positiveFloat("theta");
  if (r.oneOf("scaling", {"none", "llama3"}) && ctx.attrString("scaling") == "llama3") {
    r.positiveFloat("scaling_factor");
    bool lo = r.positiveFloat("low_freq_factor");
    bool hi = r.positiveFloat("high_freq_factor");
    if (lo && hi && !(ctx.attrFloat("high_freq_factor") > ctx.attrFloat("low_freq_factor")))
      r.attrFail("high_freq_factor",
                 fmt::format("must be greater than low_freq_factor ({}); got {}",
                             num(ctx.attrFloat("low_freq_factor")),
                             num(ctx.attrFloat("high_freq_factor"))));
    r.positiveInt("original_max_position");
  }
  if (!r.ok) return false;
  setOutputs(ctx, out, {r.in(0), r.in(1)});
  return true;
}

// The page table of a paged kv_append or attention_decode (operand i): i32 with one row of
// page ids per row of operand `row` (which has rank `rank`).
void checkPageTable(Rule& r, int i, int row, int rank, bool row_rank_ok) {
  r.dtypeIs(i, DType::I32);
  if (row_rank_ok &&
      r.rankRelative(i, row, 0, fmt::format("one row of page ids per row of {}", r.name(row))))
    r.leadingMatch(i, row, rank - 1);
}

bool inferKvAppend(OpContext& ctx, std::vector<OperandType>& out) {
  // With a page table (operand 3) the destinations are page pools [pages, page size, X]
  // shared by all rows, instead of one cache [..., S, X] per row.
  const bool paged = ctx.inputs().size() == 4;
  Rule r(ctx, {"k", "v", "pos", "page_table"},
         paged ? std::vector<std::string_view>{"k_pages", "v_pages"}
               : std::vector<std::string_view>{"k_cache", "v_cache"});
  r.sameDType(1, 0);
  r.dtypeIs(2, DType::I32);
  bool k_rank = r.rankAtLeast(0, 1);
  r.sameShape(1, 0);
  int rank = r.rank(0);
  if (k_rank && r.rankRelative(2, 0, -1, "one position per row of operand 0 (k)"))
    r.leadingMatch(2, 0, rank - 1);
  if (paged) checkPageTable(r, 3, 0, rank, k_rank);
  std::vector<OperandType> results;
  for (int c = 0; c < 2; ++c) {
    const OperandType* d = declared(ctx, c);
    if (!d) {
      r.fail(-1 - c, fmt::format("kv_append needs a declared destination for {} ({})",
                                 r.resultName(c),
                                 paged ? "the number of pages and the page size cannot be inferred"
                                       : "the cache length cannot be inferred"));
      continue;
    }
    results.push_back(*d);
    int src = c;  // k_cache pairs with k, v_cache with v
    if (d->dtype != r.dtype(src))
      r.fail(-1 - c, fmt::format("{} has dtype {}; expected {} to match {}", r.resultName(c),
                                 dtypeName(d->dtype), dtypeName(r.dtype(src)), r.name(src)));
    if (!k_rank) continue;
    int drank = static_cast<int>(d->shape.size());
    if (paged ? drank != 3 : drank != rank + 1) {
      r.fail(-1 - c, paged ? fmt::format("{} has rank {}; expected rank 3 (a page pool [pages, "
                                         "page size, X])",
                                         r.resultName(c), drank)
                           : fmt::format("{} has rank {}; expected rank {} (the dimensions of {} "
                                         "with the cache length inserted before the last)",
                                         r.resultName(c), drank, rank + 1, r.name(src)));
      continue;
    }
    auto match = [&](int dd, int sd) {
      if (!ctx.sameExtent(d->shape[dd], r.dim(src, sd)))
        r.fail(-1 - c, fmt::format("{} has extent {} in dimension {}; expected {} to match "
                                   "dimension {} of {}",
                                   r.resultName(c), str(d->shape[dd]), dd, str(r.dim(src, sd)), sd,
                                   r.name(src)));
    };
    if (!paged) {
      for (int i = 0; i + 1 < rank; ++i) match(i, i);
      match(rank, rank - 1);
      continue;
    }
    match(2, rank - 1);
    // Both pools are indexed by the same page ids and rows.
    const OperandType* k_pages = declared(ctx, 0);
    if (c == 1 && k_pages && k_pages->shape.size() == 3)
      for (int dd = 0; dd < 2; ++dd)
        if (!ctx.sameExtent(d->shape[dd], k_pages->shape[dd]))
          r.fail(-2, fmt::format("{} has extent {} in dimension {}; expected {} to match "
                                 "dimension {} of {}",
                                 r.resultName(1), str(d->shape[dd]), dd, str(k_pages->shape[dd]),
                                 dd, r.resultName(0)));
  }
  if (!r.ok) return false;
  setOutputs(ctx, out, std::move(results));
  return true;
}

bool inferAttentionDecode(OpContext& ctx, std::vector<OperandType>& out) {
  // With a page table (operand 4) the caches are page pools [pages, page size, Hk*D] and row
  // r's position i is row i % page size of page page_table[r, i / page size].
  const bool paged = ctx.inputs().size() == 5;
  Rule r(ctx, {"q", paged ? "k_pages" : "k_cache", paged ? "v_pages" : "v_cache", "lens",
               "page_table"});
  r.isFloatOperand(0);
  if (r.isFloatOperand(1)) r.sameDType(2, 1);
  r.dtypeIs(3, DType::I32);
  bool q_rank = r.rankAtLeast(0, 1);
  int rank = r.rank(0);
  bool c_rank = false;
  if (paged) {
    c_rank = r.rankIs(1, 3);
    if (c_rank) r.sameShape(2, 1);
  }
  if (q_rank) {
    if (!paged) {
      c_rank = r.rankRelative(1, 0, 1, "the dimensions of operand 0 (q) with the cache length "
                                       "inserted before the last");
      if (c_rank) {
        r.leadingMatch(1, 0, rank - 1);
        r.sameShape(2, 1);
      }
    }
    // ranged: lens [..., 2] holds a row's first position and its count (a split-KV part).
    if (ctx.attrBool("ranged")) {
      if (r.rankRelative(3, 0, 0, "the first position and the count of each row of operand 0 (q)")) {
        r.leadingMatch(3, 0, rank - 1);
        r.extentIs(3, rank - 1, intConst(2), "(the first position and the count)");
      }
    } else if (r.rankRelative(3, 0, -1, "one length per row of operand 0 (q)")) {
      r.leadingMatch(3, 0, rank - 1);
    }
  }
  if (paged) checkPageTable(r, 4, 0, rank, q_rank);
  const int c_last = paged ? 2 : rank;  // the caches' head dimension
  auto hd = checkHeadDim(r, /*even=*/false, {});
  if (hd && q_rank) {
    bool q_div = r.multipleOf(0, rank - 1, *hd, "head_dim");
    bool c_div = c_rank && r.multipleOf(1, c_last, *hd, "head_dim");
    auto qe = constValue(r.dim(0, rank - 1));
    std::optional<int64_t> ce;
    if (c_rank) ce = constValue(r.dim(1, c_last));
    if (q_div && c_div && qe && ce && *ce > 0) {
      int64_t hq = *qe / *hd, hk = *ce / *hd;
      if (hq % hk != 0)
        r.fail(1, fmt::format("{} has {} heads of head_dim {} (extent {} in dimension {}), which "
                              "does not divide the {} heads of operand 0 (q)",
                              r.name(1), hk, *hd, *ce, c_last, hq));
      const int64_t hpt = ctx.attrInt("heads_per_task");
      if (hpt > 0 && hk % hpt != 0)
        r.attrFail("heads_per_task", fmt::format("must divide the {} cache heads; got {}", hk, hpt));
    }
  }
  r.nonNegativeFloat("scale");
  r.nonNegativeInt("kv_splits");
  r.nonNegativeInt("heads_per_task");
  r.nonNegativeInt("short_kv");
  if (!r.ok) return false;
  Shape lse = leading(r.in(0).shape, rank - 1);
  lse.push_back(floorDiv(r.last(0), intConst(*hd)));
  setOutputs(ctx, out, {r.in(0), {DType::F32, std::move(lse)}});
  return true;
}

bool inferAttentionMerge(OpContext& ctx, std::vector<OperandType>& out) {
  Rule r(ctx, {"o_parts", "lse_parts"});
  r.isFloatOperand(0);
  r.dtypeIs(1, DType::F32);
  bool o_rank = r.rankAtLeast(0, 2);
  int rank = r.rank(0);
  bool l_rank = o_rank && r.sameRank(1, 0);
  if (l_rank) r.leadingMatch(1, 0, rank - 1);
  auto hd = checkHeadDim(r, /*even=*/false, {});
  if (hd && o_rank && r.multipleOf(0, rank - 1, *hd, "head_dim") && l_rank)
    r.extentIs(1, rank - 1, floorDiv(r.last(0), intConst(*hd)),
               fmt::format("(dimension {} of operand 0 (o_parts) divided by head_dim {})",
                           rank - 1, *hd));
  if (!r.ok) return false;
  Shape o(r.in(0).shape.begin() + 1, r.in(0).shape.end());
  Shape lse(r.in(1).shape.begin() + 1, r.in(1).shape.end());
  setOutputs(ctx, out, {{r.dtype(0), std::move(o)}, {DType::F32, std::move(lse)}});
  return true;
}

bool inferSplitLens(OpContext& ctx, std::vector<OperandType>& out) {
  Rule r(ctx, {"lens"});
  r.dtypeIs(0, DType::I32);
  r.positiveInt("chunk");
  r.positiveInt("splits");
  if (!r.ok) return false;
  Shape s = r.in(0).shape;
  s.push_back(intConst(ctx.attrInt("splits")));
  setOutputs(ctx, out, {{DType::I32, std::move(s)}});
  return true;
}

bool inferKvRanges(OpContext& ctx, std::vector<OperandType>& out) {
  Rule r(ctx, {"lens"});
  r.dtypeIs(0, DType::I32);
  r.rankIn(0, 0, 1);
  r.positiveInt("splits");
  r.positiveInt("min_chunk");
  r.positiveInt("spread");
  if (!r.ok) return false;
  Shape s = r.in(0).shape;
  s.push_back(intConst(ctx.attrInt("splits")));
  s.push_back(intConst(2));
  setOutputs(ctx, out, {{DType::I32, std::move(s)}});
  return true;
}

bool inferEmbedding(OpContext& ctx, std::vector<OperandType>& out) {
  Rule r(ctx, {"ids", "table"});
  r.dtypeIs(0, DType::I32);
  r.rankIs(1, 2);
  if (!r.ok) return false;
  Shape s = r.in(0).shape;
  s.push_back(r.dim(1, 1));
  setOutputs(ctx, out, {{r.dtype(1), std::move(s)}});
  return true;
}

bool inferArgmax(OpContext& ctx, std::vector<OperandType>& out) {
  Rule r(ctx, {"x"});
  r.isArithmeticOperand(0);
  r.rankAtLeast(0, 1);
  if (!r.ok) return false;
  setOutputs(ctx, out, {{DType::I32, leading(r.in(0).shape, r.rank(0) - 1)}});
  return true;
}

bool inferTopkSoftmax(OpContext& ctx, std::vector<OperandType>& out) {
  Rule r(ctx, {"logits"});
  r.isFloatOperand(0);
  bool rank_ok = r.rankAtLeast(0, 1);
  if (r.positiveInt("k") && rank_ok) {
    int64_t k = ctx.attrInt("k");
    auto e = constValue(r.last(0));
    if (e && k > *e)
      r.attrFail("k", fmt::format("must not exceed the extent {} of dimension {} of "
                                  "operand 0 (logits); got {}",
                                  *e, r.rank(0) - 1, k));
  }
  if (!r.ok) return false;
  Shape s = leading(r.in(0).shape, r.rank(0) - 1);
  s.push_back(ctx.attrIntExpr("k"));
  setOutputs(ctx, out, {{DType::F32, s}, {DType::I32, s}});
  return true;
}

bool inferMoeAlign(OpContext& ctx, std::vector<OperandType>& out) {
  Rule r(ctx, {"ids"});
  r.dtypeIs(0, DType::I32);
  r.rankIs(0, 2);
  r.positiveInt("num_experts");
  r.powerOfTwoInt("block");
  if (!r.ok) return false;
  Expr block = ctx.attrIntExpr("block");
  Expr nb = add(cdiv(mul(r.dim(0, 0), r.dim(0, 1)), block), ctx.attrIntExpr("num_experts"));
  setOutputs(ctx, out,
             {{DType::I32, {mul(nb, block)}}, {DType::I32, {nb}}, {DType::I32, {intConst(1)}}});
  return true;
}

bool inferGroupedMatmul(OpContext& ctx, std::vector<OperandType>& out) {
  Rule r(ctx, {"x", "w", "sorted_ids", "block_expert", "num_blocks", "w_up"});
  // With a sixth operand, w holds the gate rows and w_up the up rows (the task-level form,
  // where one task takes matching column tiles of both halves of a fused weight).
  const bool split = ctx.inputs().size() == 6;
  bool x_float = r.isFloatOperand(0);
  bool w_float = r.isFloatOperand(1);
  if (x_float && w_float) r.sameDType(1, 0);
  bool x_rank = r.rankIs(0, 2);
  bool w_rank = r.rankIs(1, 3);
  if (x_rank && w_rank) r.extentMatches(1, 2, 0, 1);
  r.dtypeIs(2, DType::I32);
  bool s_rank = r.rankIs(2, 1);
  r.dtypeIs(3, DType::I32);
  r.rankIn(3, 0, 1);
  r.dtypeIs(4, DType::I32);
  if (r.rankIn(4, 0, 1) && r.rank(4) == 1) r.extentIs(4, 0, intConst(1));
  r.positiveInt("top_k");
  bool silu = false;
  if (r.oneOf("act", {"none", "silu_mul"})) silu = ctx.attrString("act") == "silu_mul";
  if (r.powerOfTwoInt("block") && s_rank)
    r.multipleOf(2, 0, ctx.attrInt("block"), "block");
  if (split) {
    if (!silu)
      r.fail(5, "operand 5 (w_up) is only allowed with act = \"silu_mul\" (it holds the up rows)");
    else if (w_rank && r.sameDType(5, 1))
      r.sameShape(5, 1);
  } else if (silu && w_rank) {
    auto n = constValue(r.dim(1, 1));
    if (n && *n % 2 != 0)
      r.fail(1, fmt::format("operand 1 (w) has extent {} in dimension 1, which is odd; "
                            "act = \"silu_mul\" needs an even extent (gate and up halves)",
                            *n));
  }
  if (!r.ok) return false;
  Expr n = silu && !split ? floorDiv(r.dim(1, 1), intConst(2)) : r.dim(1, 1);
  setOutputs(ctx, out, {{r.dtype(0), {mul(r.dim(0, 0), ctx.attrIntExpr("top_k")), n}}});
  return true;
}

bool inferMoeCombine(OpContext& ctx, std::vector<OperandType>& out) {
  Rule r(ctx, {"y", "weights"});
  r.isFloatOperand(0);
  r.dtypeIs(1, DType::F32);
  bool y_rank = r.rankIs(0, 2);
  bool w_rank = r.rankIs(1, 2);
  if (y_rank && w_rank)
    r.extentIs(0, 0, mul(r.dim(1, 0), r.dim(1, 1)),
               "(dimension 0 times dimension 1 of operand 1 (weights))");
  if (!r.ok) return false;
  setOutputs(ctx, out, {{r.dtype(0), {r.dim(1, 0), r.dim(0, 1)}}});
  return true;
}

// ---- the table --------------------------------------------------------------------------

OpInfo op(std::string_view name, int min_in, int max_in, int min_out, int max_out,
          std::vector<AttrSpec> attrs, std::string_view summary,
          bool (*infer)(OpContext&, std::vector<OperandType>&)) {
  OpInfo o;
  o.name = name;
  o.min_inputs = min_in;
  o.max_inputs = max_in;
  o.min_outputs = min_out;
  o.max_outputs = max_out;
  o.attrs = std::move(attrs);
  o.summary = summary;
  o.infer = infer;
  return o;
}

std::vector<OpInfo> buildOps() {
  using T = AttrType;
  std::vector<OpInfo> ops;
  ops.push_back(op("copy", 1, 1, 1, 1, {}, "copy(x) -> y: y = x (same shape and dtype)",
                   inferCopy));
  ops.push_back(op("fill", 0, 0, 1, 1,
                   {required("value", T::Float, "the value stored in every element")},
                   "fill() {value} -> y: every element of the declared destination = value",
                   inferFill));
  ops.push_back(op("cast", 1, 1, 1, 1,
                   {optional("to", dtypeV(DType::F32),
                             "target dtype; when not written, the declared destination's dtype")},
                   "cast(x) {to} -> y: x converted to dtype `to`", inferCast));
  ops.push_back(op("add", 2, 2, 1, 1, {}, "add(a, b) -> y: elementwise a + b (same shape)",
                   inferBinary));
  ops.push_back(op("mul", 2, 2, 1, 1, {}, "mul(a, b) -> y: elementwise a * b (same shape)",
                   inferBinary));
  ops.push_back(op("silu_mul", 2, 2, 1, 1, {},
                   "silu_mul(gate, up) -> y: elementwise silu(gate) * up", inferSiluMul));
  AttrSpec axis = optional("axis", intV(-1), "the reduced axis; negative counts from the end");
  ops.push_back(op("reduce_sum", 1, 1, 1, 1, {axis},
                   "reduce_sum(x) {axis} -> y: sum over one axis (the axis is dropped)",
                   inferReduce));
  ops.push_back(op("reduce_max", 1, 1, 1, 1, {axis},
                   "reduce_max(x) {axis} -> y: maximum over one axis (the axis is dropped)",
                   inferReduce));
  ops.push_back(op("rmsnorm", 2, 2, 1, 1,
                   {epsAttr(), optional("head_dim", intV(0),
                                        "normalize each group of head_dim elements of the last "
                                        "axis on its own (weight [head_dim]); 0: the whole axis")},
                   "rmsnorm(x [..., H], weight [H or head_dim]) {eps, head_dim} -> y [..., H]: "
                   "x / sqrt(mean(x^2) + eps) * weight over the last axis (or each head)",
                   inferRmsnorm));
  ops.push_back(op("add_rmsnorm", 3, 3, 2, 2, {epsAttr()},
                   "add_rmsnorm(x [..., H], residual [..., H], weight [H]) {eps} -> "
                   "(normed, residual_out): s = x + residual; (rmsnorm(s, weight), s); normed has x's "
                   "dtype, residual_out the residual's",
                   inferAddRmsnorm));
  ops.push_back(op("matmul", 2, 3, 1, 1,
                   {optional("transpose_b", boolV(false), "b is [N, K] instead of [K, N]"),
                    optional("act", stringV("none"),
                             "\"none\", or \"silu_mul\" with a third operand b_up: y = "
                             "silu_mul(a @ b, a @ b_up), each product rounded to y's dtype first"),
                    optional("tile_m", intV(0),
                             "rows of a per task: a power of two in [8, 256] ([8, 128] with act = "
                             "\"silu_mul\"); not written: the compiler chooses"),
                    optional("tile_n", intV(0),
                             "columns of the result per task: a multiple of 8 in [8, 256] ([8, 64] "
                             "with act = \"silu_mul\"); not written: the compiler chooses"),
                    optional("tile_k", intV(0),
                             "reduction step: a power of two in [16, 1024]; not written: the "
                             "compiler chooses"),
                    optional("split_k", intV(0),
                             "number of parts the reduction is split into (>= 1, at most K); "
                             "not written: the compiler chooses")},
                   "matmul(a [M, K] or [K], b [K, N] or [N, K] [, b_up like b]) {transpose_b, act, "
                   "tile_m, tile_n, tile_k, split_k} -> y [M, N] or [N]: a @ b, or "
                   "silu_mul(a @ b, a @ b_up)",
                   inferMatmul));
  ops.push_back(op("rope", 3, 3, 2, 2,
                   {required("head_dim", T::Int, "size of one head (even)"),
                    optional("theta", floatV(10000.0, "10000.0"), "frequency base"),
                    optional("scaling", stringV("none"), "\"none\" or \"llama3\""),
                    optional("scaling_factor", floatV(1.0, "1.0"), "llama3: the factor"),
                    optional("low_freq_factor", floatV(1.0, "1.0"), "llama3: low_freq_factor"),
                    optional("high_freq_factor", floatV(4.0, "4.0"), "llama3: high_freq_factor"),
                    optional("original_max_position", intV(8192),
                             "llama3: original_max_position_embeddings")},
                   "rope(q [..., Hq*D], k [..., Hk*D], pos i32[...]) {head_dim, theta, ...} -> "
                   "(q_out, k_out): rotary position embedding at positions pos",
                   inferRope));
  ops.push_back(op("kv_append", 3, 4, 2, 2, {},
                   "kv_append(k [..., X], v [..., X], pos i32[...] [, page_table i32[..., MAXP]]) "
                   "-> (k_cache [..., S, X], v_cache [..., S, X]) or, paged, (k_pages [P, PAGE, "
                   "X], v_pages [P, PAGE, X]): writes row k[t] at cache position pos[t] (in "
                   "place; paged: row pos[t] % PAGE of page page_table[t, pos[t] / PAGE])",
                   inferKvAppend));
  ops.push_back(op("attention_decode", 4, 5, 1, 2,
                   {required("head_dim", T::Int, "size of one head"),
                    optional("scale", floatV(0.0, "0.0"),
                             "softmax scale; 0 means 1 / sqrt(head_dim)"),
                    optional("kv_splits", intV(0),
                             "number of parts each row's positions are split into; 0: the "
                             "compiler chooses, by the batch and the cache length"),
                    optional("ranged", boolV(false),
                             "lens is i32[..., 2]: each row's first position and count"),
                    optional("heads_per_task", intV(1),
                             "cache heads a task of the one-part grid takes (a divisor of Hk), "
                             "their rows through one ring; 0: the compiler chooses, by the batch"),
                    optional("short_kv", intV(1024),
                             "where the compiler chooses the parts: a launch whose rows all hold at most "
                             "this many positions takes one part a row and no merge; 0: never")},
                   "attention_decode(q [..., Hq*D], k_cache [..., S, Hk*D], v_cache [..., S, "
                   "Hk*D], lens i32[...]) {head_dim, scale, kv_splits, ranged, heads_per_task, short_kv} -> (o [..., Hq*D], "
                   "lse f32[..., Hq]): one query row per sequence against lens cached positions; "
                   "paged: caches [P, PAGE, Hk*D] and a 5th operand page_table i32[..., MAXP]",
                   inferAttentionDecode));
  ops.push_back(op("attention_merge", 2, 2, 1, 2,
                   {required("head_dim", T::Int, "size of one head")},
                   "attention_merge(o_parts [P, ..., Hq*D], lse_parts f32[P, ..., Hq]) "
                   "{head_dim} -> (o [..., Hq*D], lse f32[..., Hq]): merges split-KV partials",
                   inferAttentionMerge));
  ops.push_back(op("split_lens", 1, 1, 1, 1,
                   {required("chunk", T::Int, "cache positions per split"),
                    required("splits", T::Int, "number of splits")},
                   "split_lens(lens i32[...]) {chunk, splits} -> i32[..., splits]: "
                   "y[r, p] = clamp(lens[r] - p * chunk, 0, chunk), the lengths of a split-KV "
                   "attention's parts",
                   inferSplitLens));
  ops.push_back(op("kv_ranges", 1, 1, 1, 1,
                   {required("splits", T::Int, "parts per row (the result's dimension)"),
                    required("min_chunk", T::Int, "the fewest positions a part holds"),
                    required("spread", T::Int, "parts wanted over all rows together")},
                   "kv_ranges(lens i32[R]) {splits, min_chunk, spread} -> i32[R, splits, 2]: "
                   "the (first position, count) of each split-KV part; row r uses the first "
                   "n = min(splits, max(1, cdiv(spread, R))) parts of c = max(min_chunk, "
                   "cdiv(lens[r], n)) positions, part p covering [p c, min(lens[r], (p + 1) c))",
                   inferKvRanges));
  ops.push_back(op("embedding", 2, 2, 1, 1, {},
                   "embedding(ids i32[...], table [V, H]) -> y [..., H]: y[t] = table[ids[t]]",
                   inferEmbedding));
  ops.push_back(op("argmax", 1, 1, 1, 1, {},
                   "argmax(x [..., V]) -> i32[...]: index of the first maximum over the last axis",
                   inferArgmax));
  ops.push_back(op("topk_softmax", 1, 1, 2, 2,
                   {required("k", T::Int, "experts chosen per row"),
                    optional("renormalize", boolV(true),
                             "divide the k chosen weights by their sum")},
                   "topk_softmax(logits [..., E]) {k, renormalize} -> (weights f32[..., k], "
                   "ids i32[..., k]): softmax, then the k largest",
                   inferTopkSoftmax));
  ops.push_back(op("moe_align", 1, 1, 3, 3,
                   {required("num_experts", T::Int, "number of experts"),
                    required("block", T::Int, "rows per block (a power of two)")},
                   "moe_align(ids i32[T, K]) {num_experts, block} -> (sorted_ids i32[NB * block], "
                   "block_expert i32[NB], num_blocks i32[1]) with NB = cdiv(T * K, block) + "
                   "num_experts: groups routed rows by expert in blocks",
                   inferMoeAlign));
  ops.push_back(op("grouped_matmul", 5, 6, 1, 1,
                   {optional("top_k", intV(1), "routed copies per row of x"),
                    optional("act", stringV("none"), "\"none\" or \"silu_mul\""),
                    required("block", T::Int, "rows per block, as in moe_align")},
                   "grouped_matmul(x [R, K], w [E, N, K], sorted_ids i32[P], block_expert "
                   "i32[NB], num_blocks i32[1] [, w_up [E, N, K]]) {top_k, act, block} -> "
                   "y [R * top_k, N or N/2]: per-expert x @ w[e]^T over moe_align blocks",
                   inferGroupedMatmul));
  ops.push_back(op("moe_combine", 2, 2, 1, 1, {},
                   "moe_combine(y [T*K, H], weights f32[T, K]) -> [T, H]: "
                   "out[t] = sum_k weights[t, k] * y[t*K + k]",
                   inferMoeCombine));
  return ops;
}

}  // namespace

const std::vector<OpInfo>& allOps() {
  static const std::vector<OpInfo> ops = buildOps();
  return ops;
}

const OpInfo* findOp(std::string_view name) {
  static const std::unordered_map<std::string_view, const OpInfo*> index = [] {
    std::unordered_map<std::string_view, const OpInfo*> m;
    for (const OpInfo& o : allOps()) m.emplace(o.name, &o);
    return m;
  }();
  auto it = index.find(name);
  return it == index.end() ? nullptr : it->second;
}

}  // namespace etc::ir
