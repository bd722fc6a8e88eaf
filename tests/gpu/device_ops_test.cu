// Standalone GPU test of the device tile library (runtime/include/etc/device): every op on
// ragged, strided and unaligned views against a CPU reference in double, plus wait/notify
// between CTAs and the error record. Build: tests/gpu/build_device_test.sh. Prints one line
// per case (PASS/FAIL name err) and exits non-zero on any failure.
// The 32-bit path of the run-time divisor helpers (floordiv_rt, ...; off by default in emitted
// code) is what t_index checks; nothing else here uses them.
#define ETC_INDEX_DIV32 1
#include "etc/device/etc.cuh"

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

using namespace etc::dev;
using bf16 = __nv_bfloat16;
using f16 = __half;

#define CK(x)                                                                          \
  do {                                                                                 \
    cudaError_t e_ = (x);                                                              \
    if (e_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, \
                   __LINE__);                                                          \
      std::exit(2);                                                                    \
    }                                                                                  \
  } while (0)

static int g_failures = 0;
static void report(bool ok, const std::string& name, double err) {
  std::printf("%s %s %.3g\n", ok ? "PASS" : "FAIL", name.c_str(), err);
  if (!ok) ++g_failures;
}

// ---- host dtype helpers ------------------------------------------------------------------

template <class T> double tod(T v) { return (double)v; }
template <> double tod<bf16>(bf16 v) { return (double)__bfloat162float(v); }
template <> double tod<f16>(f16 v) { return (double)__half2float(v); }
template <class T> T fromd(double v) { return (T)v; }
template <> bf16 fromd<bf16>(double v) { return __double2bfloat16(v); }
template <> f16 fromd<f16>(double v) { return __double2half(v); }
template <class T> const char* tname();
template <> const char* tname<float>() { return "f32"; }
template <> const char* tname<bf16>() { return "bf16"; }
template <> const char* tname<f16>() { return "f16"; }
template <> const char* tname<int>() { return "i32"; }
template <> const char* tname<long long>() { return "i64"; }
template <> const char* tname<unsigned char>() { return "u8"; }
template <class T> bool is_flt() { return false; }
template <> bool is_flt<float>() { return true; }
template <> bool is_flt<bf16>() { return true; }
template <> bool is_flt<f16>() { return true; }
template <class T> double tol() { return 0.0; }
template <> double tol<float>() { return 1e-5; }
template <> double tol<bf16>() { return 1e-2; }
template <> double tol<f16>() { return 2e-3; }

static std::mt19937_64 rng(12345);
static double rnd_nonzero(double lo, double hi) {
  std::uniform_real_distribution<double> u(lo, hi);
  double v;
  do v = u(rng); while (std::fabs(v) < 1e-3 * (hi - lo));
  return v;
}

// A device buffer of n elements of T with a host mirror.
template <class T>
struct Buf {
  size_t n = 0;
  std::vector<T> h;
  T* d = nullptr;
  explicit Buf(size_t n_) : n(n_), h(n_) { CK(cudaMalloc(&d, (n ? n : 1) * sizeof(T) + 64)); }
  ~Buf() { cudaFree(d); }
  Buf(const Buf&) = delete;
  void random(double lo = -2.0, double hi = 2.0) {
    for (auto& v : h) {
      if (is_flt<T>()) v = fromd<T>(rnd_nonzero(lo, hi));
      else v = (T)(long long)std::llround(rnd_nonzero(lo, hi));
    }
  }
  void poison() { std::memset(h.data(), 0xff, n * sizeof(T)); }  // NaN for floats
  void up() { CK(cudaMemcpy(d, h.data(), n * sizeof(T), cudaMemcpyHostToDevice)); }
  void down() { CK(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost)); }
};

// Host-side description of a view into a Buf: element offset, extents, strides.
struct HV {
  long long off = 0;
  int rank = 0;
  long long ext[4] = {1, 1, 1, 1};
  long long st[4] = {0, 0, 0, 0};
  long long numel() const {
    long long n = 1;
    for (int d = 0; d < rank; ++d) n *= ext[d];
    return n;
  }
  // Linear (row-major) index -> buffer offset.
  long long at(long long i) const {
    long long o = off;
    for (int d = rank - 1; d >= 0; --d) {
      o += (i % ext[d]) * st[d];
      i /= ext[d];
    }
    return o;
  }
};
static HV hv(long long off, std::vector<long long> ext, std::vector<long long> st) {
  HV v;
  v.off = off;
  v.rank = (int)ext.size();
  for (int d = 0; d < v.rank; ++d) {
    v.ext[d] = ext[d];
    v.st[d] = st[d];
  }
  return v;
}
// Row-major dense strides of ext.
static std::vector<long long> dense(std::vector<long long> ext) {
  std::vector<long long> s(ext.size());
  long long m = 1;
  for (int d = (int)ext.size() - 1; d >= 0; --d) {
    s[d] = m;
    m *= ext[d];
  }
  return s;
}
template <class T, class B>
static View<T> dv(B& buf, const HV& v) {
  View<T> r;
  r.ptr = (T*)buf.d + v.off;
  r.rank = v.rank;
  for (int d = 0; d < 4; ++d) {
    r.ext[d] = d < v.rank ? v.ext[d] : 1;
    r.stride[d] = d < v.rank ? v.st[d] : 0;
  }
  return r;
}

// Elements of buf not covered by v must still hold the poison.
template <class T>
static bool untouched_outside(const Buf<T>& b, const HV& v) {
  std::vector<char> in(b.n, 0);
  for (long long i = 0; i < v.numel(); ++i) in[v.at(i)] = 1;
  unsigned char poison[sizeof(T)];
  std::memset(poison, 0xff, sizeof(T));
  for (size_t i = 0; i < b.n; ++i)
    if (!in[i] && std::memcmp(&b.h[i], poison, sizeof(T)) != 0) return false;
  return true;
}

// Relative L2 error of y (over v) against ref; NaN anywhere makes it NaN.
template <class T>
static double rel_l2(const Buf<T>& y, const HV& v, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (long long i = 0; i < v.numel(); ++i) {
    double d = tod(y.h[v.at(i)]) - ref[i];
    if (std::isnan(ref[i]) && std::isnan(tod(y.h[v.at(i)]))) d = 0;
    num += d * d;
    den += ref[i] * ref[i];
  }
  return std::sqrt(num / (den > 0 ? den : 1));
}
// Count of elements of y (over v) that differ bit-wise from ref values converted to T.
template <class T>
static long long mismatches(const Buf<T>& y, const HV& v, const std::vector<T>& ref) {
  long long bad = 0;
  for (long long i = 0; i < v.numel(); ++i)
    if (std::memcmp(&y.h[v.at(i)], &ref[i], sizeof(T)) != 0) ++bad;
  return bad;
}

static const unsigned kSmemSmall = 1024;
#define SMEM_DECL extern __shared__ __align__(128) unsigned char smem_[]

// ---- kernels --------------------------------------------------------------------------------

template <class TX, class TY> __global__ void k_copy(View<const TX> x, View<TY> y) {
  SMEM_DECL; Ctx c{smem_, kSmemSmall}; copy(c, x, y);
}
template <class TY> __global__ void k_fill(View<TY> y, double v) {
  SMEM_DECL; Ctx c{smem_, kSmemSmall}; fill(c, y, v);
}
template <class TX, class TY> __global__ void k_cast(View<const TX> x, View<TY> y) {
  SMEM_DECL; Ctx c{smem_, kSmemSmall}; cast(c, x, y);
}
template <int OP, class T, class TY> __global__ void k_bin(View<const T> a, View<const T> b, View<TY> y) {
  SMEM_DECL; Ctx c{smem_, kSmemSmall};
  if constexpr (OP == 0) add(c, a, b, y);
  else if constexpr (OP == 1) mul(c, a, b, y);
  else silu_mul(c, a, b, y);
}
template <bool MAX, class TX, class TY> __global__ void k_red(View<const TX> x, int axis, View<TY> y) {
  SMEM_DECL; Ctx c{smem_, kSmemSmall};
  if (MAX) reduce_max(c, x, axis, y);
  else reduce_sum(c, x, axis, y);
}
template <class TX, class TW, class TY>
__global__ void k_rms(View<const TX> x, View<const TW> w, float eps, View<TY> y) {
  SMEM_DECL; Ctx c{smem_, kSmemSmall}; rmsnorm(c, x, w, eps, y);
}
// Launch bounds as the generated kernels have them (etcc: 256 threads, 1 CTA per SM), widened to
// 512 threads for the smaller tiles (a 512-thread block can only have 128 registers a thread, too
// few for a tile of 128 rows, which is only launched with up to 256). Without bounds, ptxas may use
// more registers than the block can have ("too many resources requested for launch").
// 1: the matmuls as an inlined megakernel's sites call them on sm_90a, their mma.sync form a call
// (matmul.cuh, ETC_MM_FALLBACK_CALL); tools/gpu_bundle.sh builds device_ops_test_staged so, where
// tiles under 64 rows take that form.
#ifndef DEVICE_TEST_MM_FALLBACK_CALL
#define DEVICE_TEST_MM_FALLBACK_CALL 0
#endif
constexpr bool kMmCall = DEVICE_TEST_MM_FALLBACK_CALL != 0;
template <int TM, int TN, int TK, class T, class TY, int MAXT>
__global__ void __launch_bounds__(MAXT, 1)
    k_mm(View<const T> a, View<const T> b, bool tb, View<TY> y, View<TY> y2, bool pre, unsigned shift) {
  SMEM_DECL;
  // shift: ctx.smem that many bytes past the block's shared memory, as the megakernel's follows
  // its static shared memory (the wgmma ring then starts after a pad to 1024 bytes).
  Ctx c{smem_ + shift, matmul_smem_bytes<T, TM, TN, TK>()};
  // pre: b's first stages prefetched, as a task does before its waits.
  if (pre) matmul_prefetch<TM, TN, TK>(c, a, b, tb);
  matmul<TM, TN, TK, kMmCall>(c, a, b, tb, y, pre);
  // A second call right after the first: the ring and the partial-sum buffer are reused.
  if (y2.ptr) matmul<TM, TN, TK, kMmCall>(c, a, b, tb, y2);
}
// The gated matmul, with the weights prefetched first when `pre` (as a task before its waits).
template <int TM, int TN, int TK, class T, class TY, int MAXT>
__global__ void __launch_bounds__(MAXT, 1)
    k_mm_gated(View<const T> a, View<const T> b, View<const T> bu, bool tb, View<TY> y, View<TY> y2, bool pre) {
  SMEM_DECL;
  Ctx c{smem_, matmul_silu_mul_smem_bytes<T, TM, TN, TK>()};
  if (pre) matmul_silu_mul_prefetch<TM, TN, TK>(c, a, b, bu, tb);
  matmul_silu_mul<TM, TN, TK, kMmCall>(c, a, b, bu, tb, y, pre);
  if (y2.ptr) matmul_silu_mul<TM, TN, TK, kMmCall>(c, a, b, bu, tb, y2);
}


// ---- mixture of experts ------------------------------------------------------------------------

template <int EPL, class TX>
__global__ void k_topk(View<const TX> x, View<float> w, View<int> ids, bool renorm) {
  SMEM_DECL; Ctx c{smem_, kSmemSmall}; topk_softmax<EPL>(c, x, w, ids, renorm);
}
__global__ void k_align(View<const int> ids, View<int> s, View<int> b, View<int> n, int experts, int block) {
  SMEM_DECL; Ctx c{smem_, moe_align_smem_bytes(experts)}; moe_align(c, ids, s, b, n, experts, block);
}
template <class TY, class TO>
__global__ void k_combine(View<const TY> y, View<const float> w, View<TO> out) {
  SMEM_DECL; Ctx c{smem_, kSmemSmall}; moe_combine(c, y, w, out);
}
// The task-level form: CTA (b, j) takes block b and column tile j of width tn, and is not run
// (as the megakernel skips it) when b >= num_blocks[0]. mode 0: act none, w's rows tiled;
// mode 2: silu_mul with the gate tile of w [.., j*tn..] and the up tile at row offset `half`.
template <int BLOCK, int RG, int KC, int NC, class T, class TY>
__global__ void __launch_bounds__(256, 1) k_gm_tasks(View<const T> x, View<const T> w, View<const int> sorted,
                                                     View<const int> bexp, View<const int> nblk, View<TY> y,
                                                     int top_k, int mode, long long tn, long long half) {
  SMEM_DECL;
  Ctx c{smem_, grouped_matmul_smem_bytes<T, BLOCK, RG, KC, NC>()};
  const long long b = blockIdx.x, j = blockIdx.y;
  if (b >= (long long)*nblk.ptr) return;
  const long long ncols = mode == 0 ? w.ext[1] : half;
  const long long lo = j * tn, hi = lo + tn < ncols ? lo + tn : ncols;
  View<const int> st = sorted, be = bexp, nb = nblk;
  st.ptr += b * BLOCK * sorted.stride[0];
  st.ext[0] = BLOCK;
  be.ptr += b * bexp.stride[0];
  be.rank = 0;
  nb.rank = 0;
  View<const T> wt = w;
  wt.ptr += lo * w.stride[1];
  wt.ext[1] = hi - lo;
  View<TY> yt = y;
  yt.ptr += lo * y.stride[1];
  yt.ext[1] = hi - lo;
  if (mode == 0) {
    grouped_matmul<BLOCK, RG, KC, NC>(c, x, wt, st, be, nb, yt, top_k, false);
  } else {
    View<const T> ut = wt;
    ut.ptr += half * w.stride[1];
    grouped_matmul<BLOCK, RG, KC, NC>(c, x, wt, st, be, nb, ut, yt, top_k);
  }
}
// The whole-operand form in one CTA: every block of sorted / bexp up to num_blocks[0].
template <int BLOCK, int RG, int KC, int NC, class T, class TY>
__global__ void __launch_bounds__(256, 1) k_gm_whole(View<const T> x, View<const T> w, View<const int> sorted,
                                                     View<const int> bexp, View<const int> nblk, View<TY> y,
                                                     int top_k, bool silu) {
  SMEM_DECL;
  Ctx c{smem_, grouped_matmul_smem_bytes<T, BLOCK, RG, KC, NC>()};
  grouped_matmul<BLOCK, RG, KC, NC>(c, x, w, sorted, bexp, nblk, y, top_k, silu);
}

// ---- elementwise cases ------------------------------------------------------------------------

static const int kThreadsList[3] = {128, 256, 512};

template <class T>
static void t_copy(const char* what, std::vector<long long> pext, HV xv, HV yv, int threads) {
  long long pn = 1;
  for (auto e : pext) pn *= e;
  Buf<T> x(pn), y(pn);
  x.random(-100, 100);
  y.poison();
  x.up();
  y.up();
  k_copy<T, T><<<1, threads, kSmemSmall>>>(dv<const T>(x, xv), dv<T>(y, yv));
  CK(cudaDeviceSynchronize());
  y.down();
  std::vector<T> ref(xv.numel());
  for (long long i = 0; i < xv.numel(); ++i) ref[i] = x.h[xv.at(i)];
  long long bad = mismatches(y, yv, ref);
  bool ok = bad == 0 && untouched_outside(y, yv);
  report(ok, std::string("copy_") + tname<T>() + "_" + what + "_t" + std::to_string(threads),
         (double)bad);
}

template <class T>
static void t_fill(const char* what, long long pn, HV yv, double v) {
  Buf<T> y(pn);
  y.poison();
  y.up();
  k_fill<T><<<1, 256, kSmemSmall>>>(dv<T>(y, yv), v);
  CK(cudaDeviceSynchronize());
  y.down();
  std::vector<T> ref(yv.numel(), fromd<T>(v));
  long long bad = mismatches(y, yv, ref);
  report(bad == 0 && untouched_outside(y, yv), std::string("fill_") + tname<T>() + "_" + what,
         (double)bad);
}

// The cast rule on the host: float->int truncates and saturates (NaN -> 0), else one RNE rounding.
template <class TY, class TX>
static TY host_cast(TX x) {
  double v = tod(x);
  if (!is_flt<TY>()) {
    if (!is_flt<TX>()) return (TY)(long long)v;  // int->int: wraps (test values fit)
    if (std::isnan(v)) return (TY)0;
    double t = std::trunc(v);
    double lo = (double)std::numeric_limits<TY>::min(), hi = (double)std::numeric_limits<TY>::max();
    if (t <= lo) return std::numeric_limits<TY>::min();
    if (t >= hi) return std::numeric_limits<TY>::max();
    return (TY)(long long)t;
  }
  if (std::is_same<TX, long long>::value) {
    // i64 -> float: one rounding from the exact integer (double would round first).
    long long i = (long long)x;
    if (std::is_same<TY, float>::value) { float f = (float)i; TY r; std::memcpy(&r, &f, sizeof(r)); return r; }
  }
  return fromd<TY>(v);
}

template <class TX, class TY>
static void t_cast(const char* what, std::vector<long long> pext, HV xv, HV yv,
                   std::vector<double> specials = {}) {
  long long pn = 1;
  for (auto e : pext) pn *= e;
  Buf<TX> x(pn);
  Buf<TY> y(pn);
  x.random(-3e4, 3e4);
  for (size_t i = 0; i < specials.size() && i < (size_t)xv.numel(); ++i)
    x.h[xv.at((long long)i)] = fromd<TX>(specials[i]);
  y.poison();
  x.up();
  y.up();
  k_cast<TX, TY><<<1, 256, kSmemSmall>>>(dv<const TX>(x, xv), dv<TY>(y, yv));
  CK(cudaDeviceSynchronize());
  y.down();
  std::vector<TY> ref(xv.numel());
  for (long long i = 0; i < xv.numel(); ++i) ref[i] = host_cast<TY>(x.h[xv.at(i)]);
  long long bad = mismatches(y, yv, ref);
  report(bad == 0 && untouched_outside(y, yv),
         std::string("cast_") + tname<TX>() + "_" + tname<TY>() + "_" + what, (double)bad);
}

template <int OP, class T, class TY>
static void t_bin(const char* what, std::vector<long long> pext, HV av, HV bv, HV yv) {
  long long pn = 1;
  for (auto e : pext) pn *= e;
  Buf<T> a(pn), b(pn);
  Buf<TY> y(pn);
  if (is_flt<T>()) {
    a.random(-4, 4);
    b.random(-4, 4);
  } else {
    // Large integers so that add and mul wrap.
    std::uniform_int_distribution<long long> u(-(1ll << 40), 1ll << 40);
    for (auto& v : a.h) v = (T)u(rng);
    for (auto& v : b.h) v = (T)u(rng);
  }
  y.poison();
  a.up();
  b.up();
  y.up();
  k_bin<OP, T, TY><<<1, 256, kSmemSmall>>>(dv<const T>(a, av), dv<const T>(b, bv), dv<TY>(y, yv));
  CK(cudaDeviceSynchronize());
  y.down();
  const char* opn = OP == 0 ? "add" : OP == 1 ? "mul" : "silu_mul";
  std::string name = std::string(opn) + "_" + tname<T>() + "_" + tname<TY>() + "_" + what;
  long long n = yv.numel();
  if (!is_flt<T>()) {
    std::vector<TY> ref(n);
    for (long long i = 0; i < n; ++i) {
      unsigned long long p = (unsigned long long)(long long)a.h[av.at(i)];
      unsigned long long q = (unsigned long long)(long long)b.h[bv.at(i)];
      ref[i] = (TY)(OP == 0 ? p + q : p * q);
    }
    long long bad = mismatches(y, yv, ref);
    report(bad == 0 && untouched_outside(y, yv), name, (double)bad);
    return;
  }
  std::vector<double> ref(n);
  for (long long i = 0; i < n; ++i) {
    double p = tod(a.h[av.at(i)]), q = tod(b.h[bv.at(i)]);
    ref[i] = OP == 0 ? p + q : OP == 1 ? p * q : p / (1.0 + std::exp(-p)) * q;
  }
  double err = rel_l2(y, yv, ref);
  report(err < tol<TY>() && untouched_outside(y, yv), name, err);
}

// div_rn_by_ge1 (silu's division without div.rn.f32's subroutine call) against div.rn.f32,
// bit for bit: every thread takes a splitmix draw as g's bits, then divides it by 1 + expf(-g)
// (silu's denominator), by a random d >= 1 and by the special values; a NaN matches any NaN.
__global__ void k_div_rn(unsigned long long seed, int per_thread, unsigned long long* bad, unsigned* first) {
  const float specials[] = {1.0f, 1.0000001f, 1.5f, 3.0f, 1e30f, 3.4028235e38f, INFINITY};
  unsigned long long x = seed + 0x9e3779b97f4a7c15ull * (blockIdx.x * blockDim.x + threadIdx.x + 1);
  auto next = [&] {
    unsigned long long z = (x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  auto check = [&](float g, float d) {
    const float want = __fdiv_rn(g, d), got = etc::dev::div_rn_by_ge1(g, d);
    if (__float_as_uint(want) != __float_as_uint(got) && !(isnan(want) && isnan(got))) {
      if (atomicAdd(bad, 1ull) == 0) first[0] = __float_as_uint(g), first[1] = __float_as_uint(d);
    }
  };
  for (int i = 0; i < per_thread; ++i) {
    const unsigned long long r = next();
    const float g = __uint_as_float((unsigned)r);
    check(g, 1.0f + expf(-g));
    const float d = fabsf(__uint_as_float((unsigned)(r >> 32)));
    if (d >= 1.0f) check(g, d);
    check(g, specials[i % 7]);
  }
  const float edges[] = {0.0f, -0.0f, 1e-45f, -1e-45f, 1.2e-38f, INFINITY, -INFINITY, NAN, 88.7f, -88.7f, -104.0f};
  for (int i = 0; i < 11; ++i) check(edges[i], 1.0f + expf(-edges[i]));
}

static void t_div_rn() {
  unsigned long long* bad;
  unsigned* first;
  CK(cudaMallocManaged(&bad, sizeof *bad));
  CK(cudaMallocManaged(&first, 2 * sizeof *first));
  *bad = 0;
  first[0] = first[1] = 0;
  const int blocks = 528, threads = 256, per = 512;  // 69 M draws, three divisions each
  k_div_rn<<<blocks, threads>>>(0x5eedull, per, bad, first);
  CK(cudaDeviceSynchronize());
  if (*bad) std::printf("  first: g bits %08x, d bits %08x\n", first[0], first[1]);
  report(*bad == 0, "div_rn_by_ge1_bits", (double)*bad);
  CK(cudaFree(bad));
  CK(cudaFree(first));
}

// ---- reductions ---------------------------------------------------------------------------------

template <bool MAX, class TX, class TY>
static void t_red(const char* what, std::vector<long long> pext, HV xv, int axis, bool with_nan = false) {
  long long pn = 1;
  for (auto e : pext) pn *= e;
  Buf<TX> x(pn);
  if (is_flt<TX>()) x.random(-2, 2);
  else {
    std::uniform_int_distribution<long long> u(-(1ll << 30), 1ll << 30);
    for (auto& v : x.h) v = (TX)u(rng);
  }
  int ax = axis < 0 ? axis + xv.rank : axis;
  // y: x's extents without the axis, dense.
  std::vector<long long> yext;
  for (int d = 0; d < xv.rank; ++d)
    if (d != ax) yext.push_back(xv.ext[d]);
  HV yv = hv(1, yext, dense(yext));  // offset 1: an unaligned destination
  long long yn = yv.numel();
  Buf<TY> y(yn + 2);
  if (with_nan) x.h[xv.at(xv.numel() / 2)] = fromd<TX>(std::nan(""));
  y.poison();
  x.up();
  y.up();
  k_red<MAX, TX, TY><<<1, 256, kSmemSmall>>>(dv<const TX>(x, xv), axis, dv<TY>(y, yv));
  CK(cudaDeviceSynchronize());
  y.down();
  // Reference: iterate x in row-major order, bucket by output index.
  std::vector<double> ref(yn, MAX ? -INFINITY : 0.0);
  std::vector<long long> iref(yn, MAX ? std::numeric_limits<long long>::min() : 0);
  std::vector<int> nan_in(yn, 0);
  for (long long i = 0; i < xv.numel(); ++i) {
    long long rest = i, o = 0, mul = 1;
    for (int d = xv.rank - 1; d >= 0; --d) {
      long long c = rest % xv.ext[d];
      rest /= xv.ext[d];
      if (d == ax) continue;
      o += c * mul;
      mul *= xv.ext[d];
    }
    TX v = x.h[xv.at(i)];
    if (is_flt<TX>()) {
      double dvv = tod(v);
      if (std::isnan(dvv)) nan_in[o] = 1;
      ref[o] = MAX ? std::max(ref[o], dvv) : ref[o] + dvv;
    } else {
      long long iv = (long long)v;
      iref[o] = MAX ? std::max(iref[o], iv) : (long long)((unsigned long long)iref[o] + (unsigned long long)iv);
    }
  }
  std::string name = std::string(MAX ? "reduce_max_" : "reduce_sum_") + tname<TX>() + "_" + what;
  if (!is_flt<TX>()) {
    std::vector<TY> r(yn);
    for (long long i = 0; i < yn; ++i) r[i] = (TY)iref[i];
    long long bad = mismatches(y, yv, r);
    report(bad == 0 && untouched_outside(y, yv), name, (double)bad);
    return;
  }
  for (long long i = 0; i < yn; ++i)
    if (nan_in[i]) ref[i] = std::nan("");
  bool nan_ok = true;
  for (long long i = 0; i < yn; ++i)
    if (std::isnan(ref[i]) != std::isnan(tod(y.h[yv.at(i)]))) nan_ok = false;
  double err = rel_l2(y, yv, ref);
  report(nan_ok && err < tol<TY>() && untouched_outside(y, yv), name, err);
}

template <class TX, class TW, class TY>
static void t_rms(const char* what, long long rows, long long H, long long row_pitch, long long off,
                  int threads) {
  long long pn = rows * row_pitch + off + 8;
  Buf<TX> x(pn);
  Buf<TW> w(H + 1);
  Buf<TY> y(pn);
  x.random(-3, 3);
  w.random(0.5, 1.5);
  y.poison();
  x.up();
  w.up();
  y.up();
  HV xv = hv(off, {rows, H}, {row_pitch, 1});
  HV wv = hv(off % 2, {H}, {1});
  float eps = 1e-5f;
  k_rms<TX, TW, TY><<<1, threads, kSmemSmall>>>(dv<const TX>(x, xv), dv<const TW>(w, wv), eps,
                                                 dv<TY>(y, xv));
  CK(cudaGetLastError());  // a launch that could not start (too many registers for the block)
  CK(cudaDeviceSynchronize());
  y.down();
  std::vector<double> ref(rows * H);
  for (long long r = 0; r < rows; ++r) {
    double ss = 0;
    for (long long h = 0; h < H; ++h) ss += tod(x.h[xv.at(r * H + h)]) * tod(x.h[xv.at(r * H + h)]);
    double inv = 1.0 / std::sqrt(ss / H + eps);
    for (long long h = 0; h < H; ++h)
      ref[r * H + h] = tod(x.h[xv.at(r * H + h)]) * inv * tod(w.h[wv.at(h)]);
  }
  double err = rel_l2(y, xv, ref);
  report(err < tol<TY>() && untouched_outside(y, xv),
         std::string("rmsnorm_") + tname<TX>() + "_" + tname<TW>() + "_" + tname<TY>() + "_" + what +
             "_t" + std::to_string(threads),
         err);
}

#include "device_decode_tests.cuh"
#include "device_rows_tests.cuh"
#include "device_fused_rows_tests.cuh"

// ---- matmul ---------------------------------------------------------------------------------------

// a: [M, K] at offset aoff with row pitch lda (avec: rank 1 [K]); b: [N, K] (tb) or [K, N]
// with pitch ldb at offset boff; y: [M, N] with pitch ldy at offset yoff (yvec: rank 1).
template <int TM, int TN, int TK, class T, class TY>
static void t_mm(long long M, long long N, long long K, bool tb, long long lda, long long ldb,
                 long long ldy, long long aoff, long long boff, long long yoff, int threads,
                 bool avec = false, bool twice = false, bool pre = false, unsigned shift = 0) {
  Buf<T> a(aoff + M * lda + 8);
  long long brows = tb ? N : K;
  Buf<T> b(boff + brows * ldb + 8);
  Buf<TY> y(yoff + M * ldy + 8), y2(yoff + M * ldy + 8);
  a.random(-1, 1);
  b.random(-1, 1);
  y.poison();
  y2.poison();
  a.up();
  b.up();
  y.up();
  y2.up();
  HV av = avec ? hv(aoff, {K}, {1}) : hv(aoff, {M, K}, {lda, 1});
  HV bv = tb ? hv(boff, {N, K}, {ldb, 1}) : hv(boff, {K, N}, {ldb, 1});
  HV yv = avec ? hv(yoff, {N}, {1}) : hv(yoff, {M, N}, {ldy, 1});
  unsigned smem = matmul_smem_bytes<T, TM, TN, TK>() + shift;
  // 32 rows and more: etcc launches 256 threads, and at 512 (128 registers) the wgmma form's
  // accumulators beside mma.sync's would spill (32 rows: with ETC_MM_WGMMA_MIN_ROWS <= 32).
  constexpr int kMaxThreads = TM >= 32 ? 256 : 512;
  if (threads > kMaxThreads) {
    report(false, "matmul test launches more threads than its kernel's bounds", threads);
    return;
  }
  auto kern = k_mm<TM, TN, TK, T, TY, kMaxThreads>;
  CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  View<TY> y2v = dv<TY>(y2, yv);
  if (!twice) y2v.ptr = nullptr;
  kern<<<1, threads, smem>>>(dv<const T>(a, av), dv<const T>(b, bv), tb, dv<TY>(y, yv), y2v, pre, shift);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  y.down();
  y2.down();
  std::vector<double> ref(M * N);
  for (long long m = 0; m < M; ++m)
    for (long long n = 0; n < N; ++n) {
      double s = 0;
      for (long long k = 0; k < K; ++k) {
        double av_ = tod(a.h[aoff + m * lda + k]);
        double bv_ = tod(tb ? b.h[boff + n * ldb + k] : b.h[boff + k * ldb + n]);
        s += av_ * bv_;
      }
      ref[m * N + n] = s;
    }
  double err = rel_l2(y, yv, ref);
  bool ok = err < tol<TY>() && untouched_outside(y, yv);
  if (twice) {
    double e2 = rel_l2(y2, yv, ref);
    ok = ok && e2 < tol<TY>() && untouched_outside(y2, yv) &&
         std::memcmp(y.h.data(), y2.h.data(), y.n * sizeof(TY)) == 0;
    err = std::max(err, e2);
  }
  char name[256];
  std::snprintf(name, sizeof name, "matmul_%s_%s_T%dx%dx%d_M%lld_N%lld_K%lld_%s_lda%lld_ldb%lld_off%lld,%lld,%lld%s%s%s_t%d",
                tname<T>(), tname<TY>(), TM, TN, TK, M, N, K, tb ? "tb" : "nn", lda, ldb, aoff,
                boff, yoff, avec ? "_vec" : "", twice ? "_twice" : "", pre ? "_pre" : "", threads);
  if (shift) std::snprintf(name + std::strlen(name), sizeof name - std::strlen(name), "_smem+%u", shift);
  report(ok, name, err);
}

// The gated matmul y = silu_mul(a @ b, a @ b_up) (TN covers both products: y has up to TN / 2
// columns), against products summed in double and rounded to TY, as two matmuls into TY
// tensors and a silu_mul give. a: [M, K] (pitch K); b, b_up: [N, K] (tb) or [K, N], dense.
template <int TM, int TN, int TK, class T, class TY>
static void t_mm_gated(long long M, long long N, long long K, bool tb, int threads, bool pre, bool twice = false) {
  Buf<T> a(M * K + 8), b(N * K + 8), bu(N * K + 8);
  Buf<TY> y(M * N + 8), y2(M * N + 8);
  a.random(-1, 1);
  b.random(-1, 1);
  bu.random(-1, 1);
  y.poison();
  y2.poison();
  a.up();
  b.up();
  bu.up();
  y.up();
  y2.up();
  HV av = hv(0, {M, K}, {K, 1});
  HV bv = tb ? hv(0, {N, K}, {K, 1}) : hv(0, {K, N}, {N, 1});
  HV yv = hv(0, {M, N}, {N, 1});
  unsigned smem = matmul_silu_mul_smem_bytes<T, TM, TN, TK>();
  auto kern = k_mm_gated<TM, TN, TK, T, TY, 256>;
  CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  View<TY> y2v = dv<TY>(y2, yv);
  if (!twice) y2v.ptr = nullptr;
  kern<<<1, threads, smem>>>(dv<const T>(a, av), dv<const T>(b, bv), dv<const T>(bu, bv), tb, dv<TY>(y, yv), y2v,
                             pre);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  y.down();
  y2.down();
  std::vector<double> ref(M * N);
  for (long long m = 0; m < M; ++m)
    for (long long n = 0; n < N; ++n) {
      double g = 0, u = 0;
      for (long long k = 0; k < K; ++k) {
        const long long at = tb ? n * K + k : k * N + n;
        g += tod(a.h[m * K + k]) * tod(b.h[at]);
        u += tod(a.h[m * K + k]) * tod(bu.h[at]);
      }
      g = tod(fromd<TY>(g));
      u = tod(fromd<TY>(u));
      ref[m * N + n] = g / (1.0 + std::exp(-g)) * u;
    }
  double err = rel_l2(y, yv, ref);
  bool ok = err < tol<TY>() && untouched_outside(y, yv);
  if (twice) {
    ok = ok && untouched_outside(y2, yv) && std::memcmp(y.h.data(), y2.h.data(), y.n * sizeof(TY)) == 0;
    err = std::max(err, rel_l2(y2, yv, ref));
  }
  char name[160];
  std::snprintf(name, sizeof name, "matmul_silu_mul_%s_%s_T%dx%dx%d_M%lld_N%lld_K%lld_%s%s%s_t%d", tname<T>(),
                tname<TY>(), TM, TN, TK, M, N, K, tb ? "tb" : "nn", pre ? "_prefetched" : "", twice ? "_twice" : "",
                threads);
  report(ok, name, err);
}

// ---- mixture of experts cases ------------------------------------------------------------------

// The selection order of docs/ops.md on the host: larger logits first (the softmax is monotone),
// ties lower index first, NaN never chosen before a number.
template <class TX>
static void t_topk(const char* what, long long rows, long long E, long long pitch, long long k, bool renorm,
                   bool ties, bool with_nan) {
  Buf<TX> x(rows * pitch + 8);
  x.random(-4, 4);
  if (ties)  // few distinct values: many exact ties
    for (auto& v : x.h) v = fromd<TX>(std::round(tod(v)));
  if (with_nan) x.h[1] = fromd<TX>(std::nan(""));
  Buf<float> w(rows * k + 4);
  Buf<int> ids(rows * k + 4);
  w.poison();
  ids.poison();
  x.up();
  w.up();
  ids.up();
  HV xv = hv(1, {rows, E}, {pitch, 1}), wv = hv(0, {rows, k}, {k, 1});
  k_topk<4, TX><<<1, 256, kSmemSmall>>>(dv<const TX>(x, xv), dv<float>(w, wv), dv<int>(ids, wv), renorm);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  w.down();
  ids.down();
  std::vector<double> ref(rows * k);
  long long bad = 0;
  for (long long r = 0; r < rows; ++r) {
    std::vector<double> l(E);
    double m = -INFINITY, sum = 0;
    for (long long e = 0; e < E; ++e) {
      l[e] = tod(x.h[xv.at(r * E + e)]);
      if (!std::isnan(l[e])) m = std::max(m, l[e]);
    }
    for (long long e = 0; e < E; ++e)
      if (!std::isnan(l[e])) sum += std::exp(l[e] - m);
    std::vector<long long> order;
    for (long long e = 0; e < E; ++e)
      if (!std::isnan(l[e])) order.push_back(e);
    std::stable_sort(order.begin(), order.end(), [&](long long a, long long b) { return l[a] > l[b]; });
    double chosen = 0;
    for (long long j = 0; j < k; ++j) chosen += std::exp(l[order[j]] - m);
    for (long long j = 0; j < k; ++j) {
      if (ids.h[r * k + j] != (int)order[j]) ++bad;
      ref[r * k + j] = std::exp(l[order[j]] - m) / (renorm ? chosen : sum);
    }
  }
  double err = rel_l2(w, wv, ref);
  report(bad == 0 && err < 1e-5 && untouched_outside(w, wv) && untouched_outside(ids, wv),
         std::string("topk_softmax_") + tname<TX>() + "_" + what, err + (double)bad);
}

struct HostAlign {
  std::vector<int> sorted, bexp;
  int used = 0;
};
// moe_align as docs/ops.md states it.
static HostAlign host_align(const std::vector<int>& ids, int experts, int block, long long nb_cap) {
  HostAlign a;
  const int total = (int)ids.size();
  a.sorted.assign(nb_cap * block, total);
  a.bexp.assign(nb_cap, -1);
  for (int e = 0; e < experts; ++e) {
    std::vector<int> rows;
    for (int i = 0; i < total; ++i)
      if (ids[i] == e) rows.push_back(i);
    const int nb = ((int)rows.size() + block - 1) / block;
    for (size_t j = 0; j < rows.size(); ++j) a.sorted[a.used * block + j] = rows[j];
    for (int b = 0; b < nb; ++b) a.bexp[a.used + b] = e;
    a.used += nb;
  }
  return a;
}

// Routed ids: each row picks k distinct experts, drawn mostly from the first `hot` experts
// (uneven: most experts get nothing, a few get many rows).
static std::vector<int> routed_ids(long long T, int k, int experts, int hot) {
  std::vector<int> ids;
  std::uniform_int_distribution<int> hot_d(0, hot - 1), all_d(0, experts - 1);
  std::uniform_real_distribution<double> u(0, 1);
  for (long long t = 0; t < T; ++t) {
    std::vector<int> row;
    while ((int)row.size() < k) {
      int e = u(rng) < 0.9 ? hot_d(rng) : all_d(rng);
      if (std::find(row.begin(), row.end(), e) == row.end()) row.push_back(e);
    }
    ids.insert(ids.end(), row.begin(), row.end());
  }
  return ids;
}

static void t_align(const char* what, long long T, int k, int experts, int block, int hot, long long pitch,
                    int threads) {
  std::vector<int> flat = routed_ids(T, k, experts, hot);
  const long long nb_cap = (T * k + block - 1) / block + experts;
  Buf<int> ids(T * pitch + 4), sorted(nb_cap * block + 8), bexp(nb_cap + 8), nblk(4);
  ids.poison();
  for (long long t = 0; t < T; ++t)
    for (int j = 0; j < k; ++j) ids.h[2 + t * pitch + j] = flat[t * k + j];
  sorted.poison();
  bexp.poison();
  nblk.poison();
  ids.up();
  sorted.up();
  bexp.up();
  nblk.up();
  HV iv = hv(2, {T, k}, {pitch, 1}), sv = hv(3, {nb_cap * block}, {1}), bv = hv(1, {nb_cap}, {1}), nv = hv(1, {1}, {1});
  k_align<<<1, threads, moe_align_smem_bytes(experts)>>>(dv<const int>(ids, iv), dv<int>(sorted, sv), dv<int>(bexp, bv),
                                                         dv<int>(nblk, nv), experts, block);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  sorted.down();
  bexp.down();
  nblk.down();
  HostAlign ref = host_align(flat, experts, block, nb_cap);
  long long bad = mismatches(sorted, sv, ref.sorted) + mismatches(bexp, bv, ref.bexp) +
                  (nblk.h[1] != ref.used ? 1 : 0);
  bool ok = bad == 0 && untouched_outside(sorted, sv) && untouched_outside(bexp, bv) && untouched_outside(nblk, nv);
  report(ok, std::string("moe_align_") + what + "_T" + std::to_string(T) + "_t" + std::to_string(threads), (double)bad);
}

// y [R * top_k, N'] from the blocks of a host moe_align; rows of blocks >= `run_blocks` (and
// padding) must stay poison. tasks: the task-level form (a grid of blocks x column tiles), else
// one CTA with the whole operands. mode: 0 none, 1 silu_mul fused halves (whole form only),
// 2 silu_mul gate/up tiles (task form only).
template <int BLOCK, int RG, int KC, int NC, class T, class TY>
static void t_gm(const char* what, long long R, int top_k, int experts, int hot, long long N, long long Kd,
                 long long xpitch, int mode, bool tasks, long long tn, int drop_blocks) {
  const long long routed = R * top_k;
  std::vector<int> flat = routed_ids(R, top_k, experts, hot);
  const long long nb_cap = (routed + BLOCK - 1) / BLOCK + experts;
  HostAlign al = host_align(flat, experts, BLOCK, nb_cap);
  const int run_blocks = std::max(0, al.used - drop_blocks);
  Buf<T> x(R * xpitch + 8), w((long long)experts * N * Kd + 8);
  x.random(-1, 1);
  w.random(-1, 1);
  Buf<int> sorted(nb_cap * BLOCK), bexp(nb_cap), nblk(1);
  sorted.h = al.sorted;
  bexp.h = al.bexp;
  nblk.h[0] = run_blocks;
  const long long ncols = mode == 0 ? N : N / 2;
  Buf<TY> y(routed * ncols + 8);
  y.poison();
  x.up();
  w.up();
  sorted.up();
  bexp.up();
  nblk.up();
  y.up();
  HV xv = hv(1, {R, Kd}, {xpitch, 1}), wv = hv(0, {experts, N, Kd}, {N * Kd, Kd, 1});
  HV sv = hv(0, {nb_cap * BLOCK}, {1}), bv = hv(0, {nb_cap}, {1}), nv = hv(0, {1}, {1});
  HV yv = hv(0, {routed, ncols}, {ncols, 1});
  unsigned smem = grouped_matmul_smem_bytes<T, BLOCK, RG, KC, NC>();
  if (tasks) {
    auto kern = k_gm_tasks<BLOCK, RG, KC, NC, T, TY>;
    CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    dim3 grid((unsigned)nb_cap, (unsigned)((ncols + tn - 1) / tn));
    kern<<<grid, 256, smem>>>(dv<const T>(x, xv), dv<const T>(w, wv), dv<const int>(sorted, sv), dv<const int>(bexp, bv),
                              dv<const int>(nblk, nv), dv<TY>(y, yv), top_k, mode, tn, N / 2);
  } else {
    auto kern = k_gm_whole<BLOCK, RG, KC, NC, T, TY>;
    CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    kern<<<1, 256, smem>>>(dv<const T>(x, xv), dv<const T>(w, wv), dv<const int>(sorted, sv), dv<const int>(bexp, bv),
                           dv<const int>(nblk, nv), dv<TY>(y, yv), top_k, mode == 1);
  }
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  y.down();
  // The rows the first run_blocks blocks name, and their values.
  std::vector<char> written(routed, 0);
  double num = 0, den = 0;
  long long bad_untouched = 0;
  for (int b = 0; b < run_blocks; ++b)
    for (int j = 0; j < BLOCK; ++j) {
      const int s = al.sorted[b * BLOCK + j];
      if (s >= routed) continue;
      written[s] = 1;
      const int e = al.bexp[b];
      for (long long n = 0; n < ncols; ++n) {
        double h0 = 0, h1 = 0;
        for (long long q = 0; q < Kd; ++q) {
          const double xq = tod(x.h[xv.at((s / top_k) * Kd + q)]);
          h0 += xq * tod(w.h[(e * N + n) * Kd + q]);
          if (mode != 0) h1 += xq * tod(w.h[(e * N + N / 2 + n) * Kd + q]);
        }
        const double want = mode == 0 ? h0 : h0 / (1 + std::exp(-h0)) * h1;
        const double got = tod(y.h[s * ncols + n]);
        num += (got - want) * (got - want);
        den += want * want;
      }
    }
  unsigned char poison[sizeof(TY)];
  std::memset(poison, 0xff, sizeof(TY));
  for (long long s = 0; s < routed; ++s)
    if (!written[s])
      for (long long n = 0; n < ncols; ++n)
        if (std::memcmp(&y.h[s * ncols + n], poison, sizeof(TY)) != 0) ++bad_untouched;
  const double err = std::sqrt(num / (den > 0 ? den : 1));
  char name[256];
  std::snprintf(name, sizeof name, "grouped_matmul_%s_%s_%s_B%d_RG%d_KC%d_R%lld_k%d_E%d_N%lld_Kd%lld_used%d_run%d",
                what, tname<T>(), tname<TY>(), BLOCK, RG, KC, R, top_k, experts, N, Kd, al.used, run_blocks);
  report(err < tol<TY>() && bad_untouched == 0 && untouched_outside(y, yv), name, err + (double)bad_untouched);
}

template <class TY, class TO>
static void t_combine(const char* what, long long T, long long K, long long H, long long ypitch, long long yoff) {
  Buf<TY> y(yoff + T * K * ypitch + 8);
  Buf<float> w(T * K + 4);
  Buf<TO> out(T * H + 8);
  y.random(-2, 2);
  w.random(0, 1);
  out.poison();
  y.up();
  w.up();
  out.up();
  HV yv = hv(yoff, {T * K, H}, {ypitch, 1}), wv = hv(1, {T, K}, {K, 1}), ov = hv(0, {T, H}, {H, 1});
  k_combine<TY, TO><<<1, 256, kSmemSmall>>>(dv<const TY>(y, yv), dv<const float>(w, wv), dv<TO>(out, ov));
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  out.down();
  std::vector<double> ref(T * H, 0.0);
  for (long long t = 0; t < T; ++t)
    for (long long k = 0; k < K; ++k)
      for (long long c = 0; c < H; ++c) ref[t * H + c] += (double)w.h[wv.at(t * K + k)] * tod(y.h[yv.at((t * K + k) * H + c)]);
  double err = rel_l2(out, ov, ref);
  report(err < tol<TO>() && untouched_outside(out, ov),
         std::string("moe_combine_") + tname<TY>() + "_" + tname<TO>() + "_" + what, err);
}

// ---- events -------------------------------------------------------------------------------------

struct TParams {
  unsigned* events;
  EtcError* error;
  long long watchdog_ns;
  unsigned flags;
};

__device__ unsigned long long gtimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// CTA 0 produces data (after a delay, so that CTA 1 is already waiting) and notifies one
// element and then a range of 4; CTA 1 waits on all of them and checks the data with plain loads.
__global__ void k_producer_consumer(TParams p, int* data, int n, int* result) {
  if (blockIdx.x == 0) {
    unsigned long long t0 = gtimer();
    while (gtimer() - t0 < 200000ull) __nanosleep(1000);
    for (int i = threadIdx.x; i < n; i += blockDim.x) data[i] = 3 * i + 1;
    notify(p, p.events + 0);
    for (int i = threadIdx.x; i < n; i += blockDim.x) data[n + i] = 5 * i + 2;
    notify(p, p.events + 1, 4);
  } else {
    WaitSite s{1, 0, 1, {1, 0, 0, 0}, 0};
    bool ok = wait(p, p.events + 0, 1, s);
    int bad = 0;
    for (int i = threadIdx.x; i < n; i += blockDim.x)
      if (data[i] != 3 * i + 1) ++bad;
    for (int e = 0; e < 4; ++e) ok = wait(p, p.events + 1 + e, 1, s) && ok;
    for (int i = threadIdx.x; i < n; i += blockDim.x)
      if (data[n + i] != 5 * i + 2) ++bad;
    atomicAdd(&result[0], bad);
    if (threadIdx.x == 0) result[1] = ok ? 1 : 0;
  }
}

// CTA 0 waits for a count that never comes (watchdog from p); CTA 1 waits on another never-
// notified counter with a 10 s watchdog and must give up as soon as CTA 0 records its error.
__global__ void k_timeout(TParams p, int* result, unsigned long long* elapsed) {
  if (blockIdx.x == 0) {
    WaitSite s{7, 3, 2, {5, 9, 0, 0}, 42};
    bool ok = wait(p, p.events + 2, 5, s);
    if (threadIdx.x == 0) result[0] = ok ? 1 : 0;
  } else {
    TParams q = p;
    q.watchdog_ns = 10000000000ll;
    WaitSite s{8, 1, 1, {4, 0, 0, 0}, 0};
    unsigned long long t0 = gtimer();
    bool ok = wait(q, q.events + 3, 1, s);
    if (threadIdx.x == 0) {
      result[1] = ok ? 1 : 0;
      *elapsed = gtimer() - t0;
    }
  }
}

// WaitGroup (etcc --parallel-waits): CTA 0 writes 300 chunks of data and notifies chunk j's
// counter when it is written; a chunk with j % 3 == 1 (target 2) gets its first half, a notify, a
// pause and its second half, then its second notify; where j % 7 == 0 the target is 0 and nothing
// is waited. CTA 1, of 128 threads (element j's spin on thread j % 128, so each thread has two or
// three), checks all 300 as one group, then reads every chunk. `order` permutes the chunks
// (ascending, descending, or by a stride) so that a thread's later elements come last too.
__global__ void k_wait_group(TParams p, int* data, int per, int order, int* result) {
  const int chunks = 300;
  if (blockIdx.x == 0) {
    unsigned long long t0 = gtimer();
    while (gtimer() - t0 < 200000ull) __nanosleep(1000);
    for (int q = 0; q < chunks; ++q) {
      const int j = order == 0 ? q : order == 1 ? chunks - 1 - q : (q * 131) % chunks;  // 131 is prime to 300
      const int half = j % 3 == 1 ? per / 2 : per;
      for (int i = threadIdx.x; i < half; i += blockDim.x) data[j * per + i] = 7 * j + i;
      notify(p, p.events + j);
      if (j % 3 == 1) {
        t0 = gtimer();
        while (gtimer() - t0 < 2000ull) __nanosleep(100);
        for (int i = half + threadIdx.x; i < per; i += blockDim.x) data[j * per + i] = 7 * j + i;
        notify(p, p.events + j);
      }
    }
  } else {
    WaitGroup g;
    for (int j = 0; j < chunks; ++j) {
      WaitSite s{3, 0, 1, {j, 0, 0, 0}, j};
      g.check(p, p.events + j, j % 7 == 0 ? 0u : (j % 3 == 1 ? 2u : 1u), s);
    }
    const bool ok = g.join();
    int bad = 0;
    for (int j = 0; j < chunks; ++j)
      if (j % 7 != 0)
        for (int i = threadIdx.x; i < per; i += blockDim.x)
          if (data[j * per + i] != 7 * j + i) ++bad;
    atomicAdd(&result[0], bad);
    if (threadIdx.x == 0) result[1] = ok ? 1 : 0;
  }
}

// A group whose third element never comes: the spinning thread records the timeout with that
// element's site, and join() is false in every thread.
__global__ void k_wait_group_timeout(TParams p, int* result) {
  notify(p, p.events + 0);
  notify(p, p.events + 1);
  WaitGroup g;
  for (int j = 0; j < 3; ++j) {
    WaitSite s{9, 2, 1, {j, 0, 0, 0}, 100 + j};
    g.check(p, p.events + j, j == 2 ? 4u : 1u, s);
  }
  const bool ok = g.join();
  if (!ok) atomicAdd(&result[1], 1);
  if (threadIdx.x == 0) result[0] = ok ? 1 : 0;
}

// notify_checked: counter 5 already got its one notify; a range notify over [4, 7) with
// initial count 1 must report element site.element + 1.
__global__ void k_over_notify(TParams p, int* result) {
  notify(p, p.events + 5);
  WaitSite s{2, 4, 1, {6, 0, 0, 0}, 10};
  bool ok = notify_checked(p, p.events + 4, 3, 1, s);
  bool ab = aborted(p);
  if (threadIdx.x == 0) {
    result[0] = ok ? 1 : 0;
    result[1] = ab ? 1 : 0;
  }
}

static void t_events() {
  unsigned* ev;
  EtcError* err;
  int* data;
  int* res;
  unsigned long long* el;
  const int n = 1 << 16;
  CK(cudaMalloc(&ev, 64 * sizeof(unsigned)));
  CK(cudaMalloc(&err, sizeof(EtcError)));
  CK(cudaMalloc(&data, 2 * n * sizeof(int)));
  CK(cudaMalloc(&res, 4 * sizeof(int)));
  CK(cudaMalloc(&el, sizeof(unsigned long long)));
  TParams p{ev, err, 2000000000ll, 0};
  EtcError he;
  int hr[4];
  // reps launches of a kernel (launch(rep), after err and res are cleared) that must leave
  // res = {0 mismatches, 1} and no error; reported at the first failure or after the last.
  auto repeated = [&](const std::string& name, int reps, auto launch) {
    for (int rep = 0; rep < reps; ++rep) {
      CK(cudaMemset(err, 0, sizeof(EtcError)));
      CK(cudaMemset(res, 0, 4 * sizeof(int)));
      launch(rep);
      CK(cudaDeviceSynchronize());
      CK(cudaMemcpy(hr, res, sizeof hr, cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(&he, err, sizeof he, cudaMemcpyDeviceToHost));
      const bool ok = hr[0] == 0 && hr[1] == 1 && he.code == 0;
      if (!ok || rep == reps - 1) {
        report(ok, name + "_rep" + std::to_string(rep), (double)hr[0]);
        if (!ok) break;
      }
    }
  };

  repeated("events_producer_consumer", 20, [&](int) {
    CK(cudaMemset(ev, 0, 64 * sizeof(unsigned)));
    CK(cudaMemset(data, 0, 2 * n * sizeof(int)));
    k_producer_consumer<<<2, 256>>>(p, data, n, res);
  });

  {
    CK(cudaMemset(ev, 0, 64 * sizeof(unsigned)));
    CK(cudaMemset(err, 0, sizeof(EtcError)));
    CK(cudaMemset(res, 0xff, 4 * sizeof(int)));
    TParams pt{ev, err, 2000000ll, 0};  // 2 ms
    k_timeout<<<2, 256>>>(pt, res, el);
    CK(cudaDeviceSynchronize());
    unsigned long long hel;
    CK(cudaMemcpy(hr, res, sizeof hr, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(&he, err, sizeof he, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(&hel, el, sizeof hel, cudaMemcpyDeviceToHost));
    bool ok = hr[0] == 0 && hr[1] == 0 && he.code == ETC_ERR_WAIT_TIMEOUT && he.task == 7 &&
              he.event == 3 && he.ncoords == 2 && he.coords[0] == 5 && he.coords[1] == 9 &&
              he.coords[2] == 0 && he.element == 42 && he.count == 0 && he.target == 5 &&
              he.done == 1 && hel < 1000000000ull;
    report(ok, "events_wait_timeout_record_and_abort", (double)hel * 1e-9);
  }

  {
    unsigned* gev;
    const int per = 1000;
    CK(cudaMalloc(&gev, 512 * sizeof(unsigned)));
    int* gdata;
    CK(cudaMalloc(&gdata, 300 * per * sizeof(int)));
    repeated("events_wait_group", 10, [&](int rep) {
      CK(cudaMemset(gev, 0, 512 * sizeof(unsigned)));
      CK(cudaMemset(gdata, 0, 300 * per * sizeof(int)));
      TParams pg{gev, err, 2000000000ll, 0};
      k_wait_group<<<2, 128>>>(pg, gdata, per, rep % 3, res);
    });
    CK(cudaMemset(gev, 0, 512 * sizeof(unsigned)));
    CK(cudaMemset(err, 0, sizeof(EtcError)));
    CK(cudaMemset(res, 0, 4 * sizeof(int)));
    TParams pt{gev, err, 2000000ll, 0};  // 2 ms
    k_wait_group_timeout<<<1, 256>>>(pt, res);
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(hr, res, sizeof hr, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(&he, err, sizeof he, cudaMemcpyDeviceToHost));
    bool ok = hr[0] == 0 && hr[1] == 256 && he.code == ETC_ERR_WAIT_TIMEOUT && he.task == 9 && he.event == 2 &&
              he.ncoords == 1 && he.coords[0] == 2 && he.element == 102 && he.count == 0 && he.target == 4 &&
              he.done == 1;
    report(ok, "events_wait_group_timeout", (double)he.element);
    CK(cudaFree(gev));
    CK(cudaFree(gdata));
  }

  {
    CK(cudaMemset(ev, 0, 64 * sizeof(unsigned)));
    CK(cudaMemset(err, 0, sizeof(EtcError)));
    CK(cudaMemset(res, 0xff, 4 * sizeof(int)));
    TParams pd{ev, err, 2000000000ll, ETC_FLAG_DEBUG};
    k_over_notify<<<1, 256>>>(pd, res);
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(hr, res, sizeof hr, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(&he, err, sizeof he, cudaMemcpyDeviceToHost));
    unsigned hev[8];
    CK(cudaMemcpy(hev, ev, sizeof hev, cudaMemcpyDeviceToHost));
    bool ok = hr[0] == 0 && hr[1] == 1 && he.code == ETC_ERR_OVER_NOTIFY && he.task == 2 &&
              he.event == 4 && he.ncoords == 1 && he.coords[0] == 6 && he.element == 11 &&
              he.count == 2 && he.target == 1 && he.done == 1 && hev[4] == 1 && hev[5] == 2 &&
              hev[6] == 1;
    report(ok, "events_notify_checked_over_notify", 0.0);
  }
  cudaFree(ev);
  cudaFree(err);
  cudaFree(data);
  cudaFree(res);
  cudaFree(el);
}

// ---- index helpers ----------------------------------------------------------------------------------

__global__ void k_index(long long* out) {
  const long long as[6] = {-7, -6, -1, 0, 5, 6};
  for (int i = 0; i < 6; ++i) {
    out[3 * i + 0] = floordiv(as[i], 3);
    out[3 * i + 1] = floormod(as[i], 3);
    out[3 * i + 2] = cdiv(as[i], 3);
  }
}
// The helpers for divisors known only at run time (as cdiv(16, B)), across their 32-bit path's
// edges: each (a, b) pair of the arrays, floordiv_rt, floormod_rt and cdiv_rt.
__global__ void k_index_runtime(const long long* as, int na, const long long* bs, int nb, long long* out) {
  for (int i = 0; i < na; ++i)
    for (int j = 0; j < nb; ++j) {
      long long* o = out + 3 * (i * nb + j);
      o[0] = floordiv_rt(as[i], bs[j]);
      o[1] = floormod_rt(as[i], bs[j]);
      o[2] = cdiv_rt(as[i], bs[j]);
    }
}
static void t_index() {
  long long* d;
  CK(cudaMalloc(&d, 18 * sizeof(long long)));
  k_index<<<1, 1>>>(d);
  long long h[18];
  CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
  const long long expect[18] = {-3, 2, -2, -2, 0, -2, -1, 2, 0, 0, 0, 0, 1, 2, 2, 2, 0, 2};
  int bad = 0;
  for (int i = 0; i < 18; ++i) bad += h[i] != expect[i];
  report(bad == 0, "index_floordiv_floormod_cdiv", bad);
  cudaFree(d);

  const std::vector<long long> as = {-7, -1, 0, 1, 16, 2147483647LL, 2147483648LL, -2147483648LL, -2147483649LL,
                                     1099511627781LL, -1099511627781LL};
  const std::vector<long long> bs = {1, 3, 16, 127, 2147483647LL, 2147483648LL, 4294967311LL};
  const size_t n = as.size() * bs.size() * 3;
  long long *da, *db, *dout;
  CK(cudaMalloc(&da, as.size() * sizeof(long long)));
  CK(cudaMalloc(&db, bs.size() * sizeof(long long)));
  CK(cudaMalloc(&dout, n * sizeof(long long)));
  CK(cudaMemcpy(da, as.data(), as.size() * sizeof(long long), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(db, bs.data(), bs.size() * sizeof(long long), cudaMemcpyHostToDevice));
  k_index_runtime<<<1, 1>>>(da, (int)as.size(), db, (int)bs.size(), dout);
  std::vector<long long> got(n);
  CK(cudaMemcpy(got.data(), dout, n * sizeof(long long), cudaMemcpyDeviceToHost));
  bad = 0;
  for (size_t i = 0; i < as.size(); ++i)
    for (size_t j = 0; j < bs.size(); ++j) {
      const long long a = as[i], b = bs[j];
      const long long q = a / b - ((a % b != 0 && a < 0) ? 1 : 0);  // floor, b > 0
      const long long* o = got.data() + 3 * (i * bs.size() + j);
      bad += o[0] != q;
      bad += o[1] != a - q * b;
      bad += o[2] != -((-a) / b - (((-a) % b != 0 && -a < 0) ? 1 : 0));
    }
  report(bad == 0, "index_runtime_divisors_32_and_64_bit", bad);
  cudaFree(da);
  cudaFree(db);
  cudaFree(dout);
}

// ---- main -------------------------------------------------------------------------------------------

int main() {
  int dev = 0;
  CK(cudaSetDevice(dev));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, dev));
  std::printf("device %s sm_%d%d\n", prop.name, prop.major, prop.minor);

  t_index();

  // copy: dense (vector path), ragged unaligned slice, transposed view, 3-D strided, small types.
  for (int t : kThreadsList) t_copy<bf16>("dense", {64, 256}, hv(0, {64, 256}, {256, 1}), hv(0, {64, 256}, {256, 1}), t);
  t_copy<bf16>("slice_unaligned", {9, 40}, hv(41, {5, 37}, {40, 1}), hv(3, {5, 37}, {40, 1}), 256);
  t_copy<bf16>("slice_aligned_rows", {9, 64}, hv(8, {7, 40}, {64, 1}), hv(16, {7, 40}, {64, 1}), 256);
  t_copy<float>("transposed", {33, 17}, hv(0, {17, 33}, {1, 17}), hv(0, {17, 33}, {33, 1}), 256);
  t_copy<long long>("3d", {4, 6, 10}, hv(1, {3, 5, 9}, {60, 10, 1}), hv(0, {3, 5, 9}, {45, 9, 1}), 256);
  t_copy<unsigned char>("u8_dense", {1000}, hv(0, {984}, {1}), hv(16, {984}, {1}), 256);
  t_copy<int>("scalar", {8}, hv(3, {}, {}), hv(5, {}, {}), 256);

  // fill
  t_fill<float>("dense", 1000, hv(0, {1000}, {1}), 0.1);
  t_fill<bf16>("strided", 600, hv(1, {10, 29}, {60, 2}), 0.1);
  t_fill<f16>("neg_inf", 300, hv(0, {300}, {1}), -INFINITY);
  t_fill<int>("rows", 512, hv(4, {5, 100}, {101, 1}), -7);
  t_fill<long long>("big", 64, hv(0, {64}, {1}), 4.0e15);

  // cast: rounding, saturation, NaN -> 0, integer -> float
  std::vector<double> sp = {NAN, 1e30, -1e30, 2.9, -2.9, 0.5, -0.5, 65504.0, 1e10};
  t_cast<float, bf16>("dense", {4, 512}, hv(0, {4, 512}, {512, 1}), hv(0, {4, 512}, {512, 1}));
  t_cast<float, f16>("unaligned", {4, 130}, hv(1, {3, 127}, {130, 1}), hv(2, {3, 127}, {130, 1}));
  t_cast<bf16, float>("dense", {1024}, hv(0, {1024}, {1}), hv(0, {1024}, {1}));
  t_cast<f16, bf16>("dense", {1024}, hv(0, {1024}, {1}), hv(0, {1024}, {1}));
  t_cast<float, int>("saturate", {600}, hv(0, {600}, {1}), hv(0, {600}, {1}), sp);
  t_cast<float, long long>("saturate", {600}, hv(0, {600}, {1}), hv(0, {600}, {1}), sp);
  t_cast<bf16, int>("strided", {20, 20}, hv(0, {20, 10}, {20, 2}), hv(0, {20, 10}, {20, 2}), {NAN, 3e38});
  t_cast<int, f16>("dense", {800}, hv(0, {800}, {1}), hv(0, {800}, {1}));
  t_cast<int, bf16>("dense", {800}, hv(0, {800}, {1}), hv(0, {800}, {1}));
  t_cast<long long, float>("dense", {800}, hv(0, {800}, {1}), hv(0, {800}, {1}));
  t_cast<int, long long>("dense", {800}, hv(0, {800}, {1}), hv(0, {800}, {1}));

  t_div_rn();

  // add / mul / silu_mul
  t_bin<0, bf16, bf16>("dense", {16, 512}, hv(0, {16, 512}, {512, 1}), hv(0, {16, 512}, {512, 1}), hv(0, {16, 512}, {512, 1}));
  t_bin<0, bf16, float>("mixed_offsets", {8, 300}, hv(1, {7, 299}, {300, 1}), hv(0, {7, 299}, {300, 1}), hv(2, {7, 299}, {300, 1}));
  t_bin<1, float, float>("strided", {30, 40}, hv(0, {20, 30}, {1, 40}), hv(3, {20, 30}, {40, 1}), hv(0, {20, 30}, {40, 1}));
  t_bin<1, f16, f16>("dense", {4096}, hv(0, {4096}, {1}), hv(0, {4096}, {1}), hv(0, {4096}, {1}));
  t_bin<0, int, int>("wrap", {1000}, hv(0, {1000}, {1}), hv(0, {1000}, {1}), hv(0, {1000}, {1}));
  t_bin<1, int, int>("wrap_unaligned", {1000}, hv(1, {998}, {1}), hv(2, {998}, {1}), hv(1, {998}, {1}));
  t_bin<1, long long, long long>("wrap", {5, 64}, hv(0, {5, 60}, {64, 1}), hv(0, {5, 60}, {64, 1}), hv(0, {5, 60}, {64, 1}));
  t_bin<2, bf16, bf16>("dense", {16, 1024}, hv(0, {16, 1024}, {1024, 1}), hv(0, {16, 1024}, {1024, 1}), hv(0, {16, 1024}, {1024, 1}));
  t_bin<2, float, float>("ragged", {3, 1001}, hv(1, {3, 999}, {1001, 1}), hv(0, {3, 999}, {1001, 1}), hv(0, {3, 999}, {1001, 1}));
  t_bin<2, f16, float>("dense", {2048}, hv(0, {2048}, {1}), hv(0, {2048}, {1}), hv(0, {2048}, {1}));

  // reductions: warp per output, block per output, thread per output (axis 0), NaN, integers.
  t_red<false, float, float>("rows_last", {7, 300}, hv(0, {7, 300}, {300, 1}), -1);
  t_red<false, bf16, bf16>("block_path", {2, 5000}, hv(0, {2, 5000}, {5000, 1}), 1);
  t_red<false, float, float>("axis0_many", {100, 513}, hv(1, {100, 512}, {513, 1}), 0);
  t_red<false, float, float>("rank1_to_scalar", {4099}, hv(3, {4096}, {1}), 0);
  t_red<false, f16, float>("rank3_mid", {3, 50, 7}, hv(0, {3, 50, 7}, {350, 7, 1}), 1);
  t_red<true, float, float>("rows_nan", {9, 300}, hv(0, {9, 300}, {300, 1}), -1, true);
  t_red<true, bf16, bf16>("block_nan", {1, 9000}, hv(0, {9000}, {1}), 0, true);
  t_red<true, float, float>("axis0", {300, 40}, hv(0, {300, 33}, {40, 1}), 0);
  t_red<false, int, int>("wrap", {9, 1000}, hv(0, {9, 1000}, {1000, 1}), 1);
  t_red<true, long long, long long>("axis0", {50, 300}, hv(0, {50, 300}, {300, 1}), 0);
  // A thread per output over several outputs and parts at a time: split-K partial sums, and
  // ragged counts of both.
  t_red<false, float, float>("axis0_splitk", {4, 2048}, hv(0, {4, 2048}, {2048, 1}), 0);
  t_red<false, float, bf16>("axis0_ragged", {13, 3001}, hv(0, {13, 3001}, {3001, 1}), 0);
  t_red<true, float, float>("axis0_ragged_nan", {19, 2999}, hv(0, {19, 2999}, {2999, 1}), 0, true);

  // rmsnorm: warp per row, block per row, vector and scalar paths, mixed dtypes.
  t_rms<bf16, bf16, bf16>("13x4096", 13, 4096, 4096, 0, 256);
  t_rms<bf16, float, bf16>("3x4096_block", 3, 4096, 4096, 0, 256);
  t_rms<float, float, float>("5x1000", 5, 1000, 1000, 0, 128);
  // 256 threads, as etcc's kernels have: a norm's row held in registers may not fit 512.
  t_rms<bf16, bf16, bf16>("3x999_unaligned", 3, 999, 1003, 1, 256);
  t_rms<f16, bf16, f16>("17x2056_pitch", 17, 2056, 2064, 8, 256);
  t_rms<bf16, bf16, float>("1x8192", 1, 8192, 8192, 0, 256);
  // Rows that fit a thread's registers (at most 2 accesses each), by warps and by the CTA.
  t_rms<bf16, bf16, bf16>("16x256_warp_regs", 16, 256, 256, 0, 256);
  t_rms<bf16, bf16, bf16>("9x264_warp_regs", 9, 264, 264, 0, 256);
  t_rms<bf16, bf16, bf16>("1x2056_block_regs", 1, 2056, 2056, 0, 256);
  t_rms<bf16, bf16, float>("1x2048_block_regs", 1, 2048, 2048, 0, 256);

  // matmul: decode shapes, ragged M/N/K, unaligned starts and pitches, both b layouts.
  for (int t : kThreadsList) {
    t_mm<16, 64, 128, bf16, bf16>(1, 64, 2048, true, 2048, 2048, 64, 0, 0, 0, t);
    t_mm<16, 128, 128, bf16, bf16>(13, 100, 2056, true, 2056, 2056, 100, 0, 0, 0, t);
    if (t <= 256) t_mm<64, 128, 64, bf16, bf16>(37, 128, 4096, true, 4096, 4096, 128, 0, 0, 0, t);
    t_mm<16, 64, 128, f16, f16>(13, 64, 2056, false, 2056, 64, 64, 0, 0, 0, t);
    t_mm<16, 64, 64, float, float>(13, 64, 2056, true, 2056, 2056, 64, 0, 0, 0, t);
  }
  t_mm<16, 128, 128, bf16, bf16>(1, 100, 2056, true, 2056, 2056, 100, 0, 0, 0, 256, true);
  t_mm<16, 128, 128, bf16, float>(13, 100, 2050, true, 2051, 2053, 101, 3, 5, 1, 256);
  t_mm<16, 128, 128, bf16, bf16>(16, 128, 8190, true, 8190, 8190, 128, 0, 0, 0, 256);
  t_mm<32, 64, 64, bf16, bf16>(29, 57, 1000, false, 1003, 61, 60, 1, 2, 3, 256);
  t_mm<32, 64, 64, bf16, bf16>(32, 64, 1024, false, 1024, 64, 64, 8, 8, 8, 256, false, true);
  t_mm<8, 8, 16, bf16, bf16>(5, 7, 37, true, 37, 37, 7, 0, 1, 0, 128);
  t_mm<8, 8, 16, bf16, bf16>(8, 8, 16, false, 16, 8, 8, 0, 0, 0, 256);
  t_mm<128, 128, 64, bf16, bf16>(128, 120, 512, true, 512, 512, 120, 0, 0, 0, 256);
  t_mm<128, 128, 64, f16, float>(100, 128, 300, false, 301, 129, 128, 1, 1, 0, 128);
  // A decode step's 64-column tiles at B = 128, and a ragged M just past 64 (the knob
  // ETC_MM_LARGE_M_FM switches the warp tiling on M at run time).
  t_mm<128, 64, 128, bf16, bf16>(128, 64, 1024, true, 1024, 1024, 64, 0, 0, 0, 256);
  t_mm<128, 64, 128, bf16, bf16>(65, 64, 1000, true, 1000, 1000, 64, 0, 0, 0, 256, false, true);
  t_mm<64, 128, 64, bf16, bf16>(1, 128, 8192, true, 8192, 8192, 128, 0, 0, 0, 256, true);
  t_mm<16, 64, 64, float, float>(1, 64, 4096, true, 4096, 4096, 64, 0, 0, 0, 256, true);
  t_mm<16, 64, 64, float, float>(13, 57, 2057, false, 2059, 63, 60, 1, 3, 2, 256, false, true);
  t_mm<64, 128, 32, float, bf16>(64, 128, 1000, true, 1000, 1000, 128, 0, 0, 0, 128);
  t_mm<16, 128, 128, f16, f16>(7, 128, 2048, true, 2048, 2048, 128, 0, 0, 0, 512, false, true);
  // wgmma on sm_90a (64 or 128 rows of a, b as [N, K], whole K tiles, 256 threads): the
  // warpgroups on b's column halves (64 rows) and on a's row halves (128), ragged M and N,
  // 16-byte-aligned offsets and pitches, prefetched, called twice, the LM head's tile. Above,
  // K = 1000 and 100 x 128 x 300 take mma.sync on every GPU.
  t_mm<64, 64, 128, bf16, bf16>(64, 64, 2048, true, 2048, 2048, 64, 0, 0, 0, 256, false, true, true);
  t_mm<64, 64, 128, f16, float>(33, 50, 1024, true, 1024, 1032, 50, 8, 16, 0, 256, false, false, true);
  t_mm<128, 64, 128, bf16, bf16>(97, 64, 2048, true, 2048, 2048, 64, 0, 0, 0, 256, false, true, true);
  t_mm<128, 128, 64, bf16, float>(128, 128, 2048, true, 2048, 2048, 128, 0, 0, 0, 256, false, false, true);
  t_mm<128, 128, 64, f16, f16>(70, 100, 512, true, 520, 512, 100, 0, 0, 0, 256);
  t_mm<128, 64, 128, bf16, bf16>(128, 64, 1024, true, 1024, 1024, 64, 0, 0, 0, 256, false, true, true, 112);
  t_mm<64, 64, 128, bf16, bf16>(50, 64, 1024, true, 1024, 1024, 64, 0, 0, 0, 256, false, false, true, 16);
  // Tiles of 32 rows: wgmma with half of each m64 product padding (the default
  // ETC_MM_WGMMA_MIN_ROWS, 1), or mma.sync where the build sets it above 32
  // (NVCC_FLAGS=-DETC_MM_WGMMA_MIN_ROWS=33 build_device_test.sh) and on sm_80.
  t_mm<32, 64, 128, bf16, bf16>(32, 64, 2048, true, 2048, 2048, 64, 0, 0, 0, 256, false, true, true);
  t_mm<32, 64, 128, f16, float>(17, 50, 1024, true, 1024, 1032, 50, 8, 16, 0, 256, false, false, true, 16);
  t_mm_gated<32, 128, 64, bf16, bf16>(32, 64, 2048, true, 256, true, true);
  // The LM head's 128 x 128 tiles, 128 deep (lower-ops, many waves): 3 stages of the wide ring
  // below 32 rows on mma.sync (16 rows of a and 128 of b, 136 elements a row: sm_80, or
  // ETC_MM_WGMMA_MIN_ROWS=33); on wgmma 3 of the large ring at 16, 32 and 64 rows (a stage holds
  // 64 rows of a, the m64 products') and 2 at 128. Prefetched, at B = 1, 32 and 128.
  static_assert(detail::MmGeom<bf16, 16, 128, 128>::STAGES == 3, "the wide ring holds 3 LM-head stages");
  static_assert(detail::MmGeom<bf16, 16, 64, 128>::STAGES == 4, "a 64-column tile keeps the 96 KiB ring");
  static_assert(detail::MmGeom<float, 16, 64, 128>::STAGES == 2, "f32 tiles keep the 96 KiB ring");
#if !ETC_MM_WG_ALIAS_A
  static_assert(detail::MmWgGeom<bf16, 16, 128, 128>::STAGES == 3 && detail::MmWgGeom<bf16, 32, 128, 128>::STAGES == 3 &&
                    detail::MmWgGeom<bf16, 128, 128, 128>::STAGES == 2,
                "wgmma LM-head tiles: 3 stages at 16 and 32 rows, 2 at 128");
#else
  // A stage of a's own rows (16: 36 KiB, 32: 40 KiB) in the same 144 KiB.
  static_assert(detail::MmWgGeom<bf16, 16, 128, 128>::STAGES == 4 && detail::MmWgGeom<bf16, 32, 128, 128>::STAGES == 3 &&
                    detail::MmWgGeom<bf16, 128, 128, 128>::STAGES == 2,
                "aliased wgmma LM-head tiles: 4 stages at 16 rows, 3 at 32, 2 at 128");
#endif
  // The large ring (144 KiB): 3 stages of the 128 x 64 x 128 tiles of a decode step at B > 32,
  // 4 of the gated 128 x 128 x 64 ones (the t_mm and t_mm_gated cases at 64 and 128 rows), and
  // 4 of a 16- or 32-row tile of 64 columns (32 KiB stages: the q/k/v, o and down tiles at B <= 32).
  static_assert(detail::MmWgGeom<bf16, 128, 64, 128>::STAGES == 3 && detail::MmWgGeom<bf16, 64, 64, 128>::STAGES == 4 &&
                    detail::MmWgGeom<bf16, 128, 128, 64>::STAGES == 4 && detail::MmWgGeom<bf16, 32, 64, 128>::STAGES == 4 &&
                    detail::MmWgGeom<bf16, 16, 64, 128>::STAGES == 4,
                "the large ring's stages");
  t_mm<16, 128, 128, bf16, bf16>(1, 128, 2048, true, 2048, 2048, 128, 0, 0, 0, 256, true, true, true);
  t_mm<32, 128, 128, bf16, bf16>(32, 128, 2048, true, 2048, 2048, 128, 0, 0, 0, 256, false, true, true);
  t_mm<128, 128, 128, bf16, bf16>(128, 120, 2048, true, 2048, 2048, 120, 0, 0, 0, 256, false, true, true);
  // A decode step's 64-column q/k/v, o and down tiles at 1 to 4 rows of a (m64 products nearly all
  // padding), ragged N, offsets and pitches, prefetched and called twice, a 32-row tile at 3 rows,
  // the gated tile at 4.
  t_mm<16, 64, 128, bf16, bf16>(1, 64, 2048, true, 2048, 2048, 64, 0, 0, 0, 256, false, true, true);
  t_mm<16, 64, 128, bf16, bf16>(2, 50, 1024, true, 1024, 1024, 50, 0, 0, 0, 256, false, false, true);
  t_mm<16, 64, 128, f16, float>(4, 64, 512, true, 520, 512, 64, 8, 16, 0, 256);
  t_mm<32, 64, 128, bf16, bf16>(3, 64, 1024, true, 1024, 1024, 64, 0, 0, 0, 256, false, true);
  t_mm_gated<16, 128, 128, bf16, bf16>(4, 64, 2048, true, 256, true, true);
  // Narrow tiles of 8 to 48 columns of b, all of K 256 deep (projections without split-K parts:
  // tools/gen_decode_sample.py --unsplit, etcc --unsplit-below): mma.sync by default, wgmma with
  // ETC_MM_WG_NARROW (device_ops_test_narrow, which aliases a's padding too: ETC_MM_WG_ALIAS_A):
  // 8, 16 or 24 columns a warpgroup, or 8 and 24 over K's halves (KSPLIT). At 1, 2, 3, 17 and 100
  // rows, ragged N, offsets and pitches, prefetched, called twice; the gated form's 16 + 16 columns.
  static_assert(!ETC_MM_WG_NARROW || (detail::MmWgGeom<bf16, 16, 16, 256>::OK && detail::MmWgGeom<bf16, 16, 32, 256>::OK &&
                                      detail::MmWgGeom<f16, 32, 32, 256>::OK && detail::MmWgGeom<bf16, 16, 48, 256>::NW == 24 &&
                                      detail::MmWgGeom<bf16, 16, 8, 256>::KSPLIT && detail::MmWgGeom<bf16, 32, 24, 128>::KSPLIT &&
                                      detail::MmWgGeom<bf16, 128, 24, 128>::OK && !detail::MmWgGeom<bf16, 128, 24, 128>::KSPLIT),
                "ETC_MM_WG_NARROW: 8- to 48-column tiles take wgmma");
  t_mm<16, 8, 256, bf16, bf16>(1, 8, 2048, true, 2048, 2048, 8, 0, 0, 0, 256, false, true, true);
  t_mm<16, 24, 256, bf16, bf16>(2, 24, 8192, true, 8192, 8192, 24, 0, 0, 0, 256, false, false, true);
  t_mm<32, 24, 128, f16, float>(17, 20, 1024, true, 1024, 1032, 20, 8, 16, 0, 256, false, true);
  t_mm<128, 24, 128, bf16, bf16>(100, 24, 1024, true, 1024, 1024, 24, 0, 0, 0, 256);
  t_mm<16, 48, 256, bf16, bf16>(1, 48, 2048, true, 2048, 2048, 48, 0, 0, 0, 256, false, true, true);
  t_mm<16, 16, 256, bf16, bf16>(1, 16, 2048, true, 2048, 2048, 16, 0, 0, 0, 256, false, true, true);
  t_mm<16, 16, 256, bf16, bf16>(2, 13, 8192, true, 8192, 8192, 13, 0, 0, 0, 256, false, false, true);
  t_mm<16, 32, 256, bf16, float>(1, 32, 2048, true, 2048, 2048, 32, 0, 0, 0, 256, false, true, true);
  t_mm<32, 32, 256, f16, f16>(17, 32, 1024, true, 1024, 1032, 32, 8, 16, 0, 256, false, false, true);
  t_mm_gated<16, 32, 256, bf16, bf16>(1, 16, 2048, true, 256, true, true);
  t_mm_gated<16, 32, 128, bf16, bf16>(3, 16, 1024, true, 256, false);

  // The gated matmul: Llama-3.2-1B's gate/up tiles (64 + 64 rows, 128 deep since session 47:
  // 3 stages of the wide ring on mma.sync, 3 of the large ring on wgmma) at
  // B = 1, 7, 24, 40 and 128, and 64 deep as they were; Qwen3-0.6B's (32 + 32), a ragged tile
  // (N < TN / 2, M past 64), [K, N] weights, f16, and f32 (the two-pass path), prefetched as a
  // task does and called twice.
  // (Their 16- and 32-row tiles are the LM head's geometry, whose stages are asserted above.)
  static_assert(detail::MmWgGeom<bf16, 64, 128, 128>::STAGES == 3, "the gated 128-deep tiles' stages at 64 rows");
  t_mm_gated<16, 128, 128, bf16, bf16>(1, 64, 2048, true, 256, true);
  t_mm_gated<16, 128, 128, bf16, bf16>(7, 64, 2048, true, 256, false, true);
  t_mm_gated<32, 128, 128, bf16, bf16>(24, 64, 2048, true, 256, true);
  t_mm_gated<64, 128, 128, bf16, bf16>(40, 64, 2048, true, 256, true, true);
  t_mm_gated<128, 128, 128, bf16, bf16>(128, 64, 2048, true, 256, true);
  t_mm_gated<16, 128, 64, bf16, bf16>(1, 64, 2048, true, 256, true);
  t_mm_gated<64, 128, 64, bf16, bf16>(64, 64, 2048, true, 256, true, true);
  t_mm_gated<64, 64, 128, bf16, bf16>(40, 32, 1024, true, 256, true);
  t_mm_gated<128, 128, 64, bf16, bf16>(128, 64, 2048, true, 256, true);
  t_mm_gated<128, 128, 64, bf16, bf16>(100, 64, 1024, true, 256, false, true);
  t_mm_gated<16, 64, 128, bf16, bf16>(3, 32, 1024, true, 256, true, true);
  t_mm_gated<128, 64, 128, bf16, bf16>(65, 27, 1000, true, 256, false);
  t_mm_gated<32, 128, 64, bf16, float>(29, 57, 1000, false, 256, false);
  t_mm_gated<16, 32, 128, f16, f16>(7, 16, 520, true, 256, true);
  t_mm_gated<16, 64, 64, float, float>(13, 29, 700, true, 256, false, true);
  t_mm_gated<64, 32, 32, float, bf16>(40, 16, 300, false, 128, false);
  // A tile of 24 gate and 24 up columns in the 32 + 32 kernel (matmul { tile_n = 24 }: Qwen3-0.6B's
  // 3072 gated columns in 128 tasks), on mma.sync at 1 and 7 rows and wgmma at 40 and 128.
  t_mm_gated<16, 64, 128, bf16, bf16>(1, 24, 1024, true, 256, false);
  t_mm_gated<16, 64, 128, bf16, bf16>(7, 24, 1024, true, 256, false, true);
  t_mm_gated<64, 64, 128, bf16, bf16>(40, 24, 1024, true, 256, false);
  t_mm_gated<128, 64, 128, bf16, bf16>(128, 24, 1024, true, 256, false);


  // topk_softmax: rows past the 8 warps, the register path (E <= 128) and the re-read tail
  // (E = 200), exact ties (lowest index first), a NaN logit, renormalized or not.
  t_topk<float>("13x128_k8", 13, 128, 130, 8, true, false, false);
  t_topk<bf16>("9x128_k8_ties", 9, 128, 128, 8, true, true, false);
  t_topk<float>("5x200_k6_tail_plain", 5, 200, 201, 6, false, false, false);
  t_topk<f16>("3x8_k8_all", 3, 8, 8, 8, true, false, false);
  t_topk<float>("4x64_k4_nan", 4, 64, 64, 4, false, false, true);

  // moe_align: decode (one row), ragged, uneven (most experts empty), strided ids, more
  // entries than threads (several placement chunks), 128 threads.
  t_align("e128_b16", 1, 8, 128, 16, 12, 8, 256);
  t_align("e128_b16", 33, 8, 128, 16, 12, 9, 256);
  t_align("e128_b16", 128, 8, 128, 16, 10, 8, 256);
  t_align("e6_b4", 5, 2, 6, 4, 3, 3, 128);
  t_align("e300_b8", 70, 4, 300, 8, 20, 4, 256);

  // grouped_matmul: the task form (blocks x column tiles, blocks past num_blocks not run),
  // the whole form (num_blocks below the blocks produced: their rows stay untouched), padding,
  // empty experts, 16-byte and scalar paths, several row groups and k chunks.
  t_gm<16, 8, 2048, 16, bf16, bf16>("tasks_silu", 1, 8, 128, 12, 2 * 96, 2048, 2048, 2, true, 16, 0);
  t_gm<16, 8, 768, 32, bf16, bf16>("tasks_none", 2, 8, 128, 10, 160, 768, 768, 0, true, 64, 0);
  t_gm<16, 8, 2048, 16, bf16, bf16>("tasks_silu", 33, 8, 64, 10, 2 * 40, 512, 520, 2, true, 16, 0);
  t_gm<16, 2, 64, 32, bf16, bf16>("tasks_rg2_kc64", 33, 8, 64, 10, 64, 200, 200, 0, true, 64, 0);
  t_gm<4, 8, 40, 8, float, float>("tasks_silu_f32", 5, 2, 6, 3, 2 * 20, 40, 41, 2, true, 8, 0);
  t_gm<4, 8, 40, 16, bf16, float>("tasks_scalar", 7, 2, 6, 3, 22, 37, 37, 0, true, 32, 0);
  t_gm<16, 8, 1024, 64, bf16, bf16>("whole_silu_dropped", 20, 8, 32, 10, 2 * 64, 1024, 1024, 1, false, 0, 2);
  t_gm<16, 8, 256, 32, bf16, bf16>("whole_none_dropped", 9, 4, 16, 6, 64, 256, 256, 0, false, 0, 1);
  t_gm<4, 8, 64, 16, f16, f16>("whole_none_all", 6, 2, 8, 8, 30, 64, 64, 0, false, 0, 0);

  // moe_combine: vector path, unaligned/scalar path, weights past the staged 64 floats.
  t_combine<bf16, bf16>("5x8x2048", 5, 8, 2048, 2048, 0);
  t_combine<bf16, float>("3x2x37_unaligned", 3, 2, 37, 39, 1);
  t_combine<float, float>("30x8x64_unstaged", 30, 8, 64, 64, 0);
  t_combine<f16, f16>("1x8x1024", 1, 8, 1024, 1024, 8);

  run_decode_tests();
  run_rows_tests();
  run_fused_rows_tests();

  t_events();

  std::printf("%s: %d failure(s)\n", g_failures ? "FAILED" : "OK", g_failures);
  return g_failures ? 1 : 0;
}
