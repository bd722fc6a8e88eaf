// Mixture-of-experts tile ops: topk_softmax, moe_align, grouped_matmul, moe_combine
// (semantics in docs/ops.md; the CPU references in compiler/interp/ops_moe.cpp and
// ops_reduce.cpp). Every op is called by all threads of the CTA and ends with __syncthreads().
//
// grouped_matmul is built for decode: a task is one block of <= BLOCK routed rows of one expert
// and a column tile, and its cost is streaming the expert's weight rows. Each warp owns pairs of
// weight rows (gate and up for silu_mul, two neighbouring columns otherwise) and streams them
// with 16-byte loads (L2 only, like every input), the block's x rows staged in shared memory,
// f32 accumulation on CUDA cores. Padding ids (>= R * top_k) and blocks past num_blocks are
// skipped; no dynamic allocation.
#pragma once

#include "etc/device/common.cuh"

namespace etc {
namespace dev {
namespace detail {

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Offset (in elements) of row r of a view whose last dimension is the row: the leading
// dimensions are unravelled row-major (a rank-1 view is one row).
template <class T>
__device__ __forceinline__ long long row_offset(const View<T>& v, long long r) {
  long long off = 0;
#pragma unroll
  for (int d = ETC_MAX_RANK - 2; d >= 0; --d)
    if (d < v.rank - 1) {
      const long long e = v.ext[d];
      off += (r % e) * v.stride[d];
      r /= e;
    }
  return off;
}

// (v, i) comes after (pv, pi) in the selection order of topk_softmax: larger values first,
// ties by lower index.
__device__ __forceinline__ bool topk_after(float v, int i, float pv, int pi) {
  return v < pv || (v == pv && i > pi);
}
__device__ __forceinline__ bool topk_better(float v, int i, float bv, int bi) {
  return bi < 0 || v > bv || (v == bv && i < bi);
}

}  // namespace detail

// ---- topk_softmax ------------------------------------------------------------------------------

// x [..., E] (any float dtype) -> w f32[..., k], ids i32[..., k]; one warp per row. The softmax is
// monotone in the logits, so the k largest probabilities are the k largest logits (ties: lower
// index first); each pick is the best element after the previous pick in that total order, so
// no set of chosen ids is kept. The first 32 * EPL logits of a row stay in registers; the rest
// (E > 32 * EPL) are re-read from global memory. NaN logits are never picked.
template <int EPL, class TX, class TW>
__device__ void topk_softmax(const Ctx&, const View<TX>& x, const View<TW>& w, const View<int>& ids,
                             bool renormalize) {
  const long long E = x.rank ? pick(x.ext, x.rank - 1) : 1;
  const long long xs = x.inner_stride();
  const long long k = w.rank ? pick(w.ext, w.rank - 1) : 1;
  const long long ws = w.inner_stride(), is = ids.inner_stride();
  const long long rows = E ? x.numel() / E : 0;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  const float kNegInf = __int_as_float(0xff800000);
  for (long long r = warp; r < rows; r += nw) {
    TX* xr = x.ptr + detail::row_offset(x, r);
    TW* wr = w.ptr + detail::row_offset(w, r);
    int* ir = ids.ptr + detail::row_offset(ids, r);
    float v[EPL];
#pragma unroll
    for (int i = 0; i < EPL; ++i) {
      const long long e = lane + 32LL * i;
      v[i] = e < E ? to_f32(ld(xr + e * xs)) : kNegInf;
    }
    float m = kNegInf;
#pragma unroll
    for (int i = 0; i < EPL; ++i)
      if (lane + 32LL * i < E) m = fmaxf(m, v[i]);  // fmaxf ignores NaN
    for (long long e = lane + 32LL * EPL; e < E; e += 32) m = fmaxf(m, to_f32(ld(xr + e * xs)));
    m = detail::warp_max(m);
    // NaN logits are left out of the denominator as they are out of the choice.
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < EPL; ++i)
      if (lane + 32LL * i < E && v[i] == v[i]) sum += expf(v[i] - m);
    for (long long e = lane + 32LL * EPL; e < E; e += 32) {
      const float t = to_f32(ld(xr + e * xs));
      if (t == t) sum += expf(t - m);
    }
    sum = warp_sum(sum);

    float pv = __int_as_float(0x7f800000);  // +inf, index -1: before every element
    int pi = -1;
    float chosen = 0.0f;
    for (long long j = 0; j < k; ++j) {
      float bv = kNegInf;
      int bi = -1;
#pragma unroll
      for (int i = 0; i < EPL; ++i) {
        const int e = lane + 32 * i;
        if (e < E && v[i] == v[i] && detail::topk_after(v[i], e, pv, pi) && detail::topk_better(v[i], e, bv, bi)) {
          bv = v[i];
          bi = e;
        }
      }
      for (long long e = lane + 32LL * EPL; e < E; e += 32) {
        const float t = to_f32(ld(xr + e * xs));
        if (t == t && detail::topk_after(t, (int)e, pv, pi) && detail::topk_better(t, (int)e, bv, bi)) {
          bv = t;
          bi = (int)e;
        }
      }
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) {
        const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
        const int oi = __shfl_xor_sync(0xffffffffu, bi, o);
        if (oi >= 0 && detail::topk_better(ov, oi, bv, bi)) {
          bv = ov;
          bi = oi;
        }
      }
      if (bi >= 0) {
        chosen += expf(bv - m);
        pv = bv;
        pi = bi;
      }
      if (lane == 0) ir[j * is] = bi >= 0 ? bi : -1;
    }
    // The weights once the denominator is known: each lane re-reads the ids it needs (written
    // by lane 0, ordered by the warp barrier) and their logits.
    __syncwarp();
    const float denom = renormalize ? chosen : sum;
    for (long long j = lane; j < k; j += 32) {
      const int id = ir[j * is];
      const float p = id >= 0 ? expf(to_f32(ld(xr + id * xs)) - m) : 0.0f;
      wr[j * ws] = from_f32<bare_t<TW>>(denom > 0.0f ? p / denom : 0.0f);
    }
    __syncwarp();  // every lane has read the ids
    if (lane == 0)
      for (long long j = 0; j < k; ++j)
        if (ir[j * is] < 0) ir[j * is] = 0;  // fewer than k non-NaN logits: id 0, weight 0
  }
  __syncthreads();
}

// ---- moe_align ---------------------------------------------------------------------------------

// Shared memory moe_align needs for `num_experts` experts.
__host__ __device__ constexpr unsigned moe_align_smem_bytes(int num_experts) {
  return 3u * 4u * (unsigned)num_experts + 16u;
}

// ids i32[T, K] (or [N]) -> sorted [NB * block], block_expert [NB], num_blocks [1] (or a scalar).
// One CTA: count per expert (shared atomics), blocks per expert scanned by one warp, then the
// entries placed in chunks of blockDim.x, each in its expert's run at the expert's cursor plus
// its rank among the chunk's entries with the same expert (warp match + warps in order), so
// every expert's entries keep increasing flat order. Every slot and block entry is written
// exactly once: ids, padding (T * K) or -1. Ids outside [0, num_experts) are skipped (the
// reference interpreter reports them).
__device__ void moe_align(const Ctx& ctx, const View<const int>& ids, const View<int>& sorted,
                          const View<int>& bexp, const View<int>& nblk, int num_experts, int block) {
  int* cnt = reinterpret_cast<int*>(ctx.smem);  // entries per expert
  int* start = cnt + num_experts;               // first slot of each expert
  int* curs = start + num_experts;              // next free slot while placing
  int* used_s = curs + num_experts;             // total blocks
  const int tid = threadIdx.x, nt = blockDim.x, lane = tid & 31, warp = tid >> 5, nw = nt >> 5;
  const long long n = ids.numel();
  const long long kdim = ids.rank == 2 ? ids.ext[1] : (ids.rank == 1 ? ids.ext[0] : 1);
  const long long s0 = ids.rank == 2 ? ids.stride[0] : 0, s1 = ids.rank ? pick(ids.stride, ids.rank - 1) : 0;
  auto id_at = [&](long long i) { return ld(ids.ptr + (i / kdim) * s0 + (i % kdim) * s1); };
  const long long cap = sorted.rank ? sorted.ext[0] : 1, ss = sorted.inner_stride();
  const long long bcap = bexp.rank ? bexp.ext[0] : 1, bs = bexp.inner_stride();

  for (int e = tid; e < num_experts; e += nt) cnt[e] = 0;
  __syncthreads();
  for (long long i = tid; i < n; i += nt) {
    const int id = id_at(i);
    if (id >= 0 && id < num_experts) atomicAdd(&cnt[id], 1);
  }
  __syncthreads();
  if (warp == 0) {
    // Lane l scans experts [l * per, (l + 1) * per); an exclusive warp scan joins the lanes.
    const int per = (num_experts + 31) / 32;
    const int e0 = lane * per, e1 = e0 + per < num_experts ? e0 + per : num_experts;
    int local = 0;
    for (int e = e0; e < e1; ++e) local += (cnt[e] + block - 1) / block;
    int incl = local;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const int t = __shfl_up_sync(0xffffffffu, incl, o);
      if (lane >= o) incl += t;
    }
    int b = incl - local;
    for (int e = e0; e < e1; ++e) {
      start[e] = b * block;
      curs[e] = b * block;
      b += (cnt[e] + block - 1) / block;
    }
    if (lane == 31) *used_s = incl;
  }
  __syncthreads();
  const int used = *used_s;
  if (tid == 0) nblk.ptr[0] = used;

  // Block experts (binary search over the starts) and padding slots.
  for (long long b = tid; b < bcap; b += nt) {
    int e = -1;
    if (b < used) {
      int lo = 0, hi = num_experts - 1;  // the last expert whose start is <= b * block
      while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (start[mid] <= b * block) lo = mid;
        else hi = mid - 1;
      }
      e = lo;
    }
    bexp.ptr[b * bs] = e;
  }
  for (long long p = tid; p < cap; p += nt) {
    bool pad = p >= (long long)used * block;
    if (!pad) {
      int lo = 0, hi = num_experts - 1;
      while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (start[mid] <= p) lo = mid;
        else hi = mid - 1;
      }
      // Experts without entries share their start with the next one; the search finds the
      // last of them, the one whose run holds p.
      pad = p - start[lo] >= cnt[lo];
    }
    if (pad) sorted.ptr[p * ss] = (int)n;
  }

  // Stable placement, one chunk of nt entries at a time.
  const unsigned lt = (1u << lane) - 1u;
  for (long long c0 = 0; c0 < n; c0 += nt) {
    const long long i = c0 + tid;
    int id = i < n ? id_at(i) : -1;
    if (id >= num_experts) id = -1;
    const unsigned peers = __match_any_sync(0xffffffffu, id);
    const int rank = __popc(peers & lt);
    const bool leader = rank == 0;
    for (int w = 0; w < nw; ++w) {
      if (warp == w && id >= 0) {
        const int pos = curs[id] + rank;
        __syncwarp(peers);
        if (leader) curs[id] += __popc(peers);
        if (pos < cap) sorted.ptr[pos * ss] = (int)i;
      }
      __syncthreads();
    }
  }
}

// ---- grouped_matmul ----------------------------------------------------------------------------

namespace detail {

struct GmArgs {
  long long R, Kd, E, ncols, units, top_k;
  long long xs0, xs1;          // x: row and k strides
  long long wse, wsn, wsk;     // w: expert, row and k strides
  long long use, usn, usk;     // w_up (mode 2), else w
  long long ys0, ys1;
  long long half;              // mode 1: the row offset of the up half
  int mode;                    // 0: act none; 1: silu_mul, gate/up halves of w; 2: silu_mul, w and w_up
};

// Shared memory layout: row ids [BLOCK], the count, the staged x rows [RG][KC + pad] and the
// f32 sums [RG][2 * NC].
template <class T, int BLOCK, int RG, int KC, int NC>
struct GmGeom {
  static constexpr int PITCH = KC + 16 / (int)sizeof(T);  // keeps rows 16-byte aligned
  static constexpr unsigned IDS_BYTES = ((unsigned)(BLOCK + 1) * 4u + 15u) / 16u * 16u;
  static constexpr unsigned X_BYTES = (unsigned)RG * PITCH * sizeof(T);
  static constexpr unsigned ACC_BYTES = (unsigned)RG * 2u * NC * 4u;
  static constexpr unsigned SMEM = IDS_BYTES + X_BYTES + ACC_BYTES;
};

// Each warp streams the two weight rows of its units over the staged chunk [0, kc) of x and adds
// the dot products of its nr rows into acc. V elements per load (V = 1: any strides).
template <int V, int RG, int NC, int PITCH, class T>
__device__ __forceinline__ void gm_chunk(const T* xs, float* acc, const T* wA0, const T* wB0, const GmArgs& g,
                                         long long e, long long k0, int kc, int nr) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  for (long long u = warp; u < g.units; u += nw) {
    const T *pa, *pb;
    bool b_ok = true;
    if (g.mode == 0) {
      pa = wA0 + e * g.wse + (2 * u) * g.wsn;
      b_ok = 2 * u + 1 < g.ncols;
      pb = b_ok ? pa + g.wsn : pa;
    } else if (g.mode == 1) {
      pa = wA0 + e * g.wse + u * g.wsn;
      pb = pa + g.half * g.wsn;
    } else {
      pa = wA0 + e * g.wse + u * g.wsn;
      pb = wB0 + e * g.use + u * g.usn;
    }
    const long long ska = g.wsk, skb = g.mode == 2 ? g.usk : g.wsk;
    pa += k0 * ska;
    pb += k0 * skb;
    float a0[RG], a1[RG];
#pragma unroll
    for (int j = 0; j < RG; ++j) a0[j] = a1[j] = 0.0f;
#pragma unroll 4
    for (int k = lane * V; k < kc; k += 32 * V) {
      Vec<T, V> va, vb;
      if constexpr (V > 1) {
        va = ldv<V>(pa + k);
        vb = ldv<V>(pb + k);
      } else {
        va.v[0] = ld(pa + k * ska);
        vb.v[0] = ld(pb + k * skb);
      }
      float fa[V], fb[V];
#pragma unroll
      for (int q = 0; q < V; ++q) {
        fa[q] = to_f32(va.v[q]);
        fb[q] = to_f32(vb.v[q]);
      }
#pragma unroll
      for (int j = 0; j < RG; ++j)
        if (j < nr) {
          const Vec<T, V> xv = *reinterpret_cast<const Vec<T, V>*>(xs + j * PITCH + k);
#pragma unroll
          for (int q = 0; q < V; ++q) {
            const float xf = to_f32(xv.v[q]);
            a0[j] = fmaf(xf, fa[q], a0[j]);
            a1[j] = fmaf(xf, fb[q], a1[j]);
          }
        }
    }
#pragma unroll
    for (int j = 0; j < RG; ++j)
      if (j < nr) {
        const float s0 = warp_sum(a0[j]), s1 = warp_sum(a1[j]);
        if (lane == 0 && 2 * u + 1 < 2 * NC) {
          acc[j * 2 * NC + 2 * u] += s0;
          acc[j * 2 * NC + 2 * u + 1] += s1;
        }
      }
  }
}

template <int BLOCK, int RG, int KC, int NC, class T, class TS, class TB, class TN, class TY>
__device__ __forceinline__ void gm_run(const Ctx& ctx, const T* xp, const T* wp, const T* up, const View<TS>& sorted,
                                       const View<TB>& bexp, const View<TN>& nblk, TY* yp, GmArgs g) {
  static_assert(is_float_v<T> && is_float_v<TY>, "grouped_matmul: float dtypes only");
  using Geo = GmGeom<T, BLOCK, RG, KC, NC>;
  constexpr int VV = 16 / (int)sizeof(T);
  int* rows = reinterpret_cast<int*>(ctx.smem);  // [BLOCK] valid ids, then the count
  int* nvalid_s = rows + BLOCK;
  T* xs = reinterpret_cast<T*>(ctx.smem + Geo::IDS_BYTES);
  float* acc = reinterpret_cast<float*>(ctx.smem + Geo::IDS_BYTES + Geo::X_BYTES);
  const int tid = threadIdx.x, nt = blockDim.x, lane = tid & 31;
  if (g.ncols > NC * (g.mode == 0 ? 2 : 1)) g.ncols = NC * (g.mode == 0 ? 2 : 1);  // larger tiles are clipped
  g.units = g.mode == 0 ? (g.ncols + 1) / 2 : g.ncols;
  const long long routed = g.R * g.top_k;

  // The 16-byte path needs unit k strides, and rows and bases on 16-byte boundaries.
  bool vec = VV > 1 && g.xs1 == 1 && g.wsk == 1 && g.Kd % VV == 0 && g.xs0 % VV == 0 && g.wse % VV == 0 &&
             g.wsn % VV == 0 && aligned_to(xp, 16) && aligned_to(wp, 16);
  if (g.mode == 1) vec = vec && (g.half * g.wsn) % VV == 0;
  if (g.mode == 2) vec = vec && g.usk == 1 && g.use % VV == 0 && g.usn % VV == 0 && aligned_to(up, 16);

  const long long ssb = sorted.inner_stride();
  const long long nsorted = sorted.rank ? sorted.ext[0] : 1;
  long long nb = nsorted / BLOCK;
  const long long nbexp = bexp.numel();
  if (nbexp < nb) nb = nbexp;
  const long long total = to_i64(ld(nblk.ptr));
  if (total < nb) nb = total;
  const long long bsb = bexp.inner_stride();

  for (long long blk = 0; blk < nb; ++blk) {
    const long long e = to_i64(ld(bexp.ptr + blk * bsb));
    __syncthreads();  // the previous block is done with the shared memory
    if (tid < 32) {
      int base = 0;
      for (int c = 0; c < BLOCK; c += 32) {
        const int j = c + lane;
        long long s = -1;
        if (j < BLOCK) s = to_i64(ld(sorted.ptr + (blk * BLOCK + j) * ssb));
        const bool ok = j < BLOCK && s >= 0 && s < routed;
        const unsigned m = __ballot_sync(0xffffffffu, ok);
        if (ok) rows[base + __popc(m & ((1u << lane) - 1u))] = (int)s;
        base += __popc(m);
      }
      if (lane == 0) *nvalid_s = base;
    }
    __syncthreads();
    const int nvalid = *nvalid_s;
    if (e < 0 || e >= g.E || nvalid == 0) continue;

    for (int g0 = 0; g0 < nvalid; g0 += RG) {
      const int nr = nvalid - g0 < RG ? nvalid - g0 : RG;
      __syncthreads();  // the previous row group's results are stored
      for (int i = tid; i < RG * 2 * NC; i += nt) acc[i] = 0.0f;
      for (long long k0 = 0; k0 < g.Kd; k0 += KC) {
        const int kc = (int)(g.Kd - k0 < KC ? g.Kd - k0 : KC);
        __syncthreads();  // the previous chunk is consumed (and acc is zeroed)
        if (vec) {
          const int cpr = kc / VV;
          for (int i = tid; i < nr * cpr; i += nt) {
            const int j = i / cpr, c = (i - j * cpr) * VV;
            const T* src = xp + (long long)(rows[g0 + j] / g.top_k) * g.xs0 + k0 + c;
            *reinterpret_cast<Vec<T, VV>*>(xs + j * Geo::PITCH + c) = ldv<VV>(src);
          }
        } else {
          for (int i = tid; i < nr * kc; i += nt) {
            const int j = i / kc, c = i - j * kc;
            xs[j * Geo::PITCH + c] = ld(xp + (long long)(rows[g0 + j] / g.top_k) * g.xs0 + (k0 + c) * g.xs1);
          }
        }
        __syncthreads();
        if (vec)
          gm_chunk<VV, RG, NC, Geo::PITCH>(xs, acc, wp, up, g, e, k0, kc, nr);
        else
          gm_chunk<1, RG, NC, Geo::PITCH>(xs, acc, wp, up, g, e, k0, kc, nr);
      }
      __syncthreads();
      for (long long i = tid; i < (long long)nr * g.ncols; i += nt) {
        const int j = (int)(i / g.ncols);
        const long long n = i - (long long)j * g.ncols;
        float v;
        if (g.mode == 0) {
          v = acc[j * 2 * NC + n];
        } else {
          const float gt = acc[j * 2 * NC + 2 * n], u = acc[j * 2 * NC + 2 * n + 1];
          v = gt / (1.0f + expf(-gt)) * u;
        }
        yp[(long long)rows[g0 + j] * g.ys0 + n * g.ys1] = from_f32<TY>(v);
      }
    }
  }
  __syncthreads();
}

template <class TX, class TW, class TY>
__device__ __forceinline__ GmArgs gm_args(const View<TX>& x, const View<TW>& w, const View<TY>& y, int top_k,
                                          int mode) {
  GmArgs g;
  g.R = x.ext[0];
  g.Kd = x.ext[1];
  g.xs0 = x.stride[0];
  g.xs1 = x.stride[1];
  g.E = w.ext[0];
  g.wse = w.stride[0];
  g.wsn = w.stride[1];
  g.wsk = w.stride[2];
  g.use = g.wse;
  g.usn = g.wsn;
  g.usk = g.wsk;
  g.ys0 = y.stride[0];
  g.ys1 = y.stride[1];
  g.top_k = top_k;
  g.mode = mode;
  g.half = w.ext[1] / 2;
  g.ncols = mode == 1 ? g.half : w.ext[1];
  if (y.ext[1] < g.ncols) g.ncols = y.ext[1];
  g.units = 0;
  return g;
}

}  // namespace detail

// Dynamic shared memory grouped_matmul<BLOCK, RG, KC, NC> needs for input dtype T.
template <class T, int BLOCK, int RG, int KC, int NC>
__host__ __device__ constexpr unsigned grouped_matmul_smem_bytes() {
  return detail::GmGeom<T, BLOCK, RG, KC, NC>::SMEM;
}

// x [R, Kd], w [E, N, Kd], sorted [P] (P a multiple of BLOCK), block_expert [NB] or a scalar,
// num_blocks [1] or a scalar -> y [R * top_k, N'] (only the rows the ids name are written).
// BLOCK: rows per block; RG: x rows per pass over the weights; KC: the k chunk staged in shared
// memory (a multiple of 8); NC: the most output columns (N' <= 2 * NC for act none, <= NC for
// silu_mul; larger tiles are clipped).
template <int BLOCK, int RG, int KC, int NC, class TX, class TW, class TS, class TB, class TN, class TY>
__device__ void grouped_matmul(const Ctx& ctx, const View<TX>& x, const View<TW>& w, const View<TS>& sorted,
                               const View<TB>& bexp, const View<TN>& nblk, const View<TY>& y, int top_k,
                               bool silu_mul) {
  using T = bare_t<TX>;
  static_assert(same_v<T, bare_t<TW>>, "grouped_matmul: x and w must have the same dtype");
  detail::GmArgs g = detail::gm_args(x, w, y, top_k, silu_mul ? 1 : 0);
  const T* wp = w.ptr;
  detail::gm_run<BLOCK, RG, KC, NC>(ctx, (const T*)x.ptr, wp, wp, sorted, bexp, nblk, y.ptr, g);
}

// The six-operand form (act = "silu_mul"): gate rows in w, up rows in w_up (same shape).
template <int BLOCK, int RG, int KC, int NC, class TX, class TW, class TS, class TB, class TN, class TU, class TY>
__device__ void grouped_matmul(const Ctx& ctx, const View<TX>& x, const View<TW>& w, const View<TS>& sorted,
                               const View<TB>& bexp, const View<TN>& nblk, const View<TU>& w_up,
                               const View<TY>& y, int top_k) {
  using T = bare_t<TX>;
  static_assert(same_v<T, bare_t<TW>> && same_v<T, bare_t<TU>>, "grouped_matmul: x, w and w_up: one dtype");
  detail::GmArgs g = detail::gm_args(x, w, y, top_k, 2);
  g.use = w_up.stride[0];
  g.usn = w_up.stride[1];
  g.usk = w_up.stride[2];
  detail::gm_run<BLOCK, RG, KC, NC>(ctx, (const T*)x.ptr, (const T*)w.ptr, (const T*)w_up.ptr, sorted, bexp, nblk,
                                    y.ptr, g);
}

// ---- moe_combine -------------------------------------------------------------------------------

// y [T*K, H], weights f32[T, K] -> out [T, H]: out[t] = sum_k weights[t, k] * y[t*K + k] in f32,
// in increasing k. 16-byte loads and stores along H where strides and alignment allow; the
// weights are staged in shared memory when they fit kSmallOpSmem.
template <class TY, class TW, class TO>
__device__ void moe_combine(const Ctx& ctx, const View<TY>& y, const View<TW>& wts, const View<TO>& out) {
  using Y = bare_t<TY>;
  static_assert(is_float_v<Y> && is_float_v<TO>, "moe_combine: float dtypes only");
  constexpr int V = 16 / (int)(sizeof(Y) > sizeof(TO) ? sizeof(Y) : sizeof(TO));
  const long long T = wts.ext[0], K = wts.ext[1], H = y.ext[1];
  const long long ys0 = y.stride[0], ys1 = y.stride[1], os0 = out.stride[0], os1 = out.stride[1];
  const int tid = threadIdx.x, nt = blockDim.x;
  float* ws = reinterpret_cast<float*>(ctx.smem);
  const bool staged = T * K <= (long long)(kSmallOpSmem / 4);
  if (staged)
    for (long long i = tid; i < T * K; i += nt) ws[i] = to_f32(ld(wts.ptr + (i / K) * wts.stride[0] + (i % K) * wts.stride[1]));
  __syncthreads();
  auto weight = [&](long long t, long long k) {
    return staged ? ws[t * K + k] : to_f32(ld(wts.ptr + t * wts.stride[0] + k * wts.stride[1]));
  };
  const bool vec = V > 1 && ys1 == 1 && os1 == 1 && H % V == 0 && ys0 % V == 0 && os0 % V == 0 &&
                   aligned_to(y.ptr, V * sizeof(Y)) && aligned_to(out.ptr, V * sizeof(TO));
  if (vec) {
    const long long hv = H / V;
    for (long long i = tid; i < T * hv; i += nt) {
      const long long t = i / hv, c = (i - t * hv) * V;
      float a[V];
#pragma unroll
      for (int q = 0; q < V; ++q) a[q] = 0.0f;
      for (long long k = 0; k < K; ++k) {
        const float wk = weight(t, k);
        const Vec<Y, V> v = ldv<V>(y.ptr + (t * K + k) * ys0 + c);
#pragma unroll
        for (int q = 0; q < V; ++q) a[q] = fmaf(wk, to_f32(v.v[q]), a[q]);
      }
      Vec<TO, V> o;
#pragma unroll
      for (int q = 0; q < V; ++q) o.v[q] = from_f32<TO>(a[q]);
      stv<V>(out.ptr + t * os0 + c, o);
    }
  } else {
    for (long long i = tid; i < T * H; i += nt) {
      const long long t = i / H, c = i - t * H;
      float a = 0.0f;
      for (long long k = 0; k < K; ++k) a = fmaf(weight(t, k), to_f32(ld(y.ptr + (t * K + k) * ys0 + c * ys1)), a);
      out.ptr[t * os0 + c * os1] = from_f32<TO>(a);
    }
  }
  __syncthreads();
}

}  // namespace dev
}  // namespace etc
