// Tests of the interpreter's dtype conversions (round to nearest even, one rounding from
// double) and host tensor helpers.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "compiler/interp/interpreter.h"
#include "compiler/support/splitmix.h"

namespace etc::interp {
namespace {

TEST(InterpDType, Bf16RoundsToNearestEven) {
  EXPECT_EQ(doubleToBf16(1.0), 0x3F80);
  EXPECT_EQ(doubleToBf16(1.0 + std::ldexp(1, -8)), 0x3F80);      // tie, down to even
  EXPECT_EQ(doubleToBf16(1.0 + 3 * std::ldexp(1, -8)), 0x3F82);  // tie, up to even
  EXPECT_EQ(doubleToBf16(1.0 + std::ldexp(1, -8) + std::ldexp(1, -30)), 0x3F81);  // above the tie
  EXPECT_EQ(doubleToBf16(-2.0), 0xC000);
  EXPECT_EQ(doubleToBf16(3.4e38), 0x7F80);   // rounds past the largest finite bf16: inf
  EXPECT_EQ(doubleToBf16(-1e300), 0xFF80);
  EXPECT_EQ(doubleToBf16(std::ldexp(1, -133)), 0x0001);  // the smallest subnormal
  EXPECT_EQ(doubleToBf16(std::ldexp(1, -134)), 0x0000);  // half of it: tie to even 0
  EXPECT_TRUE(std::isnan(bf16ToDouble(doubleToBf16(std::nan("")))));
  EXPECT_EQ(bf16ToDouble(0x3F81), 1.0 + std::ldexp(1, -7));
  EXPECT_EQ(bf16ToDouble(0x0001), std::ldexp(1, -133));
  EXPECT_EQ(doubleToBf16(-0.0), 0x8000);
}

TEST(InterpDType, Bf16AgreesWithTheF32BitTrickOnF32Values) {
  // For values that are f32 already, rounding f32 -> bf16 is the well-known bit trick.
  std::mt19937 rng(7);
  for (int i = 0; i < 100000; ++i) {
    uint32_t bits = rng();
    float f;
    std::memcpy(&f, &bits, 4);
    if (std::isnan(f)) continue;
    uint32_t rounded = bits + 0x7FFF + ((bits >> 16) & 1);
    EXPECT_EQ(doubleToBf16(f), static_cast<uint16_t>(rounded >> 16)) << std::hex << bits;
  }
}

TEST(InterpDType, F16RoundsToNearestEven) {
  EXPECT_EQ(doubleToF16(1.0), 0x3C00);
  EXPECT_EQ(doubleToF16(1.0 + std::ldexp(1, -11)), 0x3C00);
  EXPECT_EQ(doubleToF16(1.0 + 3 * std::ldexp(1, -11)), 0x3C02);
  EXPECT_EQ(doubleToF16(65504.0), 0x7BFF);
  EXPECT_EQ(doubleToF16(65519.0), 0x7BFF);
  EXPECT_EQ(doubleToF16(65520.0), 0x7C00);  // the tie above the largest finite: inf
  EXPECT_EQ(doubleToF16(std::ldexp(1, -24)), 0x0001);
  EXPECT_EQ(doubleToF16(std::ldexp(1, -25)), 0x0000);
  EXPECT_EQ(doubleToF16(3 * std::ldexp(1, -25)), 0x0002);
  EXPECT_EQ(f16ToDouble(0x0001), std::ldexp(1, -24));
  EXPECT_EQ(f16ToDouble(0xC000), -2.0);
  EXPECT_EQ(f16ToDouble(0x7C00), HUGE_VAL);
}

#ifdef __FLT16_MAX__
TEST(InterpDType, F16AgreesWithTheCompilersFloat16) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> mant(-1, 1);
  for (int i = 0; i < 100000; ++i) {
    double x = std::ldexp(mant(rng), static_cast<int>(rng() % 44) - 28);
    _Float16 h = static_cast<_Float16>(x);
    uint16_t bits;
    std::memcpy(&bits, &h, 2);
    EXPECT_EQ(doubleToF16(x), bits) << x;
    EXPECT_EQ(f16ToDouble(bits), static_cast<double>(h));
  }
}
#endif

// Every pair of neighbouring finite values of a 16-bit format (f: bits -> double, to: double ->
// bits), and the doubles at, next to and between their midpoint: a double rounds to the nearer
// neighbour, a midpoint to the one whose bits are even. Both signs; the largest finite value's
// upper neighbour is inf.
template <class ToBits, class ToDouble>
void expectNeighboursRoundRight(ToBits to, ToDouble f, uint16_t inf_bits) {
  std::mt19937_64 rng(5);
  for (uint32_t b = 0; b < inf_bits; ++b) {
    const uint16_t lo = static_cast<uint16_t>(b), hi = static_cast<uint16_t>(b + 1);
    const double vlo = f(lo);
    // Above the largest finite value rounding goes to inf from the midpoint with the next
    // binade's first value, as if the exponent range went on.
    const double vhi = hi == inf_bits ? vlo + (vlo - f(static_cast<uint16_t>(b - 1))) : f(hi);
    const double mid = (vlo + vhi) / 2;  // exact: the neighbours are 1 ulp of the format apart
    const uint16_t even = (lo & 1) ? hi : lo;
    for (double sgn : {1.0, -1.0}) {
      const uint16_t s = sgn < 0 ? 0x8000 : 0;
      ASSERT_EQ(to(sgn * vlo), s | lo) << std::hex << b;
      ASSERT_EQ(to(sgn * mid), s | even) << std::hex << b;
      ASSERT_EQ(to(sgn * std::nextafter(mid, 0.0)), s | lo) << std::hex << b;
      ASSERT_EQ(to(sgn * std::nextafter(mid, HUGE_VAL)), s | hi) << std::hex << b;
      const double t = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
      const double below = vlo + (mid - vlo) * t, above = mid + (vhi - mid) * t;
      if (below != mid) {
        ASSERT_EQ(to(sgn * below), s | lo) << std::hex << b << " " << below;
      }
      if (above != mid && above != vhi) {
        ASSERT_EQ(to(sgn * above), s | hi) << std::hex << b << " " << above;
      }
    }
  }
}

TEST(InterpDType, Bf16RoundsEveryNeighbourPairRight) {
  expectNeighboursRoundRight(doubleToBf16, bf16ToDouble, 0x7F80);
}

TEST(InterpDType, F16RoundsEveryNeighbourPairRight) {
  expectNeighboursRoundRight(doubleToF16, f16ToDouble, 0x7C00);
}

TEST(InterpDType, F32IsTheIeeeConversion) {
  EXPECT_EQ(doubleToF32(1.0 + std::ldexp(1, -24)), 1.0f);
  EXPECT_EQ(doubleToF32(1.0 + 3 * std::ldexp(1, -24)), 1.0f + std::ldexp(1.0f, -22));
}

TEST(InterpHostTensor, MakeAndRead) {
  HostTensor t = makeTensor(ir::DType::BF16, {2, 2}, {1.0, 1.0 + std::ldexp(1, -8), 2.5, -3});
  EXPECT_EQ(t.bytes.size(), 8u);
  EXPECT_EQ(toDoubles(t), (std::vector<double>{1.0, 1.0, 2.5, -3}));
  HostTensor i = makeIntTensor(ir::DType::I32, {3}, {1, -2, (int64_t{1} << 32) + 5});
  EXPECT_EQ(toInts(i), (std::vector<int64_t>{1, -2, 5}));  // wraps
  HostTensor u = makeTensor(ir::DType::U8, {2}, {3.9, 258});
  EXPECT_EQ(toInts(u), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(zeros(ir::DType::I64, {2, 3}).bytes.size(), 48u);
}

// uniformTensor is makeTensor of the values its formula draws, in row-major order, in every float
// dtype: the same bits, each value in [lo, hi).
TEST(InterpHostTensor, UniformTensorIsMakeTensorOfItsDraws) {
  for (ir::DType d : {ir::DType::BF16, ir::DType::F16, ir::DType::F32}) {
    uint64_t state = 12345;
    std::vector<double> drawn(2 * 3 * 5);
    for (double& x : drawn) x = -0.5 + 2.0 * (static_cast<double>(splitmix(state) >> 11) * 0x1.0p-53);
    const HostTensor got = uniformTensor(d, {2, 3, 5}, 12345, -0.5, 1.5);
    const HostTensor want = makeTensor(d, {2, 3, 5}, drawn);
    EXPECT_EQ(got.shape, want.shape);
    EXPECT_EQ(got.bytes, want.bytes) << ir::dtypeName(d);
    for (double x : toDoubles(got)) {
      EXPECT_GE(x, -0.5);
      EXPECT_LE(x, 1.5);  // (a value just under hi may round up to it)
    }
  }
  EXPECT_TRUE(uniformTensor(ir::DType::BF16, {0, 4}, 1, 0, 1).bytes.empty());
}

}  // namespace
}  // namespace etc::interp
