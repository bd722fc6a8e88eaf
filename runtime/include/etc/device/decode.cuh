// Decode tile ops: embedding, argmax, rope, kv_append (contiguous and paged), split_lens, kv_ranges. The
// attention ops are in attention.cuh. Ids and positions outside their range are skipped on the
// device (the rows stay unwritten); the reference interpreter reports them.
#pragma once

#include "etc/device/common.cuh"

// The 16-byte chunks of a row that each thread of argmax_row16 has in flight ahead of those it
// folds (a knob for measuring: etcc --device-define ETC_ARGMAX_CHUNKS=N). More were slower
// (H200, session 66): argmax alone over [B, 128256] bf16 logits, etc-run --bench 200, 8 / 16 /
// 32 chunks: B = 1 12.45 / 13.63 / 17.02 us, B = 128 13.22 / 16.10 / 28.96 us; the Llama-3.2-1B
// step with 16, +0.2% at B = 1 and 128.
#ifndef ETC_ARGMAX_CHUNKS
#define ETC_ARGMAX_CHUNKS 8
#endif

namespace etc {
namespace dev {
namespace detail {

// Copies n contiguous elements from src to dst with the CTA's threads (16-byte accesses when
// both are aligned), without the final barrier.
template <class TS, class TD>
__device__ __forceinline__ void copy_run(TS* src, long long ss, TD* dst, long long ds, long long n, long long t0,
                                         long long nt) {
  using S = bare_t<TS>;
  static_assert(sizeof(S) == sizeof(TD), "copy_run: same element size");
  constexpr int V = 16 / sizeof(TD);
  if (ss == 1 && ds == 1 && n % V == 0 && aligned_to(src, 16) && aligned_to(dst, 16)) {
    for (long long i = t0 * V; i < n; i += nt * V) {
      Vec<S, V> v = ldv<V>(src + i);
      Vec<TD, V> w;
      memcpy(&w, &v, sizeof(w));
      stv<V>(dst + i, w);
    }
  } else {
    for (long long i = t0; i < n; i += nt) {
      S v = ld(src + i * ss);
      memcpy(dst + i * ds, &v, sizeof(TD));
    }
  }
}

// argmax order: a NaN beats every number (the first NaN wins), then the larger value, then the
// lower index.
__device__ __forceinline__ bool argmax_better(float a, long long ia, float b, long long ib) {
  const bool an = a != a, bn = b != b;
  if (an || bn) return an && (!bn || ia < ib);
  return a > b || (a == b && ia < ib);
}

template <class X> __device__ __forceinline__ float argmax_key(X v) { return to_f32(v); }
__device__ __forceinline__ float argmax_key(int v) { return (float)v; }

template <class X> struct Pair16 {};
template <> struct Pair16<__nv_bfloat16> { using type = __nv_bfloat162; };
template <> struct Pair16<__half> { using type = __half2; };

// The larger of a and b, NaN if either is.
__device__ __forceinline__ float max_or_nan(float a, float b) { return a != a ? a : (b != b ? b : fmaxf(a, b)); }

// The CTA's best (value v, index i) in the argmax order: warp shuffles, a slot per warp in
// sv / si, then thread 0 over the warps; only thread 0's v and i hold the result. The barrier
// between the slots' writes and thread 0's reads is the caller's last until it barriers again.
__device__ __forceinline__ void argmax_cta(float& v, long long& i, float* sv, long long* si) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, v, o);
    const long long oi = __shfl_xor_sync(0xffffffffu, i, o);
    if (argmax_better(ov, oi, v, i)) v = ov, i = oi;
  }
  if (lane == 0) sv[warp] = v, si[warp] = i;
  __syncthreads();
  if (threadIdx.x == 0)
    for (int w = 1; w < warps; ++w)
      if (argmax_better(sv[w], si[w], v, i)) v = sv[w], i = si[w];
}

// argmax of a row of a 16-bit float type: contiguous, 16-byte aligned, n a multiple of 8 (a
// decode step's logits). A thread folds each of its 16-byte chunks (8 elements) to the chunk's
// maximum with packed NaN-propagating maxima and keeps the first chunk with the best maximum in
// the argmax order; the CTA then picks the best (maximum, chunk) pair in that order, and the
// first element of the winning chunk that holds its maximum is the answer. A packed maximum
// folds two values in one instruction, where the form below compares every value and its
// index with the best so far: one CTA's argmax over a 128256-entry row took 27 us at B = 1
// that way (H100 trace), and the step is 14 to 17 us faster this way. The loads of the next U
// chunks are in flight while the current ones are folded. Every thread returns the index.
template <class X>
__device__ long long argmax_row16(const X* xr, long long n, float* sv, long long* si) {
  using X2 = typename Pair16<X>::type;
  constexpr int U = ETC_ARGMAX_CHUNKS;
  const long long chunks = n / 8, step = (long long)blockDim.x * U;
  const uint4* p = reinterpret_cast<const uint4*>(xr);
  float tm = __int_as_float(0xff800000);
  long long tc = chunks;  // no chunk yet: loses to every chunk
  uint4 cur[U], next[U];
  auto load = [&](uint4 (&r)[U], long long c0) {
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (c0 + u * blockDim.x < chunks) r[u] = __ldcg(p + c0 + u * blockDim.x);
  };
  load(cur, threadIdx.x);
  for (long long c0 = threadIdx.x; c0 < chunks; c0 += step) {
    load(next, c0 + step);
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const long long c = c0 + u * blockDim.x;
      if (c >= chunks) break;
      X2 h[4];
      memcpy(h, &cur[u], sizeof(h));
      const X2 m = __hmax2_nan(__hmax2_nan(h[0], h[1]), __hmax2_nan(h[2], h[3]));
      const float cm = max_or_nan(__low2float(m), __high2float(m));
      if (argmax_better(cm, c, tm, tc)) tm = cm, tc = c;
    }
#pragma unroll
    for (int u = 0; u < U; ++u) cur[u] = next[u];
  }
  argmax_cta(tm, tc, sv, si);
  if (threadIdx.x == 0) {
    long long best = 0;
    if (tc < chunks) {
      X e[8];
      const uint4 r = __ldcg(p + tc);
      memcpy(e, &r, sizeof(e));
      int j = 7;
      for (int k = 7; k >= 0; --k) {
        const float f = to_f32(e[k]);
        if (tm != tm ? f != f : f == tm) j = k;
      }
      best = tc * 8 + j;
    }
    si[0] = best;
  }
  __syncthreads();
  const long long best = si[0];
  __syncthreads();
  return best;
}

}  // namespace detail

// y[r, :] = table[ids[r], :] over the rows of the tile (ids rank 0 or 1, y rank 1 or 2; the
// table tile [V, C] holds y's columns).
template <class TI, class TT, class TY>
__device__ void embedding(const Ctx&, const View<TI>& ids, const View<TT>& table, const View<TY>& y) {
  const long long rows = ids.rank ? ids.ext[0] : 1, cols = table.ext[1], vocab = table.ext[0];
  const long long ys = y.rank == 2 ? y.stride[0] : 0, yc = y.rank == 2 ? y.stride[1] : y.stride[0];
  const int warps = blockDim.x >> 5, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  // A warp per row; the rows of a decode batch are short (a tile of the hidden size).
  for (long long r = warp; r < rows; r += warps) {
    const long long id = ld(ids.ptr + (ids.rank ? r * ids.stride[0] : 0));
    if (id < 0 || id >= vocab) continue;
    detail::copy_run(table.ptr + id * table.stride[0], table.stride[1], y.ptr + r * ys, yc, cols, lane, 32);
  }
  __syncthreads();
}

// y[r] = the index of the maximum of x[r, :] (x rank 1 or 2, y rank 0 or 1), by the whole CTA.
template <class TX>
__device__ void argmax(const Ctx& ctx, const View<TX>& x, const View<int>& y) {
  using X = bare_t<TX>;
  const long long rows = x.rank == 2 ? x.ext[0] : 1, n = x.ext[x.rank == 2 ? 1 : 0];
  const long long rs = x.rank == 2 ? x.stride[0] : 0, cs = x.stride[x.rank == 2 ? 1 : 0];
  float* sv = reinterpret_cast<float*>(ctx.smem);
  long long* si = reinterpret_cast<long long*>(ctx.smem + 128);  // 16 warps at most
  constexpr int V = 16 / sizeof(X);
  for (long long r = 0; r < rows; ++r) {
    TX* xr = x.ptr + r * rs;
    if constexpr (same_v<X, __nv_bfloat16> || same_v<X, __half>) {
      if (cs == 1 && n % 8 == 0 && aligned_to(xr, 16)) {
        const long long bi = detail::argmax_row16(xr, n, sv, si);
        if (threadIdx.x == 0) y.ptr[y.rank ? r * y.stride[0] : 0] = (int)bi;
        continue;
      }
    }
    float best = __int_as_float(0xff800000);
    long long bi = n;  // no element yet: loses to everything
    if (cs == 1 && n % V == 0 && aligned_to(xr, 16)) {
      // U accesses in flight per thread, and U candidates (one per access slot) merged at the
      // end: a row of a vocabulary's logits is some 60 accesses a thread, and one chain of
      // comparisons over all of them took 28 us at B = 1 (H100). argmax_better is a total
      // order, so the merge finds what one chain would.
      constexpr int U = 8;
      const long long step = (long long)blockDim.x * V;
      float cb[U];
      long long ci[U];
#pragma unroll
      for (int u = 0; u < U; ++u) cb[u] = best, ci[u] = bi;
      for (long long i0 = (long long)threadIdx.x * V; i0 < n; i0 += step * U) {
        Vec<X, V> v[U];
#pragma unroll
        for (int u = 0; u < U; ++u)
          if (i0 + u * step < n) v[u] = ldv<V>(xr + i0 + u * step);
#pragma unroll
        for (int u = 0; u < U; ++u) {
          const long long i = i0 + u * step;
          if (i >= n) continue;
#pragma unroll
          for (int j = 0; j < V; ++j) {
            const float f = detail::argmax_key(v[u].v[j]);
            if (detail::argmax_better(f, i + j, cb[u], ci[u])) cb[u] = f, ci[u] = i + j;
          }
        }
      }
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (detail::argmax_better(cb[u], ci[u], best, bi)) best = cb[u], bi = ci[u];
    } else {
      for (long long i = threadIdx.x; i < n; i += blockDim.x) {
        const float f = detail::argmax_key(ld(xr + i * cs));
        if (detail::argmax_better(f, i, best, bi)) best = f, bi = i;
      }
    }
    detail::argmax_cta(best, bi, sv, si);
    if (threadIdx.x == 0) y.ptr[y.rank ? r * y.stride[0] : 0] = (int)(bi < n ? bi : 0);
    __syncthreads();
  }
}

// The rotary frequencies of rope (docs/ops.md), in double: theta^(-2j/D), rescaled as in
// Llama 3.1 when llama3.
struct RopeParams {
  int head_dim;
  double theta;
  bool llama3;
  double factor, low, high, original;
};

__device__ __forceinline__ double rope_freq(const RopeParams& rp, int j) {
  double f = pow(rp.theta, -2.0 * j / rp.head_dim);
  if (rp.llama3) {
    const double wavelen = 2 * 3.14159265358979323846 / f, lo = rp.original / rp.low, hi = rp.original / rp.high;
    if (wavelen > lo) {
      f = f / rp.factor;
    } else if (wavelen >= hi) {
      const double s = (rp.original / wavelen - rp.low) / (rp.high - rp.low);
      f = (1 - s) * f / rp.factor + s * f;
    }
  }
  return f;
}

namespace detail {

// The sine and cosine of position p's angle at frequency freq (rope_freq): the angle reduced
// modulo 2 pi in double, so that positions up to millions keep f32 accuracy.
__device__ __forceinline__ void rope_sincos(double freq, long long p, float& s, float& c) {
  const double two_pi = 2 * 3.14159265358979323846;
  double angle = (double)p * freq;
  angle -= two_pi * floor(angle / two_pi);
  sincosf((float)angle, &s, &c);
}

// Rotates every head of one row (x rank 1) or of each row (rank 2) by the row's position.
// The angle of a (row, pair index j) is the same for every head: a thread keeps the last one it
// computed (with blockDim.x a multiple of head_dim / 2, j is fixed per thread), so the double
// pow and the reduction run once per row instead of once per element. Index math in 32 bits:
// a tile's rows * pairs is far below 2^31.
template <class TX, class TP, class TY>
__device__ __forceinline__ void rope_rows(const RopeParams& rp, const View<TX>& x, const View<TP>& pos,
                                          const View<TY>& y) {
  const int rows = x.rank == 2 ? (int)x.ext[0] : 1, width = (int)x.ext[x.rank == 2 ? 1 : 0];
  const long long xr = x.rank == 2 ? x.stride[0] : 0, xc = x.stride[x.rank == 2 ? 1 : 0];
  const long long yr = y.rank == 2 ? y.stride[0] : 0, yc = y.stride[y.rank == 2 ? 1 : 0];
  const int half = rp.head_dim / 2;
  const int pairs = width / rp.head_dim * half;
  int cached_r = -1, cached_j = -1;
  double freq = 0.0;
  float s = 0.0f, c = 1.0f;
  // RB pairs per thread at a time, every load before any store: a row of q is a few pairs per
  // thread, and one pair after another was a round trip to L2 each.
  constexpr int RB = 4;
  const int n = rows * pairs;
  for (int i0 = threadIdx.x; i0 < n; i0 += blockDim.x * RB) {
    float x0[RB], x1[RB], sv[RB], cv[RB];
    long long ya[RB], yb[RB];
#pragma unroll
    for (int u = 0; u < RB; ++u) {
      const int i = i0 + u * blockDim.x;
      if (i >= n) continue;
      const int r = i / pairs, k = i - r * pairs, head = k / half, j = k - head * half;
      if (j != cached_j) freq = rope_freq(rp, j);
      if (r != cached_r || j != cached_j) {
        rope_sincos(freq, ld(pos.ptr + (pos.rank ? r * pos.stride[0] : 0)), s, c);
        cached_r = r;
        cached_j = j;
      }
      sv[u] = s;
      cv[u] = c;
      const long long a = (long long)head * rp.head_dim + j, b = a + half;
      x0[u] = to_f32(ld(x.ptr + r * xr + a * xc));
      x1[u] = to_f32(ld(x.ptr + r * xr + b * xc));
      ya[u] = r * yr + a * yc;
      yb[u] = r * yr + b * yc;
    }
#pragma unroll
    for (int u = 0; u < RB; ++u) {
      if (i0 + u * (int)blockDim.x >= n) continue;
      y.ptr[ya[u]] = from_f32<TY>(x0[u] * cv[u] - x1[u] * sv[u]);
      y.ptr[yb[u]] = from_f32<TY>(x1[u] * cv[u] + x0[u] * sv[u]);
    }
  }
}

}  // namespace detail

// q_out, k_out = q, k with each head rotated by its row's position (rotate-half convention).
template <class TQ, class TK, class TP, class TQO, class TKO>
__device__ void rope(const Ctx&, const View<TQ>& q, const View<TK>& k, const View<TP>& pos, const View<TQO>& qo,
                     const View<TKO>& ko, RopeParams rp) {
  detail::rope_rows(rp, q, pos, qo);
  detail::rope_rows(rp, k, pos, ko);
  __syncthreads();
}

// k_cache[pos, :] = k and v_cache[pos, :] = v for one row (k, v rank 1, pos rank 0, caches
// [S, X]); a position outside [0, S) writes nothing.
template <class TK, class TV, class TP, class TC>
__device__ void kv_append(const Ctx&, const View<TK>& k, const View<TV>& v, const View<TP>& pos, const View<TC>& kc,
                          const View<TC>& vc) {
  const long long p = ld(pos.ptr), x = k.ext[0];
  if (p >= 0 && p < kc.ext[0]) {
    const long long half = blockDim.x / 2, t = threadIdx.x;
    if (t < half) detail::copy_run(k.ptr, k.stride[0], kc.ptr + p * kc.stride[0], kc.stride[1], x, t, half);
    else detail::copy_run(v.ptr, v.stride[0], vc.ptr + p * vc.stride[0], vc.stride[1], x, t - half, blockDim.x - half);
  }
  __syncthreads();
}

// kv_append into page pools [P, PAGE, X] shared by all requests, through the row's page table
// [MAXP]: position pos goes to row pos % PAGE of page table[pos / PAGE]. A position outside
// [0, MAXP * PAGE) or a page id outside [0, P) writes nothing.
template <class TK, class TV, class TP, class TT, class TC>
__device__ void kv_append_paged(const Ctx&, const View<TK>& k, const View<TV>& v, const View<TP>& pos,
                                const View<TT>& table, const View<TC>& kp, const View<TC>& vp) {
  const long long p = ld(pos.ptr), x = k.ext[0], page = kp.ext[1];
  const bool in_table = p >= 0 && page > 0 && p < table.ext[0] * page;
  const long long id = in_table ? (long long)ld(table.ptr + (p / page) * table.stride[0]) : -1;
  if (id >= 0 && id < kp.ext[0]) {
    const long long r = p % page, half = blockDim.x / 2, t = threadIdx.x;
    if (t < half) detail::copy_run(k.ptr, k.stride[0], kp.ptr + id * kp.stride[0] + r * kp.stride[1], kp.stride[2], x, t, half);
    else
      detail::copy_run(v.ptr, v.stride[0], vp.ptr + id * vp.stride[0] + r * vp.stride[1], vp.stride[2], x, t - half,
                       blockDim.x - half);
  }
  __syncthreads();
}

// y[r, p] = clamp(lens[r] - p * chunk, 0, chunk) (lens rank 0 or 1, y rank 1 or 2).
template <class TL>
__device__ void split_lens(const Ctx&, const View<TL>& lens, const View<int>& y, long long chunk) {
  const long long rows = lens.rank ? lens.ext[0] : 1, parts = y.ext[y.rank - 1];
  const long long ys = y.rank == 2 ? y.stride[0] : 0, yp = y.stride[y.rank - 1];
  for (long long i = threadIdx.x; i < rows * parts; i += blockDim.x) {
    const long long r = i / parts, p = i % parts;
    const long long n = ld(lens.ptr + (lens.rank ? r * lens.stride[0] : 0)) - p * chunk;
    y.ptr[r * ys + p * yp] = (int)(n < 0 ? 0 : n > chunk ? chunk : n);
  }
  __syncthreads();
}

// The (first, count) of split-KV parts (lens rank 0 or 1 with R rows, y [R, splits, 2] or
// [splits, 2]): row r uses n = min(splits, max(1, cdiv(spread, R))) parts of
// c = max(min_chunk, cdiv(lens[r], n)) positions; part p covers [p c, min(lens[r], (p + 1) c)).
template <class TL>
__device__ void kv_ranges(const Ctx&, const View<TL>& lens, const View<int>& y, long long min_chunk, long long spread) {
  const long long rows = lens.rank ? lens.ext[0] : 1, parts = y.ext[y.rank - 2];
  const long long ys = y.rank == 3 ? y.stride[0] : 0, yp = y.stride[y.rank - 2], yc = y.stride[y.rank - 1];
  long long used = (spread + rows - 1) / (rows > 0 ? rows : 1);
  used = used < 1 ? 1 : used > parts ? parts : used;
  for (long long i = threadIdx.x; i < rows * parts; i += blockDim.x) {
    const long long r = i / parts, p = i % parts;
    long long n = ld(lens.ptr + (lens.rank ? r * lens.stride[0] : 0));
    n = n < 0 ? 0 : n;
    long long chunk = (n + used - 1) / used;
    chunk = chunk < min_chunk ? min_chunk : chunk;
    const long long first = p * chunk < n ? p * chunk : n, count = n - first < chunk ? n - first : chunk;
    y.ptr[r * ys + p * yp] = (int)first;
    y.ptr[r * ys + p * yp + yc] = (int)count;
  }
  __syncthreads();
}

}  // namespace dev
}  // namespace etc
