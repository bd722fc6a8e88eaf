// Shared building blocks of the device tile library: views, the per-CTA context, dtype
// conversions with the rounding rules of docs/ops.md, coherent global loads and index helpers.
// Compiled by NVRTC (and nvcc for the tests): no host headers, no libc++.
#pragma once

#include <cuda_fp16.h>
#include <cuda_bf16.h>

#include "etc/abi.h"

namespace etc {
namespace dev {

// ---- index helpers (floor semantics; b > 0) ------------------------------------------------

__device__ __forceinline__ long long floordiv(long long a, long long b) {
  long long q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}
__device__ __forceinline__ long long floormod(long long a, long long b) {
  long long r = a % b;
  return r < 0 ? r + b : r;
}
__device__ __forceinline__ long long cdiv(long long a, long long b) { return -floordiv(-a, b); }
// The same for a divisor known only at run time (the emitter's choice: cdiv(16, B), say). With
// ETC_INDEX_DIV32=1, where both operands fit in 32 bits (index math nearly always) a 32-bit
// division, as a 64-bit one by a run-time value is a long subroutine on the GPU, and a task's
// event ranges and grid extents have several on its critical path. Same results: both widths
// truncate, and b > 0 keeps the 32-bit quotient from overflowing. Off by default until timed
// (it adds code at every such division: 4% to the llama_layer fatbin).
#ifndef ETC_INDEX_DIV32
#define ETC_INDEX_DIV32 0
#endif
__device__ __forceinline__ bool fits_i32(long long v) { return ETC_INDEX_DIV32 != 0 && v == (long long)(int)v; }
__device__ __forceinline__ long long floordiv_rt(long long a, long long b) {
  if (fits_i32(a) && fits_i32(b)) {
    const int q = (int)a / (int)b;
    return ((int)a - q * (int)b != 0 && a < 0) ? q - 1 : q;
  }
  return floordiv(a, b);
}
__device__ __forceinline__ long long floormod_rt(long long a, long long b) {
  if (fits_i32(a) && fits_i32(b)) {
    const int r = (int)a % (int)b;
    return r < 0 ? r + b : r;
  }
  return floormod(a, b);
}
__device__ __forceinline__ long long cdiv_rt(long long a, long long b) { return -floordiv_rt(-a, b); }

namespace detail {
// Compile-time min and max (tile geometry, vector widths).
__host__ __device__ constexpr int cmin(int a, int b) { return a < b ? a : b; }
__host__ __device__ constexpr int cmax(int a, int b) { return a > b ? a : b; }
}  // namespace detail
__device__ __forceinline__ long long imin(long long a, long long b) { return a < b ? a : b; }
__device__ __forceinline__ long long imax(long long a, long long b) { return a > b ? a : b; }

// ---- views and context ----------------------------------------------------------------------

// A strided tile: strides in elements, rank 0 is a scalar. T may be const-qualified.
template <class T>
struct View {
  T* ptr;
  int rank;
  long long ext[ETC_MAX_RANK];
  long long stride[ETC_MAX_RANK];

  // Loops run over all ETC_MAX_RANK slots with constant indices: a run-time index into ext or
  // stride would force the caller's view into local memory.
  __device__ __forceinline__ long long numel() const {
    long long n = 1;
#pragma unroll
    for (int d = 0; d < ETC_MAX_RANK; ++d)
      if (d < rank) n *= ext[d];
    return n;
  }
  // Row-major dense (size-1 dimensions may have any stride).
  __device__ __forceinline__ bool contiguous() const {
    long long expect = 1;
    bool ok = true;
#pragma unroll
    for (int d = ETC_MAX_RANK - 1; d >= 0; --d)
      if (d < rank) {
        ok = ok && (ext[d] == 1 || stride[d] == expect);
        expect *= ext[d];
      }
    return ok;
  }
  __device__ __forceinline__ long long inner_stride() const;
};

// a[i] for a run-time i in [0, ETC_MAX_RANK), without dynamic indexing (see View).
__device__ __forceinline__ long long pick(const long long (&a)[ETC_MAX_RANK], int i) {
  long long r = a[0];
#pragma unroll
  for (int j = 1; j < ETC_MAX_RANK; ++j)
    if (i == j) r = a[j];
  return r;
}

template <class T>
__device__ __forceinline__ long long View<T>::inner_stride() const {
  return rank ? pick(stride, rank - 1) : 1;
}

// Everything an op gets besides its operands. smem must be 16-byte aligned (128 preferred);
// smem_bytes is what the kernel was launched with.
struct Ctx {
  unsigned char* smem;
  unsigned int smem_bytes;
  // Nonzero in a megakernel that streams its weights across tasks (stream.cuh): its matmuls
  // take their weights from the stream's ring, which lies outside smem.
  unsigned int stream = 0u;
  // The weight stream's walk (stream.cuh's StreamDesc): where a task run in kProduce mode
  // describes its matmul's stages.
  void* desc = nullptr;
};

// Shared memory that any op other than matmul may use (block reductions).
constexpr unsigned kSmallOpSmem = 256;

// Where the row chain before a prefetched matmul keeps its shared memory: past the matmul's
// `ring` bytes, which the task's weight prefetch fills before the waits that the chain follows
// (a folded norm, etcc --fold-norms-below). 128-byte aligned, as ctx.smem is.
__host__ __device__ constexpr unsigned chain_smem_offset(unsigned ring) { return (ring + 127u) & ~127u; }
__device__ __forceinline__ Ctx ctx_after_ring(const Ctx& ctx, unsigned ring) {
  Ctx c = ctx;
  c.smem += chain_smem_offset(ring);
  c.smem_bytes -= chain_smem_offset(ring);
  return c;
}

// ---- dtype traits and conversions --------------------------------------------------------------

template <class T> struct Bare { using type = T; };
template <class T> struct Bare<const T> { using type = T; };
template <class T> struct Bare<volatile T> { using type = T; };
template <class T> struct Bare<const volatile T> { using type = T; };
template <class T> using bare_t = typename Bare<T>::type;

template <class A, class B> struct SameT { static constexpr bool value = false; };
template <class A> struct SameT<A, A> { static constexpr bool value = true; };
template <class A, class B> constexpr bool same_v = SameT<A, B>::value;

template <class T> struct Traits;  // undefined for unsupported dtypes: a compile error
template <> struct Traits<float> { static constexpr bool is_float = true; };
template <> struct Traits<__half> { static constexpr bool is_float = true; };
template <> struct Traits<__nv_bfloat16> { static constexpr bool is_float = true; };
template <> struct Traits<int> { static constexpr bool is_float = false; };
template <> struct Traits<long long> { static constexpr bool is_float = false; };
template <> struct Traits<unsigned char> { static constexpr bool is_float = false; };
template <class T> constexpr bool is_float_v = Traits<bare_t<T>>::is_float;

__device__ __forceinline__ float to_f32(float x) { return x; }
__device__ __forceinline__ float to_f32(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_f32(__nv_bfloat16 x) { return __bfloat162float(x); }

// f32 -> T, round to nearest even (float dtypes only).
template <class T> __device__ __forceinline__ T from_f32(float x);
template <> __device__ __forceinline__ float from_f32<float>(float x) { return x; }
template <> __device__ __forceinline__ __half from_f32<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

// g / d for d >= 1 (or NaN), with the bits of div.rn.f32 but no call: ptxas lowers that
// division's slow path to a subroutine call, and in nvJitLink's relocatable code any call
// serializes the wgmma products of the function that makes it (ptxas info C7509; the gated
// matmul's epilogue divides). A double reciprocal refined twice gives g / d within about 2^-51
// relative; an f32 quotient is never on a midpoint between two floats, nor within 2^-49 of one
// relative (a - b * m, m a 25-bit odd significand, is a nonzero multiple of b's ulp times m's),
// nor within 2^-174 absolute among the subnormals, so rounding that to float is the correctly
// rounded quotient. d = inf: g * 0, which is g / inf (a zero of g's sign, NaN for an infinite g).
__device__ __forceinline__ float div_rn_by_ge1(float g, float d) {
  if (isinf(d)) return g * 0.0f;
  const double dd = d;
  double r;
  asm("rcp.approx.ftz.f64 %0, %1;" : "=d"(r) : "d"(dd));
  r = fma(r, fma(-dd, r, 1.0), r);
  r = fma(r, fma(-dd, r, 1.0), r);
  return (float)((double)g * r);
}

// silu(g) * u with silu(g) = g / (1 + exp(-g)): silu_mul, its row form and the gated matmul
// share it, so that every path gives the same bits. expf keeps it within a few ulp of the
// reference.
__device__ __forceinline__ float silu_mul_f32(float g, float u) { return div_rn_by_ge1(g, 1.0f + expf(-g)) * u; }

// Integers travel as long long (wrapping arithmetic is done on the unsigned form).
__device__ __forceinline__ long long to_i64(int x) { return x; }
__device__ __forceinline__ long long to_i64(long long x) { return x; }
__device__ __forceinline__ long long to_i64(unsigned char x) { return x; }

// float -> integer: truncate toward zero, saturate, NaN -> 0 (PTX cvt.rzi does all three).
template <class T> __device__ __forceinline__ T f32_to_int(float f);
template <> __device__ __forceinline__ int f32_to_int<int>(float f) { return __float2int_rz(f); }
template <> __device__ __forceinline__ long long f32_to_int<long long>(float f) {
  // The hardware conversion gives 0x8000000000000000 for NaN and for values past +2^63; the
  // cast rule (docs/ops.md) wants NaN -> 0 and saturation on both sides.
  if (f != f) return 0;
  if (f >= 9223372036854775808.0f) return 9223372036854775807LL;
  if (f <= -9223372036854775808.0f) return (-9223372036854775807LL - 1);
  return __float2ll_rz(f);
}
template <> __device__ __forceinline__ unsigned char f32_to_int<unsigned char>(float f) {
  unsigned u = __float2uint_rz(f);
  return (unsigned char)(u > 255u ? 255u : u);
}

// integer -> float: one rounding, to nearest even.
template <class T> __device__ __forceinline__ T i64_to_float(long long v);
template <> __device__ __forceinline__ float i64_to_float<float>(long long v) { return __ll2float_rn(v); }
template <> __device__ __forceinline__ __half i64_to_float<__half>(long long v) { return __ll2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 i64_to_float<__nv_bfloat16>(long long v) {
  return __ll2bfloat16_rn(v);
}

// The cast rule of docs/ops.md, any supported dtype to any other.
template <class TY, class TX>
__device__ __forceinline__ TY convert(TX x) {
  if constexpr (is_float_v<TX>) {
    if constexpr (is_float_v<TY>) return from_f32<TY>(to_f32(x));
    else return f32_to_int<TY>(to_f32(x));
  } else {
    if constexpr (is_float_v<TY>) return i64_to_float<TY>(to_i64(x));
    else return (TY)(unsigned long long)to_i64(x);  // wraps modulo 2^bits
  }
}

// double -> T for fill: one rounding from the attribute's value.
template <class T> __device__ __forceinline__ T from_f64(double v);
template <> __device__ __forceinline__ float from_f64<float>(double v) { return (float)v; }
template <> __device__ __forceinline__ __half from_f64<__half>(double v) { return __double2half(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f64<__nv_bfloat16>(double v) {
  return __double2bfloat16(v);
}
template <> __device__ __forceinline__ int from_f64<int>(double v) { return (int)v; }
template <> __device__ __forceinline__ long long from_f64<long long>(double v) { return (long long)v; }
template <> __device__ __forceinline__ unsigned char from_f64<unsigned char>(double v) {
  return (unsigned char)v;
}

// ---- global loads ---------------------------------------------------------------------------
// Inputs may have been written earlier in this launch by another CTA, so they are never read
// through the non-coherent read-only path; .cg (L2) loads are coherent at gpu scope.

template <int BYTES> struct RawOf;
template <> struct RawOf<1> { using type = unsigned char; };
template <> struct RawOf<2> { using type = unsigned short; };
template <> struct RawOf<4> { using type = unsigned int; };
template <> struct RawOf<8> { using type = uint2; };
template <> struct RawOf<16> { using type = uint4; };

template <class T>
__device__ __forceinline__ bare_t<T> ld(T* p) {
  using B = bare_t<T>;
  using R = typename RawOf<sizeof(B)>::type;
  R r = __ldcg(reinterpret_cast<const R*>(p));
  B v;
  memcpy(&v, &r, sizeof(B));
  return v;
}

// V consecutive elements, as one access of V * sizeof(T) bytes (the pointer must be aligned).
template <class T, int V>
struct alignas(sizeof(T) * V) Vec {
  T v[V];
};

template <int V, class T>
__device__ __forceinline__ Vec<bare_t<T>, V> ldv(T* p) {
  using B = bare_t<T>;
  using R = typename RawOf<sizeof(B) * V>::type;
  R r = __ldcg(reinterpret_cast<const R*>(p));
  Vec<B, V> v;
  memcpy(&v, &r, sizeof(v));
  return v;
}

template <int V, class T>
__device__ __forceinline__ void stv(T* p, const Vec<T, V>& v) {
  using R = typename RawOf<sizeof(T) * V>::type;
  R r;
  memcpy(&r, &v, sizeof(r));
  *reinterpret_cast<R*>(p) = r;
}

__device__ __forceinline__ bool aligned_to(const void* p, unsigned bytes) {
  return (reinterpret_cast<unsigned long long>(p) & (bytes - 1)) == 0;
}

// ---- CTA-wide helpers -----------------------------------------------------------------------

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

namespace detail {

// 16-byte copies from global to shared memory that complete asynchronously (cp.async.cg: L2
// only, as the data may have been written earlier in the launch by another CTA); src_bytes 0
// stores zeros. Committed in groups, waited for with cp_async_wait<groups still pending>.
__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void cp_async16(void* sdst, const void* gsrc, unsigned src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(sdst)),
               "l"(gsrc), "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// An L2 policy that evicts first what it is attached to: for what a decode step streams once
// (a matmul's weights, gigabytes per step). Without it the stream flushes L2 every few tens of
// microseconds, and with it the kernel's code, the activations and the event counters, which
// every task then fetches again from DRAM.
__device__ __forceinline__ unsigned long long l2_evict_first() {
  unsigned long long policy;
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
  return policy;
}
__device__ __forceinline__ void cp_async16_hint(void* sdst, const void* gsrc, unsigned src_bytes,
                                                unsigned long long policy) {
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;\n" ::"r"(smem_addr(sdst)),
               "l"(gsrc), "r"(src_bytes), "l"(policy)
               : "memory");
}

// Tensor-core building blocks (sm_80 and later): ldmatrix of 8x8 16-bit matrices from shared
// memory (.trans: transposed), and mma.sync m16n8k16 with f32 accumulators (T: __half or bf16).
__device__ __forceinline__ void ldsm_x4(unsigned (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
// An 8 x 8 matrix of 16-bit values transposed across the warp (lane l holds row l / 4,
// columns 2 * (l % 4) and the next, before and after).
__device__ __forceinline__ unsigned movmatrix_t(unsigned x) {
  unsigned y;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(y) : "r"(x));
  return y;
}
__device__ __forceinline__ void ldsm_x4_t(unsigned (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldsm_x2(unsigned (&r)[2], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldsm_x2_t(unsigned (&r)[2], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(smem_addr(p)));
}

template <class T>
__device__ __forceinline__ void mma16816(float (&c)[4], const unsigned (&a)[4], unsigned b0,
                                         unsigned b1) {
  if constexpr (same_v<T, __half>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

}  // namespace detail

}  // namespace dev
}  // namespace etc
