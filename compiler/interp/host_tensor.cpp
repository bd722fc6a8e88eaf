// Host tensors and the dtype conversions of the reference semantics.
//
// The 16-bit formats are rounded directly from double (one rounding, to nearest even), not
// through f32, so that a result the reference computes exactly is rounded exactly once.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "compiler/interp/interpreter.h"
#include "compiler/interp/view.h"
#include "compiler/support/splitmix.h"

namespace etc::interp {

namespace {

// A binary float format with `mant` stored mantissa bits and exponent bias `bias`
// (f16: 10, 15; bf16: 7, 127). Rounds x to it, to nearest even, and returns its bits. Works on
// the double's bits: its 53-bit significand shifted to units of the format's last place at the
// result's exponent (the smallest normal one for a subnormal result), the bits shifted out
// deciding the rounding. No libm calls: a decode test rounds tens of millions of random values.
uint16_t roundToHalfFormat(double x, int mant, int bias) {
  const int ebits = 15 - mant;
  const uint16_t exp_all = static_cast<uint16_t>(((1 << ebits) - 1) << mant);
  uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  const uint16_t sign = (bits >> 63) ? 0x8000 : 0;
  const int dexp = static_cast<int>((bits >> 52) & 0x7FF);
  const uint64_t frac = bits & ((uint64_t{1} << 52) - 1);
  if (dexp == 0x7FF) return static_cast<uint16_t>(sign | exp_all | (frac ? 1 << (mant - 1) : 0));  // quiet NaN, inf
  // Zero, and a subnormal double: far below half of the format's smallest subnormal.
  if (dexp == 0) return sign;
  const int e = dexp - 1023;            // x = sig * 2^(e - 52)
  int ex = std::max(e, 1 - bias);       // the result's exponent (1 - bias: of the smallest normal)
  const int shift = 52 - mant + (ex - e);
  if (shift > 54) return sign;  // below half of the smallest subnormal: rounds to zero
  const uint64_t sig = frac | (uint64_t{1} << 52);
  uint64_t q = sig >> shift;
  const uint64_t rem = sig & ((uint64_t{1} << shift) - 1), half = uint64_t{1} << (shift - 1);
  if (rem > half || (rem == half && (q & 1))) ++q;
  if (q == (uint64_t{1} << (mant + 1))) {  // rounded up into the next binade
    q >>= 1;
    ++ex;
  }
  if (ex > bias) return sign | exp_all;                                  // overflow: inf
  if (q < (uint64_t{1} << mant)) return static_cast<uint16_t>(sign | q);  // subnormal
  return static_cast<uint16_t>(sign | ((ex + bias) << mant) | (q - (uint64_t{1} << mant)));
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

uint16_t doubleToBf16(double x) {
  // A normal result (or one that rounds up to inf) straight from the double's bits: the bits
  // below bf16's last place round to nearest even, a carry moving into the exponent. Random
  // decode tensors are all of this kind, and tens of millions of them.
  uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  const uint64_t mag = bits & ~(uint64_t{1} << 63);
  const uint64_t dexp = mag >> 52;
  if (dexp >= 1023 - 126 && dexp <= 1023 + 127) {
    const uint64_t q = (mag + ((uint64_t{1} << 44) - 1) + ((mag >> 45) & 1)) >> 45;
    const uint64_t e = (q >> 7) - (1023 - 127);
    const uint16_t sign = static_cast<uint16_t>((bits >> 48) & 0x8000);
    return e >= 255 ? static_cast<uint16_t>(sign | 0x7F80) : static_cast<uint16_t>(sign | (e << 7) | (q & 0x7F));
  }
  return roundToHalfFormat(x, 7, 127);
}
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

namespace {

// The next value of uniformTensor's sequence.
inline double drawUniform(uint64_t& state, double lo, double hi) {
  return lo + (hi - lo) * (static_cast<double>(splitmix(state) >> 11) * 0x1.0p-53);
}

// Outside AddressSanitizer: a decode test's random KV caches and weights are tens of millions of
// values, and the n 2- or 4-byte elements at `out` are the tensor's own bytes.
template <class Bits, Bits (*kRound)(double)>
__attribute__((no_sanitize_address)) void fillUniform(uint8_t* out, int64_t n, uint64_t state, double lo, double hi) {
  for (int64_t i = 0; i < n; ++i) {
    const Bits b = kRound(drawUniform(state, lo, hi));
    std::memcpy(out + i * static_cast<int64_t>(sizeof(Bits)), &b, sizeof(Bits));
  }
}

}  // namespace

HostTensor uniformTensor(ir::DType dtype, std::vector<int64_t> shape, uint64_t state, double lo, double hi) {
  HostTensor t = zeros(dtype, std::move(shape));
  const int64_t n = t.numel();
  switch (dtype) {
    case ir::DType::BF16: fillUniform<uint16_t, doubleToBf16>(t.bytes.data(), n, state, lo, hi); break;
    case ir::DType::F16: fillUniform<uint16_t, doubleToF16>(t.bytes.data(), n, state, lo, hi); break;
    case ir::DType::F32: fillUniform<float, doubleToF32>(t.bytes.data(), n, state, lo, hi); break;
    default: {
      const View v = View::whole(t);
      for (int64_t i = 0; i < n; ++i) storeFloat(v, i, drawUniform(state, lo, hi));
    }
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
