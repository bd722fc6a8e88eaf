// matmul: y = a @ b (or a @ b^T), products summed in double over the whole K (split_k and the
// tile sizes are how the device divides the work; they do not change the reference). The gated
// form (act = "silu_mul", a third operand b_up) is y = silu_mul(a @ b, a @ b_up) with each
// product rounded to y's dtype first: what two matmuls into tensors of that dtype and a
// silu_mul give.
#include <fmt/format.h>

#include "compiler/interp/kernels.h"

namespace etc::interp {

namespace {

// Element t of a row of bf16 or f32 bits, widened. Outside AddressSanitizer, as its callers
// below are: view.h's bf16BitsToFloat and f32BitsToFloat (always_inline, a memcpy each) inlined
// into a no_sanitize_address function crash GCC 12's sanopt pass in a build without the unity
// build, and marking those so would drop ASan's checks from every other caller.
template <bool kBf16>
[[gnu::always_inline]] __attribute__((no_sanitize_address)) inline float widenedAt(const uint8_t* row, int64_t t) {
  float f;
  if constexpr (kBf16) {
    uint16_t half;
    std::memcpy(&half, row + 2 * t, 2);
    const uint32_t bits = static_cast<uint32_t>(half) << 16;
    std::memcpy(&f, &bits, 4);
  } else {
    std::memcpy(&f, row + 4 * t, 4);
  }
  return f;
}

// The sum of a[t] * b[t] over t < k, in order, b's elements widened from bf16 or f32 in place.
// Outside AddressSanitizer: these loops are most of a decode step in the interpreter, where ASan's
// check of every load made the sanitized tests' interpreter runs several times as long; opMatmul
// checks both operands' extents against their views' shapes before it calls them.
template <bool kBf16>
__attribute__((no_sanitize_address)) double dotWidened(const double* a, const uint8_t* b, int64_t k) {
  double s = 0;
  for (int64_t t = 0; t < k; ++t) s += a[t] * widenedAt<kBf16>(b, t);
  return s;
}

// Four such sums at once, of a with rows b[0..3], each summed in the same order as alone: four
// independent chains of additions, where one chain made every step wait on the previous add
// (the sanitized decode tests spent half their time here).
// (No lambda for the widening: at -O1 it stayed a call, and a sanitized one; widenedAt is
// always_inline.)
template <bool kBf16>
__attribute__((no_sanitize_address)) void dotWidened4(const double* a, const uint8_t* const* b, int64_t k, double* s) {
  const uint8_t *b0 = b[0], *b1 = b[1], *b2 = b[2], *b3 = b[3];
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  for (int64_t t = 0; t < k; ++t) {
    const double x = a[t];
    s0 += x * widenedAt<kBf16>(b0, t);
    s1 += x * widenedAt<kBf16>(b1, t);
    s2 += x * widenedAt<kBf16>(b2, t);
    s3 += x * widenedAt<kBf16>(b3, t);
  }
  s[0] = s0, s[1] = s1, s[2] = s2, s[3] = s3;
}

__attribute__((no_sanitize_address)) double dot(const double* a, const double* b, int64_t k) {
  double s = 0;
  for (int64_t t = 0; t < k; ++t) s += a[t] * b[t];
  return s;
}

}  // namespace

std::string opMatmul(OpArgs& a) {
  const View &x = a.in[0], &w = a.in[1], &out = a.out[0];
  const bool tb = a.attrBool("transpose_b");
  const bool gated = a.in.size() == 3;
  if (gated && a.in[2].shape != w.shape) return "b_up's shape differs from b's";
  const int64_t m = x.rank() == 1 ? 1 : x.shape[0], k = x.lastDim();
  if (w.rank() != 2) return "the second operand is not a matrix";
  const int64_t n = tb ? w.shape[0] : w.shape[1];
  if ((tb ? w.shape[1] : w.shape[0]) != k || out.numel() != m * n)
    return fmt::format("shapes disagree: a is {} x {}, b is {} x {}{}, y has {} elements", m, k, w.shape[0],
                       w.shape[1], tb ? " (transposed)" : "", out.numel());
  std::vector<double> av = readFloats(x);
  // b as [N, K], so each output element is a dot product of two contiguous rows.
  auto product = [&](const View& b) {
    std::vector<double> y(static_cast<size_t>(m * n));
    if (k == 0) return y;  // (an empty b may have no base to step from)
    // Rows of a 16- or 32-bit float b laid out along K (a weight under transpose_b) are read in
    // place, widened element by element in the same order: a decode step's weights are most of
    // what the interpreter reads, and a double copy of each tile was most of its time.
    if (tb && (k <= 1 || b.strides[1] == 1) && (b.dtype == ir::DType::BF16 || b.dtype == ir::DType::F32)) {
      const bool bf16 = b.dtype == ir::DType::BF16;
      const size_t esize = bf16 ? 2 : 4;
      auto row = [&](int64_t j) { return b.base + static_cast<size_t>(j * b.strides[0]) * esize; };
      int64_t j = 0;
      for (; j + 4 <= n; j += 4) {
        const uint8_t* br[4] = {row(j), row(j + 1), row(j + 2), row(j + 3)};
        for (int64_t i = 0; i < m; ++i) {
          double s[4];
          if (bf16) dotWidened4<true>(av.data() + i * k, br, k, s);
          else dotWidened4<false>(av.data() + i * k, br, k, s);
          for (int q = 0; q < 4; ++q) y[i * n + j + q] = s[q];
        }
      }
      for (; j < n; ++j)
        for (int64_t i = 0; i < m; ++i)
          y[i * n + j] = bf16 ? dotWidened<true>(av.data() + i * k, row(j), k) : dotWidened<false>(av.data() + i * k, row(j), k);
      return y;
    }
    std::vector<double> bt = readFloats(tb ? b : b.permuted({1, 0}));
    for (int64_t i = 0; i < m; ++i) {
      const double* ar = av.data() + i * k;
      for (int64_t j = 0; j < n; ++j) y[i * n + j] = dot(ar, bt.data() + j * k, k);
    }
    return y;
  };
  std::vector<double> y = product(w);
  if (gated) {
    const std::vector<double> up = product(a.in[2]);
    for (size_t e = 0; e < y.size(); ++e) y[e] = silu(roundTo(out.dtype, y[e])) * roundTo(out.dtype, up[e]);
  }
  writeFloats(out, y.data());
  return "";
}

}  // namespace etc::interp
