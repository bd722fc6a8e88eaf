// Fused row chains: the whole op sequence of a merged one-row task of a decode step in one pass,
// for the two chains that every layer runs on one CTA per request.
//   reduce_add_rmsnorm_rows: reduce_sum of split-K partials, then add_rmsnorm of the sum (the
//     input and post-attention norms);
//   qkv_rope_append_row: the q, k and v sums of their split-K partials, the per-head rmsnorm of
//     q and k (Qwen3), rope of q and k, and kv_append of k and v (contiguous caches).
// etcc calls them where the sums and the other values in between are temps that no other task
// reads (docs/backend.md): they stay in registers, so a task waits for memory once (its
// loads are all issued together) instead of once per op, and runs one short piece of code.
// Each returns false, having done nothing, when the views do not have the compiled shape; the
// caller then runs the op sequence. The values are those of the sequence: the same roundings
// to the temps' dtypes, sums in the same order (reduce_add_rmsnorm_rows gives the row forms'
// bits; the per-head rmsnorm sums its squares in another order than the generic op).
#pragma once

#include "etc/device/common.cuh"
#include "etc/device/decode.cuh"
#include "etc/device/reduce.cuh"
#include "etc/device/rows.cuh"

namespace etc {
namespace dev {
namespace fused {

// V f32 values from 16-byte aligned memory, 16 bytes (or 8) per access.
template <int V>
__device__ __forceinline__ void ld_f32(const float* p, float (&o)[V]) {
  static_assert(V == 2 || V % 4 == 0, "ld_f32: 2 or a multiple of 4 values");
  if constexpr (V == 2) {
    Vec<float, 2> v = ldv<2>(p);
    o[0] = v.v[0], o[1] = v.v[1];
  } else {
#pragma unroll
    for (int k = 0; k < V; k += 4) {
      Vec<float, 4> v = ldv<4>(p + k);
#pragma unroll
      for (int j = 0; j < 4; ++j) o[k + j] = v.v[j];
    }
  }
}

// A split-K partial's row of N: [P, N], or [P, 1, N] (the row of a rank-3 tile); its parts
// stride and count.
struct Parts {
  const float* ptr;
  long long ps;
  int n;
};

template <int N>
__device__ __forceinline__ bool as_parts(const View<const float>& x, int pmax, Parts& out) {
  if (x.rank == 2) {
    if (x.ext[1] != N || x.stride[1] != 1) return false;
  } else if (x.rank == 3) {
    if (x.ext[1] != 1 || x.ext[2] != N || x.stride[2] != 1) return false;
  } else {
    return false;
  }
  if (x.ext[0] < 1 || x.ext[0] > pmax) return false;
  out = Parts{x.ptr, x.stride[0], (int)x.ext[0]};
  return true;
}

// Part p of the lane's pairs (j, j + D / 2) of the warp's heads of a row of N (qkv_rope_append_row).
template <int N, int D, int PMAX, int C, int JP>
__device__ __forceinline__ void ld_heads(const Parts& x, int p, int warp, int lane, float (&o)[PMAX][C][JP][2]) {
  constexpr int H = D / 2, WARPS = kRowThreads / 32;
#pragma unroll
  for (int u = 0; u < C; ++u)
#pragma unroll
    for (int jj = 0; jj < JP; ++jj) {
      const int a = (warp + u * WARPS) * D + lane + jj * 32;
      if (p < x.n && a < N) o[p][u][jj][0] = ld(x.ptr + p * x.ps + a), o[p][u][jj][1] = ld(x.ptr + p * x.ps + a + H);
    }
}

// One head of qkv_rope_append_row, a lane's pairs: the sum of the np parts rounded to T,
// normalised (kNorm; the head is the lane's warp), rotated by the pairs' angles.
template <int PMAX, int C, int JP, int D, bool kNorm, class T>
__device__ __forceinline__ void qkv_head(const float (&x)[PMAX][C][JP][2], int np, int u, const float (&w)[JP][2],
                                         const float (&sn)[JP], const float (&cs)[JP], float eps, float (&r)[JP][2]) {
  float s[JP][2];
#pragma unroll
  for (int jj = 0; jj < JP; ++jj)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float acc = 0.0f;
#pragma unroll
      for (int p = 0; p < PMAX; ++p)
        if (p < np) acc += x[p][u][jj][h];
      s[jj][h] = to_f32(from_f32<T>(acc));
    }
  if constexpr (kNorm) {
    float ss = 0.0f;
#pragma unroll
    for (int jj = 0; jj < JP; ++jj) ss += s[jj][0] * s[jj][0] + s[jj][1] * s[jj][1];
    const float inv = 1.0f / sqrtf(warp_sum(ss) / (float)D + eps);
#pragma unroll
    for (int jj = 0; jj < JP; ++jj)
#pragma unroll
      for (int h = 0; h < 2; ++h) s[jj][h] = to_f32(from_f32<T>(s[jj][h] * inv * w[jj][h]));
  }
#pragma unroll
  for (int jj = 0; jj < JP; ++jj) {
    r[jj][0] = s[jj][0] * cs[jj] - s[jj][1] * sn[jj];
    r[jj][1] = s[jj][1] * cs[jj] + s[jj][0] * sn[jj];
  }
}

// Rows [row0, row0 + nb) (nb <= RB) of reduce_add_rmsnorm_rows with their loads in flight
// together: PGR parts of every row a round, then one CTA-wide sum for all the rows' squares
// (block_sum_n). Each row gets the bits of a task of that row alone: the same thread's
// elements, its parts added in p order, the warps' sums in warp order.
template <int N, int V, int RB, int PGR, class TX, class T, class TR, class TO, class TY, class W>
__device__ __forceinline__ void reduce_add_rmsnorm_group(const rows::Rows<TX>& xr, long long P, long long ps,
                                                         const rows::Rows<TR>& rr, const W* wp, float eps,
                                                         const rows::Rows<TY>& yr, const rows::Rows<TO>& orr,
                                                         bool store_ro, int row0, int nb, float* scratch) {
  constexpr int C = rows::Split<N, V>::C;
  float f[RB][C][V];
  Vec<W, V> wv[C];
  Vec<bare_t<TR>, V> rv[RB][C];
#pragma unroll
  for (int rb = 0; rb < RB; ++rb)
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const int e = rows::Split<N, V>::at(c);
      if (e >= N || rb >= nb) continue;
      if (rb == 0) wv[c] = ldv<V>(wp + e);
      rv[rb][c] = ldv<V>(rr.ptr + (row0 + rb) * rr.rs + e);
#pragma unroll
      for (int j = 0; j < V; ++j) f[rb][c][j] = 0.0f;
    }
  for (long long p0 = 0; p0 < P; p0 += PGR) {
    // Every part of a round in flight before the first add (with w and r above).
    float v[RB][PGR][C][V];
#pragma unroll
    for (int rb = 0; rb < RB; ++rb)
#pragma unroll
      for (int q = 0; q < PGR; ++q)
#pragma unroll
        for (int c = 0; c < C; ++c) {
          const int e = rows::Split<N, V>::at(c);
          if (rb < nb && p0 + q < P && e < N)
            fused::ld_f32<V>(xr.ptr + (p0 + q) * ps + (row0 + rb) * xr.rs + e, v[rb][q][c]);
        }
#pragma unroll
    for (int rb = 0; rb < RB; ++rb)
#pragma unroll
      for (int q = 0; q < PGR; ++q)
#pragma unroll
        for (int c = 0; c < C; ++c)
          if (rb < nb && p0 + q < P)
#pragma unroll
            for (int j = 0; j < V; ++j) f[rb][c][j] += v[rb][q][c][j];
  }
  float ss[RB];
#pragma unroll
  for (int rb = 0; rb < RB; ++rb) {
    ss[rb] = 0.0f;
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const int e = rows::Split<N, V>::at(c);
      if (e >= N || rb >= nb) continue;
      Vec<TO, V> s;
#pragma unroll
      for (int j = 0; j < V; ++j) {
        // t's rounding, then add_rmsnorm's: s = t + r rounded to ro's dtype.
        s.v[j] = from_f32<TO>(to_f32(from_f32<T>(f[rb][c][j])) + to_f32(rv[rb][c].v[j]));
        f[rb][c][j] = to_f32(s.v[j]);
        ss[rb] += f[rb][c][j] * f[rb][c][j];
      }
      if (store_ro) stv<V>(orr.ptr + (row0 + rb) * orr.rs + e, s);
    }
  }
  detail::block_sum_n<RB>(ss, scratch);
#pragma unroll
  for (int rb = 0; rb < RB; ++rb)
    if (rb < nb)
      rows::store_normalized<N, V>(f[rb], wv, 1.0f / sqrtf(ss[rb] / (float)N + eps), yr.ptr + (row0 + rb) * yr.rs);
}

// The rows a task of several (etcc --norm-rows) has in flight together in
// reduce_add_rmsnorm_rows, and the parts of each row a round: as many loads in flight as a
// task of one row, which takes 8 parts a round. 1: one row after another (session 84's form:
// docs/benchmarks.md).
#ifndef ETC_NORM_ROWS_IN_FLIGHT
#define ETC_NORM_ROWS_IN_FLIGHT 4
#endif
static_assert(ETC_NORM_ROWS_IN_FLIGHT == 1 || ETC_NORM_ROWS_IN_FLIGHT == 2 || ETC_NORM_ROWS_IN_FLIGHT == 4 ||
                  ETC_NORM_ROWS_IN_FLIGHT == 8,
              "ETC_NORM_ROWS_IN_FLIGHT: 1, 2, 4 or 8");

}  // namespace fused

// t = sum over p of x[p, r, :] (f32, in p order, rounded to t's dtype), then add_rmsnorm(t, r,
// w) -> y, ro: the row forms' reduce_parts_rows and add_rmsnorm_rows without t's round trip
// through memory (t is not written). store_ro false leaves ro unwritten: a folded norm's tasks
// all compute the same residual, and one of them stores it (emit_cuda.cpp's fusedCall). A tile
// of several rows has ETC_NORM_ROWS_IN_FLIGHT of them in flight at a time; MAXR, the most rows
// a task's tile has, leaves that form out of the tasks of one row.
template <int N, int MAXR = 1 << 20, class TX, class TT, class TR, class TW, class TY, class TO>
__device__ __forceinline__ bool reduce_add_rmsnorm_rows(const Ctx& ctx, const View<TX>& x, const View<TT>& t,
                                                        const View<TR>& r, const View<TW>& w, float eps,
                                                        const View<TY>& y, const View<TO>& ro, bool store_ro = true) {
  using T = bare_t<TT>;
  using W = bare_t<TW>;
  static_assert(same_v<bare_t<TX>, float>, "reduce_add_rmsnorm_rows: f32 partials");
  // The element split of add_rmsnorm_rows on t, so that the sum of squares adds the same
  // values in the same order.
  constexpr int V = detail::rms_vec_width<T, W, TY, TR, TO>(), PG = 8;
  constexpr int RB = ETC_NORM_ROWS_IN_FLIGHT < MAXR ? ETC_NORM_ROWS_IN_FLIGHT : MAXR, PGR = PG / RB > 1 ? PG / RB : 1;
  rows::Rows<TX> xr;
  rows::Rows<TT> tr;
  rows::Rows<TR> rr;
  rows::Rows<TO> orr;
  rows::Rows<TY> yr;
  if (blockDim.x != kRowThreads || w.rank != 1 || w.ext[0] != N || w.stride[0] != 1 ||
      !aligned_to(w.ptr, V * sizeof(W)) || !rows::as_rows<N, V>(x, xr, 1) || !rows::as_rows<N, V>(t, tr) ||
      !rows::as_rows<N, V>(r, rr) || !rows::as_rows<N, V>(ro, orr) || !rows::as_rows<N, V>(y, yr) || xr.n != yr.n ||
      tr.n != yr.n || rr.n != yr.n || orr.n != yr.n)
    return false;
  const long long P = x.ext[0], ps = x.stride[0];
  if (P > 1 && ps % V != 0) return false;
  float* scratch = reinterpret_cast<float*>(ctx.smem);
  if (RB == 1 || yr.n == 1) {
    for (int row = 0; row < yr.n; ++row)
      fused::reduce_add_rmsnorm_group<N, V, 1, PG, TX, T>(xr, P, ps, rr, w.ptr, eps, yr, orr, store_ro, row, 1, scratch);
  } else if constexpr (RB > 1) {
    for (int row0 = 0; row0 < yr.n; row0 += RB)
      fused::reduce_add_rmsnorm_group<N, V, RB, PGR, TX, T>(xr, P, ps, rr, w.ptr, eps, yr, orr, store_ro, row0,
                                                             yr.n - row0 < RB ? yr.n - row0 : RB, scratch);
  }
  __syncthreads();
  return true;
}

// One request's q, k and v from their split-K partials (qp [P, NQ], kp and vp [P, NK], or
// [P, 1, N]; at most PMAX parts), each summed in part order and rounded to the temps' dtype T;
// with kNorm, q and k then RMS-normalised per head of D with weights qw and kw [D] (rounded to
// T); q and k rotated at position pos (rope, rounded to qo's dtype and to T); q written to qo
// [NQ], k and v to row pos of the caches kc and vc [S, NK] (nothing when pos is outside
// [0, S)). A warp takes one head at a time and a lane the pairs (j, j + D / 2) with j = lane,
// lane + 32, ...: a head's norm is a warp sum.
template <int NQ, int NK, int D, int PMAX, bool kNorm, class T, class TW, class TP, class TO, class TC>
__device__ __forceinline__ bool qkv_rope_append_row(const Ctx&, const View<const float>& qp, const View<const float>& kp,
                                                    const View<const float>& vp, const View<TW>& qw,
                                                    const View<TW>& kw, float eps, const View<TP>& pos,
                                                    const RopeParams& rp, const View<TO>& qo, const View<TC>& kc,
                                                    const View<TC>& vc) {
  constexpr int H = D / 2, JP = H / 32, WARPS = kRowThreads / 32;
  constexpr int CQ = (NQ / D + WARPS - 1) / WARPS, CK = (NK / D + WARPS - 1) / WARPS;
  constexpr int CV = (NK + kRowThreads - 1) / kRowThreads;
  static_assert(D % 64 == 0 && NQ % D == 0 && NK % D == 0 && PMAX >= 1, "qkv_rope_append_row: shapes");
  fused::Parts q, k, v;
  if (blockDim.x != kRowThreads || rp.head_dim != D || !fused::as_parts<NQ>(qp, PMAX, q) ||
      !fused::as_parts<NK>(kp, PMAX, k) || !fused::as_parts<NK>(vp, PMAX, v) || pos.rank != 0 || qo.rank != 1 ||
      qo.ext[0] != NQ || qo.stride[0] != 1 || kc.rank != 2 || vc.rank != 2 || kc.ext[1] != NK || vc.ext[1] != NK ||
      kc.stride[1] != 1 || vc.stride[1] != 1 || kc.ext[0] != vc.ext[0])
    return false;
  if constexpr (kNorm) {
    if (qw.rank != 1 || kw.rank != 1 || qw.ext[0] != D || kw.ext[0] != D || qw.stride[0] != 1 || kw.stride[0] != 1)
      return false;
  }
  const int lane = (int)threadIdx.x & 31, warp = (int)threadIdx.x >> 5;
  // Every load before the first add: the partials of q, k and v, the position and the weights.
  float xq[PMAX][CQ][JP][2], xk[PMAX][CK][JP][2], xv[PMAX][CV];
#pragma unroll
  for (int p = 0; p < PMAX; ++p) {
    fused::ld_heads<NQ, D>(q, p, warp, lane, xq);
    fused::ld_heads<NK, D>(k, p, warp, lane, xk);
#pragma unroll
    for (int u = 0; u < CV; ++u) {
      const int e = (int)threadIdx.x + u * kRowThreads;
      if (p < v.n && e < NK) xv[p][u] = ld(v.ptr + p * v.ps + e);
    }
  }
  const long long at = ld(pos.ptr);
  float wq[JP][2] = {}, wk[JP][2] = {};
  if constexpr (kNorm) {
#pragma unroll
    for (int jj = 0; jj < JP; ++jj) {
      const int j = lane + jj * 32;
      wq[jj][0] = to_f32(ld(qw.ptr + j)), wq[jj][1] = to_f32(ld(qw.ptr + j + H));
      wk[jj][0] = to_f32(ld(kw.ptr + j)), wk[jj][1] = to_f32(ld(kw.ptr + j + H));
    }
  }
  float sn[JP], cs[JP];
#pragma unroll
  for (int jj = 0; jj < JP; ++jj) detail::rope_sincos(rope_freq(rp, lane + jj * 32), at, sn[jj], cs[jj]);
  const bool in_cache = at >= 0 && at < kc.ext[0];
#pragma unroll
  for (int u = 0; u < CQ; ++u) {
    const int h0 = (warp + u * WARPS) * D;
    if (h0 >= NQ) continue;
    float r[JP][2];
    fused::qkv_head<PMAX, CQ, JP, D, kNorm, T>(xq, q.n, u, wq, sn, cs, eps, r);
#pragma unroll
    for (int jj = 0; jj < JP; ++jj) {
      const int a = h0 + lane + jj * 32;
      qo.ptr[a] = from_f32<bare_t<TO>>(r[jj][0]);
      qo.ptr[a + H] = from_f32<bare_t<TO>>(r[jj][1]);
    }
  }
#pragma unroll
  for (int u = 0; u < CK; ++u) {
    const int h0 = (warp + u * WARPS) * D;
    if (h0 >= NK) continue;
    float r[JP][2];
    fused::qkv_head<PMAX, CK, JP, D, kNorm, T>(xk, k.n, u, wk, sn, cs, eps, r);
    if (!in_cache) continue;
#pragma unroll
    for (int jj = 0; jj < JP; ++jj) {
      const int a = h0 + lane + jj * 32;
      // k rotated is a temp of dtype T before kv_append copies it into the cache.
      kc.ptr[at * kc.stride[0] + a] = from_f32<bare_t<TC>>(to_f32(from_f32<T>(r[jj][0])));
      kc.ptr[at * kc.stride[0] + a + H] = from_f32<bare_t<TC>>(to_f32(from_f32<T>(r[jj][1])));
    }
  }
  if (in_cache) {
#pragma unroll
    for (int u = 0; u < CV; ++u) {
      const int e = (int)threadIdx.x + u * kRowThreads;
      if (e >= NK) continue;
      float acc = 0.0f;
#pragma unroll
      for (int p = 0; p < PMAX; ++p)
        if (p < v.n) acc += xv[p][u];
      vc.ptr[at * vc.stride[0] + e] = from_f32<bare_t<TC>>(to_f32(from_f32<T>(acc)));
    }
  }
  __syncthreads();
  return true;
}

}  // namespace dev
}  // namespace etc
