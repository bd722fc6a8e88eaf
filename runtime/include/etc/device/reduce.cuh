// Reductions: reduce_sum, reduce_max over one axis, and rmsnorm over the last axis.
// Floats accumulate in f32, integers wrap in 64 bits; the maximum propagates NaN.
#pragma once

#include "etc/device/common.cuh"

namespace etc {
namespace dev {
namespace detail {

// Sums over the CTA of K values at once, each returned to every thread in v (the warps' sums
// added in warp order in every thread: the same result everywhere), for one pair of barriers.
// scratch holds K floats per warp.
template <int K>
__device__ __forceinline__ void block_sum_n(float (&v)[K], float* scratch) {
  const int w = threadIdx.x >> 5, nw = blockDim.x >> 5;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    v[k] = warp_sum(v[k]);
    if ((threadIdx.x & 31) == 0) scratch[k * nw + w] = v[k];
  }
  __syncthreads();
#pragma unroll
  for (int k = 0; k < K; ++k) {
    float t = 0.0f;
    for (int i = 0; i < nw; ++i) t += scratch[k * nw + i];
    v[k] = t;
  }
  __syncthreads();  // scratch is free again
}

// Sum over the CTA, the same value returned to every thread; scratch holds one float per warp.
__device__ __forceinline__ float block_sum(float v, float* scratch) {
  float one[1] = {v};
  block_sum_n<1>(one, scratch);
  return one[0];
}

template <class X> struct AccOf { using type = long long; };
template <> struct AccOf<float> { using type = float; };
template <> struct AccOf<__half> { using type = float; };
template <> struct AccOf<__nv_bfloat16> { using type = float; };

template <class X> __device__ __forceinline__ typename AccOf<X>::type acc_load(X v) {
  if constexpr (is_float_v<X>) return to_f32(v);
  else return to_i64(v);
}

template <bool IsMax, class A> struct RedOp;
template <> struct RedOp<false, float> {
  static __device__ __forceinline__ float id() { return 0.0f; }
  static __device__ __forceinline__ float op(float a, float b) { return a + b; }
};
template <> struct RedOp<true, float> {
  static __device__ __forceinline__ float id() { return __int_as_float(0xff800000); }  // -inf
  static __device__ __forceinline__ float op(float a, float b) {
    return (a != a || a > b) ? a : b;  // NaN in a or b wins
  }
};
template <> struct RedOp<false, long long> {
  static __device__ __forceinline__ long long id() { return 0; }
  static __device__ __forceinline__ long long op(long long a, long long b) {
    return (long long)((unsigned long long)a + (unsigned long long)b);
  }
};
template <> struct RedOp<true, long long> {
  static __device__ __forceinline__ long long id() { return (long long)(1ull << 63); }
  static __device__ __forceinline__ long long op(long long a, long long b) { return a > b ? a : b; }
};

template <class Op, class A>
__device__ __forceinline__ A warp_reduce(A v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = Op::op(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

template <class Op, class A>
__device__ __forceinline__ A block_reduce(A v, A* scratch) {
  v = warp_reduce<Op>(v);
  const int w = threadIdx.x >> 5, nw = blockDim.x >> 5;
  if ((threadIdx.x & 31) == 0) scratch[w] = v;
  __syncthreads();
  A t = scratch[0];
  for (int i = 1; i < nw; ++i) t = Op::op(t, scratch[i]);
  __syncthreads();
  return t;
}

template <class TY, class A>
__device__ __forceinline__ TY acc_store(A v) {
  if constexpr (is_float_v<TY>) return from_f32<TY>(v);
  else return (TY)(unsigned long long)v;
}

template <bool IsMax, class TX, class TY>
__device__ void reduce_impl(const Ctx& ctx, const View<TX>& x, int axis, const View<TY>& y) {
  using X = bare_t<TX>;
  using A = typename AccOf<X>::type;
  using Op = RedOp<IsMax, A>;
  if (axis < 0) axis += x.rank;
  const long long R = pick(x.ext, axis), rs = pick(x.stride, axis);
  // The other dimensions, in x's order: extents, x strides, y strides (constant indices only).
  constexpr int OR = ETC_MAX_RANK - 1;
  const int orank = x.rank - 1;
  long long oext[OR], oxs[OR], oys[OR];
  long long nout = 1;
#pragma unroll
  for (int j = 0; j < OR; ++j) {
    const int d = j < axis ? j : j + 1;
    const bool live = j < orank;
    oext[j] = live ? pick(x.ext, d) : 1;
    oxs[j] = live ? pick(x.stride, d) : 0;
    oys[j] = live ? y.stride[j] : 0;
    nout *= oext[j];
  }
  auto locate = [&](long long o, long long& xo, long long& yo) {
    if (orank == 1) {  // a row of partial sums (merge-tasks' reduce into its reader): no division
      xo = o * oxs[0];
      yo = o * oys[0];
      return;
    }
    // Every tile fits 32-bit divisions, which are inline (64-bit ones are calls); the same walk
    // over the dimensions either way.
    auto walk = [&](auto u) {
      using I = decltype(u);
      xo = 0;
      yo = 0;
#pragma unroll
      for (int d = OR - 1; d >= 0; --d) {
        if (d >= orank) continue;
        const I e = (I)oext[d], c = u % e;
        u /= e;
        xo += (long long)c * oxs[d];
        yo += (long long)c * oys[d];
      }
    };
    if (nout <= 0x7fffffffLL) walk((unsigned)o);
    else walk(o);
  };
  TX* xp = x.ptr;
  TY* yp = y.ptr;
  const int tid = threadIdx.x, nt = blockDim.x, lane = tid & 31, warp = tid >> 5, nw = nt >> 5;
  if (rs != 1 && nout >= nt) {
    // Axis not innermost and many outputs: a thread per output keeps neighbours coalesced. A
    // thread takes U outputs at a time and loads RC of each one's inputs before adding any:
    // the partial sums of a split-K matmul, read by one CTA in a decode step, were U * RC
    // round trips to L2 in a row (tens of microseconds under a weight stream), now one.
    constexpr int U = 4, RC = 8;
    for (long long o0 = tid; o0 < nout; o0 += (long long)nt * U) {
      long long xo[U], yo[U];
      A acc[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        xo[u] = yo[u] = 0;
        if (o0 + (long long)u * nt < nout) locate(o0 + (long long)u * nt, xo[u], yo[u]);
        acc[u] = Op::id();
      }
      for (long long r0 = 0; r0 < R; r0 += RC) {
        X v[U][RC];
#pragma unroll
        for (int u = 0; u < U; ++u)
#pragma unroll
          for (int q = 0; q < RC; ++q)
            if (o0 + (long long)u * nt < nout && r0 + q < R) v[u][q] = ld(xp + xo[u] + (r0 + q) * rs);
#pragma unroll
        for (int u = 0; u < U; ++u)
#pragma unroll
          for (int q = 0; q < RC; ++q)  // in r order, as one output at a time would
            if (o0 + (long long)u * nt < nout && r0 + q < R) acc[u] = Op::op(acc[u], acc_load(v[u][q]));
      }
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (o0 + (long long)u * nt < nout) yp[yo[u]] = acc_store<TY>(acc[u]);
    }
  } else if (nout >= nw || R <= 256) {
    for (long long o = warp; o < nout; o += nw) {
      long long xo, yo;
      locate(o, xo, yo);
      A acc = Op::id();
#pragma unroll 4  // independent loads in flight; the adds stay in r order
      for (long long r = lane; r < R; r += 32) acc = Op::op(acc, acc_load(ld(xp + xo + r * rs)));
      acc = warp_reduce<Op>(acc);
      if (lane == 0) yp[yo] = acc_store<TY>(acc);
    }
  } else {
    A* scratch = reinterpret_cast<A*>(ctx.smem);
    for (long long o = 0; o < nout; ++o) {
      long long xo, yo;
      locate(o, xo, yo);
      A acc = Op::id();
#pragma unroll 4
      for (long long r = tid; r < R; r += nt) acc = Op::op(acc, acc_load(ld(xp + xo + r * rs)));
      acc = block_reduce<Op>(acc, scratch);
      if (tid == 0) yp[yo] = acc_store<TY>(acc);
    }
  }
  __syncthreads();
}

// One row of rmsnorm, by a warp (Block = false) or by the whole CTA; V elements per access.
// With a residual (add_rmsnorm), the row is s = x + r first, rounded to ro's dtype and stored
// in ro, and normalized from the rounded values. Each thread reads back only elements that it
// wrote itself, so ro may be r (in place).
template <class T>
__host__ __device__ constexpr int size_of_or_0() {
  if constexpr (same_v<T, void>) return 0;
  else return (int)sizeof(bare_t<T>);
}

// Elements per access of rmsnorm and add_rmsnorm: 16 bytes of the widest operand (a residual
// may be wider than x). TR and TO are void for rmsnorm.
template <class X, class W, class TY, class TR, class TO>
__host__ __device__ constexpr int rms_vec_width() {
  return 16 / cmax(cmax((int)sizeof(X), (int)sizeof(W)), cmax((int)sizeof(TY), cmax(size_of_or_0<TR>(), size_of_or_0<TO>())));
}

template <int V, bool Block, class TX, class TR, class TO, class TW, class TY>
__device__ __forceinline__ void rms_row(TX* xr, long long xs, TR* rr, long long rs, TO* ror, long long os,
                                        TW* wp, long long ws, TY* yr, long long ys, long long H, float eps,
                                        float* scratch) {
  using X = bare_t<TX>;
  using W = bare_t<TW>;
  constexpr bool kAdd = !same_v<TR, void>;
  const long long t0 = Block ? threadIdx.x : (threadIdx.x & 31);
  const long long nt = Block ? blockDim.x : 32;
  float ss = 0.0f;
  if constexpr (V > 1) {
    // A row of at most NB accesses per thread (a decode step's hidden size, normed by one CTA)
    // stays in registers: every load is issued before the first use, and the second pass needs
    // none. One access after another was a round trip to L2 each, twice. (NB = 4 spilled in a
    // 512-thread block.)
    constexpr int NB = 2;
    if (H <= nt * V * NB) {
      float f[NB][V];
      Vec<W, V> wv[NB];
#pragma unroll
      for (int u = 0; u < NB; ++u) {
        const long long h = (t0 + u * nt) * V;
        if (h >= H) continue;
        wv[u] = ldv<V>(wp + h);
        Vec<X, V> v = ldv<V>(xr + h);
#pragma unroll
        for (int j = 0; j < V; ++j) f[u][j] = to_f32(v.v[j]);
        if constexpr (kAdd) {
          Vec<bare_t<TR>, V> r = ldv<V>(rr + h);
#pragma unroll
          for (int j = 0; j < V; ++j) f[u][j] += to_f32(r.v[j]);
        }
      }
#pragma unroll
      for (int u = 0; u < NB; ++u) {
        const long long h = (t0 + u * nt) * V;
        if (h >= H) continue;
        if constexpr (kAdd) {
          Vec<TO, V> s;
#pragma unroll
          for (int j = 0; j < V; ++j) {
            s.v[j] = from_f32<TO>(f[u][j]);
            f[u][j] = to_f32(s.v[j]);
          }
          stv<V>(ror + h, s);
        }
#pragma unroll
        for (int j = 0; j < V; ++j) ss += f[u][j] * f[u][j];
      }
      ss = Block ? block_sum(ss, scratch) : warp_sum(ss);
      const float inv = 1.0f / sqrtf(ss / (float)H + eps);
#pragma unroll
      for (int u = 0; u < NB; ++u) {
        const long long h = (t0 + u * nt) * V;
        if (h >= H) continue;
        Vec<TY, V> o;
#pragma unroll
        for (int j = 0; j < V; ++j) o.v[j] = from_f32<TY>(f[u][j] * inv * to_f32(wv[u].v[j]));
        stv<V>(yr + h, o);
      }
      return;
    }
  }
  if constexpr (V == 1) {
    for (long long h = t0; h < H; h += nt) {
      float v = to_f32(ld(xr + h * xs));
      if constexpr (kAdd) {
        const TO s = from_f32<TO>(v + to_f32(ld(rr + h * rs)));
        ror[h * os] = s;
        v = to_f32(s);
      }
      ss += v * v;
    }
  } else {
    for (long long h = t0 * V; h < H; h += nt * V) {
      Vec<X, V> v = ldv<V>(xr + h);
      float f[V];
#pragma unroll
      for (int j = 0; j < V; ++j) f[j] = to_f32(v.v[j]);
      if constexpr (kAdd) {
        Vec<bare_t<TR>, V> r = ldv<V>(rr + h);
        Vec<TO, V> s;
#pragma unroll
        for (int j = 0; j < V; ++j) {
          s.v[j] = from_f32<TO>(f[j] + to_f32(r.v[j]));
          f[j] = to_f32(s.v[j]);
        }
        stv<V>(ror + h, s);
      }
#pragma unroll
      for (int j = 0; j < V; ++j) ss += f[j] * f[j];
    }
  }
  ss = Block ? block_sum(ss, scratch) : warp_sum(ss);
  const float inv = 1.0f / sqrtf(ss / (float)H + eps);
  // The second pass reads the normalized row's input again: x, or the sum this thread stored.
  if constexpr (V == 1) {
    for (long long h = t0; h < H; h += nt) {
      float v;
      if constexpr (kAdd) v = to_f32(ld(ror + h * os));
      else v = to_f32(ld(xr + h * xs));
      yr[h * ys] = from_f32<TY>(v * inv * to_f32(ld(wp + h * ws)));
    }
  } else {
    for (long long h = t0 * V; h < H; h += nt * V) {
      float f[V];
      if constexpr (kAdd) {
        Vec<TO, V> v = ldv<V>(ror + h);
#pragma unroll
        for (int j = 0; j < V; ++j) f[j] = to_f32(v.v[j]);
      } else {
        Vec<X, V> v = ldv<V>(xr + h);
#pragma unroll
        for (int j = 0; j < V; ++j) f[j] = to_f32(v.v[j]);
      }
      Vec<W, V> w = ldv<V>(wp + h);
      Vec<TY, V> o;
#pragma unroll
      for (int j = 0; j < V; ++j) o.v[j] = from_f32<TY>(f[j] * inv * to_f32(w.v[j]));
      stv<V>(yr + h, o);
    }
  }
}

// The normalized rows of a tile: its leading dimensions times the groups of the last
// dimension (H / G elements each: a head with head_dim, else the whole row).
struct NormRows {
  long long rows, groups, H;
};

// Offsets of row r of the tile in a view with the tile's shape: leading coordinates from
// r / groups, then the group's start.
template <class T>
__device__ __forceinline__ long long row_offset(const View<T>& v, long long r, long long groups, long long H) {
  const int lead = v.rank - 1;
  long long off = (r % groups) * H * pick(v.stride, lead), q = r / groups;
#pragma unroll
  for (int d = ETC_MAX_RANK - 2; d >= 0; --d) {
    if (d >= lead) continue;
    long long c = q % v.ext[d];
    q /= v.ext[d];
    off += c * v.stride[d];
  }
  return off;
}

template <int V, bool Block, class TX, class TR, class TO, class TW, class TY>
__device__ __forceinline__ void rms_rows(const View<TX>& x, const View<TR>* r, const View<TO>* ro,
                                         const View<TW>& w, float eps, const View<TY>& y, NormRows n,
                                         float* scratch) {
  const int lead = x.rank - 1;
  const long long first = Block ? 0 : (threadIdx.x >> 5);
  const long long step = Block ? 1 : (blockDim.x >> 5);
  const long long xs = pick(x.stride, lead), ys = pick(y.stride, lead);
  for (long long i = first; i < n.rows; i += step) {
    TR* rp = nullptr;
    TO* op = nullptr;
    long long rs = 0, os = 0;
    if constexpr (!same_v<TR, void>) {
      rp = r->ptr + row_offset(*r, i, n.groups, n.H);
      op = ro->ptr + row_offset(*ro, i, n.groups, n.H);
      rs = pick(r->stride, lead);
      os = pick(ro->stride, lead);
    }
    rms_row<V, Block>(x.ptr + row_offset(x, i, n.groups, n.H), xs, rp, rs, op, os, w.ptr, w.stride[0],
                      y.ptr + row_offset(y, i, n.groups, n.H), ys, n.H, eps, scratch);
  }
}

template <class T>
__device__ __forceinline__ bool rows_vectorizable(const View<T>& v, int V, long long H) {
  const int lead = v.rank - 1;
  bool ok = pick(v.stride, lead) == 1 && aligned_to(v.ptr, V * sizeof(bare_t<T>)) && H % V == 0;
#pragma unroll
  for (int d = 0; d < ETC_MAX_RANK; ++d)
    if (d < lead) ok = ok && v.stride[d] % V == 0;
  return ok;
}

// rmsnorm and add_rmsnorm over the rows of a tile (r and ro null for rmsnorm): a warp per row,
// or the whole CTA when there are fewer rows than warps; 16-byte accesses where every view
// allows them.
template <class TX, class TR, class TO, class TW, class TY>
__device__ __forceinline__ void rmsnorm_impl(const Ctx& ctx, const View<TX>& x, const View<TR>* r,
                                             const View<TO>* ro, const View<TW>& w, float eps,
                                             const View<TY>& y) {
  using X = bare_t<TX>;
  using W = bare_t<TW>;
  static_assert(is_float_v<X> && is_float_v<W> && is_float_v<TY>, "rmsnorm: float dtypes only");
  const int lead = x.rank - 1;
  const long long width = pick(x.ext, lead), H = w.ext[0];
  long long lead_rows = 1;
#pragma unroll
  for (int d = 0; d < ETC_MAX_RANK; ++d)
    if (d < lead) lead_rows *= x.ext[d];
  if (H > 0 && lead_rows > 0 && width % H == 0) {
    const NormRows n{lead_rows * (width / H), width / H, H};
    constexpr int V = rms_vec_width<X, W, TY, TR, TO>();
    bool vec = rows_vectorizable(x, V, H) && rows_vectorizable(y, V, H) && w.stride[0] == 1 &&
               aligned_to(w.ptr, V * sizeof(W));
    if constexpr (!same_v<TR, void>) {
      vec = vec && rows_vectorizable(*r, V, H) && rows_vectorizable(*ro, V, H);
    }
    float* scratch = reinterpret_cast<float*>(ctx.smem);
    const bool block = n.rows < (long long)(blockDim.x >> 5);
    if (vec) {
      if (block) rms_rows<V, true>(x, r, ro, w, eps, y, n, scratch);
      else rms_rows<V, false>(x, r, ro, w, eps, y, n, scratch);
    } else {
      if (block) rms_rows<1, true>(x, r, ro, w, eps, y, n, scratch);
      else rms_rows<1, false>(x, r, ro, w, eps, y, n, scratch);
    }
  }
  __syncthreads();
}

}  // namespace detail

template <class TX, class TY>
__device__ void reduce_sum(const Ctx& ctx, const View<TX>& x, int axis, const View<TY>& y) {
  detail::reduce_impl<false>(ctx, x, axis, y);
}

template <class TX, class TY>
__device__ void reduce_max(const Ctx& ctx, const View<TX>& x, int axis, const View<TY>& y) {
  detail::reduce_impl<true>(ctx, x, axis, y);
}

// y = x / sqrt(mean(x^2) + eps) * w over the last axis (leading dimensions are rows); with a
// weight shorter than the last axis (head_dim), over each group of w.ext[0] elements.
template <class TX, class TW, class TY>
__device__ void rmsnorm(const Ctx& ctx, const View<TX>& x, const View<TW>& w, float eps,
                        const View<TY>& y) {
  detail::rmsnorm_impl<TX, void, bare_t<TY>>(ctx, x, (const View<void>*)nullptr, (const View<bare_t<TY>>*)nullptr,
                                             w, eps, y);
}

// s = x + r rounded to ro's dtype into ro (ro may be r), y = rmsnorm(s, w).
template <class TX, class TR, class TW, class TY, class TO>
__device__ void add_rmsnorm(const Ctx& ctx, const View<TX>& x, const View<TR>& r, const View<TW>& w,
                            float eps, const View<TY>& y, const View<TO>& ro) {
  detail::rmsnorm_impl(ctx, x, &r, &ro, w, eps, y);
}

}  // namespace dev
}  // namespace etc
