// Elementwise references: copy, fill, cast, add, mul, silu_mul, and embedding (a row gather).
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "compiler/interp/kernels.h"

namespace etc::interp {

namespace {

// The verifier proves these; the check keeps an unverified module from writing out of bounds.
std::string sameSize(const View& a, const View& b) {
  if (a.numel() == b.numel()) return "";
  return fmt::format("the operand has {} elements but the destination {}", a.numel(), b.numel());
}

// Float to integer: toward zero, saturating at the type's range, NaN to 0 (docs/ops.md, cast).
int64_t saturate(ir::DType t, double x) {
  if (std::isnan(x)) return 0;
  double lo, hi;
  switch (t) {
    case ir::DType::I32: lo = -2147483648.0, hi = 2147483647.0; break;
    case ir::DType::U8: lo = 0, hi = 255; break;
    default: lo = -9223372036854775808.0, hi = 9223372036854775807.0; break;
  }
  if (x <= lo) return t == ir::DType::I64 ? std::numeric_limits<int64_t>::min() : static_cast<int64_t>(lo);
  if (x >= hi) return t == ir::DType::I64 ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(hi);
  return static_cast<int64_t>(std::trunc(x));
}

template <class FloatFn, class IntFn>
std::string binary(OpArgs& a, FloatFn ff, IntFn fi) {
  const View &x = a.in[0], &y = a.in[1], &out = a.out[0];
  if (std::string e = sameSize(x, out); !e.empty()) return e;
  if (std::string e = sameSize(y, out); !e.empty()) return e;
  if (ir::isInteger(x.dtype)) {
    std::vector<int64_t> u = readInts(x), v = readInts(y);
    // Unsigned arithmetic wraps; the store truncates to the destination's width.
    for (size_t i = 0; i < u.size(); ++i)
      u[i] = static_cast<int64_t>(fi(static_cast<uint64_t>(u[i]), static_cast<uint64_t>(v[i])));
    writeInts(out, u.data());
  } else {
    std::vector<double> u = readFloats(x), v = readFloats(y);
    for (size_t i = 0; i < u.size(); ++i) u[i] = ff(u[i], v[i]);
    writeFloats(out, u.data());
  }
  return "";
}

}  // namespace

std::string opCopy(OpArgs& a) {
  if (std::string e = sameSize(a.in[0], a.out[0]); !e.empty()) return e;
  copyElements(a.in[0], a.out[0]);
  return "";
}

std::string opFill(OpArgs& a) {
  const View& out = a.out[0];
  double value = a.attrFloat("value");
  if (ir::isFloat(out.dtype)) {
    forEachOffset(out, [&](int64_t o) { storeFloat(out, o, value); });
  } else {
    int64_t v = saturate(out.dtype, value);
    forEachOffset(out, [&](int64_t o) { storeInt(out, o, v); });
  }
  return "";
}

std::string opCast(OpArgs& a) {
  const View &x = a.in[0], &out = a.out[0];
  if (std::string e = sameSize(x, out); !e.empty()) return e;
  ir::DType to = a.attrWritten("to") ? a.attrDType("to") : out.dtype;
  if (ir::isInteger(to)) {
    std::vector<int64_t> v(static_cast<size_t>(x.numel()));
    if (ir::isInteger(x.dtype)) {
      v = readInts(x);  // integer to integer wraps on store
    } else {
      std::vector<double> f = readFloats(x);
      for (size_t i = 0; i < v.size(); ++i) v[i] = saturate(to, f[i]);
    }
    writeInts(out, v.data());
    return "";
  }
  std::vector<double> f(static_cast<size_t>(x.numel()));
  if (ir::isInteger(x.dtype)) {
    std::vector<int64_t> v = readInts(x);
    // i64 beyond 2^53 would round twice through double; the direct conversion rounds once.
    for (size_t i = 0; i < v.size(); ++i)
      f[i] = to == ir::DType::F32 ? static_cast<double>(static_cast<float>(v[i])) : roundTo(to, static_cast<double>(v[i]));
  } else {
    f = readFloats(x);
    for (double& d : f) d = roundTo(to, d);
  }
  writeFloats(out, f.data());  // a destination of another float dtype rounds again
  return "";
}

std::string opAdd(OpArgs& a) {
  return binary(a, [](double x, double y) { return x + y; }, [](uint64_t x, uint64_t y) { return x + y; });
}

std::string opMul(OpArgs& a) {
  return binary(a, [](double x, double y) { return x * y; }, [](uint64_t x, uint64_t y) { return x * y; });
}

std::string opSiluMul(OpArgs& a) {
  return binary(a, [](double g, double u) { return silu(g) * u; }, [](uint64_t, uint64_t) { return uint64_t{0}; });
}

std::string opEmbedding(OpArgs& a) {
  const View &ids = a.in[0], &table = a.in[1], &out = a.out[0];
  std::vector<int64_t> id = readInts(ids);
  const int64_t vocab = table.shape[0];
  if (out.rows() != static_cast<int64_t>(id.size()) || out.lastDim() != table.shape[1])
    return fmt::format("the destination does not hold {} rows of {}", id.size(), table.shape[1]);
  for (size_t r = 0; r < id.size(); ++r) {
    if (id[r] < 0 || id[r] >= vocab)
      return fmt::format("id {} (element {} of the ids) is outside the table's rows [0, {})", id[r], r, vocab);
    copyElements(table.at(0, id[r]), out.lead(static_cast<int64_t>(r), 1));
  }
  return "";
}

}  // namespace etc::interp
