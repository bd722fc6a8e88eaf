// Decode attention: attention_decode (one request's query heads against its cached positions,
// grouped-query: every cache head serves G query heads) and attention_merge (combining split-KV
// partials through their log-sum-exps). Inputs bf16/f16/f32, f32 softmax and accumulation.
#pragma once

#include "etc/device/common.cuh"

namespace etc {
namespace dev {

// Cache positions per softmax block (the scores of a block live in shared memory), and the
// most warps a CTA may have (the cross-warp reduction of o has a slot per warp).
constexpr int kAttnBlock = 256;
constexpr int kAttnMaxWarps = 16;
// Row steps of a warp whose cache rows load together (attn_head).
constexpr int kAttnRowBatch = 4;

// The 16-byte path copies the cache rows of a part into a ring of shared-memory slots with
// cp.async, each slot a block of positions (attn_stage_bytes of K rows and as many of V), the
// ring's first slots all requested before the first is used: a decode part of 512 positions
// (B >= 16 at KV 511) has 64 KiB in flight from the start. H100, Llama-3.2-1B decode (with
// tensor-core scores and o): 2 slots of 16 KiB 1904.9 / 2258.0 / 6776.2 us at B = 1 / 16 / 128
// against 1915.3 / 2281.5 / 6930.7 with 3 slots (the kernel reserves its largest task's
// shared memory for every task) and 1986.0 / 2349.6 / 7085.0 for the FMA form with one 32 KiB
// slot. The rows are copied with an L2 evict-first policy (each is read once a step, like
// the weights): two rounds, 1909.6 / 1912.1 -> 1902.7 / 1906.5 us at B = 1, 2250.2 / 2254.1
// -> 2142.2 / 2144.0 at B = 16, 6782.5 / 6741.5 -> 6637.5 / 6653.2 at B = 128.
// Knobs (etcc --device-define): ETC_ATTN_STAGE=0 reads the rows straight from global memory
// instead, 4 row steps of a warp at a time; ETC_ATTN_BLOCK_KIB the K bytes of a block and
// ETC_ATTN_SLOTS the ring's slots (ETC_ATTN_FMA_BLOCK_KIB and ETC_ATTN_FMA_SLOTS those of calls
// whose shape has no tensor-core form); ETC_ATTN_EVICT_FIRST=0 copies the rows without
// L2::evict_first; ETC_ATTN_MMA=0 computes scores and o with FMAs where tensor cores could
// (attn_mma).
#ifndef ETC_ATTN_STAGE
#define ETC_ATTN_STAGE 1
#endif
#ifndef ETC_ATTN_BLOCK_KIB
#define ETC_ATTN_BLOCK_KIB 16
#endif
#ifndef ETC_ATTN_SLOTS
#define ETC_ATTN_SLOTS 2
#endif
#ifndef ETC_ATTN_EVICT_FIRST
#define ETC_ATTN_EVICT_FIRST 1
#endif
#ifndef ETC_ATTN_MMA
#define ETC_ATTN_MMA 1
#endif
// ETC_ATTN_WARPS: the most query heads a cache head (G) that take the form of independent
// warps (attn_head_warps), for calls with 16-byte rows and at most 32 query-head elements a
// lane (G * 16 / sizeof(K) <= 32: G <= 4 for 16-bit caches); 0: none (the staged and
// tensor-core forms throughout). Default 2: on an H200 at positions 511 (etc-run --bench 20,
// tools/gpu_ab.sh; docs/benchmarks.md, session 42) Qwen3-0.6B (G = 2, whose tensor-core
// products leave 6 of 8 columns idle) was 11.5% faster at B = 128 and 1.8% at B = 16, 3.2%
// slower at B = 1; Llama-3.2-1B (G = 4) 9.5 / 13.0 / 14.6% slower at B = 1 / 16 / 128 than on
// tensor cores. ETC_ATTN_WARP_STEPS: the row steps of a warp whose K and V rows are in flight
// together.
#ifndef ETC_ATTN_WARPS
#define ETC_ATTN_WARPS 2
#endif
#ifndef ETC_ATTN_WARP_STEPS
#define ETC_ATTN_WARP_STEPS 8
#endif
// ETC_ATTN_MMA_WARPS=1 (the default): calls that admit tensor cores (attn_mma: 16-bit q and
// caches, D a multiple of 16 from 64, ETC_ATTN_MMA_MIN_G to 8 query heads a cache head) with
// 16-byte rows take the tensor-core form of independent warps (attn_head_mma_warps): each warp
// copies its own 16-row tiles into a ring of ETC_ATTN_WARP_SLOTS tiles of its own and never
// waits for another warp until the end. 0: the staged forms (attn_head_staged, attn_heads_mma)
// and the FMA form of independent warps where ETC_ATTN_WARPS admits it. With
// ETC_INLINE_ATTENTION=1, H200, positions 511, etc-run --bench 20 against both 0: Llama-3.2-1B
// -2.7 / -10.4% at B = 1 / 128, Qwen3-0.6B -8.6 / -5.0% (docs/benchmarks.md, session 44; session
// 43 -2.5% and -4.8% at B = 16). Behind the op function's call (ETC_INLINE_ATTENTION=0) the form
// was level with the staged one for Llama and slower than the FMA warps for Qwen3.
#ifndef ETC_ATTN_MMA_WARPS
#define ETC_ATTN_MMA_WARPS 1
#endif
#ifndef ETC_ATTN_WARP_SLOTS
#define ETC_ATTN_WARP_SLOTS 2
#endif
static_assert(ETC_ATTN_WARP_SLOTS >= 1, "ETC_ATTN_WARP_SLOTS must be at least 1");
// ETC_INLINE_ATTENTION=1: etcc's generated tasks call attention_decode in the task function
// itself rather than through the shared __noinline__ op function (emit_cuda.cpp). In
// tools/bench_attn_warps.cu that call (hdr-call against header) cost the tensor-core form of
// independent warps about 10% of its stream; in a megakernel of one layer's attention alone at
// B = 128 the form in the task took 63.2 us (Llama-3.2-1B) and 93.4 us (Qwen3-0.6B), behind the
// call 88.0 and 136.8, and the staged form 84.3 and 136.6 (docs/benchmarks.md, session 43).
// Default 1; 0 keeps the call (a smaller task function).
#ifndef ETC_INLINE_ATTENTION
#define ETC_INLINE_ATTENTION 1
#endif
// The fewest query heads a cache head for the tensor-core form (at most 8: the n8 side of its
// products); below 4 a short call still takes the FMA form (attn_mma_min_rows).
#ifndef ETC_ATTN_MMA_MIN_G
#define ETC_ATTN_MMA_MIN_G 2
#endif
static_assert(ETC_ATTN_MMA_MIN_G >= 1 && ETC_ATTN_MMA_MIN_G <= 8, "ETC_ATTN_MMA_MIN_G must be 1 to 8");
// The K bytes of a block where the call's shape does not admit tensor cores (attn_mma_shape:
// a single query head or more than 8 a cache head, D not a multiple of 16 or below 64). Measured
// when Qwen3-0.6B's attention (G = 2) took the FMA form: H200, decode at positions 511, etc-run
// --bench 20, 32 against 16: B = 1 level, B = 16 / 64 / 128 -2.7 / -4.3 / -6.7% (docs/
// benchmarks.md, session 38; session 37: -2.5 / -4.8 / -6.1%); 8: +7 to +13%.
#ifndef ETC_ATTN_FMA_BLOCK_KIB
#define ETC_ATTN_FMA_BLOCK_KIB 32
#endif
// The slots of the ring where the call's shape does not admit tensor cores. Measured when
// Qwen3-0.6B's attention took the FMA form: H200, decode at positions 511, etc-run --bench 20,
// one slot against two: B = 1 / 16 / 64 / 128 -0.4 / -3.1 / -6.4 / -6.0% (the kernel reserves
// its largest task's shared memory for every task, and two slots of 32 KiB made attention that
// task; docs/benchmarks.md, session 38); the default stays ETC_ATTN_SLOTS's, unchecked on a GPU
// with one.
#ifndef ETC_ATTN_FMA_SLOTS
#define ETC_ATTN_FMA_SLOTS ETC_ATTN_SLOTS
#endif
static_assert(ETC_ATTN_SLOTS >= 1 && ETC_ATTN_FMA_SLOTS >= 1,
              "ETC_ATTN_SLOTS and ETC_ATTN_FMA_SLOTS must be at least 1");

// The f32 scratch of one cache head's attention (AttnScratch) before its last array, rounded
// up to 16 bytes; the ring follows it, and the last array (the per-warp partial o of the final
// reduction, used after every block) shares the ring's bytes.
template <int D, int G>
__host__ __device__ constexpr unsigned attention_scratch_bytes() {
  return ((unsigned)sizeof(float) * (G * D + G * kAttnBlock + 4 * G) + 15u) / 16u * 16u;
}

// Whether D and G admit the tensor-core form (attn_mma's shape conditions; the dtypes decide
// the rest at the call).
template <int D, int G>
__host__ __device__ constexpr bool attn_mma_shape() {
  return ETC_ATTN_STAGE != 0 && ETC_ATTN_MMA != 0 && D % 16 == 0 && D >= 64 && G >= ETC_ATTN_MMA_MIN_G && G <= 8;
}
// Whether D and G take the tensor-core form of independent warps where the dtypes admit tensor
// cores (ETC_ATTN_MMA_WARPS), and the bytes of its rings: one for each of the first
// kAttnWarpRings warps (the CTA of etcc's megakernels; further warps take no tiles), each of
// ETC_ATTN_WARP_SLOTS 16-row tiles of K and as many of V (16-bit rows).
template <int D, int G>
__host__ __device__ constexpr bool attn_mma_warps_shape() {
  return ETC_ATTN_MMA_WARPS != 0 && attn_mma_shape<D, G>();
}
constexpr int kAttnWarpRings = 8;
template <int D>
__host__ __device__ constexpr unsigned attn_warp_rings_bytes() {
  return (unsigned)kAttnWarpRings * ETC_ATTN_WARP_SLOTS * 2u * 16u * (unsigned)D * 2u;
}
// The fewest cache rows of a tensor-core block: a 16-row tile for each of 8 warps (the CTA of
// etcc's megakernels), so that no warp idles through a block (the rows of 16-bit caches).
constexpr int kAttnMmaBlockRows = 128;
// The K bytes of a staged block (as many of V follow) and the ring's slots: ETC_ATTN_BLOCK_KIB
// (at least kAttnMmaBlockRows rows) and ETC_ATTN_SLOTS where the shape admits tensor cores, else
// ETC_ATTN_FMA_BLOCK_KIB and ETC_ATTN_FMA_SLOTS. Every use goes through these functions of D and
// G, so the ring's size and its slots agree whichever form a call's dtypes and length pick.
template <int D, int G>
__host__ __device__ constexpr unsigned attn_stage_bytes() {
  constexpr unsigned floor = (unsigned)(kAttnMmaBlockRows * D * 2);
  return !attn_mma_shape<D, G>()                      ? ETC_ATTN_FMA_BLOCK_KIB * 1024u
         : ETC_ATTN_BLOCK_KIB * 1024u >= floor ? ETC_ATTN_BLOCK_KIB * 1024u
                                               : floor;
}
template <int D, int G>
__host__ __device__ constexpr int attn_slots() {
  return attn_mma_shape<D, G>() ? ETC_ATTN_SLOTS : ETC_ATTN_FMA_SLOTS;
}
// The ring's bytes (where the 16-byte path stages rows: ETC_ATTN_STAGE), and the per-warp
// partial o of the final reduction, which shares them except in the tensor-core form over
// several cache heads (attn_heads_mma), whose next head's rows are in flight while a head's
// reduction runs: that one follows the ring.
// Where every 16-byte call of a D and G takes the independent-warps form (attn_head_warps: G <=
// ETC_ATTN_WARPS and G * PE <= 32, caches f32, f16 or bf16, so G <= 4 is enough), no ring is
// reserved.
// Where the shape takes the tensor-core form of independent warps (attn_mma_warps_shape), the
// warps' rings (kAttnWarpRings of them) are reserved too: a call whose dtypes do not admit tensor
// cores takes another form.
template <int D, int G>
__host__ __device__ constexpr unsigned attention_ring_bytes() {
  constexpr unsigned staged =
      ETC_ATTN_STAGE != 0 && !(G <= ETC_ATTN_WARPS && G <= 4) ? 2u * (unsigned)attn_slots<D, G>() * attn_stage_bytes<D, G>() : 0u;
  constexpr unsigned warps = attn_mma_warps_shape<D, G>() ? attn_warp_rings_bytes<D>() : 0u;
  return staged > warps ? staged : warps;
}
template <int D, int G>
__host__ __device__ constexpr unsigned attention_red_bytes() {
  return (unsigned)sizeof(float) * kAttnMaxWarps * G * D;
}
// The shared memory of a call over HK cache heads (HK > 1: room for attn_heads_mma's reduction
// after the ring; a call given less takes the heads one after another).
template <int D, int G, int HK = 1>
__host__ __device__ constexpr unsigned attention_decode_smem_bytes() {
  constexpr unsigned red = attention_red_bytes<D, G>(), ring = attention_ring_bytes<D, G>();
  return attention_scratch_bytes<D, G>() + (HK > 1 && attn_mma_shape<D, G>() ? ring + red : red > ring ? red : ring);
}

namespace detail {

// How a warp reads cache rows: with Vec, L lanes read a row with one 16-byte load each (PE
// elements, lane c holds elements c*PE ..); otherwise the warp reads a row with scalar loads,
// lane c holding elements c, c+32, ... The warp covers R = 32 / L rows at a time.
template <int D, bool kVec, class TK>
struct AttnLanes {
  static constexpr int PE = kVec ? 16 / (int)sizeof(TK) : (D + 31) / 32;
  static constexpr int L = kVec ? D / PE : 32;
  static constexpr int R = 32 / L;
  static __device__ __forceinline__ int elem(int c, int e) { return kVec ? c * PE + e : c + 32 * e; }
};

template <int D, bool kVec, class TK>
__device__ __forceinline__ void attn_load_row(TK* row, long long cs, int c, bool valid, float (&out)[AttnLanes<D, kVec, bare_t<TK>>::PE]) {
  using K = bare_t<TK>;
  using Ln = AttnLanes<D, kVec, K>;
  if constexpr (kVec) {
    if (valid) {
      Vec<K, Ln::PE> v = ldv<Ln::PE>(row + c * Ln::PE);
#pragma unroll
      for (int e = 0; e < Ln::PE; ++e) out[e] = to_f32(v.v[e]);
    } else {
#pragma unroll
      for (int e = 0; e < Ln::PE; ++e) out[e] = 0.0f;
    }
  } else {
#pragma unroll
    for (int e = 0; e < Ln::PE; ++e) {
      const int d = Ln::elem(c, e);
      out[e] = valid && d < D ? to_f32(ld(row + d * cs)) : 0.0f;
    }
  }
}

// The rows of a warp's kAttnRowBatch row steps from jb0 (`step` rows apart; row(i) gives the
// first element of position i, null where a paged row is missing), all loaded before any is
// used; rows past nb read as zeros.
template <int D, bool kVec, bool kMayMiss, class RowAt, int PE>
__device__ __forceinline__ void attn_load_steps(RowAt row, long long b0, int jb0, int step, int nb, int rg, long long cs,
                                                int c, float (&out)[kAttnRowBatch][PE]) {
#pragma unroll
  for (int u = 0; u < kAttnRowBatch; ++u) {
    const int j = jb0 + u * step + rg;
    auto* r = j < nb ? row(b0 + j) : nullptr;
    attn_load_row<D, kVec>(r, cs, c, j < nb && (!kMayMiss || r), out[u]);
  }
}

// Where position i of one cache head is: a contiguous cache (row i), or a page pool through a
// page table (row i % page of page table[i / page]). k(i) and v(i) give the row's first
// element; a paged row whose page id is outside the pool is null (read as zeros).
template <class TK, class TV>
struct AttnDenseRows {
  using KT = TK;
  using VT = TV;
  static constexpr bool kMayMiss = false;
  TK* kp;
  long long krs;
  TV* vp;
  long long vrs;
  __device__ __forceinline__ TK* k(long long i) const { return kp + i * krs; }
  __device__ __forceinline__ TV* v(long long i) const { return vp + i * vrs; }
  // Row i's K and V (the copies into shared memory, attn_stage_chunk and attn_warp_tile):
  // always there.
  __device__ __forceinline__ bool kv(long long i, TK*& k_row, TV*& v_row) const {
    k_row = k(i);
    v_row = v(i);
    return true;
  }
};

template <class TK, class TV, class TT>
struct AttnPagedRows {
  using KT = TK;
  using VT = TV;
  static constexpr bool kMayMiss = true;
  TK* kp;
  long long kps, krs;  // page and row strides
  TV* vp;
  long long vps, vrs;
  TT* table;
  long long ts;
  unsigned page;       // rows per page (positions fit 32 bits: 32-bit division)
  long long pages;     // pages in the pool
  long long first;     // the position that i = 0 is (a split-KV part's first)
  __device__ __forceinline__ long long slot(long long i, long long& row) const {
    const unsigned u = (unsigned)(i + first), j = u / page;
    row = u - j * page;
    const long long id = ld(table + j * ts);
    return id >= 0 && id < pages ? id : -1;
  }
  __device__ __forceinline__ TK* k(long long i) const {
    long long r;
    const long long id = slot(i, r);
    return id < 0 ? nullptr : kp + id * kps + r * krs;
  }
  __device__ __forceinline__ TV* v(long long i) const {
    long long r;
    const long long id = slot(i, r);
    return id < 0 ? nullptr : vp + id * vps + r * vrs;
  }
  // Row i's K and V from one look-up of its page (attn_stage_chunk, attn_warp_tile); a missing
  // page gives false and the pools' first rows, an address to copy no bytes from.
  __device__ __forceinline__ bool kv(long long i, TK*& k_row, TV*& v_row) const {
    long long r;
    const long long id = slot(i, r);
    const long long at = id < 0 ? 0 : id;
    k_row = kp + at * kps + (id < 0 ? 0 : r * krs);
    v_row = vp + at * vps + (id < 0 ? 0 : r * vrs);
    return id >= 0;
  }
};

// Shared memory of one cache head's attention: the scaled query heads, a block's scores, the
// running maximum, sum and rescale factor per head, and the per-warp partial o for the final
// reduction (over the staged path's ring: see attention_scratch_bytes).
template <int D, int G>
struct AttnScratch {
  float* q;    // [G * D]
  float* s;    // [G][kAttnBlock]
  float* m;    // running maximum per head
  float* l;    // running sum of exp(s - m)
  float* a;    // rescale factor of the current block
  float* red;  // [warps][G][D]
  __device__ explicit AttnScratch(const Ctx& ctx)
      : q(reinterpret_cast<float*>(ctx.smem)),
        s(q + G * D),
        m(s + G * kAttnBlock),
        l(m + G),
        a(l + G),
        red(reinterpret_cast<float*>(ctx.smem + attention_scratch_bytes<D, G>())) {}

  // The query heads (scaled) in, the running maximum and sum reset; no barrier.
  template <class TQ>
  __device__ void start(TQ* qp, long long qs, float scale) const {
    const int tid = threadIdx.x, nt = blockDim.x;
    for (int i = tid; i < G * D; i += nt) q[i] = to_f32(ld(qp + i * qs)) * scale;
    if (tid < G) m[tid] = __int_as_float(0xff800000), l[tid] = 0.0f;
  }

  // After a block's nb scores are in s (and a barrier): the softmax statistics, a warp per head
  // (the block's maximum, its probabilities in place, the running sum rescaled to the new
  // maximum, the block's rescale factor in a), then a barrier.
  __device__ void block_stats(int nb) const {
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, nw = blockDim.x >> 5;
    for (int h = warp; h < G; h += nw) {
      float mx = __int_as_float(0xff800000);
      for (int j = lane; j < nb; j += 32) mx = fmaxf(mx, s[h * kAttnBlock + j]);
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
      const float m_new = fmaxf(m[h], mx);
      float sum = 0.0f;
      for (int j = lane; j < nb; j += 32) {
        const float p = __expf(s[h * kAttnBlock + j] - m_new);
        s[h * kAttnBlock + j] = p;
        sum += p;
      }
      sum = warp_sum(sum);
      if (lane == 0) {
        const float alpha = __expf(m[h] - m_new);  // 0 for the first block (m = -inf)
        a[h] = alpha;
        l[h] = l[h] * alpha + sum;
        m[h] = m_new;
      }
    }
    __syncthreads();
  }

  // block_stats, and acc rescaled by the block's factor.
  template <int PE>
  __device__ void softmax_block(int nb, float (&acc)[G][PE]) const {
    block_stats(nb);
#pragma unroll
    for (int h = 0; h < G; ++h) {
      const float alpha = a[h];
#pragma unroll
      for (int e = 0; e < PE; ++e) acc[h][e] *= alpha;
    }
  }

  // o = acc summed over the warp's row groups, then over the warps, divided by the running
  // sum (0 for no positions); lse = m + log(l) (-inf for none). Ln: the lanes' layout.
  template <class Ln, bool kVec, class TO>
  __device__ void finish(float (&acc)[G][Ln::PE], TO* op, long long os, float* lsep, long long ls) const {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int c = lane % Ln::L, rg = lane / Ln::L;
#pragma unroll
    for (int h = 0; h < G; ++h)
#pragma unroll
      for (int e = 0; e < Ln::PE; ++e)
#pragma unroll
        for (int o = Ln::L; o < 32; o <<= 1) acc[h][e] += __shfl_xor_sync(0xffffffffu, acc[h][e], o);
    if (rg == 0) {
#pragma unroll
      for (int h = 0; h < G; ++h)
#pragma unroll
        for (int e = 0; e < Ln::PE; ++e) {
          const int d = Ln::elem(c, e);
          if (kVec || d < D) red[(warp * G + h) * D + d] = acc[h][e];
        }
    }
    finish_red(op, os, lsep, ls);
  }

  // After every warp's partial o is in red: o = their sum divided by the running sum (0 for no
  // positions), lse = m + log(l) (-inf for none). Begins and ends with a barrier.
  template <class TO>
  __device__ void finish_red(TO* op, long long os, float* lsep, long long ls) const {
    const int tid = threadIdx.x, nt = blockDim.x, nw = nt >> 5;
    __syncthreads();
    for (int i = tid; i < G * D; i += nt) {
      const int h = i / D, d = i % D;
      float sum = 0.0f;
      for (int w = 0; w < nw; ++w) sum += red[(w * G + h) * D + d];
      op[i * os] = from_f32<TO>(l[h] > 0.0f ? sum / l[h] : 0.0f);
    }
    if (lsep && tid < G) lsep[tid * ls] = l[tid] > 0.0f ? m[tid] + logf(l[tid]) : __int_as_float(0xff800000);
    __syncthreads();
  }
};

// One cache head and its G query heads: online softmax over blocks of kAttnBlock positions.
template <int D, int G, bool kVec, class TQ, class Rows, class TO>
__device__ void attn_head(const Ctx& ctx, TQ* qp, long long qs, const Rows& rows, long long kcs, long long vcs,
                          long long n, float scale, TO* op, long long os, float* lsep, long long ls) {
  using TK = typename Rows::KT;
  using TV = typename Rows::VT;
  using Ln = AttnLanes<D, kVec, bare_t<TK>>;
  static_assert(Ln::L * Ln::R == 32, "attention_decode: lanes per row must divide 32");
  const AttnScratch<D, G> sc(ctx);
  float* q_s = sc.q;
  float* s_s = sc.s;
  const int tid = threadIdx.x, nt = blockDim.x, lane = tid & 31, warp = tid >> 5, nw = nt >> 5;
  const int c = lane % Ln::L, rg = lane / Ln::L;
  sc.start(qp, qs, scale);
  __syncthreads();
  float acc[G][Ln::PE];
#pragma unroll
  for (int h = 0; h < G; ++h)
#pragma unroll
    for (int e = 0; e < Ln::PE; ++e) acc[h][e] = 0.0f;

  for (long long b0 = 0; b0 < n; b0 += kAttnBlock) {
    const int nb = (int)(n - b0 < kAttnBlock ? n - b0 : kAttnBlock);
    // Scores: the L lanes of a row each take PE elements of the dot product. A warp loads the
    // rows of U steps before using any: one step at a time was a round trip to memory per 32
    // rows of the CTA, 8 in a row per block, the most of a decode step's attention task.
    for (int jb0 = warp * Ln::R; jb0 < nb; jb0 += nw * Ln::R * kAttnRowBatch) {
      float kv[kAttnRowBatch][Ln::PE];
      attn_load_steps<D, kVec, Rows::kMayMiss>([&](long long i) { return rows.k(i); }, b0, jb0, nw * Ln::R, nb, rg,
                                                 kcs, c, kv);
#pragma unroll
      for (int u = 0; u < kAttnRowBatch; ++u) {
        const int j = jb0 + u * nw * Ln::R + rg;
#pragma unroll
        for (int h = 0; h < G; ++h) {
          float part = 0.0f;
#pragma unroll
          for (int e = 0; e < Ln::PE; ++e) {
            const int d = Ln::elem(c, e);
            if (kVec || d < D) part += q_s[h * D + d] * kv[u][e];
          }
#pragma unroll
          for (int o = Ln::L / 2; o > 0; o >>= 1) part += __shfl_xor_sync(0xffffffffu, part, o);
          if (j < nb && c == 0) s_s[h * kAttnBlock + j] = part;
        }
      }
    }
    __syncthreads();
    sc.softmax_block(nb, acc);
    for (int jb0 = warp * Ln::R; jb0 < nb; jb0 += nw * Ln::R * kAttnRowBatch) {
      float vv[kAttnRowBatch][Ln::PE];
      attn_load_steps<D, kVec, Rows::kMayMiss>([&](long long i) { return rows.v(i); }, b0, jb0, nw * Ln::R, nb, rg,
                                                 vcs, c, vv);
#pragma unroll
      for (int u = 0; u < kAttnRowBatch; ++u) {  // in row order, as one step at a time would
        const int j = jb0 + u * nw * Ln::R + rg;
        if (j >= nb) continue;
#pragma unroll
        for (int h = 0; h < G; ++h) {
          const float p = s_s[h * kAttnBlock + j];
#pragma unroll
          for (int e = 0; e < Ln::PE; ++e) acc[h][e] += p * vv[u][e];
        }
      }
    }
    __syncthreads();  // s_s is rewritten by the next block
  }
  sc.template finish<Ln, kVec>(acc, op, os, lsep, ls);
}

// Positions per block of the staged path: attn_stage_bytes of K rows, at most kAttnBlock.
template <int D, int G, class K>
__host__ __device__ constexpr int attn_stage_rows() {
  return (int)(attn_stage_bytes<D, G>() / (D * sizeof(K))) < kAttnBlock ? (int)(attn_stage_bytes<D, G>() / (D * sizeof(K)))
                                                                        : kAttnBlock;
}

// Whether the staged path computes scores and o with tensor cores (mma.sync m16n8k16): q and
// the caches of one 16-bit dtype, rows of at least 8 16-byte chunks (the ring's swizzle),
// ETC_ATTN_MMA_MIN_G to 8 query heads a cache head (the n8 side of the products). Llama-3.2-1B
// (G = 4) is faster with them at every B (H100, see the knobs above). Qwen3-0.6B (G = 2: 6 of
// the 8 columns idle) was slower in blocks of 16 KiB (64 of its rows: half the warps idle);
// in blocks of 128 rows (kAttnMmaBlockRows), H200, etc-run --bench 20 at positions 511 against
// the FMA form: B = 1 / 16 / 64 / 128 +5.1 / -4.0 / -10.6 / -10.9% with every call on tensor
// cores; +2.2 / -3.6 / -9.4 / -10.0% with calls shorter than a block in the FMA form
// (attn_mma_min_rows: B = 1's split-KV parts of 64 positions; why B = 1 still pays 2.2%, its
// attention running the same FMA code, is not known), and -29.1% at B = 128 in tasks of
// several heads (heads_per_task = 0; docs/benchmarks.md, session 39).
template <int D, int G, class TQ, class K>
__host__ __device__ constexpr bool attn_mma() {
  return attn_mma_shape<D, G>() && sizeof(K) == 2 && same_v<bare_t<TQ>, K>;
}
// The fewest positions of a call that takes the tensor-core form where attn_mma admits it: with
// fewer than 4 query heads a cache head, one block's (shorter calls, such as B = 1's split-KV
// parts of 64 positions, leave warps idle and would pay 8 columns for G), else none.
template <int D, int G, class K>
__host__ __device__ constexpr long long attn_mma_min_rows() {
  return G < 4 ? attn_stage_rows<D, G, K>() : 0;
}

// The bits of a 16-bit value, and two of them as the lower and upper halves of a register (an
// mma operand pair, the lower index first).
template <class K>
__device__ __forceinline__ unsigned attn_bits(K x) {
  return *reinterpret_cast<const unsigned short*>(&x);
}
template <class K>
__device__ __forceinline__ unsigned attn_pack(float lo, float hi) {
  return attn_bits(from_f32<K>(lo)) | attn_bits(from_f32<K>(hi)) << 16;
}

// The ring of NS slots (a block's K rows, then as many V rows, SB bytes each) over a part of n
// positions, SR a block.
template <class K, int SR, unsigned SB, int NS>
struct AttnRing {
  unsigned char* base;
  long long n;
  __device__ __forceinline__ long long blocks() const { return n > 0 ? (n + SR - 1) / SR : 0; }
  __device__ __forceinline__ int rows_in(long long blk) const { return (int)(n - blk * SR < SR ? n - blk * SR : SR); }
  __device__ __forceinline__ K* slot(long long blk, bool v) const {
    return reinterpret_cast<K*>(base + (unsigned)(blk % NS) * 2u * SB + (v ? SB : 0u));
  }
};

// The L2 policy of a staged cache row's copies (evict-first unless ETC_ATTN_EVICT_FIRST=0).
__device__ __forceinline__ unsigned long long attn_row_policy() {
  if constexpr (ETC_ATTN_EVICT_FIRST != 0) return l2_evict_first();
  return 0;
}

// A 16-byte cp.async of `bytes` bytes (the rest zeros), with attn_row_policy's hint where
// ETC_ATTN_EVICT_FIRST asks for it. A zero fill copies no bytes, but its source must still be a
// 16-byte aligned address in the cache or pool (the 16-byte path checked their bases).
__device__ __forceinline__ void attn_copy16(void* dst, const void* src, unsigned bytes, unsigned long long policy) {
  if constexpr (ETC_ATTN_EVICT_FIRST != 0)
    cp_async16_hint(dst, src, bytes, policy);
  else
    cp_async16(dst, src, bytes);
}
// Chunk cc of row i's K (v false) or V to dst, or zeros where `want` is false or the row is
// missing (a paged row whose page is not in the pool). No null pointer stands for a missing row:
// the tensor-core form of independent warps crashed with one (attn_warp_tile). i must be a row
// of the part whatever `want` says (a row past the part could be past the page table).
template <class K, class Rows>
__device__ __forceinline__ void attn_stage_chunk(K* dst, const Rows& rows, long long i, bool want, bool v, int cc,
                                                 unsigned long long policy) {
  typename Rows::KT* k_row;
  typename Rows::VT* v_row;
  const bool has = rows.kv(i, k_row, v_row) && want;
  const K* const row = v ? (const K*)v_row : (const K*)k_row;
  attn_copy16(dst, row + cc * (16 / (int)sizeof(K)), has ? 16u : 0u, policy);
}

// The tensor-core forms' pieces (attn_heads_mma, attn_head_mma_warps). q^T's fragments for each
// 16-deep k step (head lane / 4, d 2 * (lane % 4) (+1) (+8); zero for heads past G) and an empty
// online softmax: m -inf, l and o^T zero.
template <int D, int G, class TQ>
__device__ __forceinline__ void attn_mma_start(TQ* qp, long long qs, unsigned (&qf)[D / 16][2], float (&m)[2],
                                               float (&l)[2], float (&ot)[D / 16][4]) {
  const int lane = threadIdx.x & 31, h = lane >> 2;
#pragma unroll
  for (int t = 0; t < D / 16; ++t)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int d = t * 16 + half * 8 + (lane & 3) * 2;
      qf[t][half] = h < G ? attn_bits(ld(qp + (h * D + d) * qs)) | attn_bits(ld(qp + (h * D + d + 1) * qs)) << 16 : 0u;
    }
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) m[hh] = __int_as_float(0xff800000), l[hh] = 0.0f;
#pragma unroll
  for (int t = 0; t < D / 16; ++t)
#pragma unroll
    for (int e = 0; e < 4; ++e) ot[t][e] = 0.0f;
}
// Where chunk cc of row r of a staged tile or block is: rows D elements apart, each row's 16-byte
// chunks XOR-swizzled by the row (what ldmatrix reads without bank conflicts).
template <int D, class K>
__device__ __forceinline__ int attn_mma_at(int r, int cc) {
  return r * D + (cc ^ (r & 7)) * (16 / (int)sizeof(K));
}
// One 16-row tile of K and V in shared memory (k_t, v_t its first rows; rows from `valid` on are
// masked) into a warp's online softmax: this lane's two heads (2 * (lane % 4) and the next),
// their running maximum m, this lane's share of the running sum l, and o^T's fragments (d tile,
// then the m16n8 accumulator: d = lane / 4 (+8), heads 2 * (lane % 4) (+1)). valid >= 1.
template <int D, class K>
__device__ __forceinline__ void attn_mma_tile(const K* k_t, const K* v_t, int valid, const unsigned (&qf)[D / 16][2],
                                              float scale, float (&m)[2], float (&l)[2], float (&ot)[D / 16][4]) {
  constexpr int DT = D / 16;
  const int lane = threadIdx.x & 31;
  const float ninf = __int_as_float(0xff800000);
  float s[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  {
    const int r = lane & 15;
#pragma unroll
    for (int k = 0; k < DT; ++k) {
      unsigned af[4];
      ldsm_x4(af, k_t + attn_mma_at<D, K>(r, 2 * k + (lane >> 4)));
      mma16816<K>(s, af, qf[k][0], qf[k][1]);
    }
  }
  // s[e]: row lane / 4 (+8 for e >= 2), head 2 * (lane % 4) + e % 2.
  const int j = lane >> 2;
#pragma unroll
  for (int e = 0; e < 4; ++e) s[e] = j + (e >> 1) * 8 < valid ? s[e] * scale : ninf;
  float p[4];
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    float mx = fmaxf(s[hh], s[hh + 2]);
#pragma unroll
    for (int o = 4; o < 32; o <<= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    const float m_new = fmaxf(m[hh], mx);  // not -inf (finite scores): a tile has a position
    const float alpha = __expf(m[hh] - m_new);
    p[hh] = __expf(s[hh] - m_new);
    p[hh + 2] = __expf(s[hh + 2] - m_new);
    l[hh] = l[hh] * alpha + p[hh] + p[hh + 2];
    m[hh] = m_new;
#pragma unroll
    for (int t2 = 0; t2 < DT; ++t2) {
      ot[t2][hh] *= alpha;
      ot[t2][hh + 2] *= alpha;
    }
  }
  float rest[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) rest[e] = p[e] - to_f32(from_f32<K>(p[e]));
  // p^T as the B operand (row 2 * (lane % 4) (+1) (+8), head lane / 4).
  const unsigned hi0 = movmatrix_t(attn_pack<K>(p[0], p[1])), hi1 = movmatrix_t(attn_pack<K>(p[2], p[3]));
  const unsigned lo0 = movmatrix_t(attn_pack<K>(rest[0], rest[1])), lo1 = movmatrix_t(attn_pack<K>(rest[2], rest[3]));
  const int mi = lane >> 3, r = (lane & 7) + (mi >> 1) * 8;
#pragma unroll
  for (int dt = 0; dt < DT; ++dt) {
    unsigned af[4];
    ldsm_x4_t(af, v_t + attn_mma_at<D, K>(r, 2 * dt + (mi & 1)));
    mma16816<K>(ot[dt], af, hi0, hi1);
    mma16816<K>(ot[dt], af, lo0, lo1);
  }
}
// The warps' online softmaxes combined, once, at the end: l summed over the lanes of a head, each
// warp's (max, sum) per head to wm and wl ([warps][G] each) and its o^T fragments to red
// ([warps][G][D]), then one pass over G * D that rescales by each warp's max. A warp without
// positions has m = -inf and l = 0, and weighs nothing. One barrier each side.
template <int D, int G, class TO>
__device__ void attn_mma_finish(float* wm, float* wl, float* red, float (&m)[2], float (&l)[2], float (&ot)[D / 16][4],
                                TO* op, long long os, float* lsep, long long ls) {
  const int tid = threadIdx.x, nt = blockDim.x, lane = tid & 31, warp = tid >> 5, nw = nt >> 5;
  const float ninf = __int_as_float(0xff800000);
#pragma unroll
  for (int hh = 0; hh < 2; ++hh)
#pragma unroll
    for (int o = 4; o < 32; o <<= 1) l[hh] += __shfl_xor_sync(0xffffffffu, l[hh], o);
  const int h0 = (lane & 3) * 2;
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    const int h = h0 + hh;
    if (h >= G) continue;
    if (lane < 4) {
      wm[warp * G + h] = m[hh];
      wl[warp * G + h] = l[hh];
    }
#pragma unroll
    for (int dt = 0; dt < D / 16; ++dt)
#pragma unroll
      for (int e2 = 0; e2 < 2; ++e2) red[(warp * G + h) * D + dt * 16 + (lane >> 2) + e2 * 8] = ot[dt][hh + 2 * e2];
  }
  __syncthreads();
  for (int i = tid; i < G * D; i += nt) {
    const int h = i / D, d = i - h * D;
    float mx = ninf;
    for (int w = 0; w < nw; ++w) mx = fmaxf(mx, wm[w * G + h]);
    float sum = 0.0f, o = 0.0f;
    if (mx != ninf)
      for (int w = 0; w < nw; ++w) {
        const float f = __expf(wm[w * G + h] - mx);  // 0 for a warp without positions
        sum += f * wl[w * G + h];
        o += f * red[(w * G + h) * D + d];
      }
    op[i * os] = from_f32<TO>(sum > 0.0f ? o / sum : 0.0f);
    if (lsep && d == 0) lsep[h * ls] = sum > 0.0f ? mx + logf(sum) : ninf;
  }
  __syncthreads();
}

// The tensor-core form of attn_head_staged (attn_mma): each warp takes 16-position tiles of a
// block and keeps its own online softmax. Scores are K (16 x D, ldmatrix) times q^T (D x 8
// heads, exact 16-bit q, scaled after); a lane's accumulator holds two heads' scores, the
// same two heads whose o^T it accumulates, so the tile's maximum per head is three shuffles
// and the rescale of o stays in registers. p goes from the scores' accumulator layout to the
// next product's operand layout with movmatrix (an 8 x 8 transpose), split into a 16-bit high
// part and the 16-bit rest (two products) so that p keeps about 16 bits (bf16; f16's range
// drops the parts of a p below 2^-24). o^T (D x 8 heads) accumulates V^T (ldmatrix.trans)
// times p^T. A block's K and V are one cp.async group; per block, one barrier after its wait
// and one before its slot is requested again. The warps' (max, sum, o) are combined once, at
// the end. Rows past the block's end are zero-filled to the tile and masked to -inf.
//
// Over hk cache heads of one request (attn_heads_mma): the heads' blocks go through the one
// ring in turn, so the first blocks of head g + 1 are in flight while head g's last block and
// its reduction run (the reduction then has bytes of its own, after the ring). Each head's
// products and sums are those of a call for it alone: the same bits. head(g) gives head g's
// query pointer, rows, output pointer and lse pointer (AttnHeadMma).
template <class TQ, class Rows, class TO>
struct AttnHeadMma {
  TQ* qp;
  Rows rows;
  TO* op;
  float* lsep;
};
template <int D, int G, bool kMulti, class TQ, class TO, class Head>
__device__ void attn_heads_mma(const Ctx& ctx, long long heads, long long qs, long long n, float scale, long long os,
                               long long ls, Head head) {
  const long long hk = kMulti ? heads : 1;  // one head: the loops below fold away
  using Rows = decltype(head(0LL).rows);
  using K = bare_t<typename Rows::KT>;
  static_assert(same_v<bare_t<typename Rows::VT>, K>, "attention_decode: k and v of one dtype (V is read as K)");
  constexpr int PE = 16 / (int)sizeof(K), CPR = D / PE;  // 16-byte chunks per row
  constexpr int SR = attn_stage_rows<D, G, K>(), NS = attn_slots<D, G>(), DT = D / 16;
  static_assert(SR % 16 == 0 && CPR >= 8, "attention_decode: the tensor-core form needs blocks of whole 16-row tiles");
  static_assert(G >= 1 && G <= 8, "attention_decode: the tensor-core form has 8 head columns");
  const AttnRing<K, SR, attn_stage_bytes<D, G>(), NS> ring{ctx.smem + attention_scratch_bytes<D, G>(), n};
  const int tid = threadIdx.x, nt = blockDim.x, warp = tid >> 5, nw = nt >> 5;
  const long long nblk = ring.blocks(), total = hk * nblk;  // blocks a head, and of all heads
  auto at = [](int r, int cc) { return attn_mma_at<D, K>(r, cc); };
  // Block gb of the heads' sequence (head gb / nblk's block gb % nblk): its K and V rows into
  // its slot as one group, zeros up to the next 16 rows (and for a missing paged row); an empty
  // group past the last block keeps the wait arithmetic uniform.
  auto request = [&](long long gb) {
    if (gb < total) {
      const long long hd = kMulti ? gb / nblk : 0, blk = gb - hd * nblk;
      const Rows rows = head(hd).rows;
      K* dk = ring.slot(gb, false);
      K* dv = ring.slot(gb, true);
      const long long b0 = blk * SR;
      const int nb = ring.rows_in(blk), nz = (nb + 15) / 16 * 16;
      const unsigned long long policy = attn_row_policy();
      bool done = false;
      if constexpr (!Rows::kMayMiss) {
        // Contiguous rows: a thread's chunks are one column, a multiple of 8 rows apart (its
        // swizzled offset the same for all), so its pointers step instead of each chunk's row,
        // source and slot being worked out from its index.
        const int step = nt / CPR;
        if (nt % CPR == 0 && step % 8 == 0) {
          const int r0 = tid / CPR, cc = tid - r0 * CPR;
          K* d = dk + at(r0, cc);
          K* e = dv + at(r0, cc);
          const K* sk = rows.k(b0 + r0);
          const K* sv = rows.v(b0 + r0);
          for (int r = r0; r < nz; r += step, d += step * D, e += step * D, sk += step * rows.krs, sv += step * rows.vrs) {
            // A row past the block copies no bytes from the head's first row.
            attn_copy16(d, (r < nb ? sk : (const K*)rows.kp) + cc * PE, r < nb ? 16u : 0u, policy);
            attn_copy16(e, (r < nb ? sv : (const K*)rows.vp) + cc * PE, r < nb ? 16u : 0u, policy);
          }
          done = true;
        }
      }
      if (!done)
        for (int idx = tid; idx < 2 * nz * CPR; idx += nt) {
          const bool v = idx >= nz * CPR;
          const int i = v ? idx - nz * CPR : idx, r = i / CPR, cc = i - r * CPR;
          attn_stage_chunk((v ? dv : dk) + at(r, cc), rows, b0 + (r < nb ? r : 0), r < nb, v, cc, policy);
        }
    }
    cp_async_commit();
  };
#pragma unroll 1
  for (int b = 0; b < NS; ++b) request(b);
  // [warps][G][D]: over the ring for one head (only empty groups are pending past its last
  // block), after it for several.
  float* const red = reinterpret_cast<float*>(kMulti ? ring.base + attention_ring_bytes<D, G>() : ring.base);
#pragma unroll 1
  for (long long hd = 0; hd < hk; ++hd) {
    const AttnHeadMma<TQ, Rows, TO> cur = head(hd);
    TQ* const qp = cur.qp;
    TO* const op = cur.op;
    float* const lsep = cur.lsep;
    // q^T's fragments, and this lane's two heads' online softmax (attn_mma_tile).
    unsigned qf[DT][2];
    float m[2], l[2], ot[DT][4];
    attn_mma_start<D, G>(qp, qs, qf, m, l, ot);

    for (long long blk = 0; blk < nblk; ++blk) {
      const long long gb = hd * nblk + blk;
      const int nb = ring.rows_in(blk);
      const K* k_s = ring.slot(gb, false);
      const K* v_s = ring.slot(gb, true);
      cp_async_wait<NS - 1>();  // this block's rows
      __syncthreads();          // every thread's
      for (int t = warp; t * 16 < nb; t += nw) attn_mma_tile<D, K>(k_s + t * 16 * D, v_s + t * 16 * D, nb - t * 16, qf, scale, m, l, ot);
      __syncthreads();  // the slot is rewritten next
      request(gb + NS);
    }
    // wm, wl: the scratch before the ring.
    float* const wm = reinterpret_cast<float*>(ctx.smem);
    attn_mma_finish<D, G>(wm, wm + kAttnMaxWarps * G, red, m, l, ot, op, os, lsep, ls);
  }
}
template <int D, int G, class TQ, class Rows, class TO>
__device__ void attn_head_mma(const Ctx& ctx, TQ* qp, long long qs, const Rows& rows, long long n, float scale,
                              TO* op, long long os, float* lsep, long long ls) {
  attn_heads_mma<D, G, false, TQ, TO>(ctx, 1, qs, n, scale, os, ls,
                               [&](long long) { return AttnHeadMma<TQ, Rows, TO>{qp, rows, op, lsep}; });
}
// ETC_ATTN_MMA_OUTLINE=1: where a call may take either form (G below 4), the tensor-core form as
// a function of its own rather than inlined beside the FMA form. For measuring whether sharing
// one function body is what costs Qwen3-0.6B 2.2% at B = 1, where only the FMA form runs
// (docs/benchmarks.md, session 39).
#ifndef ETC_ATTN_MMA_OUTLINE
#define ETC_ATTN_MMA_OUTLINE 0
#endif
template <int D, int G, class TQ, class Rows, class TO>
__device__ __noinline__ void attn_head_mma_outlined(const Ctx& ctx, TQ* qp, long long qs, const Rows& rows, long long n,
                                                    float scale, TO* op, long long os, float* lsep, long long ls) {
  attn_head_mma<D, G>(ctx, qp, qs, rows, n, scale, op, os, lsep, ls);
}

// This warp's ring (past the scratch), and the warps that take tiles.
template <int D, int G, class K>
__device__ __forceinline__ K* attn_warp_ring(const Ctx& ctx) {
  return reinterpret_cast<K*>(ctx.smem + attention_scratch_bytes<D, G>()) + (threadIdx.x >> 5) * ETC_ATTN_WARP_SLOTS * 2 * 16 * D;
}
__device__ __forceinline__ int attn_warp_rings() {
  const int nw = blockDim.x >> 5;
  return nw < kAttnWarpRings ? nw : kAttnWarpRings;
}
// Rows [b0, b0 + 16) of K and V into a tile's slot (dk: its K rows, then its V rows), the first
// nb of them copied and the rest zero-filled (as is a missing paged row). A lane's chunks are one
// column (cc), rows r0, r0 + 32 / CPR, ... Without a null pointer: a row past nb copies no bytes
// from row b0 (nb >= 1, so a row of the cache; a row past the cache could be past the page
// table). The form that copied from `ok ? row : nullptr` and tested the pointer for null crashed
// in the megakernel with an illegal address (docs/benchmarks.md, session 44: ptxas scheduled a
// CS2R that zeroes the pointer so that the null test read it before the zero landed), and it
// spent about 410 PTX instructions a tile at Llama-3.2-1B's shape where this one spends 320.
template <int D, class K, class Rows>
__device__ __forceinline__ void attn_warp_tile(K* dk, const Rows& rows, long long b0, int nb, unsigned long long policy) {
  constexpr int PE = 16 / (int)sizeof(K), CPR = D / PE;
  const int lane = threadIdx.x & 31, r0 = lane / CPR, cc = lane - r0 * CPR;
#pragma unroll
  for (int r = r0; r < 16; r += 32 / CPR) {
    const bool ok = r < nb;
    typename Rows::KT* k_row;
    typename Rows::VT* v_row;
    const bool has = rows.kv(b0 + (ok ? r : 0), k_row, v_row) && ok;
    K* const dst = dk + attn_mma_at<D, K>(r, cc);
    attn_copy16(dst, k_row + cc * PE, has ? 16u : 0u, policy);
    attn_copy16(dst + 16 * D, v_row + cc * PE, has ? 16u : 0u, policy);
  }
}
// The tensor-core form of independent warps (ETC_ATTN_MMA_WARPS): the first kAttnWarpRings
// warps take interleaved 16-row tiles (warp w tiles w, w + 8, ...), each copying its tiles' K and
// V rows (cp.async, swizzled for ldmatrix) into a ring of ETC_ATTN_WARP_SLOTS tiles of its own,
// waiting for them with its own cp.async groups and __syncwarp, and running each tile through
// its own online softmax (attn_mma_tile: the products of the staged tensor-core form). No
// barrier until the end (attn_mma_finish, its per-warp o over the rings). The staged form keeps
// the CTA in step through one ring of blocks, a barrier after each block's wait and one before
// its slot is requested again, so one warp's late rows stall all eight. In a grid of its tasks
// alone (tools/bench_attn_warps.cu, H200, B = 128 at 512 positions, copy 4.25 TB/s) the
// hand-written prototype of this form (mma-warp) read the cache at 3.13 TB/s at Llama-3.2-1B's
// shape (D = 64, G = 4) and 3.84 at Qwen3-0.6B's (D = 128, G = 2), this port 2.12 and 2.64,
// the FMA form of independent warps 1.89 and 3.19 (docs/benchmarks.md, session 43); 4 slots a
// warp were slower than 2 (2.64 TB/s in the prototype), and in the Llama-3.2-1B step 6.0 to 6.7%
// slower at B = 64 and 128 (session 59). A task of several cache heads takes them one after
// another through this function; streaming each warp's tiles from one head into the next, and
// two heads at a time in a warp with 4 tiles, were not faster in the step (session 59).
template <int D, int G, class TQ, class Rows, class TO>
__device__ void attn_head_mma_warps(const Ctx& ctx, TQ* qp, long long qs, const Rows& rows, long long n, float scale,
                                    TO* op, long long os, float* lsep, long long ls) {
  using K = bare_t<typename Rows::KT>;
  static_assert(same_v<bare_t<typename Rows::VT>, K>, "attention_decode: k and v of one dtype (V is read as K)");
  constexpr int PE = 16 / (int)sizeof(K), CPR = D / PE, DT = D / 16, NSW = ETC_ATTN_WARP_SLOTS, TILE = 16 * D;
  static_assert(CPR >= 8 && 32 % CPR == 0 && G >= 1 && G <= 8,
                "attention_decode: the tensor-core form of independent warps needs rows of 8, 16 or 32 chunks, at most 8 heads");
  const int warp = threadIdx.x >> 5, rings = attn_warp_rings();
  K* const ring = attn_warp_ring<D, G, K>(ctx);
  const int tiles = (int)((n + 15) / 16);
  const int mine = warp < rings && tiles > warp ? (tiles - warp + rings - 1) / rings : 0;
  const unsigned long long policy = attn_row_policy();
  // The warp's i-th tile into slot i % NSW; an empty group past its last keeps the wait
  // arithmetic uniform.
  auto request = [&](int i) {
    if (i < mine) {
      const long long b0 = (long long)(warp + i * rings) * 16;
      attn_warp_tile<D>(ring + (i % NSW) * 2 * TILE, rows, b0, n - b0 < 16 ? (int)(n - b0) : 16, policy);
    }
    cp_async_commit();
  };
#pragma unroll
  for (int i = 0; i < NSW; ++i) request(i);
  unsigned qf[DT][2];
  float m[2], l[2], ot[DT][4];
  attn_mma_start<D, G>(qp, qs, qf, m, l, ot);
  for (int i = 0; i < mine; ++i) {
    const long long b0 = (long long)(warp + i * rings) * 16;
    const int valid = n - b0 < 16 ? (int)(n - b0) : 16;
    K* const k_t = ring + (i % NSW) * 2 * TILE;
    cp_async_wait<NSW - 1>();  // this lane's copies of the tile
    __syncwarp();              // and every lane's
    attn_mma_tile<D, K>(k_t, k_t + TILE, valid, qf, scale, m, l, ot);
    __syncwarp();  // every lane is done with the slot
    request(i + NSW);
  }
  cp_async_wait<0>();  // nothing is in flight into the rings (the empty groups)
  __syncthreads();     // every warp is done with its ring: the per-warp o goes over them
  float* const wm = reinterpret_cast<float*>(ctx.smem);  // the scratch before the rings
  attn_mma_finish<D, G>(wm, wm + kAttnMaxWarps * G, reinterpret_cast<float*>(ctx.smem + attention_scratch_bytes<D, G>()),
                        m, l, ot, op, os, lsep, ls);
}

// attn_head's 16-byte path with the rows staged in a ring of attn_slots shared-memory slots,
// K and V of a block in a slot, each its own cp.async group: the ring's blocks are requested
// first; then per block, wait for its K, scores, request the K of the block that takes the
// slot next (K's half is free), wait for its V, softmax and o, request that block's V. The
// groups complete in order and 2 * attn_slots - 1 are committed after the one waited for, so
// a block's wait lets the ring's later blocks stay in flight. A row's 16-byte chunks are
// stored XOR-swizzled by the row (with 8 or more a row), the layout attn_head_mma's ldmatrix
// needs; with tensor cores (attn_mma) the work goes to attn_head_mma.
// The rows are read by the same lanes, and summed in the same order, as attn_head reads them
// from global memory: the same bits where the blocks are as long.
template <int D, int G, class TQ, class Rows, class TO>
__device__ void attn_head_staged(const Ctx& ctx, TQ* qp, long long qs, const Rows& rows, long long n, float scale,
                                 TO* op, long long os, float* lsep, long long ls) {
  using K = bare_t<typename Rows::KT>;
  using Ln = AttnLanes<D, true, K>;
  static_assert(Ln::L * Ln::R == 32, "attention_decode: lanes per row must divide 32");
  static_assert(same_v<bare_t<typename Rows::VT>, K>, "attention_decode: k and v of one dtype (V is read as K)");
  constexpr int SR = attn_stage_rows<D, G, K>(), CPR = D / Ln::PE;  // rows per block, 16-byte chunks per row
  constexpr int NS = attn_slots<D, G>();
  static_assert(SR >= 1, "attention_decode: ETC_ATTN_BLOCK_KIB and ETC_ATTN_FMA_BLOCK_KIB must hold a cache row");
  constexpr bool kMma = attn_mma<D, G, TQ, K>() && SR % 16 == 0;  // whole 16-position tiles a block
  if constexpr (kMma && attn_mma_min_rows<D, G, K>() == 0) {
    attn_head_mma<D, G>(ctx, qp, qs, rows, n, scale, op, os, lsep, ls);
  } else {
    if constexpr (kMma)
      if (n >= attn_mma_min_rows<D, G, K>()) {
        if constexpr (ETC_ATTN_MMA_OUTLINE != 0)
          attn_head_mma_outlined<D, G>(ctx, qp, qs, rows, n, scale, op, os, lsep, ls);
        else
          attn_head_mma<D, G>(ctx, qp, qs, rows, n, scale, op, os, lsep, ls);
        return;
      }
    const AttnScratch<D, G> sc(ctx);
    float* q_s = sc.q;
    float* s_s = sc.s;
    const AttnRing<K, SR, attn_stage_bytes<D, G>(), NS> ring{ctx.smem + attention_scratch_bytes<D, G>(), n};
    const int tid = threadIdx.x, nt = blockDim.x, lane = tid & 31, warp = tid >> 5, nw = nt >> 5;
    const int c = lane % Ln::L, rg = lane / Ln::L;
    const long long nblk = ring.blocks();
    // Where chunk cc of row r of a block is stored (in elements from the block's start).
    auto at = [](int r, int cc) { return r * D + (CPR >= 8 ? cc ^ (r & 7) : cc) * Ln::PE; };
    // Requests block blk's K (v = false) or V rows into its slot, as one group (empty past the
    // last block: the wait arithmetic stays uniform). A missing paged row reads as zeros.
    auto request = [&](bool v, long long blk) {
      if (blk < nblk) {
        K* dst = ring.slot(blk, v);
        const long long b0 = blk * SR;
        const int nb = ring.rows_in(blk);
        const unsigned long long policy = attn_row_policy();
        for (int idx = tid; idx < nb * CPR; idx += nt) {
          const int r = idx / CPR, cc = idx - r * CPR;
          attn_stage_chunk(dst + at(r, cc), rows, b0 + r, true, v, cc, policy);
        }
      }
      cp_async_commit();
    };
    auto row_at = [&](const K* buf, int j, float (&out)[Ln::PE]) {
      const Vec<K, Ln::PE> v = *reinterpret_cast<const Vec<K, Ln::PE>*>(buf + at(j, c));
#pragma unroll
      for (int e = 0; e < Ln::PE; ++e) out[e] = to_f32(v.v[e]);
    };
#pragma unroll 1
    for (int b = 0; b < NS; ++b) {
      request(false, b);
      request(true, b);
    }
    sc.start(qp, qs, scale);
    float acc[G][Ln::PE];  // a lane's elements of o for each head
#pragma unroll
    for (int h = 0; h < G; ++h)
#pragma unroll
      for (int e = 0; e < Ln::PE; ++e) acc[h][e] = 0.0f;

    for (long long blk = 0; blk < nblk; ++blk) {
      const int nb = ring.rows_in(blk);
      const K* k_s = ring.slot(blk, false);
      const K* v_s = ring.slot(blk, true);
      cp_async_wait<2 * NS - 1>();  // this block's K
      __syncthreads();              // every thread's rows (and q_s, m_s, l_s the first time) are in
      {
        // A lane always meets the same elements of q: in registers, not read from shared memory
        // again for every row (the score loop's loads were more than its multiply-adds).
        float qr[G][Ln::PE];
#pragma unroll
        for (int h = 0; h < G; ++h)
#pragma unroll
          for (int e = 0; e < Ln::PE; ++e) qr[h][e] = q_s[h * D + c * Ln::PE + e];
#pragma unroll 2
        for (int jb0 = warp * Ln::R; jb0 < nb; jb0 += nw * Ln::R) {
          const int j = jb0 + rg;
          float kv[Ln::PE];
          if (j < nb) row_at(k_s, j, kv);
          else
#pragma unroll
            for (int e = 0; e < Ln::PE; ++e) kv[e] = 0.0f;
#pragma unroll
          for (int h = 0; h < G; ++h) {
            float part = 0.0f;
#pragma unroll
            for (int e = 0; e < Ln::PE; ++e) part += qr[h][e] * kv[e];
#pragma unroll
            for (int o = Ln::L / 2; o > 0; o >>= 1) part += __shfl_xor_sync(0xffffffffu, part, o);
            if (j < nb && c == 0) s_s[h * kAttnBlock + j] = part;
          }
        }
      }
      __syncthreads();
      request(false, blk + NS);
      cp_async_wait<2 * NS - 1>();  // this block's V: softmax_block's barrier publishes it
      sc.softmax_block(nb, acc);
#pragma unroll 2
      for (int jb0 = warp * Ln::R; jb0 < nb; jb0 += nw * Ln::R) {
        const int j = jb0 + rg;
        if (j >= nb) continue;
        float vv[Ln::PE];
        row_at(v_s, j, vv);
#pragma unroll
        for (int h = 0; h < G; ++h) {
          const float p = s_s[h * kAttnBlock + j];
#pragma unroll
          for (int e = 0; e < Ln::PE; ++e) acc[h][e] += p * vv[e];
        }
      }
      __syncthreads();  // the slot's V and s_s are rewritten next
      request(true, blk + NS);
    }
    // Past the last block only empty groups are pending; finish's reduction reuses the ring.
    if (nblk == 0) __syncthreads();  // q_s, m_s, l_s written by other threads
    sc.template finish<Ln, true>(acc, op, os, lsep, ls);
  }
}

// The form of independent warps: the 8 (nw) warps of the CTA take interleaved steps of R rows
// (R = 32 / L, L the lanes that read a row with one 16-byte load each), and each warp keeps its
// own online softmax in registers: its lanes load the K and V rows of ETC_ATTN_WARP_STEPS steps
// straight into registers before using any, a row's L lanes sum its scores with shuffles, and
// each row group (the lanes of one row) rescales its own partial o. No barrier until the end,
// where the row groups combine through shuffles and the warps through shared memory (one
// barrier each side). The staged forms keep the CTA in step through a ring of blocks (a
// barrier or two a block), so a warp's wait for its rows stalls every warp: at B = 128 and
// positions 511 that form streamed the cache at about 1.3 TB/s in the decode megakernels,
// where this one, in a grid of its tasks alone (tools/bench_attn_warps.cu, H200, copy 4.23
// TB/s), streams it at 1.9 TB/s for Llama-3.2-1B's shape (D = 64, G = 4) and 3.2 for
// Qwen3-0.6B's (D = 128, G = 2); in the megakernels it keeps less of that (docs/backend.md).
// Scores are in log2 units (q scaled by scale * log2(e)); a missing paged row reads as zeros
// and counts, as in the other forms.
template <int D, class K>
__host__ __device__ constexpr bool attn_warps_shape(int g) {
  return g <= ETC_ATTN_WARPS && g * (16 / (int)sizeof(K)) <= 32 && D % (16 / (int)sizeof(K)) == 0 &&
         D / (16 / (int)sizeof(K)) <= 32 && 32 % (D / (16 / (int)sizeof(K))) == 0;
}
// The shared memory of its final reduction: each warp's maximum, sum and o per query head.
template <int D, int G>
__host__ __device__ constexpr unsigned attn_warps_smem_bytes() {
  return (unsigned)sizeof(float) * kAttnMaxWarps * G * (D + 2);
}

template <class K>
__device__ __forceinline__ uint4 attn_ld_row16(const K* p, unsigned long long policy) {
  uint4 r;
  if constexpr (ETC_ATTN_EVICT_FIRST != 0)
    asm volatile("ld.global.cg.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;\n"
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
                 : "l"(p), "l"(policy));
  else
    r = __ldcg(reinterpret_cast<const uint4*>(p));
  return r;
}
template <class K, int PE>
__device__ __forceinline__ void attn_unpack16(uint4 r, float (&out)[PE]) {
  Vec<K, PE> v;
  memcpy(&v, &r, sizeof(v));
#pragma unroll
  for (int e = 0; e < PE; ++e) out[e] = to_f32(v.v[e]);
}

// The end of a form of independent warps, where each lane (column group c = lane % (D / PE), row
// group lane / (D / PE)) holds its online softmax over its rows: the row groups of each warp
// combined by shuffles, then the nw warps through `red` ([nw][G] maxima, [nw][G] sums, then
// [nw][G][D] values), the G x D outputs to op (os apart) and, where lsep, each query head's
// log-sum-exp to lsep (ls apart). Ends with a barrier.
template <int D, int G, int PE, class TO>
__device__ __forceinline__ void attn_warps_combine(float* red, int nw, float (&m)[G], float (&l)[G],
                                                   float (&acc)[G][PE], TO* op, long long os, float* lsep,
                                                   long long ls) {
  constexpr int L = D / PE;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int c = lane % L, rg = lane / L;
  // The warp's row groups, then the warps (through shared memory).
#pragma unroll
  for (int h = 0; h < G; ++h)
#pragma unroll
    for (int x = L; x < 32; x <<= 1) {
      const float mo = __shfl_xor_sync(0xffffffffu, m[h], x), lo = __shfl_xor_sync(0xffffffffu, l[h], x);
      const float mx = fmaxf(m[h], mo);
      const bool none = mx == __int_as_float(0xff800000);
      const float a = none ? 0.0f : exp2f(m[h] - mx), b = none ? 0.0f : exp2f(mo - mx);
      l[h] = l[h] * a + lo * b;
#pragma unroll
      for (int e = 0; e < PE; ++e) {
        const float ao = __shfl_xor_sync(0xffffffffu, acc[h][e], x);
        acc[h][e] = acc[h][e] * a + ao * b;
      }
      m[h] = mx;
    }
  float* rm = red;  // [nw][G]
  float* rl = rm + nw * G;  // [nw][G]
  float* ra = rl + nw * G;  // [nw][G][D]
  if (rg == 0)
#pragma unroll
    for (int h = 0; h < G; ++h) {
#pragma unroll
      for (int e = 0; e < PE; ++e) ra[(warp * G + h) * D + c * PE + e] = acc[h][e];
      if (c == 0) rm[warp * G + h] = m[h], rl[warp * G + h] = l[h];
    }
  __syncthreads();
  for (int i = threadIdx.x; i < G * D; i += blockDim.x) {
    const int h = i / D, d = i % D;
    float mx = __int_as_float(0xff800000);
    for (int w = 0; w < nw; ++w) mx = fmaxf(mx, rm[w * G + h]);
    float sum = 0.0f, den = 0.0f;
    if (mx != __int_as_float(0xff800000))
      for (int w = 0; w < nw; ++w) {
        const float a = exp2f(rm[w * G + h] - mx);
        den += rl[w * G + h] * a;
        sum += ra[(w * G + h) * D + d] * a;
      }
    op[i * os] = from_f32<TO>(den > 0.0f ? sum / den : 0.0f);
    if (lsep && d == 0)
      lsep[h * ls] = den > 0.0f ? (mx + log2f(den)) * 0.6931471805599453f : __int_as_float(0xff800000);
  }
  __syncthreads();
}

template <int D, int G, class TQ, class Rows, class TO>
__device__ void attn_head_warps(const Ctx& ctx, TQ* qp, long long qs, const Rows& rows, long long n, float scale,
                                TO* op, long long os, float* lsep, long long ls) {
  using K = bare_t<typename Rows::KT>;
  using Q = bare_t<TQ>;
  static_assert(same_v<bare_t<typename Rows::VT>, K>, "attention_decode: k and v of one dtype (V is read as K)");
  constexpr int PE = 16 / (int)sizeof(K), L = D / PE, R = 32 / L, U = ETC_ATTN_WARP_STEPS;
  static_assert(attn_warps_shape<D, K>(G), "attn_head_warps: rows of whole 16-byte loads, G * PE <= 32");
  static_assert(U >= 1, "ETC_ATTN_WARP_STEPS must be at least 1");
  static_assert(attn_warps_smem_bytes<D, G>() <= attention_decode_smem_bytes<D, G>(),
                "attn_head_warps: its reduction fits an attention task's shared memory");
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  const int c = lane % L, rg = lane / L;
  const float qscale = scale * 1.4426950408889634f;  // log2(e): scores in log2 units
  float qf[G][PE];
  bool q_vec = false;
  if constexpr (sizeof(Q) == sizeof(K)) q_vec = qs == 1 && aligned_to(qp, 16);
  if (q_vec) {  // a lane's PE elements of each query head in one 16-byte load
#pragma unroll
    for (int h = 0; h < G; ++h) {
      const Vec<Q, PE> v = ldv<PE>(qp + h * D + c * PE);
#pragma unroll
      for (int e = 0; e < PE; ++e) qf[h][e] = to_f32(v.v[e]) * qscale;
    }
  } else {
#pragma unroll
    for (int h = 0; h < G; ++h)
#pragma unroll
      for (int e = 0; e < PE; ++e) qf[h][e] = to_f32(ld(qp + (h * D + c * PE + e) * qs)) * qscale;
  }
  float m[G], l[G], acc[G][PE];
#pragma unroll
  for (int h = 0; h < G; ++h) {
    m[h] = __int_as_float(0xff800000);
    l[h] = 0.0f;
#pragma unroll
    for (int e = 0; e < PE; ++e) acc[h][e] = 0.0f;
  }
  const unsigned long long policy = attn_row_policy();
  // Positions fit 32 bits (a cache's rows are indexed so everywhere else too).
  const int rows_n = (int)n, steps = (rows_n + R - 1) / R;
  for (int t0 = warp; t0 < steps; t0 += nw * U) {
    uint4 kr[U], vr[U];
    bool ok[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int j = (t0 + u * nw) * R + rg;
      ok[u] = j < rows_n;
      const K* row = ok[u] ? rows.k(j) : nullptr;
      kr[u] = Rows::kMayMiss && !row ? make_uint4(0u, 0u, 0u, 0u)
              : ok[u]               ? attn_ld_row16<K>(row + c * PE, policy)
                                    : make_uint4(0u, 0u, 0u, 0u);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int j = (t0 + u * nw) * R + rg;
      const K* row = ok[u] ? rows.v(j) : nullptr;
      vr[u] = Rows::kMayMiss && !row ? make_uint4(0u, 0u, 0u, 0u)
              : ok[u]               ? attn_ld_row16<K>(row + c * PE, policy)
                                    : make_uint4(0u, 0u, 0u, 0u);
    }
    float s[U][G];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      float k[PE];
      attn_unpack16<K>(kr[u], k);
#pragma unroll
      for (int h = 0; h < G; ++h) {
        float d = 0.0f;
#pragma unroll
        for (int e = 0; e < PE; ++e) d = fmaf(qf[h][e], k[e], d);
#pragma unroll
        for (int x = L / 2; x > 0; x >>= 1) d += __shfl_xor_sync(0xffffffffu, d, x);
        s[u][h] = ok[u] ? d : __int_as_float(0xff800000);
      }
    }
#pragma unroll
    for (int h = 0; h < G; ++h) {
      float mx = m[h];
#pragma unroll
      for (int u = 0; u < U; ++u) mx = fmaxf(mx, s[u][h]);
      if (mx == __int_as_float(0xff800000)) continue;  // no row of this row group yet
      const float alpha = exp2f(m[h] - mx);              // 0 for the first rows (m = -inf)
      m[h] = mx;
      l[h] *= alpha;
#pragma unroll
      for (int e = 0; e < PE; ++e) acc[h][e] *= alpha;
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const float p = exp2f(s[u][h] - mx);
        float v[PE];
        attn_unpack16<K>(vr[u], v);
        l[h] += p;
#pragma unroll
        for (int e = 0; e < PE; ++e) acc[h][e] = fmaf(p, v[e], acc[h][e]);
      }
    }
  }
  attn_warps_combine<D, G, PE>(reinterpret_cast<float*>(ctx.smem), nw, m, l, acc, op, os, lsep, ls);
}

// Whether a call's 16-byte path takes the tensor-core form of independent warps.
template <int D, int G, bool kCanVec, class TQ, class K>
__host__ __device__ constexpr bool attn_takes_mma_warps() {
  return kCanVec && attn_mma_warps_shape<D, G>() && attn_mma<D, G, TQ, K>();
}
// Every cache head g of a request (hk of them), each with its G query heads; rows(g) gives
// the head's AttnDenseRows or AttnPagedRows, kcs and vcs the caches' column strides. HK > 1: a
// call compiled for several heads, which on tensor cores go through one ring.
template <int D, int G, int HK, bool kCanVec, class TQ, class TO, class MakeRows>
__device__ void attn_heads(const Ctx& ctx, const View<TQ>& q, long long hk, bool vec, long long kcs, long long vcs,
                           long long n, float scale, const View<TO>& o, const View<float>& lse, MakeRows rows) {
  using K = bare_t<typename decltype(rows(0LL))::KT>;
  constexpr bool kMmaWarps = attn_takes_mma_warps<D, G, kCanVec, TQ, K>();
  constexpr bool kWarps = kCanVec && !kMmaWarps && attn_warps_shape<D, K>(G);
  if constexpr (kMmaWarps || kWarps) {
    // A form of independent warps: the task's cache heads one after another.
    if (vec) {
      for (long long g = 0; g < hk; ++g) {
        TQ* const qp = q.ptr + g * G * D * q.stride[0];
        TO* const op = o.ptr + g * G * D * o.stride[0];
        float* const lp = lse.ptr ? lse.ptr + g * G * lse.stride[0] : nullptr;
        if constexpr (kMmaWarps)
          attn_head_mma_warps<D, G>(ctx, qp, q.stride[0], rows(g), n, scale, op, o.stride[0], lp, lse.stride[0]);
        else
          attn_head_warps<D, G>(ctx, qp, q.stride[0], rows(g), n, scale, op, o.stride[0], lp, lse.stride[0]);
      }
      return;
    }
  }
  if constexpr (HK > 1 && kCanVec && !kWarps && !kMmaWarps && ETC_ATTN_STAGE != 0) {
    using Rows = decltype(rows(0LL));
    // Several cache heads on tensor cores: through one ring (attn_heads_mma), where the call
    // has the shared memory for it.
    if constexpr (attn_mma<D, G, TQ, K>() && attn_stage_rows<D, G, K>() % 16 == 0)
      if (vec && hk > 1 && n >= attn_mma_min_rows<D, G, K>() && ctx.smem_bytes >= attention_decode_smem_bytes<D, G, HK>()) {
        attn_heads_mma<D, G, true, TQ, TO>(ctx, hk, q.stride[0], n, scale, o.stride[0], lse.stride[0], [&](long long g) {
          return AttnHeadMma<TQ, Rows, TO>{q.ptr + g * G * D * q.stride[0], rows(g), o.ptr + g * G * D * o.stride[0],
                                           lse.ptr ? lse.ptr + g * G * lse.stride[0] : nullptr};
        });
        return;
      }
  }
  for (long long g = 0; g < hk; ++g) {
    TQ* qp = q.ptr + g * G * D * q.stride[0];
    TO* op = o.ptr + g * G * D * o.stride[0];
    float* lp = lse.ptr ? lse.ptr + g * G * lse.stride[0] : nullptr;
    if constexpr (kCanVec && !kWarps && !kMmaWarps) {
      if (vec) {
        if constexpr (ETC_ATTN_STAGE != 0)
          attn_head_staged<D, G>(ctx, qp, q.stride[0], rows(g), n, scale, op, o.stride[0], lp, lse.stride[0]);
        else
          attn_head<D, G, true>(ctx, qp, q.stride[0], rows(g), kcs, vcs, n, scale, op, o.stride[0], lp, lse.stride[0]);
        continue;
      }
    }
    attn_head<D, G, false>(ctx, qp, q.stride[0], rows(g), kcs, vcs, n, scale, op, o.stride[0], lp, lse.stride[0]);
  }
}

// 16-byte loads of cache rows: D a whole number of 16-byte pieces read by lanes that divide a warp.
template <int D, class K>
__host__ __device__ constexpr bool attn_can_vec() {
  return D % (16 / (int)sizeof(K)) == 0 && D / (16 / (int)sizeof(K)) <= 32 && 32 % (D / (16 / (int)sizeof(K))) == 0;
}

}  // namespace detail

namespace detail {
// The positions [first, first + n) that lens names within `cap`: lens a scalar count from 0,
// or (rank 1, a ranged call) a part's [first, count]; clamped to the cache.
template <class TL>
__device__ __forceinline__ long long attn_range(const View<TL>& lens, long long cap, long long& first) {
  long long n;
  if (lens.rank == 1) {
    first = ld(lens.ptr);
    n = ld(lens.ptr + lens.stride[0]);
  } else {
    first = 0;
    n = ld(lens.ptr);
  }
  first = first < 0 ? 0 : first > cap ? cap : first;
  return n < 0 ? 0 : n > cap - first ? cap - first : n;
}
}  // namespace detail

// o[h] = softmax(scale * q[h] . k[j]) v[j] over the first lens positions of the caches (or the
// [first, count] that a rank-1 lens gives), for
// q [Hq*D] (one request), caches [n, Hk*D], lens a scalar, o [Hq*D], lse [Hq] (lse.ptr may be
// null: not written). Query head h uses cache head h / (Hq / Hk), G = Hq / Hk. HK: the cache
// heads the call is compiled for (a task of heads_per_task > 1; its shared memory is
// attention_decode_smem_bytes<D, G, HK>()).
template <int D, int G, int HK = 1, class TQ, class TK, class TV, class TL, class TO>
__device__ void attention_decode(const Ctx& ctx, const View<TQ>& q, const View<TK>& kc, const View<TV>& vc,
                                 const View<TL>& lens, const View<TO>& o, const View<float>& lse, float scale) {
  using K = bare_t<TK>;
  using V = bare_t<TV>;
  static_assert(sizeof(K) == sizeof(V), "attention_decode: k and v caches of one dtype");
  long long first;
  const long long n = detail::attn_range(lens, kc.ext[0], first);
  constexpr int PE = 16 / (int)sizeof(K);
  constexpr bool kCanVec = detail::attn_can_vec<D, K>();
  bool vec = kCanVec && kc.stride[1] == 1 && vc.stride[1] == 1 && kc.stride[0] % PE == 0 && vc.stride[0] % PE == 0 &&
             aligned_to(kc.ptr, 16) && aligned_to(vc.ptr, 16);
  detail::attn_heads<D, G, HK, kCanVec>(ctx, q, kc.ext[1] / D, vec, kc.stride[1], vc.stride[1], n, scale, o, lse,
                                                [&](long long g) {
                                                  return detail::AttnDenseRows<TK, TV>{
                                                      kc.ptr + g * D * kc.stride[1] + first * kc.stride[0], kc.stride[0],
                                                      vc.ptr + g * D * vc.stride[1] + first * vc.stride[0], vc.stride[0]};
                                                });
}

// attention_decode over page pools: caches [P, PAGE, Hk*D] shared by all requests and the
// request's page table [MAXP] (or the part of it a split-KV task covers): position i is row
// i % PAGE of page table[i / PAGE]. lens is clamped to MAXP * PAGE; a page id outside [0, P)
// reads as zeros (the reference interpreter reports it).
template <int D, int G, int HK = 1, class TQ, class TK, class TV, class TL, class TT, class TO>
__device__ void attention_decode_paged(const Ctx& ctx, const View<TQ>& q, const View<TK>& kp, const View<TV>& vp,
                                       const View<TL>& lens, const View<TT>& table, const View<TO>& o,
                                       const View<float>& lse, float scale) {
  using K = bare_t<TK>;
  using V = bare_t<TV>;
  static_assert(sizeof(K) == sizeof(V), "attention_decode_paged: k and v pools of one dtype");
  const long long page = kp.ext[1], cap = table.ext[0] * page;
  long long first = 0;
  const long long n = page <= 0 ? 0 : detail::attn_range(lens, cap, first);
  constexpr int PE = 16 / (int)sizeof(K);
  constexpr bool kCanVec = detail::attn_can_vec<D, K>();
  bool vec = kCanVec && kp.stride[2] == 1 && vp.stride[2] == 1 && kp.stride[0] % PE == 0 && vp.stride[0] % PE == 0 &&
             kp.stride[1] % PE == 0 && vp.stride[1] % PE == 0 && aligned_to(kp.ptr, 16) && aligned_to(vp.ptr, 16);
  detail::attn_heads<D, G, HK, kCanVec>(
      ctx, q, kp.ext[2] / D, vec, kp.stride[2], vp.stride[2], n, scale, o, lse, [&](long long g) {
        return detail::AttnPagedRows<TK, TV, TT>{kp.ptr + g * D * kp.stride[2], kp.stride[0], kp.stride[1],
                                                 vp.ptr + g * D * vp.stride[2], vp.stride[0], vp.stride[1],
                                                 table.ptr, table.stride[0], (unsigned)page, kp.ext[0], first};
      });
}

template <int D, int G, int HK = 1, class TQ, class TK, class TV, class TL, class TT, class TO>
__device__ void attention_decode_paged(const Ctx& ctx, const View<TQ>& q, const View<TK>& kp, const View<TV>& vp,
                                       const View<TL>& lens, const View<TT>& table, const View<TO>& o, float scale) {
  View<float> none{};
  none.ptr = nullptr;
  none.rank = 1;
  none.stride[0] = 0;
  attention_decode_paged<D, G, HK>(ctx, q, kp, vp, lens, table, o, none, scale);
}

template <int D, int G, int HK = 1, class TQ, class TK, class TV, class TL, class TO>
__device__ void attention_decode(const Ctx& ctx, const View<TQ>& q, const View<TK>& kc, const View<TV>& vc,
                                 const View<TL>& lens, const View<TO>& o, float scale) {
  View<float> none{};
  none.ptr = nullptr;
  none.rank = 1;
  none.stride[0] = 0;
  attention_decode<D, G, HK>(ctx, q, kc, vc, lens, o, none, scale);
}

namespace detail {

// One head's maximum mx and log-sum-exp over the split-KV parts, part p's lse being
// part_lse(p): -inf and -inf when every part is empty. In part order (attention_merge and its
// row form give the same bits).
template <class PartLse>
__device__ __forceinline__ float merge_total(long long parts, PartLse part_lse, float& mx) {
  const float ninf = __int_as_float(0xff800000);
  mx = ninf;
  for (long long p = 0; p < parts; ++p) mx = fmaxf(mx, part_lse(p));
  float total = mx;
  if (mx != ninf) {
    float sum = 0.0f;
    for (long long p = 0; p < parts; ++p) sum += expf(part_lse(p) - mx);
    total = mx + logf(sum);
  }
  return total;
}

}  // namespace detail

// Shared memory attention_merge asks for: the weights of up to 2048 (part, head) pairs.
constexpr unsigned kAttnMergeSmem = 2048u * sizeof(float);

// o = sum_p exp(lse_p - lse) o_p with lse = log(sum_p exp(lse_p)), for o_parts [P, W] and
// lse_parts [P, W / head_dim]; parts with lse_p = -inf contribute nothing.
//
// The weights exp(lse_p - lse) go to shared memory first (one load of each lse), and every
// output then loads its parts 16 at a time before adding any: in a decode step one CTA merges
// a request's heads, and a loop of one load after another was some 50 round trips to L2.
// Without room for the weights (a very long cache), each output computes them itself.
template <class TP, class TL, class TO>
__device__ void attention_merge_one(const Ctx& ctx, const View<TP>& op, const View<TL>& lp, const View<TO>& o,
                                    const View<float>& lse, int head_dim) {
  const long long parts = op.ext[0], width = op.ext[1], heads = lp.ext[1];
  const float ninf = __int_as_float(0xff800000);
  auto lse_at = [&](long long p, long long h) { return to_f32(ld(lp.ptr + p * lp.stride[0] + h * lp.stride[1])); };
  if (parts * heads <= (long long)(ctx.smem_bytes / sizeof(float))) {
    float* wts = reinterpret_cast<float*>(ctx.smem);  // [parts][heads]
    for (long long i = threadIdx.x; i < parts * heads; i += blockDim.x) wts[i] = lse_at(i / heads, i % heads);
    __syncthreads();
    for (long long h = threadIdx.x; h < heads; h += blockDim.x) {
      float mx;
      const float total = detail::merge_total(parts, [&](long long p) { return wts[p * heads + h]; }, mx);
      for (long long p = 0; p < parts; ++p)
        wts[p * heads + h] = mx != ninf ? expf(wts[p * heads + h] - total) : 0.0f;
      if (lse.ptr) lse.ptr[h * lse.stride[0]] = total;
    }
    __syncthreads();
    constexpr int PC = 16;
    for (long long i = threadIdx.x; i < width; i += blockDim.x) {
      const long long h = i / head_dim;
      float acc = 0.0f;
      for (long long p0 = 0; p0 < parts; p0 += PC) {
        float v[PC];
#pragma unroll
        for (int q = 0; q < PC; ++q)
          v[q] = p0 + q < parts && wts[(p0 + q) * heads + h] != 0.0f
                     ? to_f32(ld(op.ptr + (p0 + q) * op.stride[0] + i * op.stride[1]))
                     : 0.0f;
#pragma unroll
        for (int q = 0; q < PC; ++q) {  // in part order
          const float w = p0 + q < parts ? wts[(p0 + q) * heads + h] : 0.0f;
          if (w != 0.0f) acc += w * v[q];
        }
      }
      o.ptr[i * o.stride[0]] = from_f32<TO>(acc);
    }
    __syncthreads();
    return;
  }
  for (long long i = threadIdx.x; i < width + heads; i += blockDim.x) {
    const long long h = i < width ? i / head_dim : i - width;
    float mx;
    const float total = detail::merge_total(parts, [&](long long p) { return lse_at(p, h); }, mx);
    if (i >= width) {
      if (lse.ptr) lse.ptr[h * lse.stride[0]] = total;
      continue;
    }
    float acc = 0.0f;
    if (mx != ninf)
      for (long long p = 0; p < parts; ++p) {
        const float w = expf(lse_at(p, h) - total);
        if (w != 0.0f) acc += w * to_f32(ld(op.ptr + p * op.stride[0] + i * op.stride[1]));
      }
    o.ptr[i * o.stride[0]] = from_f32<TO>(acc);
  }
  __syncthreads();
}

// One request's merge (o_parts [P, W], lse_parts [P, W / head_dim] into o [W]), or several
// requests' (o_parts [P, R, W], lse_parts [P, R, W / head_dim] into o [R, W], lse [R, W /
// head_dim]: a matmul task that merges the rows it reads, fold-attention-merge) one after another.
template <class TP, class TL, class TO>
__device__ void attention_merge(const Ctx& ctx, const View<TP>& op, const View<TL>& lp, const View<TO>& o,
                                const View<float>& lse, int head_dim) {
  if (op.rank != 3) {
    attention_merge_one(ctx, op, lp, o, lse, head_dim);
    return;
  }
  // Row r of a rank-3 view of parts: [P, W] without the row dimension.
  auto part_row = [](auto v, long long r) {
    v.ptr += r * v.stride[1];
    v.ext[1] = v.ext[2];
    v.stride[1] = v.stride[2];
    v.rank = 2;
    return v;
  };
  auto out_row = [](auto v, long long r) {
    if (!v.ptr) return v;
    v.ptr += r * v.stride[0];
    v.ext[0] = v.ext[1];
    v.stride[0] = v.stride[1];
    v.rank = 1;
    return v;
  };
  for (long long r = 0; r < op.ext[1]; ++r)
    attention_merge_one(ctx, part_row(op, r), part_row(lp, r), out_row(o, r), out_row(lse, r), head_dim);
}

template <class TP, class TL, class TO>
__device__ void attention_merge(const Ctx& ctx, const View<TP>& op, const View<TL>& lp, const View<TO>& o,
                                int head_dim) {
  View<float> none{};
  none.ptr = nullptr;
  none.rank = 1;
  none.stride[0] = 0;
  attention_merge(ctx, op, lp, o, none, head_dim);
}

}  // namespace dev
}  // namespace etc
