// Elementwise tile ops: copy, fill, cast, add, mul, silu_mul.
// All views of one op have the same shape; dimensions that are dense in every view are merged
// first, so that a slice of a contiguous tensor becomes one long run. When every view's
// innermost stride is 1 and pointers, inner extent and outer strides allow it, each thread
// moves 16 bytes per access (of the widest dtype); otherwise it falls back to scalar accesses.
#pragma once

#include "etc/device/common.cuh"

namespace etc {
namespace dev {
namespace detail {

template <int N>
struct Layout {
  long long ext[ETC_MAX_RANK];
  long long st[N][ETC_MAX_RANK];
};

// Dimensions live right-aligned at fixed positions (the innermost at ETC_MAX_RANK - 1) and are
// only ever indexed with compile-time constants, so the layout stays in registers (a run-time
// index would move it, and the caller's views, to local memory).
// Moves size-1 dimensions out of the way and merges neighbours that are dense in every view;
// afterwards the dimensions with extent > 1 are right-packed.
template <int N>
__device__ __forceinline__ void canonicalize(Layout<N>& L) {
#pragma unroll
  for (int d = 0; d + 1 < ETC_MAX_RANK; ++d) {
    if (L.ext[d] == 1) continue;
    bool merge = true;
#pragma unroll
    for (int k = 0; k < N; ++k) merge = merge && L.st[k][d] == L.st[k][d + 1] * L.ext[d + 1];
    if (L.ext[d + 1] == 1) {
      L.ext[d + 1] = L.ext[d];
#pragma unroll
      for (int k = 0; k < N; ++k) L.st[k][d + 1] = L.st[k][d];
      L.ext[d] = 1;
    } else if (merge) {
      L.ext[d + 1] *= L.ext[d];
      L.ext[d] = 1;
    }
  }
}

// Offsets (in elements) of linear index i; in vector mode the innermost extent is counted in
// vectors of V elements (innermost strides are 1 then).
template <int N>
__device__ __forceinline__ void offsets_of(const Layout<N>& L, long long i, int V,
                                           long long (&off)[N]) {
  constexpr int I = ETC_MAX_RANK - 1;
  bool flat = true;
#pragma unroll
  for (int d = 0; d < I; ++d) flat = flat && L.ext[d] == 1;
  if (flat) {
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] = i * V * L.st[k][I];
    return;
  }
#pragma unroll
  for (int k = 0; k < N; ++k) off[k] = 0;
#pragma unroll
  for (int d = I; d >= 0; --d) {
    long long e = d == I ? L.ext[d] / V : L.ext[d];
    if (e == 1) continue;
    long long c = i % e;
    i /= e;
    if (d == I) c *= V;
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] += c * L.st[k][d];
  }
}

// Runs body_s(off) per element or body_v(off) per V-vector over the common shape, then syncs.
template <int V, int N, class BodyS, class BodyV>
__device__ __forceinline__ void ew_run(Layout<N> L, const void* const (&ptr)[N],
                                       const int (&esize)[N], BodyS body_s, BodyV body_v) {
  canonicalize(L);
  constexpr int I = ETC_MAX_RANK - 1;
  long long n = 1;
#pragma unroll
  for (int d = 0; d < ETC_MAX_RANK; ++d) n *= L.ext[d];
  bool vec = V > 1 && L.ext[I] % V == 0;
#pragma unroll
  for (int k = 0; k < N; ++k) {
    vec = vec && L.st[k][I] == 1 && aligned_to(ptr[k], (unsigned)(V * esize[k]));
#pragma unroll
    for (int d = 0; d < I; ++d) vec = vec && (L.ext[d] == 1 || L.st[k][d] % V == 0);
  }
  const long long t0 = threadIdx.x, nt = blockDim.x;
  if (vec) {
    const long long nv = n / V;
    for (long long i = t0; i < nv; i += nt) {
      long long off[N];
      offsets_of(L, i, V, off);
      body_v(off);
    }
  } else {
    for (long long i = t0; i < n; i += nt) {
      long long off[N];
      offsets_of(L, i, 1, off);
      body_s(off);
    }
  }
  __syncthreads();
}

template <int N, class T0>
__device__ __forceinline__ void set_view(Layout<N>& L, int k, const View<T0>& v) {
  // Right-aligned: view dimension j goes to position ETC_MAX_RANK - rank + j.
#pragma unroll
  for (int d = 0; d < ETC_MAX_RANK; ++d) {
    long long e = 1, st = 0;
#pragma unroll
    for (int j = 0; j < ETC_MAX_RANK; ++j)
      if (j < v.rank && ETC_MAX_RANK - v.rank + j == d) {
        e = v.ext[j];
        st = v.stride[j];
      }
    if (k == 0) L.ext[d] = e;
    L.st[k][d] = st;
  }
}

template <class A, class B>
__host__ __device__ constexpr int vec_width() {
  return 16 / (sizeof(A) > sizeof(B) ? sizeof(A) : sizeof(B));
}

// Arithmetic in the ops' compute types: f32 for floats, wrapping 64-bit for integers.
template <class TY, class TA, class TB, class F32Op, class IntOp>
__device__ __forceinline__ TY binary(TA a, TB b, F32Op fop, IntOp iop) {
  if constexpr (is_float_v<TA>) {
    static_assert(is_float_v<TB> && is_float_v<TY>, "float op with integer operands");
    return from_f32<TY>(fop(to_f32(a), to_f32(b)));
  } else {
    static_assert(!is_float_v<TB> && !is_float_v<TY>, "integer op with float operands");
    unsigned long long r = iop((unsigned long long)to_i64(a), (unsigned long long)to_i64(b));
    return (TY)r;
  }
}

template <class TY, class TA, class TB, class F32Op, class IntOp>
__device__ __forceinline__ void binary_op(const View<TA>& a, const View<TB>& b,
                                          const View<TY>& y, F32Op fop, IntOp iop) {
  using A = bare_t<TA>;
  using B = bare_t<TB>;
  constexpr int V = vec_width<TY, A>() < vec_width<TY, B>() ? vec_width<TY, A>()
                                                              : vec_width<TY, B>();
  Layout<3> L;
  set_view(L, 0, y);
  set_view(L, 1, a);
  set_view(L, 2, b);
  const void* const ptr[3] = {y.ptr, a.ptr, b.ptr};
  const int es[3] = {(int)sizeof(TY), (int)sizeof(A), (int)sizeof(B)};
  TY* yp = y.ptr;
  TA* ap = a.ptr;
  TB* bp = b.ptr;
  ew_run<V>(
      L, ptr, es,
      [&](const long long(&o)[3]) {
        yp[o[0]] = binary<TY>(ld(ap + o[1]), ld(bp + o[2]), fop, iop);
      },
      [&](const long long(&o)[3]) {
        Vec<A, V> va = ldv<V>(ap + o[1]);
        Vec<B, V> vb = ldv<V>(bp + o[2]);
        Vec<TY, V> vy;
#pragma unroll
        for (int j = 0; j < V; ++j) vy.v[j] = binary<TY>(va.v[j], vb.v[j], fop, iop);
        stv<V>(yp + o[0], vy);
      });
}

struct AddF { __device__ float operator()(float a, float b) const { return a + b; } };
struct AddI {
  __device__ unsigned long long operator()(unsigned long long a, unsigned long long b) const {
    return a + b;
  }
};
struct MulF { __device__ float operator()(float a, float b) const { return a * b; } };
struct MulI {
  __device__ unsigned long long operator()(unsigned long long a, unsigned long long b) const {
    return a * b;
  }
};
struct SiluMulF {
  __device__ float operator()(float g, float u) const { return silu_mul_f32(g, u); }
};

}  // namespace detail

// y = x, bit for bit.
template <class TX, class TY>
__device__ void copy(const Ctx&, const View<TX>& x, const View<TY>& y) {
  using X = bare_t<TX>;
  static_assert(sizeof(X) == sizeof(TY), "copy: x and y must have the same dtype");
  constexpr int V = 16 / sizeof(TY);
  detail::Layout<2> L;
  detail::set_view(L, 0, y);
  detail::set_view(L, 1, x);
  const void* const ptr[2] = {y.ptr, x.ptr};
  const int es[2] = {(int)sizeof(TY), (int)sizeof(X)};
  TY* yp = y.ptr;
  TX* xp = x.ptr;
  detail::ew_run<V>(
      L, ptr, es,
      [&](const long long(&o)[2]) {
        X v = ld(xp + o[1]);
        memcpy(yp + o[0], &v, sizeof(TY));
      },
      [&](const long long(&o)[2]) {
        Vec<X, V> v = ldv<V>(xp + o[1]);
        Vec<TY, V> w;
        memcpy(&w, &v, sizeof(w));
        stv<V>(yp + o[0], w);
      });
}

// Every element of y = v rounded (once) to y's dtype.
template <class TY>
__device__ void fill(const Ctx&, const View<TY>& y, double v) {
  constexpr int V = 16 / sizeof(TY);
  const TY val = from_f64<TY>(v);
  Vec<TY, V> vv;
#pragma unroll
  for (int j = 0; j < V; ++j) vv.v[j] = val;
  detail::Layout<1> L;
  detail::set_view(L, 0, y);
  const void* const ptr[1] = {y.ptr};
  const int es[1] = {(int)sizeof(TY)};
  TY* yp = y.ptr;
  detail::ew_run<V>(
      L, ptr, es, [&](const long long(&o)[1]) { yp[o[0]] = val; },
      [&](const long long(&o)[1]) { stv<V>(yp + o[0], vv); });
}

// y = convert(x) with the cast rule of docs/ops.md.
template <class TX, class TY>
__device__ void cast(const Ctx&, const View<TX>& x, const View<TY>& y) {
  using X = bare_t<TX>;
  constexpr int V = detail::vec_width<X, TY>();
  detail::Layout<2> L;
  detail::set_view(L, 0, y);
  detail::set_view(L, 1, x);
  const void* const ptr[2] = {y.ptr, x.ptr};
  const int es[2] = {(int)sizeof(TY), (int)sizeof(X)};
  TY* yp = y.ptr;
  TX* xp = x.ptr;
  detail::ew_run<V>(
      L, ptr, es, [&](const long long(&o)[2]) { yp[o[0]] = convert<TY>(ld(xp + o[1])); },
      [&](const long long(&o)[2]) {
        Vec<X, V> v = ldv<V>(xp + o[1]);
        Vec<TY, V> w;
#pragma unroll
        for (int j = 0; j < V; ++j) w.v[j] = convert<TY>(v.v[j]);
        stv<V>(yp + o[0], w);
      });
}

template <class TA, class TB, class TY>
__device__ void add(const Ctx&, const View<TA>& a, const View<TB>& b, const View<TY>& y) {
  detail::binary_op(a, b, y, detail::AddF{}, detail::AddI{});
}

template <class TA, class TB, class TY>
__device__ void mul(const Ctx&, const View<TA>& a, const View<TB>& b, const View<TY>& y) {
  detail::binary_op(a, b, y, detail::MulF{}, detail::MulI{});
}

template <class TG, class TU, class TY>
__device__ void silu_mul(const Ctx&, const View<TG>& g, const View<TU>& u, const View<TY>& y) {
  static_assert(is_float_v<TG> && is_float_v<TU> && is_float_v<TY>, "silu_mul: float dtypes only");
  detail::binary_op(g, u, y, detail::SiluMulF{}, detail::AddI{});
}

}  // namespace dev
}  // namespace etc
