// Host tensors and the dtype conversions of the reference semantics.
//
// The 16-bit formats are rounded directly from double (one rounding, to nearest even), not
// through f32, so that a result the reference computes exactly is rounded exactly once.
#include <cmath>
#include <cstring>
#include <limits>

#include "compiler/interp/interpreter.h"
#include "compiler/interp/view.h"

namespace etc::interp {

namespace {

// A binary float format with `mant` stored mantissa bits and exponent bias `bias`
// (f16: 10, 15; bf16: 7, 127). Rounds x to it, to nearest even, and returns its bits.
uint16_t roundToHalfFormat(double x, int mant, int bias) {
  const int ebits = 15 - mant;
  const uint16_t exp_all = static_cast<uint16_t>(((1 << ebits) - 1) << mant);
  uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  // A value whose exponent is a normal one of the format: the rounding below, on the double's
  // bits (its 53-bit significand shifted to the format's mant + 1 bits, to nearest even), without
  // the libm calls that made a decode test's random caches cost more than its arithmetic.
  uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  const int dexp = static_cast<int>((bits >> 52) & 0x7FF);
  if (dexp != 0 && dexp != 0x7FF && dexp - 1023 >= 1 - bias && dexp - 1023 <= bias) {
    const int shift = 52 - mant;
    const uint64_t sig = (bits & ((uint64_t{1} << 52) - 1)) | (uint64_t{1} << 52);
    uint64_t q = sig >> shift;
    const uint64_t rem = sig & ((uint64_t{1} << shift) - 1), half = uint64_t{1} << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) ++q;
    int ex = dexp - 1023;
    if (q == (uint64_t{1} << (mant + 1))) {  // rounded up into the next binade
      q >>= 1;
      ++ex;
    }
    if (ex > bias) return sign | exp_all;  // overflow: inf
    return static_cast<uint16_t>(sign | ((ex + bias) << mant) | (q - (uint64_t{1} << mant)));
  }
  if (std::isnan(x)) return static_cast<uint16_t>(sign | exp_all | (1 << (mant - 1)));  // quiet NaN
  double a = std::fabs(x);
  if (std::isinf(a)) return sign | exp_all;
  if (a == 0) return sign;
  const int emin = 1 - bias;      // exponent of the smallest normal
  const int emax = bias;          // exponent of the largest finite
  int e;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1): the unbiased exponent is e - 1
  int ex = std::max(e - 1, emin);
  // The value in units of the format's last place at exponent ex: rounding it to an integer
  // (nearbyint rounds to nearest even in the default mode) is the format's rounding. Scaling by
  // a power of two is exact in double for every value these formats can hold.
  double units = std::nearbyint(std::ldexp(a, mant - ex));
  if (units >= std::ldexp(1.0, mant + 1)) {  // rounded up into the next binade
    units /= 2;
    ++ex;
  }
  if (ex > emax) return sign | exp_all;  // overflow: inf
  uint32_t u = static_cast<uint32_t>(units);
  if (u < (1u << mant)) return static_cast<uint16_t>(sign | u);  // subnormal (ex == emin)
  return static_cast<uint16_t>(sign | ((ex + bias) << mant) | (u - (1u << mant)));
}

double halfFormatToDouble(uint16_t bits, int mant, int bias) {
  const int ebits = 15 - mant;
  const int emask = (1 << ebits) - 1;
  int exp = (bits >> mant) & emask;
  uint32_t frac = bits & ((1u << mant) - 1);
  double sign = (bits & 0x8000) ? -1.0 : 1.0;
  if (exp == emask) return frac ? std::numeric_limits<double>::quiet_NaN() : sign * HUGE_VAL;
  if (exp == 0) return sign * std::ldexp(static_cast<double>(frac), 1 - bias - mant);
  return sign * std::ldexp(static_cast<double>(frac | (1u << mant)), exp - bias - mant);
}

}  // namespace

uint16_t doubleToBf16(double x) { return roundToHalfFormat(x, 7, 127); }
uint16_t doubleToF16(double x) { return roundToHalfFormat(x, 10, 15); }
float doubleToF32(double x) { return static_cast<float>(x); }  // IEEE conversion: nearest even
double bf16ToDouble(uint16_t bits) { return halfFormatToDouble(bits, 7, 127); }
double f16ToDouble(uint16_t bits) { return halfFormatToDouble(bits, 10, 15); }

int64_t HostTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

HostTensor zeros(ir::DType dtype, std::vector<int64_t> shape) {
  HostTensor t{dtype, std::move(shape), {}};
  t.bytes.assign(static_cast<size_t>(t.numel() * ir::dtypeBytes(dtype)), 0);
  return t;
}

HostTensor makeTensor(ir::DType dtype, std::vector<int64_t> shape, const std::vector<double>& values) {
  HostTensor t = zeros(dtype, std::move(shape));
  View v = View::whole(t);
  int64_t n = std::min<int64_t>(t.numel(), static_cast<int64_t>(values.size()));
  if (ir::isFloat(dtype)) {
    for (int64_t i = 0; i < n; ++i) storeFloat(v, i, values[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) storeInt(v, i, static_cast<int64_t>(std::trunc(values[i])));
  }
  return t;
}

HostTensor makeIntTensor(ir::DType dtype, std::vector<int64_t> shape, const std::vector<int64_t>& values) {
  HostTensor t = zeros(dtype, std::move(shape));
  View v = View::whole(t);
  int64_t n = std::min<int64_t>(t.numel(), static_cast<int64_t>(values.size()));
  if (ir::isFloat(dtype)) {
    for (int64_t i = 0; i < n; ++i) storeFloat(v, i, static_cast<double>(values[i]));
  } else {
    for (int64_t i = 0; i < n; ++i) storeInt(v, i, values[i]);
  }
  return t;
}

std::vector<double> toDoubles(const HostTensor& t) {
  return readFloats(View::whole(const_cast<HostTensor&>(t)));
}

std::vector<int64_t> toInts(const HostTensor& t) { return readInts(View::whole(const_cast<HostTensor&>(t))); }

}  // namespace etc::interp
