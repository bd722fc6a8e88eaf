// Row forms of the ops on a decode step's chain: reduce_sum of split-K partials, rmsnorm and
// add_rmsnorm, silu_mul, rope and attention_merge over rows whose length N (and head_dim, the
// number of parts) is known when the kernel is compiled. The generic ops take any rank, stride
// and alignment at run time and run thousands of instructions for a row of 2048 elements
// (6.6 us on one H100 CTA for a split-K reduce and an add_rmsnorm, warm); these run a few
// hundred (0.9 us). Each returns false, having done nothing, when its views do not have the
// compiled shape with unit innermost stride (and, where it loads 16 bytes at a time, 16-byte
// alignment), or the CTA is not kRowThreads wide: the caller then runs the generic op. Results
// are those of the generic ops, bit for bit: the same roundings, in the same order.
#pragma once

#include "etc/device/attention.cuh"
#include "etc/device/common.cuh"
#include "etc/device/decode.cuh"
#include "etc/device/reduce.cuh"

namespace etc {
namespace dev {

constexpr int kRowThreads = 256;  // the megakernels' CTA (etcc's kThreadsPerCta)

namespace rows {

// A view as rows of N unit-stride elements: rank 1 is one row, rank 2 rows of stride rs.
template <class T>
struct Rows {
  T* ptr;
  long long rs;
  int n;
};

template <int N, int V, class T>
__device__ __forceinline__ bool as_rows(const View<T>& v, Rows<T>& r, int lead = 0) {
  const int rank = v.rank - lead;
  if (rank < 1 || rank > 2 || pick(v.ext, v.rank - 1) != N || pick(v.stride, v.rank - 1) != 1) return false;
  r.ptr = v.ptr;
  r.n = rank == 2 ? (int)pick(v.ext, lead) : 1;
  r.rs = rank == 2 ? pick(v.stride, lead) : 0;
  return aligned_to(v.ptr, V * sizeof(bare_t<T>)) && (r.n <= 1 || r.rs % V == 0);
}

// Elements per thread and access: V per access, C accesses; at(c) is this thread's first
// element of access c (N or more: none).
template <int N, int V>
struct Split {
  static constexpr int C = (N + kRowThreads * V - 1) / (kRowThreads * V);
  static_assert(N % V == 0, "row length must be a multiple of the vector width");
  static __device__ __forceinline__ int at(int c) { return (c * kRowThreads + (int)threadIdx.x) * V; }
};

// A row's y = f * inv * w, V elements per access: the last step of an rms norm (rms_rows and
// the fused norm of fused_rows.cuh).
template <int N, int V, class TY, class W>
__device__ __forceinline__ void store_normalized(const float (&f)[Split<N, V>::C][V],
                                                 const Vec<W, V> (&wv)[Split<N, V>::C], float inv, TY* y) {
#pragma unroll
  for (int c = 0; c < Split<N, V>::C; ++c) {
    const int e = Split<N, V>::at(c);
    if (e >= N) continue;
    Vec<TY, V> o;
#pragma unroll
    for (int j = 0; j < V; ++j) o.v[j] = from_f32<TY>(f[c][j] * inv * to_f32(wv[c].v[j]));
    stv<V>(y + e, o);
  }
}

}  // namespace rows

// y[r, :] = sum over p of x[p, r, :] (x [P, rows, N] or [P, N]), summed in p order in f32.
template <int N, class TX, class TY>
__device__ __forceinline__ bool reduce_parts_rows(const Ctx&, const View<TX>& x, const View<TY>& y) {
  using X = bare_t<TX>;
  static_assert(same_v<X, float>, "reduce_parts_rows: f32 partials");
  constexpr int V = 4, C = rows::Split<N, V>::C, PG = 8;
  rows::Rows<TX> xr;
  rows::Rows<TY> yr;
  if (blockDim.x != kRowThreads || !rows::as_rows<N, V>(x, xr, 1) || !rows::as_rows<N, V>(y, yr) || xr.n != yr.n)
    return false;
  const long long P = x.ext[0], ps = x.stride[0];
  if (P > 1 && ps % V != 0) return false;
  for (int r = 0; r < yr.n; ++r) {
    float acc[C][V];
#pragma unroll
    for (int c = 0; c < C; ++c)
#pragma unroll
      for (int j = 0; j < V; ++j) acc[c][j] = 0.0f;
    for (long long p0 = 0; p0 < P; p0 += PG) {
      // Every load of PG parts before the first add: one round trip to L2, not PG.
      Vec<float, V> v[PG][C];
#pragma unroll
      for (int q = 0; q < PG; ++q)
#pragma unroll
        for (int c = 0; c < C; ++c) {
          const int e = rows::Split<N, V>::at(c);
          if (p0 + q < P && e < N) v[q][c] = ldv<V>(xr.ptr + (p0 + q) * ps + r * xr.rs + e);
        }
#pragma unroll
      for (int q = 0; q < PG; ++q)
#pragma unroll
        for (int c = 0; c < C; ++c)
          if (p0 + q < P)
#pragma unroll
            for (int j = 0; j < V; ++j) acc[c][j] += v[q][c].v[j];
    }
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const int e = rows::Split<N, V>::at(c);
      if (e >= N) continue;
      Vec<TY, V> o;
#pragma unroll
      for (int j = 0; j < V; ++j) o.v[j] = from_f32<TY>(acc[c][j]);
      stv<V>(yr.ptr + r * yr.rs + e, o);
    }
  }
  __syncthreads();
  return true;
}

// rmsnorm (r, ro null) and add_rmsnorm over rows of N with a weight of N: the CTA takes a row
// at a time and keeps it in registers.
template <int N, class TX, class TR, class TO, class TW, class TY>
__device__ __forceinline__ bool rms_rows(const Ctx& ctx, const View<TX>& x, const View<TR>* r, const View<TO>* ro,
                                         const View<TW>& w, float eps, const View<TY>& y) {
  using X = bare_t<TX>;
  using W = bare_t<TW>;
  constexpr bool kAdd = !same_v<TR, void>;
  constexpr int V = detail::rms_vec_width<X, W, TY, TR, TO>(), C = rows::Split<N, V>::C;
  rows::Rows<TX> xr;
  rows::Rows<TY> yr;
  if (blockDim.x != kRowThreads || w.rank != 1 || w.ext[0] != N || w.stride[0] != 1 ||
      !aligned_to(w.ptr, V * sizeof(W)) || !rows::as_rows<N, V>(x, xr) || !rows::as_rows<N, V>(y, yr) || xr.n != yr.n)
    return false;
  rows::Rows<TR> rr{};
  rows::Rows<TO> orr{};
  if constexpr (kAdd) {
    if (!rows::as_rows<N, V>(*r, rr) || !rows::as_rows<N, V>(*ro, orr) || rr.n != xr.n || orr.n != xr.n) return false;
  }
  float* scratch = reinterpret_cast<float*>(ctx.smem);
  for (int row = 0; row < xr.n; ++row) {
    float f[C][V];
    Vec<W, V> wv[C];
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const int e = rows::Split<N, V>::at(c);
      if (e >= N) continue;
      wv[c] = ldv<V>(w.ptr + e);
      Vec<X, V> xv = ldv<V>(xr.ptr + row * xr.rs + e);
#pragma unroll
      for (int j = 0; j < V; ++j) f[c][j] = to_f32(xv.v[j]);
      if constexpr (kAdd) {
        Vec<bare_t<TR>, V> rv = ldv<V>(rr.ptr + row * rr.rs + e);
#pragma unroll
        for (int j = 0; j < V; ++j) f[c][j] += to_f32(rv.v[j]);
      }
    }
    float ss = 0.0f;
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const int e = rows::Split<N, V>::at(c);
      if (e >= N) continue;
      if constexpr (kAdd) {
        Vec<TO, V> s;
#pragma unroll
        for (int j = 0; j < V; ++j) {
          s.v[j] = from_f32<TO>(f[c][j]);
          f[c][j] = to_f32(s.v[j]);
        }
        stv<V>(orr.ptr + row * orr.rs + e, s);
      }
#pragma unroll
      for (int j = 0; j < V; ++j) ss += f[c][j] * f[c][j];
    }
    ss = detail::block_sum(ss, scratch);
    rows::store_normalized<N, V>(f, wv, 1.0f / sqrtf(ss / (float)N + eps), yr.ptr + row * yr.rs);
  }
  __syncthreads();
  return true;
}

template <int N, class TX, class TW, class TY>
__device__ __forceinline__ bool rmsnorm_rows(const Ctx& ctx, const View<TX>& x, const View<TW>& w, float eps,
                                             const View<TY>& y) {
  return rms_rows<N, TX, void, bare_t<TY>>(ctx, x, (const View<void>*)nullptr, (const View<bare_t<TY>>*)nullptr, w,
                                           eps, y);
}

template <int N, class TX, class TR, class TW, class TY, class TO>
__device__ __forceinline__ bool add_rmsnorm_rows(const Ctx& ctx, const View<TX>& x, const View<TR>& r,
                                                 const View<TW>& w, float eps, const View<TY>& y, const View<TO>& ro) {
  return rms_rows<N>(ctx, x, &r, &ro, w, eps, y);
}

// y = silu(g) * u over rows of N.
template <int N, class TG, class TU, class TY>
__device__ __forceinline__ bool silu_mul_rows(const Ctx&, const View<TG>& g, const View<TU>& u, const View<TY>& y) {
  constexpr int kWidest = detail::cmax(detail::cmax((int)sizeof(bare_t<TG>), (int)sizeof(bare_t<TU>)), (int)sizeof(TY));
  constexpr int V = 16 / kWidest, C = rows::Split<N, V>::C;
  rows::Rows<TG> gr;
  rows::Rows<TU> ur;
  rows::Rows<TY> yr;
  if (blockDim.x != kRowThreads || !rows::as_rows<N, V>(g, gr) || !rows::as_rows<N, V>(u, ur) ||
      !rows::as_rows<N, V>(y, yr) || ur.n != gr.n || yr.n != gr.n)
    return false;
  for (int row = 0; row < gr.n; ++row) {
    Vec<bare_t<TG>, V> gv[C];
    Vec<bare_t<TU>, V> uv[C];
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const int e = rows::Split<N, V>::at(c);
      if (e >= N) continue;
      gv[c] = ldv<V>(gr.ptr + row * gr.rs + e);
      uv[c] = ldv<V>(ur.ptr + row * ur.rs + e);
    }
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const int e = rows::Split<N, V>::at(c);
      if (e >= N) continue;
      Vec<TY, V> o;
#pragma unroll
      for (int j = 0; j < V; ++j) o.v[j] = from_f32<TY>(detail::SiluMulF{}(to_f32(gv[c].v[j]), to_f32(uv[c].v[j])));
      stv<V>(yr.ptr + row * yr.rs + e, o);
    }
  }
  __syncthreads();
  return true;
}

// rope of one row of q (NQ) and of k (NK) at one position: a thread keeps one pair index j of
// every head it rotates, so the frequency and the angle's sine and cosine are computed once per
// thread for q and k together (the generic op computes them per view).
template <int NQ, int NK, int D, class TQ, class TK, class TP, class TQO, class TKO>
__device__ __forceinline__ bool rope_row(const Ctx&, const View<TQ>& q, const View<TK>& k, const View<TP>& pos,
                                         const View<TQO>& qo, const View<TKO>& ko, const RopeParams& rp) {
  constexpr int H = D / 2;
  static_assert(D % 2 == 0 && kRowThreads % H == 0 && NQ % D == 0 && NK % D == 0, "rope_row: shapes");
  // Heads a thread takes in q and k: threads tid, tid + kRowThreads, ... over the pairs.
  constexpr int HS = kRowThreads / H, CQ = (NQ / D + HS - 1) / HS, CK = (NK / D + HS - 1) / HS;
  if (blockDim.x != kRowThreads || rp.head_dim != D || q.rank != 1 || k.rank != 1 || qo.rank != 1 || ko.rank != 1 ||
      pos.rank != 0 || q.ext[0] != NQ || k.ext[0] != NK || qo.ext[0] != NQ || ko.ext[0] != NK || q.stride[0] != 1 ||
      k.stride[0] != 1 || qo.stride[0] != 1 || ko.stride[0] != 1)
    return false;
  const int j = (int)threadIdx.x % H, h0 = (int)threadIdx.x / H;
  float q0[CQ], q1[CQ], k0[CK], k1[CK];
#pragma unroll
  for (int c = 0; c < CQ; ++c) {
    const int a = (h0 + c * HS) * D + j;
    if (a < NQ) q0[c] = to_f32(ld(q.ptr + a)), q1[c] = to_f32(ld(q.ptr + a + H));
  }
#pragma unroll
  for (int c = 0; c < CK; ++c) {
    const int a = (h0 + c * HS) * D + j;
    if (a < NK) k0[c] = to_f32(ld(k.ptr + a)), k1[c] = to_f32(ld(k.ptr + a + H));
  }
  const long long p = ld(pos.ptr);  // in flight while the frequency is computed
  float s, c;
  detail::rope_sincos(rope_freq(rp, j), p, s, c);
#pragma unroll
  for (int u = 0; u < CQ; ++u) {
    const int a = (h0 + u * HS) * D + j;
    if (a >= NQ) continue;
    qo.ptr[a] = from_f32<TQO>(q0[u] * c - q1[u] * s);
    qo.ptr[a + H] = from_f32<TQO>(q1[u] * c + q0[u] * s);
  }
#pragma unroll
  for (int u = 0; u < CK; ++u) {
    const int a = (h0 + u * HS) * D + j;
    if (a >= NK) continue;
    ko.ptr[a] = from_f32<TKO>(k0[u] * c - k1[u] * s);
    ko.ptr[a + H] = from_f32<TKO>(k1[u] * c + k0[u] * s);
  }
  __syncthreads();
  return true;
}

// attention_merge of one request's split-KV parts: o_parts [np, W], lse_parts [np, W / D] into
// o [W] (and lse [W / D] when lse.ptr is set), with at most P parts (np <= P at run time, where
// their number follows the batch), W and head_dim D known when compiling: each thread merges
// output elements of one head with its P weights in registers (the generic op stages them in
// shared memory and divides by head_dim at run time). Parts past np weigh exp(-inf) = 0, which
// adds nothing to any sum: the bits are those of the np parts alone. A thread loads its parts
// with their weights, before it knows which weigh 0 (such a part is loaded, not added): one
// round trip to L2 on the decode chain where loading them after the weights took two.
template <int P, int W, int D, class TP, class TL, class TO>
__device__ __forceinline__ bool attention_merge_row(const Ctx&, const View<TP>& op, const View<TL>& lp,
                                                    const View<TO>& o, const View<float>& lse) {
  static_assert(W % D == 0 && P >= 1, "attention_merge_row: shapes");
  constexpr int HEADS = W / D;
  if (blockDim.x != kRowThreads || op.rank != 2 || lp.rank != 2 || o.rank != 1 || op.ext[0] < 1 || op.ext[0] > P ||
      op.ext[1] != W || lp.ext[0] != op.ext[0] || lp.ext[1] != HEADS || o.ext[0] != W || op.stride[1] != 1 ||
      o.stride[0] != 1)
    return false;
  const int np = (int)op.ext[0];
  const float ninf = __int_as_float(0xff800000);
  for (int i = threadIdx.x; i < W; i += kRowThreads) {
    const int h = i / D;
    float w[P], v[P];
#pragma unroll
    for (int p = 0; p < P; ++p) {
      w[p] = p < np ? to_f32(ld(lp.ptr + p * lp.stride[0] + h * lp.stride[1])) : ninf;
      v[p] = p < np ? to_f32(ld(op.ptr + p * op.stride[0] + i)) : 0.0f;
    }
    float mx;
    const float total = detail::merge_total(P, [&](long long p) { return w[p]; }, mx);
#pragma unroll
    for (int p = 0; p < P; ++p) w[p] = mx != ninf ? expf(w[p] - total) : 0.0f;
    float acc = 0.0f;
#pragma unroll
    for (int p = 0; p < P; ++p)
      if (w[p] != 0.0f) acc += w[p] * v[p];
    o.ptr[i] = from_f32<TO>(acc);
    if (lse.ptr && i % D == 0) lse.ptr[h * lse.stride[0]] = total;
  }
  __syncthreads();
  return true;
}

// attention_merge of R requests' parts at once (o_parts [np, R, W], lse_parts [np, R, W / D]
// into o [R, W]): the form of a matmul task that merges the rows of a it reads
// (fold-attention-merge), R up to a batch's worth. A thread takes ITEMS groups of V columns of
// one head at a time and loads all their parts and weights before it adds any (a group's
// loads do not wait for its weights: a part whose weight is 0 is loaded but not added), so a
// row costs a fraction of an L2 round trip, not two. Bits as attention_merge_row's: the same
// weights, added in part order.
template <int P, int W, int D, class TP, class TL, class TO>
__device__ __forceinline__ bool attention_merge_rows(const Ctx&, const View<TP>& op, const View<TL>& lp,
                                                     const View<TO>& o) {
  constexpr int HEADS = W / D, V = 16 / (int)sizeof(bare_t<TP>), GROUPS = W / V, ITEMS = P <= 8 ? 2 : 1;
  static_assert(W % D == 0 && P >= 1 && P <= 16, "attention_merge_rows: shapes");
  if (D % V != 0 || blockDim.x != kRowThreads || op.rank != 3 || lp.rank != 3 || o.rank != 2) return false;
  const long long R = op.ext[1];
  if (op.ext[0] < 1 || op.ext[0] > P || op.ext[2] != W || lp.ext[0] != op.ext[0] || lp.ext[1] != R ||
      lp.ext[2] != HEADS || o.ext[0] != R || o.ext[1] != W || op.stride[2] != 1 || o.stride[1] != 1 ||
      !aligned_to(op.ptr, 16) || op.stride[0] % V != 0 || op.stride[1] % V != 0)
    return false;
  const int np = (int)op.ext[0];
  const float ninf = __int_as_float(0xff800000);
  const long long n = R * GROUPS;
  for (long long e0 = threadIdx.x; e0 < n; e0 += (long long)ITEMS * kRowThreads) {
    float w[ITEMS][P];
    float v[ITEMS][P][V];
#pragma unroll
    for (int it = 0; it < ITEMS; ++it) {
      const long long e = e0 + (long long)it * kRowThreads;
      const long long r = e < n ? e / GROUPS : 0;
      const int c = e < n ? (int)(e % GROUPS) * V : 0;
#pragma unroll
      for (int p = 0; p < P; ++p) {
        const bool on = e < n && p < np;
        w[it][p] = on ? to_f32(ld(lp.ptr + p * lp.stride[0] + r * lp.stride[1] + (c / D) * lp.stride[2])) : ninf;
        const Vec<bare_t<TP>, V> x = on ? ldv<V>(op.ptr + p * op.stride[0] + r * op.stride[1] + c) : Vec<bare_t<TP>, V>{};
#pragma unroll
        for (int k = 0; k < V; ++k) v[it][p][k] = to_f32(x.v[k]);
      }
    }
#pragma unroll
    for (int it = 0; it < ITEMS; ++it) {
      const long long e = e0 + (long long)it * kRowThreads;
      if (e >= n) continue;
      const long long r = e / GROUPS;
      const int c = (int)(e % GROUPS) * V;
      float mx;
      const float total = detail::merge_total(P, [&](long long p) { return w[it][p]; }, mx);
      float acc[V];
#pragma unroll
      for (int k = 0; k < V; ++k) acc[k] = 0.0f;
#pragma unroll
      for (int p = 0; p < P; ++p) {
        const float wp = mx != ninf ? expf(w[it][p] - total) : 0.0f;
        if (wp != 0.0f)
#pragma unroll
          for (int k = 0; k < V; ++k) acc[k] += wp * v[it][p][k];
      }
#pragma unroll
      for (int k = 0; k < V; ++k) o.ptr[r * o.stride[0] + c + k] = from_f32<bare_t<TO>>(acc[k]);
    }
  }
  __syncthreads();
  return true;
}

}  // namespace dev
}  // namespace etc
