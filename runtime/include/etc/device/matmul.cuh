// matmul tile op: y[M, N] = a[M, K] @ b (b [K, N], or [N, K] with transpose_b), f32 accumulate.
//
// Built for LLM decode: M small, K large, and the cost is streaming b from memory. Both
// operands go through a multi-stage shared-memory ring filled with 16-byte cp.async.cg (L2
// only: b may be written earlier in the launch by another CTA, and a always is), several
// stages in flight. Out-of-range rows, columns and the K tail are zero in shared memory, so the
// inner loops have no bounds checks; a chunk whose global address is not 16-byte aligned (or
// whose contiguous dimension has a stride other than 1) is loaded element by element.
//
// bf16/f16: tensor cores through mma.sync m16n8k16 (sm_80 and sm_90a alike), fragments from
// ldmatrix (.trans for a [K, N] b); on sm_90a, tiles with b as [N, K] use wgmma instead, 16 rows
// of a included (mm_wgmma, below: H200, Llama-3.2-1B decode at B = 64 3530 -> 2831 us, at
// B = 128 5519 -> 4513 us; at B = 1 1464 -> 1415 us). The output tile is cut into per-warp groups of fragments;
// warps left over after one warp per group split K, and their partial sums are added in a
// fixed order through shared memory (deterministic).
// f32: FFMA on a 4x4 micro-tile per thread; the threads that share a micro-tile split K and
// are combined with shuffles. Exact f32 products, no tf32.
#pragma once

#include "etc/device/common.cuh"
#include "etc/device/stream.cuh"
#include "etc/device/tma.cuh"
#include "etc/device/wgmma.cuh"

// 1 (the default): the generated code inlines a matmul's instantiation functions and the task
// functions that call them into the megakernel, where the grid switch picks the function and its
// arguments for one call site a function (emit_cuda.cpp). H200, tools/gpu_ab.sh -p 511, 0 -> 1:
// Llama-3.2-1B B = 1 1421.8 -> 1213.3 us (-14.7%), B = 16 -13.0%, B = 128 -7.2%; Qwen3-0.6B
// -16.0%, -13.2%, -8.0%, from the calls' removal alone: out of line, ptxas serializes the
// products (info C7510, "wgmma pipeline crossing function boundary"), and nvJitLink's cubins are
// serialized anyway (C7509: relocatable code, where the megakernel's other calls are extern);
// etcc --whole-program keeps a stage's products in one group, but was slower below B = 128
// (docs/backend.md, "Matmuls inlined into the megakernel"). The unfused kernels call an
// out-of-line copy (`_outlined`), and only sm_90a code (the wgmma form) inlines: the full Llama's
// sm_90a cubin took NVRTC 3.5 times as long and grew from 5.4 to 7.4 MB.
// 0: out-of-line functions everywhere, as before.
#ifndef ETC_MM_INLINE
#define ETC_MM_INLINE 1
#endif
#if ETC_MM_INLINE && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define ETC_MM_FN __forceinline__
#else
#define ETC_MM_FN __noinline__
#endif
// A matmul task function's kReach: bit i set when the tiles of the kernel that calls it can run
// its matmuls' instantiation i (emit_cuda.cpp, matmulDispatch); the others are not compiled. Only
// inlined code, a copy per kernel anyway, takes the kernel's bits: a megakernel per range of B
// (etcc --specialize) then compiles half the tile forms, and NVVM's time on Llama-3.2-1B's sm_90a
// cubin falls by as much. Out-of-line functions keep one copy for every kernel, with every form.
#if ETC_MM_INLINE && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define ETC_MM_KERNEL_REACH(mask) (mask)
#else
#define ETC_MM_KERNEL_REACH(mask) (~0ull)
#endif
#define ETC_MM_REACH(bit) ((bit) >= 64 || ((kReach >> ((bit) & 63)) & 1ull) != 0)
// Bit 63 of kReach, never an instantiation's (emit_cuda.cpp: at most 5 of the 8 bits of a call),
// is clear only in the inlined megakernel's calls: its matmul sites call the mma.sync form
// (ETC_MM_FALLBACK_OUTLINED) where the other calls inline it.
#define ETC_MM_FALLBACK_CALL(reach) (ETC_MM_FALLBACK_OUTLINED != 0 && (((reach) >> 63) & 1ull) == 0)
#ifndef ETC_MM_RING_KIB
#define ETC_MM_RING_KIB 96
#endif
// 1 (the default): on sm_90a, an inlined megakernel's matmul sites call the mma.sync form of
// their tile (which runs only where wgmma's conditions fail) instead of inlining it
// (mm_tensor_core_outlined): NVRTC + nvJitLink on the one-layer Llama's sm_90a cubin 66 -> 36 s,
// the step 0.2 to 0.4% faster (H100, Llama-3.2-1B B = 1, 8, 64, bit-equal; session 80). Only
// the megakernel's sites call it (kFallbackCall, from the task function's kReach:
// ETC_MM_FALLBACK_CALL): in a function that would otherwise be a leaf (the unfused kernels'
// `_outlined` task functions) a call makes ptxas serialize the wgmma products (C7509 in
// nvJitLink's relocatable code). 0: never a call.
#ifndef ETC_MM_FALLBACK_OUTLINED
#define ETC_MM_FALLBACK_OUTLINED 1
#endif
#ifndef ETC_MM_MAX_STAGES
#define ETC_MM_MAX_STAGES 4
#endif
// The ring of a tile with 64 or more rows of a (a decode step at B > 32), whose stages are
// twice or four times as large: 144 KiB is 3 stages of a 128 x 64 x 128 tile (48 KiB each: 2
// in flight where 96 KiB left 1) and 4 of the gated 128 x 128 x 64 one. H200, Llama-3.2-1B
// decode (tools/gpu_ab.sh -p 511, two rounds), 96 -> 144 KiB: B = 128 3689 -> 3622 us (-1.8%),
// B = 1 and 16 level (-0.5%, +0.3%); 192 KiB: B = 128 -2.2% but B = 1 and 16 +1.2 and +1.6%
// (every task's L1 shrinks with the kernel's shared memory). Alone, 128 CTAs of the down
// projection's 128 x 64 x 128 tiles at M = 128 took 19.8 us with 2 stages and 15.0 with 4
// (tools/bench_mm_stream.cu); the gated tile's time did not change with depth.
#ifndef ETC_MM_LARGE_RING_KIB
#define ETC_MM_LARGE_RING_KIB 144
#endif
// The ring of a tile with 128 rows of a where the GPU has wgmma (sm_90a: up to 227 KiB of shared
// memory a CTA; sm_80's 163 KiB keep ETC_MM_LARGE_RING_KIB). Only a decode step's batches above
// 64 reach such tiles, and a megakernel of a range of B below that (a graph's `specialize`)
// reserves none of their shared memory, so its tasks keep their L1.
#ifndef ETC_MM_FULL_RING_KIB
#define ETC_MM_FULL_RING_KIB ETC_MM_LARGE_RING_KIB
#endif
// The ring of a tile with fewer than 64 rows of a whose stage holds 32 KiB or more of b (an LM
// head's 128 x 128 tiles, which lower-ops gives grids of many waves): 3 stages of such a tile
// instead of 2. H200, Llama-3.2-1B decode, etc-run --bench 20: the LM head in these tiles
// against 128 x 64 ones, B = 1 1656.1 -> 1646.0 us (docs/benchmarks.md, session 31).
#ifndef ETC_MM_WIDE_RING_KIB
#define ETC_MM_WIDE_RING_KIB 128
#endif
// Where a tile's rows (M) outnumber 16 * ETC_MM_LARGE_M_FM at run time, a warp owns at most
// that many m16 fragments of rows, and more columns instead (fewer ldmatrix of a per mma); 0:
// one tiling for every M. Below that M the warps keep whole columns of the tile, so that at
// small M no warp is left without rows. H100, Llama-3.2-1B decode at B = 128: 7623 / 7603 us
// with one tiling (8 fragments of rows and 2 of columns a warp), 7498 / 7519 with 4 (4 x 4),
// 7749 with 2; B = 64 (not affected) 4922 / 4877.
// 0: no wgmma (sm_90a); every tile takes mma.sync as on sm_80.
#ifndef ETC_MM_WGMMA
#define ETC_MM_WGMMA 1
#endif
// The fewest rows of a (at run time) that take wgmma. Tiles of 32 rows took it from session 29
// (m64 products half of padding; H200, Llama-3.2-1B decode, etc-run --bench, 33 -> 17: B = 24
// 2217.5 -> 2008.1 us, B = 32 2360.8 -> 2098.8 us), tiles of 16 from session 48 (at B = 1, 63 of
// an m64 product's 64 rows are padding, but the stage's b, the bytes that count, is read once
// by the tensor cores through the async proxy instead of by ldmatrix in every warp; H200, the
// same bench at position 511, 17 -> 1: Llama-3.2-1B B = 1 1464 -> 1415 us (-3.3%), B = 8 -3.3%,
// B = 16 -4.5%; Qwen3-0.6B B = 1 -1.3%, B = 16 -0.7%; 9, mma.sync below 9 rows: B = 1 and 8 +2%,
// the K loop of both forms in one function). 17: 16-row tiles on mma.sync; 33: 32-row ones too.
// The most ring stages of b a task's weight prefetch issues before its waits (the ring's
// S - 1 where that is fewer): a deeper ring then keeps more stages in flight in the K loop
// without putting more requests in flight while the chain's small tasks run.
#ifndef ETC_MM_PREFETCH_STAGES
#define ETC_MM_PREFETCH_STAGES 64
#endif
#ifndef ETC_MM_WGMMA_MIN_ROWS
#define ETC_MM_WGMMA_MIN_ROWS 1
#endif
// 1: tiles of 8, 16, 24, 32 or 48 columns of b take wgmma too, instead of mma.sync: the narrow
// tiles of projections without split-K parts (tools/gen_decode_sample.py --unsplit, etcc
// --unsplit-below), which mma.sync streamed slower than the wgmma tiles (docs/benchmarks.md,
// session 67). 16, 32 and 48 columns: 8, 16 or 24 a warpgroup; 8 and 24: each warpgroup all of
// them over half of each stage's K (MmWgGeom::KSPLIT), the halves summed in the epilogue.
#ifndef ETC_MM_WG_NARROW
#define ETC_MM_WG_NARROW 0
#endif
// 1: a wgmma stage holds only a tile's own rows of a (16 or 32), not the m64 product's 64: the
// product's other rows read whatever follows in shared memory (the next k atoms, b, the next
// stage; slack past the ring's end), which only makes the rows of d that are never stored. A
// B = 1 tile's stage then holds 4 KiB of a instead of 16 beside its 16 KiB of b.
#ifndef ETC_MM_WG_ALIAS_A
#define ETC_MM_WG_ALIAS_A 0
#endif
#ifndef ETC_MM_LARGE_M_FM
#define ETC_MM_LARGE_M_FM 4
#endif
// Tiles of fewer than this many rows of a (0: none) and at most ETC_MM_WG_KSPLIT_MAX_N columns of
// b split each stage's K between the two warpgroups, each computing all of the tile's columns
// over its half (KSPLIT, the halves summed in the epilogue), instead of each computing half of
// the columns over all of it. ptxas serializes the products of etcc's megakernels (nvJitLink's
// relocatable code, docs/backend.md), so a stage costs its warpgroup's chain of products one
// after another: 8 m64n32k16 for a q/k/v tile at B = 1, 4 m64n64k16 split so. The default, the
// 16-row tiles of 64 columns (a decode layer's q/k/v up to B = 16): H100, Llama-3.2-1B decode,
// B = 1 1365.7 -> 1354.6 us (-0.8%), B = 16 -0.5%. Also the 32-row tiles (ROWS 64) cost B = 128
// 0.7% (the B >= 32 kernel has them, for B = 32: its code changes), and 128 columns too (the o,
// down, gate/up and LM-head tiles: m64n128 products) +2.3% at B = 1 (docs/benchmarks.md, session 72).
// The weight stream across tasks (ETC_MM_STREAM) keeps every tile unsplit: its units are laid
// out for the column halves.
#ifndef ETC_MM_WG_KSPLIT_ROWS
#define ETC_MM_WG_KSPLIT_ROWS 17
#endif
#ifndef ETC_MM_WG_KSPLIT_MAX_N
#define ETC_MM_WG_KSPLIT_MAX_N 64
#endif

namespace etc {
namespace dev {
namespace detail {

__host__ __device__ constexpr int largest_divisor_le(int n, int cap) {
  int d = cap < 1 ? 1 : cap;
  while (d > 1 && n % d != 0) --d;
  return d;
}

// Stages of a ring of stage_bytes stages, b_bytes of them b's, for tiles of tmp rows of a
// (ETC_MM_FULL_RING_KIB at 128 rows with wgmma, ETC_MM_LARGE_RING_KIB from 64 rows, else
// ETC_MM_WIDE_RING_KIB where b_bytes is 32 KiB or more, else ETC_MM_RING_KIB), at least 2, at
// most ETC_MM_MAX_STAGES.
__host__ __device__ constexpr unsigned mm_ring_kib(int tmp, unsigned b_bytes) {
  return tmp >= 128 && kHaveWgmma ? ETC_MM_FULL_RING_KIB
         : tmp >= 64              ? ETC_MM_LARGE_RING_KIB
         : b_bytes >= 32768u      ? ETC_MM_WIDE_RING_KIB
                                  : ETC_MM_RING_KIB;
}
__host__ __device__ constexpr int mm_ring_stages(int tmp, unsigned stage_bytes, unsigned b_bytes) {
  return cmax(2, cmin(ETC_MM_MAX_STAGES, (int)(mm_ring_kib(tmp, b_bytes) * 1024u / stage_bytes)));
}
// Stages of b the weight prefetch issues in a ring of S stages (the K loop's first round issues
// the rest): stages 0 .. mm_prefetch_stages(S) - 1.
__host__ __device__ constexpr int mm_prefetch_stages(int s) { return cmax(0, cmin(s - 1, ETC_MM_PREFETCH_STAGES)); }

// Whether wgmma_ss has an m64nNk16 product of n columns that MmWgGeom uses.
__host__ __device__ constexpr bool mm_wg_width(int n) {
  return n == 32 || n == 64 || n == 128 || (ETC_MM_WG_NARROW && (n == 8 || n == 16 || n == 24));
}

// The wgmma form (sm_90a, 16-bit, 16, 32, 64 or 128 rows of a): each stage holds a's TMP rows and b's
// TN rows unpadded, in TK / 64 atoms of the 128-byte swizzle (wgmma.cuh), the ring starting at
// the first 1024-byte boundary of ctx.smem. A warpgroup (4 warps) computes 64 rows of a by NW
// columns: the two warpgroups of a CTA take a's two halves of 64 rows (TMP 128), or b's two
// halves of TN / 2 columns (TMP 64; in the gated matmul, the gate and the up product), or where
// TN / 2 has no product (ETC_MM_WG_NARROW's 8 and 24 columns) all TN over K's two halves (KSPLIT).
template <class T, int TM, int TN, int TK>
struct MmWgGeom {
  static constexpr int TMP = (TM + 15) / 16 * 16;
  static constexpr int WTMP = TMP < 64 ? 64 : TMP;  // a's rows in the m64 products (past TMP unread)
  // a's rows in a stage's k atom: WTMP, or TMP where the padding reads what follows (ETC_MM_WG_ALIAS_A).
  static constexpr int AROWS = ETC_MM_WG_ALIAS_A ? TMP : WTMP;
  static constexpr bool KSPLIT = TMP < 128 && mm_wg_width(TN) &&
                                 (!(TN % 16 == 0 && mm_wg_width(TN / 2)) ||
                                  (!ETC_MM_STREAM && TMP < ETC_MM_WG_KSPLIT_ROWS && TN <= ETC_MM_WG_KSPLIT_MAX_N &&
                                   TK % 32 == 0));
  static constexpr int NW = TMP == 128 || KSPLIT ? TN : TN / 2;
  static constexpr bool OK = sizeof(T) == 2 &&
                             (TMP == 64 || TMP == 128 || ((TMP == 16 || TMP == 32) && ETC_MM_WGMMA_MIN_ROWS <= TMP)) &&
                             TK % 64 == 0 && (TMP == 128 || KSPLIT || TN % 16 == 0) && mm_wg_width(NW);
  static constexpr int A_ELEMS = AROWS * TK;
  static constexpr int B_ELEMS = TN * TK;
  static constexpr unsigned STAGE_BYTES = (unsigned)(A_ELEMS + B_ELEMS) * 2u;
  // The ring by the rows a stage holds (WTMP): a 16- or 32-row tile's stages are as large as a
  // 64-row one's, so it takes the large ring too (by TMP, the 32-row tiles' gated and LM-head
  // stages got 2 of the wide ring: Llama-3.2-1B at B = 20 to 32 4.2 to 4.7% slower, H200).
  static constexpr int STAGES = mm_ring_stages(WTMP, STAGE_BYTES, (unsigned)B_ELEMS * 2u);
  // The 1024-byte alignment's slack, and the rows an aliased last stage's products read past the ring.
  static constexpr unsigned SMEM = OK && ETC_MM_WGMMA ? STAGES * STAGE_BYTES + 1024u + (unsigned)(WTMP - AROWS) * 128u : 0u;
  // Whether this compilation has the form (sm_90a, not turned off).
  static constexpr bool ON = OK && ETC_MM_WGMMA && kHaveWgmma;
};

// Shared-memory geometry of one instantiation (T = the input dtype).
template <class T, int TM, int TN, int TK>
struct MmGeom {
  static_assert(TM >= 1 && TN >= 8 && TN % 8 == 0, "matmul: TN must be a positive multiple of 8");
  static_assert(TK >= 16 && TK % 16 == 0, "matmul: TK must be a positive multiple of 16");
  static constexpr int EPC = 16 / (int)sizeof(T);  // elements per 16-byte chunk
  static constexpr int TMP = (TM + 15) / 16 * 16;   // rows of a in smem (mma needs 16)
  static constexpr int A_PITCH = TK + EPC;          // +16 bytes: ldmatrix rows hit distinct banks
  static constexpr int BT_PITCH = TK + EPC;         // b as [TN][TK] (transpose_b)
  static constexpr int BN_PITCH = TN + EPC;         // b as [TK][TN]
  static constexpr int A_ELEMS = TMP * A_PITCH;
  static constexpr int B_ELEMS = cmax(TN * BT_PITCH, TK * BN_PITCH);
  static constexpr unsigned STAGE_BYTES = (unsigned)(A_ELEMS + B_ELEMS) * sizeof(T);
  // About 96 KiB of ring, at most 4 stages: enough bytes in flight per SM to cover DRAM
  // latency. 192 KiB and 8 stages were slower on an LM-head-shaped product (H100: 346 -> 375 us).
  // Knobs for measuring (etcc --device-define): ETC_MM_RING_KIB, ETC_MM_WIDE_RING_KIB,
  // ETC_MM_MAX_STAGES.
  // (The wide ring is for 16-bit weights: it was measured on those only.)
  static constexpr int STAGES = mm_ring_stages(TMP, STAGE_BYTES, sizeof(T) == 2 ? (unsigned)B_ELEMS * 2u : 0u);
  static constexpr int C_PITCH = TN + 8;  // f32 partial-sum tile (16-bit inputs only)
  static constexpr unsigned RED_BYTES = sizeof(T) == 2 ? (unsigned)TMP * C_PITCH * 4u : 0u;
  static constexpr unsigned RING_BYTES = STAGES * STAGE_BYTES;
  static constexpr unsigned SMEM = cmax(cmax(RING_BYTES, RED_BYTES), MmWgGeom<T, TM, TN, TK>::SMEM);
};

// Whether tiles of TM rows have the large-M warp tiling (see ETC_MM_LARGE_M_FM).
__host__ __device__ constexpr bool mm_has_large_m_tiling(int tm) {
  return ETC_MM_LARGE_M_FM > 0 && (tm + 15) / 16 > ETC_MM_LARGE_M_FM;
}

// Warp groups of the tensor-core path: each warp owns FM x FN m16n8 fragments (at most 16,
// i.e. 64 accumulator registers), cut so that at least 4 groups exist when the tile allows.
// MAX_FM caps the m16 fragments of rows a warp owns (the tiling for large M).
template <int TM, int TN, int MAX_FM = 16>
struct MmWarpTiling {
  static constexpr int FMT = (TM + 15) / 16;
  static constexpr int FNT = TN / 8;
  static constexpr int F = FMT * FNT;
  static constexpr int FW = cmax(1, cmin(16, F / 4));
  static constexpr int FMC = largest_divisor_le(FMT, MAX_FM);  // fragment rows a warp may own
  static constexpr int FM = FW >= FMC ? FMC : largest_divisor_le(FMT, FW);
  static constexpr int FN = FW >= FMC ? largest_divisor_le(FNT, FW / FMC) : 1;
  static constexpr int GM = FMT / FM;
  static constexpr int GN = FNT / FN;
  static constexpr int G = GM * GN;
};

// Copies the R x C tile (C a multiple of the chunk) at src (row stride rs, column stride cs)
// into smem rows of `pitch` elements; rows >= vr and columns >= vc become zero. zero_rows =
// false skips zeroing rows >= vr: the ring slot already holds those zeros from the task's
// first use of it (nothing else writes a slot's rows past vr while a task streams through it).
// stream: b's tiles, read once (l2_evict_first).
template <class T, int C, bool stream = false>
__device__ __forceinline__ void load_tile(T* sdst, int pitch, int R, long long vr, long long vc,
                                          const T* src, long long rs, long long cs, bool zero_rows = true) {
  constexpr int EPC = 16 / (int)sizeof(T);
  constexpr int CPR = C / EPC;
  // Every column valid, contiguous 16-byte-aligned rows: the common case of a decode step, with
  // no per-chunk bounds or alignment checks. The copy loop issues one cp.async per chunk and
  // little else; at one CTA per SM its instruction count bounded how fast b streamed in.
  if (cs == 1 && vc >= C && aligned_to(src, 16) && (rs * (long long)sizeof(T)) % 16 == 0) {
    const int rows = vr <= 0 ? 0 : (vr < R ? (int)vr : R);
    const int n = rows * CPR;
    unsigned long long policy = 0;
    if constexpr (stream) policy = l2_evict_first();
    for (int idx = threadIdx.x; idx < n; idx += blockDim.x) {
      const int r = idx / CPR;
      const int c = (idx - r * CPR) * EPC;
      if constexpr (stream)
        cp_async16_hint(sdst + r * pitch + c, src + r * rs + c, 16u, policy);
      else
        cp_async16(sdst + r * pitch + c, src + r * rs + c, 16u);
    }
    if (zero_rows)
      for (int idx = n + threadIdx.x; idx < R * CPR; idx += blockDim.x) {
        const int r = idx / CPR;
        *reinterpret_cast<uint4*>(sdst + r * pitch + (idx - r * CPR) * EPC) = make_uint4(0u, 0u, 0u, 0u);
      }
    return;
  }
  const int total = R * CPR;
  for (int idx = threadIdx.x; idx < total; idx += blockDim.x) {
    const int r = idx / CPR;
    const int c = (idx - r * CPR) * EPC;
    T* d = sdst + r * pitch + c;
    const long long left = vc - c;
    const int nvalid = (r < vr && left > 0) ? (left < EPC ? (int)left : EPC) : 0;
    if (nvalid == 0) {
      *reinterpret_cast<uint4*>(d) = make_uint4(0u, 0u, 0u, 0u);
      continue;
    }
    const T* s = src + r * rs + c * cs;
    if (cs == 1 && aligned_to(s, 16)) {
      if constexpr (stream)  // the rest is zero-filled
        cp_async16_hint(d, s, (unsigned)(nvalid * (int)sizeof(T)), l2_evict_first());
      else
        cp_async16(d, s, (unsigned)(nvalid * (int)sizeof(T)));
    } else {
      Vec<T, EPC> v;
      memset(&v, 0, sizeof(v));
#pragma unroll
      for (int e = 0; e < EPC; ++e)  // unrolled: a run-time index would put v in local memory
        if (e < nvalid) v.v[e] = ld(s + e * cs);
      *reinterpret_cast<Vec<T, EPC>*>(d) = v;
    }
  }
}

// Operand geometry shared by both paths.
struct MmArgs {
  long long M, N, K;
  long long ams, aks;  // a: row (m) and k strides
  long long bks, bns;  // b: k and n strides
  long long yms, yns;
};

// The epilogues' walk: f(m, n) for each of the tile's g.M x g.N elements, spread over the
// CTA's threads. In 32 bits (a tile has at most 128 x 256 elements): ptxas makes a 64-bit
// division a subroutine call, per element here, and in nvJitLink's relocatable code a call
// serializes the wgmma products of the function that makes it (C7509). H100, o / N in 64 bits
// -> 32: Llama-3.2-1B decode B = 16 -1.4%, B = 128 -4.8%; Qwen3-0.6B -1.8%, -4.3%; B = 1
// level (docs/benchmarks.md, session 73).
template <class F>
__device__ __forceinline__ void mm_each_element(const MmArgs& g, F&& f) {
  const int MN = (int)(g.M * g.N), N = (int)g.N;
  for (int o = threadIdx.x; o < MN; o += blockDim.x) {
    const int m = o / N;
    f(m, o - m * N);
  }
}

// Issues stage kt of the ring: a's [TMP][TK] tile and/or b's tile in its memory orientation,
// as one commit group. PAIR (the gated matmul): b's tile is two halves of TN / 2 columns of
// the product, from bp and from bp2, each with g.N valid columns.
template <class T, int TM, int TN, int TK, bool PAIR = false>
__device__ __forceinline__ void mm_issue(T* ring, int kt, int nk, int a_rows, const T* ap,
                                         const T* bp, const T* bp2, bool tb, const MmArgs& g,
                                         bool with_a = true, bool with_b = true) {
  using Geo = MmGeom<T, TM, TN, TK>;
  if (kt < nk) {
    T* As = ring + (kt % Geo::STAGES) * (Geo::A_ELEMS + Geo::B_ELEMS);
    T* Bs = As + Geo::A_ELEMS;
    const long long k0 = (long long)kt * TK;
    // A slot's first fill in this pass over K zeroes its rows past the operand's end; later
    // fills of the same slot find them still zero.
    const bool zero_rows = kt < Geo::STAGES;
    if (with_a)
      load_tile<T, TK>(As, Geo::A_PITCH, a_rows, g.M, g.K - k0, ap + k0 * g.aks, g.ams, g.aks, zero_rows);
    if (with_b) {
      constexpr int BN = PAIR ? TN / 2 : TN;  // columns of the product per b operand
      if (tb) {
        load_tile<T, TK, true>(Bs, Geo::BT_PITCH, BN, g.N, g.K - k0, bp + k0 * g.bks, g.bns, g.bks, zero_rows);
        if constexpr (PAIR)
          load_tile<T, TK, true>(Bs + BN * Geo::BT_PITCH, Geo::BT_PITCH, BN, g.N, g.K - k0, bp2 + k0 * g.bks, g.bns,
                                 g.bks, zero_rows);
      } else {  // rows are k here: the K tail must be zeroed whenever it comes
        load_tile<T, BN, true>(Bs, Geo::BN_PITCH, TK, g.K - k0, g.N, bp + k0 * g.bks, g.bks, g.bns);
        if constexpr (PAIR)
          load_tile<T, BN, true>(Bs + BN, Geo::BN_PITCH, TK, g.K - k0, g.N, bp2 + k0 * g.bks, g.bks, g.bns);
      }
    }
  }
  cp_async_commit();  // empty groups keep the wait_group arithmetic uniform
}

// Rows of a that any warp reads: whole m16 fragments up to M.
template <class T, int TM, int TN, int TK>
__device__ __forceinline__ int mm_a_rows(const MmArgs& g) {
  using Geo = MmGeom<T, TM, TN, TK>;
  const int r = (int)((g.M + 15) / 16 * 16);
  return r < Geo::TMP ? r : Geo::TMP;
}

// The gated matmul's epilogue: y = silu_mul of the tile's two halves (columns [0, TN/2) and
// [TN/2, TN) of the f32 tile c, `pitch` elements a row), each rounded to TY first, which gives
// the bits of two matmuls and a silu_mul. Ends with a barrier.
template <int TN, class TY>
__device__ __forceinline__ void mm_gated_store(const float* c, int pitch, const MmArgs& g, TY* yp) {
  mm_each_element(g, [&](int m, int n) {
    const float gate = to_f32(from_f32<TY>(c[m * pitch + n]));
    const float up = to_f32(from_f32<TY>(c[m * pitch + TN / 2 + n]));
    yp[m * g.yms + n * g.yns] = from_f32<TY>(silu_mul_f32(gate, up));
  });
  __syncthreads();
}

// prefetched: matmul_prefetch already issued b's tiles of stages 0 .. P-1 (P =
// mm_prefetch_stages(S), before the task's event waits); the first round then issues only a's
// tiles of those stages. Groups complete in order: the P prefetched groups, then the first
// round's S - 1, so after kt + 1 of the latter stage kt has both halves.
// PAIR (the gated matmul): the tile's columns [0, TN/2) are a @ bp, [TN/2, TN) a @ bp2, and y
// gets silu_mul of the two, each product rounded to TY first. The epilogue needs both halves
// of the tile at once, so every warp group must run in one round: at most 8 groups (tiles up
// to 128 x 128), launched with at least 32 * G threads.
template <class T, int TM, int TN, int TK, class TY, int MAX_FM = 16, bool PAIR = false>
__device__ __forceinline__ void mm_tensor_core(const Ctx& ctx, const T* ap, const T* bp, const T* bp2, bool tb,
                                               const MmArgs& g, TY* yp, bool prefetched) {
  using Geo = MmGeom<T, TM, TN, TK>;
  using Til = MmWarpTiling<TM, TN, MAX_FM>;
  constexpr int FM = Til::FM, FN = Til::FN, S = Geo::STAGES;
  static_assert(!PAIR || (TN % 16 == 0 && (TN / 2) % (FN * 8) == 0 && Til::G <= 8),
                "gated matmul: a warp group must not straddle the two halves, and the tile must fit one round");
  T* ring = reinterpret_cast<T*>(ctx.smem);
  float* cbuf = reinterpret_cast<float*>(ctx.smem);  // after the K loop, aliases the ring
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  const int gpr = nw < Til::G ? nw : Til::G;  // groups per round
  const int KS = nw / gpr;                     // warps per group, splitting K
  const int ks = warp / gpr;
  const int nk = (int)((g.K + TK - 1) / TK);
  const int a_rows = mm_a_rows<T, TM, TN, TK>(g);
  if constexpr (PAIR)
    if (gpr < Til::G) __trap();  // see above: the halves would be in different rounds

  for (int g0 = 0; g0 < Til::G; g0 += gpr) {
    const int grp = g0 + warp % gpr;
    const bool active = ks < KS && grp < Til::G;
    const int gm0 = (grp / Til::GN) * FM * 16;
    const int gn0 = (grp % Til::GN) * FN * 8;
    const int gn_valid = PAIR ? gn0 % (TN / 2) : gn0;  // the column within its b operand
    const int fm_act = active ? cmax(0, cmin(FM, (int)((g.M - gm0 + 15) / 16))) : 0;
    const int fn_act = active ? cmax(0, cmin(FN, (int)((g.N - gn_valid + 7) / 8))) : 0;

    float acc[FM][FN][4];
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
      for (int j = 0; j < FN; ++j)
#pragma unroll
        for (int q = 0; q < 4; ++q) acc[i][j][q] = 0.0f;

    const bool pre = prefetched && g0 == 0;
#pragma unroll 1
    for (int s = 0; s < S - 1; ++s)
      mm_issue<T, TM, TN, TK, PAIR>(ring, s, nk, a_rows, ap, bp, bp2, tb, g, true, !pre || s >= mm_prefetch_stages(S));

#pragma unroll 1
    for (int kt = 0; kt < nk; ++kt) {
      // Groups complete in order and the prefetch's came first: at most S - 2 pending means
      // stage kt's a and b have landed (after a prefetch too: waiting for every stage before
      // the first step cost 0.8 to 1% of a decode step, H100).
      cp_async_wait<S - 2>();
      __syncthreads();
      mm_issue<T, TM, TN, TK, PAIR>(ring, kt + S - 1, nk, a_rows, ap, bp, bp2, tb, g);
      const T* As = ring + (kt % S) * (Geo::A_ELEMS + Geo::B_ELEMS);
      const T* Bs = As + Geo::A_ELEMS;
      if (fm_act > 0 && fn_act > 0) {
#pragma unroll 1
        for (int kk = ks * 16; kk < TK; kk += KS * 16) {
          unsigned af[FM][4];
#pragma unroll
          for (int i = 0; i < FM; ++i)
            if (i < fm_act)
              ldsm_x4(af[i], As + (gm0 + i * 16 + (lane & 15)) * Geo::A_PITCH + kk + (lane >> 4) * 8);
#pragma unroll
          for (int j = 0; j + 1 < FN; j += 2) {
            if (j < fn_act) {
              unsigned bf[4];
              if (tb)
                ldsm_x4(bf, Bs + (gn0 + j * 8 + (lane & 7) + (lane >> 4) * 8) * Geo::BT_PITCH + kk +
                                ((lane >> 3) & 1) * 8);
              else
                ldsm_x4_t(bf, Bs + (kk + (lane & 7) + ((lane >> 3) & 1) * 8) * Geo::BN_PITCH + gn0 +
                                  j * 8 + (lane >> 4) * 8);
#pragma unroll
              for (int i = 0; i < FM; ++i)
                if (i < fm_act) {
                  mma16816<T>(acc[i][j], af[i], bf[0], bf[1]);
                  mma16816<T>(acc[i][j + 1], af[i], bf[2], bf[3]);
                }
            }
          }
          if constexpr (FN % 2 == 1) {
            constexpr int j = FN - 1;
            if (j < fn_act) {
              unsigned bf[2];
              const int l = lane & 15;
              if (tb)
                ldsm_x2(bf, Bs + (gn0 + j * 8 + (l & 7)) * Geo::BT_PITCH + kk + (l >> 3) * 8);
              else
                ldsm_x2_t(bf, Bs + (kk + (l & 7) + (l >> 3) * 8) * Geo::BN_PITCH + gn0 + j * 8);
#pragma unroll
              for (int i = 0; i < FM; ++i)
                if (i < fm_act) mma16816<T>(acc[i][j], af[i], bf[0], bf[1]);
            }
          }
        }
      }
    }
    cp_async_wait<0>();
    __syncthreads();  // the ring is free: reuse it for the partial sums

    // K-split partial sums, added in ks order so the result does not depend on timing.
#pragma unroll 1
    for (int s = 0; s < KS; ++s) {
      if (active && ks == s) {
#pragma unroll
        for (int i = 0; i < FM; ++i)
#pragma unroll
          for (int j = 0; j < FN; ++j)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              float2* c = reinterpret_cast<float2*>(
                  cbuf + (gm0 + i * 16 + (lane >> 2) + h * 8) * Geo::C_PITCH + gn0 + j * 8 + (lane & 3) * 2);
              float2 v = make_float2(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
              if (s > 0) {
                float2 o = *c;
                v.x += o.x;
                v.y += o.y;
              }
              *c = v;
            }
      }
      __syncthreads();
    }

    if constexpr (PAIR) {
      mm_gated_store<TN>(cbuf, Geo::C_PITCH, g, yp);
      break;  // the only round
    }
    // Store this round's groups (one round unless the tile has more groups than warps).
    const int g1 = g0 + gpr;
    mm_each_element(g, [&](int m, int n) {
      const int gg = (m / (FM * 16)) * Til::GN + n / (FN * 8);
      if (gg >= g0 && gg < g1)
        yp[m * g.yms + n * g.yns] = from_f32<TY>(cbuf[m * Geo::C_PITCH + n]);
    });
    __syncthreads();
  }
}

// mm_tensor_core where wgmma is the form (sm_90a): the mma.sync tile runs only when a product's
// operands do not suit wgmma (mm_use_wgmma), which no decode model's do, so it is a call, compiled
// once per instantiation, instead of code inlined into every megakernel's every matmul site.
template <class T, int TM, int TN, int TK, class TY, int MAX_FM, bool PAIR>
__device__ __noinline__ void mm_tensor_core_outlined(const Ctx ctx, const T* ap, const T* bp, const T* bp2, bool tb,
                                                     const MmArgs g, TY* yp, bool prefetched) {
  mm_tensor_core<T, TM, TN, TK, TY, MAX_FM, PAIR>(ctx, ap, bp, bp2, tb, g, yp, prefetched);
}

// The mma.sync form of a tile (see mm_tensor_core_outlined).
template <class T, int TM, int TN, int TK, class TY, bool CALL, int MAX_FM = 16, bool PAIR = false>
__device__ __forceinline__ void mm_tensor_core_fallback(const Ctx& ctx, const T* ap, const T* bp, const T* bp2, bool tb,
                                                        const MmArgs& g, TY* yp, bool prefetched) {
  if constexpr (CALL && MmWgGeom<T, TM, TN, TK>::ON)
    mm_tensor_core_outlined<T, TM, TN, TK, TY, MAX_FM, PAIR>(ctx, ap, bp, bp2, tb, g, yp, prefetched);
  else
    mm_tensor_core<T, TM, TN, TK, TY, MAX_FM, PAIR>(ctx, ap, bp, bp2, tb, g, yp, prefetched);
}

// Rows [0, min(vr, rmax)) of a contiguous, 16-byte-aligned operand (TK columns from src, rows
// rs elements apart) into rows r0 .. of a wgmma stage operand of atom_rows rows. Rows past vr
// are left as they are: the product rows or columns they make are never stored.
template <class T, int TK, bool stream>
__device__ __forceinline__ void load_tile_sw(T* base, int atom_rows, int r0, int rmax, long long vr, const T* src,
                                             long long rs) {
  constexpr int CPR = TK / 8;  // 16-byte chunks of a row
  const int rows = vr <= 0 ? 0 : (vr < rmax ? (int)vr : rmax);
  unsigned long long policy = 0;
  if constexpr (stream) policy = l2_evict_first();
  if (blockDim.x % CPR == 0 && (blockDim.x / CPR) % 8 == 0) {
    // A thread's chunks are one column, a multiple of 8 rows apart, so its swizzled offset
    // within a row is the same for all of them and its pointers step, instead of each chunk's
    // row, column and swizzle being worked out from its index in 64-bit arithmetic (H200,
    // Llama-3.2-1B decode at B = 128: 4478 -> 4398 us). The same stepping in load_tile (the
    // mma.sync form, B <= 16 in a decode step) made B = 1 slower: 1657 -> 1679 us.
    const int step = (int)blockDim.x / CPR, c = (int)(threadIdx.x % CPR);
    int r = (int)threadIdx.x / CPR;
    T* d = base + (c >> 3) * (atom_rows * 64) + (r0 + r) * 64 + (((c & 7) ^ ((r0 + r) & 7)) << 3);
    const T* s = src + r * rs + c * 8;
    const long long sstep = step * rs;
    for (; r < rows; r += step, d += step * 64, s += sstep) {
      if constexpr (stream)
        cp_async16_hint(d, s, 16u, policy);
      else
        cp_async16(d, s, 16u);
    }
    return;
  }
  for (int idx = threadIdx.x; idx < rows * CPR; idx += blockDim.x) {
    const int r = idx / CPR, c = idx - r * CPR, rr = r0 + r;
    T* d = base + (c >> 3) * (atom_rows * 64) + rr * 64 + (((c & 7) ^ (rr & 7)) << 3);
    if constexpr (stream)
      cp_async16_hint(d, src + r * rs + c * 8, 16u, policy);
    else
      cp_async16(d, src + r * rs + c * 8, 16u);
  }
}

// The wgmma form's ring: ctx.smem's first 1024-byte boundary (MmWgGeom::SMEM has the slack).
template <class T>
__device__ __forceinline__ T* mm_wg_ring(const Ctx& ctx) {
  return reinterpret_cast<T*>(ctx.smem + ((1024u - (smem_addr(ctx.smem) & 1023u)) & 1023u));
}

// Whether this product takes the wgmma form: its geometry allows it, b is [N, K], K is whole
// tiles, rows are contiguous and 16-byte aligned, and a has at least ETC_MM_WGMMA_MIN_ROWS rows
// (below that the m64 product would be mostly padding). Uniform across the CTA; matmul and its
// prefetch agree.
template <class T, int TM, int TN, int TK>
__device__ __forceinline__ bool mm_use_wgmma(const T* ap, const T* bp, const T* bp2, bool tb, const MmArgs& g) {
  if constexpr (!MmWgGeom<T, TM, TN, TK>::ON) {
    return false;
  } else {
    return tb && g.M >= ETC_MM_WGMMA_MIN_ROWS && blockDim.x == 256 && g.K % TK == 0 && g.aks == 1 && g.bks == 1 && g.ams > 0 &&
           g.bns > 0 && g.ams % 8 == 0 && g.bns % 8 == 0 && aligned_to(ap, 16) && aligned_to(bp, 16) &&
           (bp2 == nullptr || aligned_to(bp2, 16));
  }
}

// Stage kt of the wgmma form's ring (see mm_issue).
// ts: b (and b_up) by TMA from these maps (thread 0 issues the stage's boxes, counted on the
// stage's mbarrier), else by cp.async with a. Either way one cp.async group a stage.
template <class T, int TM, int TN, int TK, bool PAIR>
__device__ __forceinline__ void mm_issue_wg(T* ring, int kt, int nk, const T* ap, const T* bp, const T* bp2,
                                            const MmArgs& g, bool with_a, bool with_b, const TmaStream* ts = nullptr) {
  using W = MmWgGeom<T, TM, TN, TK>;
  if (kt < nk) {
    T* As = ring + (kt % W::STAGES) * (W::A_ELEMS + W::B_ELEMS);
    T* Bs = As + W::A_ELEMS;
    const long long k0 = (long long)kt * TK;
    if (with_a) load_tile_sw<T, TK, false>(As, W::AROWS, 0, W::TMP, g.M, ap + k0, g.ams);
    constexpr int BN = PAIR ? TN / 2 : TN;
    if (with_b && ts != nullptr) {
      if constexpr (BN % kTmaBox == 0 && TK % kTmaBox == 0) {
        if (threadIdx.x == 0) {
          unsigned long long* bar = tma_bars() + kt % W::STAGES;
          const unsigned long long policy = l2_evict_first();
          mbar_expect_tx(bar, (unsigned)(TN * TK * sizeof(T)));
#pragma unroll
          for (int ka = 0; ka < TK / kTmaBox; ++ka)
#pragma unroll
            for (int rb = 0; rb < BN / kTmaBox; ++rb) {
              T* d = Bs + ka * (TN * 64) + rb * kTmaBox * 64;
              tma_box(d, ts->map, ts->x + (int)k0 + ka * kTmaBox, ts->y + rb * kTmaBox, bar, policy);
              if constexpr (PAIR)
                tma_box(d + BN * 64, ts->map2, ts->x2 + (int)k0 + ka * kTmaBox, ts->y2 + rb * kTmaBox, bar, policy);
            }
        }
      }
    } else if (with_b) {
      load_tile_sw<T, TK, true>(Bs, TN, 0, BN, g.N, bp + k0, g.bns);
      if constexpr (PAIR) load_tile_sw<T, TK, true>(Bs, TN, BN, BN, g.N, bp2 + k0, g.bns);
    }
  }
  cp_async_commit();
}

// Whether this wgmma tile's b can stream by TMA: whole 64 x 64 boxes, a mbarrier a stage.
template <class T, int TM, int TN, int TK, bool PAIR>
__device__ __forceinline__ bool mm_wg_tma(const T* bp, const T* bp2, const MmArgs& g, TmaB tb, TmaB tb2,
                                          TmaStream& ts) {
  using W = MmWgGeom<T, TM, TN, TK>;
  constexpr int BN = PAIR ? TN / 2 : TN;
  if constexpr (BN % kTmaBox != 0 || TK % kTmaBox != 0 || W::STAGES > kMaxTmaStages) {
    return false;
  } else {
    return tma_stream_of(bp, bp2, g.bns, tb, tb2, PAIR, ts);
  }
}

// A task's TMA ring, before its first stage: the ring's earlier ordinary stores (an earlier op's
// scratch) ordered before the copy engine's writes, then fresh mbarriers (thread 0).
template <int S>
__device__ __forceinline__ void mm_tma_ring_setup() {
  fence_proxy_async_smem();
  __syncthreads();
  tma_ring_init<S>();
}

template <class T, int TM, int TN, int TK, class TY, bool PAIR>
__device__ __forceinline__ void mm_wg_store(const Ctx& ctx, const float (&d)[MmWgGeom<T, TM, TN, TK>::NW / 2],
                                            const MmArgs& g, TY* yp, int row0, int col0);

// mm_tensor_core's product on wgmma (mm_use_wgmma said so): the same ring discipline (stages
// S - 1 ahead, b's first stages possibly prefetched), each stage's k16 steps issued by each
// warpgroup and waited for before the next stage, then the f32 tile through shared memory to
// the same epilogues.
template <class T, int TM, int TN, int TK, class TY, bool PAIR>
__device__ void mm_wgmma(const Ctx& ctx, const T* ap, const T* bp, const T* bp2, const MmArgs& g, TY* yp,
                         bool prefetched, TmaB tb = TmaB{}, TmaB tb2 = TmaB{}) {
  using W = MmWgGeom<T, TM, TN, TK>;
  constexpr int S = W::STAGES, NW = W::NW;
  T* ring = mm_wg_ring<T>(ctx);
  TmaStream tsv;
  const bool tma = mm_wg_tma<T, TM, TN, TK, PAIR>(bp, bp2, g, tb, tb2, tsv);
  const TmaStream* ts = tma ? &tsv : nullptr;
  if (tma) {
    // The prefetch set the mbarriers up (before the task's waits, whose barrier every thread
    // passed since); else the ring's earlier ordinary stores go before the copy engine's.
    if (!prefetched) mm_tma_ring_setup<S>();
    __syncthreads();
  }
  const int warp = threadIdx.x >> 5, wg = warp >> 2;
  const int row0 = W::TMP == 128 ? 64 * wg : 0;
  const int col0 = W::TMP == 128 || W::KSPLIT ? 0 : NW * wg;
  // A stage's k16 steps this warpgroup issues, from k0: all of them, or its half of K (KSPLIT).
  constexpr int STEPS = W::KSPLIT ? TK / 32 : TK / 16;
  const int k0 = W::KSPLIT ? wg * (TK / 2) : 0;
  const int nk = (int)(g.K / TK);
  float d[NW / 2];
#pragma unroll
  for (int i = 0; i < NW / 2; ++i) d[i] = 0.0f;
  wgmma_fence_operands(d);
#pragma unroll 1
  for (int s = 0; s < S - 1; ++s)
    mm_issue_wg<T, TM, TN, TK, PAIR>(ring, s, nk, ap, bp, bp2, g, true, !prefetched || s >= mm_prefetch_stages(S), ts);
#pragma unroll 1
  for (int kt = 0; kt < nk; ++kt) {
    cp_async_wait<S - 2>();
    if (tma) mbar_wait(tma_bars() + kt % S, (unsigned)((kt / S) & 1));
    fence_proxy_async_smem();  // cp.async wrote the stage; wgmma reads it through the async proxy
    __syncthreads();
    // The slot this fills was read by the previous stage's products, waited for below.
    mm_issue_wg<T, TM, TN, TK, PAIR>(ring, kt + S - 1, nk, ap, bp, bp2, g, true, true, ts);
    const T* As = ring + (kt % S) * (W::A_ELEMS + W::B_ELEMS);
    const T* Bs = As + W::A_ELEMS;
    wgmma_fence();
#pragma unroll
    for (int j = 0; j < STEPS; ++j) {
      const int k = k0 + 16 * j;  // k's 64-element atom, then the 16 within it
      wgmma_ss<T, NW>(d, wgmma_desc(As + (k >> 6) * (W::AROWS * 64) + row0 * 64 + (k & 63)),
                      wgmma_desc(Bs + (k >> 6) * (TN * 64) + col0 * 64 + (k & 63)));
    }
    wgmma_commit();
    wgmma_wait<0>();
    wgmma_fence_operands(d);
  }
  cp_async_wait<0>();
  __syncthreads();  // the ring is free: the f32 tile takes its bytes
  if (tma) tma_ring_release<S>();
  mm_wg_store<T, TM, TN, TK, TY, PAIR>(ctx, d, g, yp, row0, col0);
}

// The wgmma form's epilogue: each warpgroup's accumulators d (rows row0.., columns col0..)
// into the f32 tile at ctx.smem, then the tile to y (the gated form: silu_mul of its halves).
template <class T, int TM, int TN, int TK, class TY, bool PAIR>
__device__ __forceinline__ void mm_wg_store(const Ctx& ctx, const float (&d)[MmWgGeom<T, TM, TN, TK>::NW / 2],
                                            const MmArgs& g, TY* yp, int row0, int col0) {
  using W = MmWgGeom<T, TM, TN, TK>;
  constexpr int NW = W::NW, CP = MmGeom<T, TM, TN, TK>::C_PITCH;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  float* cbuf = reinterpret_cast<float*>(ctx.smem);
  const int r = row0 + 16 * (warp & 3) + (lane >> 2);
  // Padded rows (a tile of 32 rows in m64 products: warps 2 and 3 of each warpgroup) have no
  // place in the f32 tile, which has the tile's rows.
  const bool real = W::WTMP == W::TMP || (warp & 3) < W::TMP / 16;
  // d's pairs of columns into the f32 tile, or added to what is there.
  auto put = [&](bool add) {
#pragma unroll
    for (int j = 0; j < NW / 8; ++j) {
      const int c = col0 + 8 * j + 2 * (lane & 3);
      float2* lo = reinterpret_cast<float2*>(cbuf + r * CP + c);
      float2* hi = reinterpret_cast<float2*>(cbuf + (r + 8) * CP + c);
      *lo = add ? make_float2(lo->x + d[4 * j], lo->y + d[4 * j + 1]) : make_float2(d[4 * j], d[4 * j + 1]);
      *hi = add ? make_float2(hi->x + d[4 * j + 2], hi->y + d[4 * j + 3]) : make_float2(d[4 * j + 2], d[4 * j + 3]);
    }
  };
  if constexpr (W::KSPLIT) {
    // Both warpgroups hold the whole tile over half of K: the second's sums go first, the
    // first's are added to them.
    if (real && (warp >> 2) == 1) put(false);
    __syncthreads();
    if (real && (warp >> 2) == 0) put(true);
  } else if (real) {
    put(false);
  }
  __syncthreads();
  if constexpr (PAIR) {
    mm_gated_store<TN>(cbuf, CP, g, yp);
  } else {
    mm_each_element(g, [&](int m, int n) { yp[m * g.yms + n * g.yns] = from_f32<TY>(cbuf[m * CP + n]); });
    __syncthreads();
  }
}

// Whether a tile's shape can stream its weights: the wgmma form of at most 64 rows of a, its
// columns unsplit (not KSPLIT: the stream's units are laid out for the column halves), 128-deep
// stages of 64 or 128 columns of b (the gated form: 64 of each weight).
template <class T, int TM, int TN, int TK, bool PAIR>
__device__ __forceinline__ constexpr bool mm_streamable() {
  using W = MmWgGeom<T, TM, TN, TK>;
  return W::ON && W::TMP <= 64 && !W::KSPLIT && TK == kStreamUnitK && (TN == 64 || TN == 128) && (!PAIR || TN == 128);
}

// Whether this product streams its weights across tasks (stream.cuh), and its stages if so
// (d.nk = 0 if not): a streamable shape (above) whose b (and b_up) have tensor maps there.
// matmul_describe and the matmul agree through it.
template <class T, int TM, int TN, int TK, bool PAIR>
__device__ __forceinline__ bool mm_stream_of(const T* ap, const T* bp, const T* bp2, bool tb, const MmArgs& g,
                                             TmaB m1, TmaB m2, StreamDesc& d) {
  d.nk = 0;
  if constexpr (!mm_streamable<T, TM, TN, TK, PAIR>()) {
    return false;
  } else {
    if (!mm_use_wgmma<T, TM, TN, TK>(ap, bp, bp2, tb, g) || m1.map == nullptr || (PAIR && m2.map == nullptr))
      return false;
    const long long off = bp - static_cast<const T*>(m1.base);
    d.map = m1.map;
    d.y = (int)(off / g.bns);
    d.x = (int)(off - (long long)d.y * g.bns);
    if constexpr (PAIR) {
      const long long off2 = bp2 - static_cast<const T*>(m2.base);
      d.map2 = m2.map;
      d.y2 = (int)(off2 / g.bns);
      d.x2 = (int)(off2 - (long long)d.y2 * g.bns);
    } else {
      d.map2 = m1.map;  // a 128-column tile's second half of rows
      d.x2 = d.x;
      d.y2 = d.y + kStreamUnitRows;
    }
    d.ups = TN / kStreamUnitRows;
    d.nk = (int)(g.K / TK);
    return true;
  }
}

// The wgmma product with b from the stream's ring (mm_stream_of said so): a through a ring of
// its own in ctx.smem, kStreamAStages deep; stage kt's units are base + kt * UPS ... (base: the
// units consumed before this task). Thread 0 tops the ring up before each stage and marks the
// previous stage consumed once every warp passed the stage's barrier (its products waited for).
template <class T, int TM, int TN, int TK, class TY, bool PAIR>
__device__ void mm_wgmma_stream(const Ctx& ctx, const T* ap, const MmArgs& g, TY* yp) {
  using W = MmWgGeom<T, TM, TN, TK>;
  constexpr int SA = kStreamAStages, NW = W::NW, UPS = TN / kStreamUnitRows;
  constexpr int A_STAGE = W::WTMP * TK;  // whole m64 stages of a (its ring has no slack past its end)
  static_assert(W::TMP <= 64 && W::WTMP == 64 && TK == kStreamUnitK, "mm_wgmma_stream: tiles of at most 64 rows");
  StreamState& st = stream_state();
  T* aring = mm_wg_ring<T>(ctx);
  const unsigned base = st.consumed;
  const int warp = threadIdx.x >> 5, wg = warp >> 2;
  const int col0 = NW * wg, unit = col0 / kStreamUnitRows, urow = col0 % kStreamUnitRows;
  const int nk = (int)(g.K / TK);
  // This task's first units, the walk describing it if it has not yet: before the accumulators
  // are live, since stream_pump is a call (the loop below only issues, inline).
  if (threadIdx.x == 0 && st.issued < base + (unsigned)UPS) stream_pump();
  float d[NW / 2];
#pragma unroll
  for (int i = 0; i < NW / 2; ++i) d[i] = 0.0f;
  wgmma_fence_operands(d);
  auto issue_a = [&](int kt) {
    if (kt < nk)
      load_tile_sw<T, TK, false>(aring + (kt % SA) * A_STAGE, W::WTMP, 0, W::TMP, g.M, ap + (long long)kt * TK, g.ams);
    cp_async_commit();
  };
#pragma unroll 1
  for (int s = 0; s < SA - 1; ++s) issue_a(s);
#pragma unroll 1
  for (int kt = 0; kt < nk; ++kt) {
    const unsigned n0 = base + (unsigned)(kt * UPS);
    if (threadIdx.x == 0) stream_issue();
    cp_async_wait<SA - 2>();
    stream_wait(n0 + unit);
    fence_proxy_async_smem();  // cp.async wrote a's stage; wgmma reads it through the async proxy
    __syncthreads();
    if (threadIdx.x == 0) st.consumed = n0;
    issue_a(kt + SA - 1);
    const T* As = aring + (kt % SA) * A_STAGE;
    const T* Bu = reinterpret_cast<const T*>(stream_unit(n0 + unit)) + urow * 64;
    wgmma_fence();
#pragma unroll
    for (int ka = 0; ka < TK / 64; ++ka)
#pragma unroll
      for (int kk = 0; kk < 4; ++kk)
        wgmma_ss<T, NW>(d, wgmma_desc(As + ka * (W::WTMP * 64) + kk * 16),
                        wgmma_desc(Bu + ka * (kStreamUnitRows * 64) + kk * 16));
    wgmma_commit();
    wgmma_wait<0>();
    wgmma_fence_operands(d);
  }
  cp_async_wait<0>();
  __syncthreads();  // every warp's products are done: the units are free, a's ring takes the f32 tile
  if (threadIdx.x == 0) {
    st.consumed = base + (unsigned)(nk * UPS);
    stream_issue();  // the next described tasks' weights, while this one stores
  }
  mm_wg_store<T, TM, TN, TK, TY, PAIR>(ctx, d, g, yp, 0, col0);
}

// A streaming megakernel's matmul (ctx.stream): the streamed form, which etcc made sure every
// matmul of such a kernel takes; a product that cannot (no tensor map at run time) stops the
// kernel rather than use a ring that would overlap the stream's.
template <class T, int TM, int TN, int TK, class TY, bool PAIR>
__device__ __forceinline__ void mm_streamed(const Ctx& ctx, const T* ap, const T* bp, const T* bp2, bool tb,
                                            const MmArgs& g, TY* yp, TmaB m1, TmaB m2) {
  StreamDesc sd;
  if (!mm_stream_of<T, TM, TN, TK, PAIR>(ap, bp, bp2, tb, g, m1, m2, sd)) __trap();
  if constexpr (mm_streamable<T, TM, TN, TK, PAIR>()) mm_wgmma_stream<T, TM, TN, TK, TY, PAIR>(ctx, ap, g, yp);
}

template <int TM, int TN, int TK, class TY>
__device__ __forceinline__ void mm_f32(const Ctx& ctx, const float* ap, const float* bp, bool tb,
                                       const MmArgs& g, TY* yp) {
  using Geo = MmGeom<float, TM, TN, TK>;
  constexpr int S = Geo::STAGES;
  float* ring = reinterpret_cast<float*>(ctx.smem);
  const int tid = threadIdx.x, nt = blockDim.x;
  const int gmc = (int)((g.M + 3) / 4), gnc = TN / 4;
  const int GA = gmc * gnc;  // micro-tiles that hold any output row
  int KS = 1;                // threads per micro-tile: a power of two within a warp
  while (KS < 32 && KS * 2 * GA <= nt) KS *= 2;
  const int gpr = nt / KS;
  const int ks = tid % KS;
  const int nk = (int)((g.K + TK - 1) / TK);
  const int a_rows = gmc * 4 < Geo::TMP ? gmc * 4 : Geo::TMP;

  for (int g0 = 0; g0 < GA; g0 += gpr) {
    const int grp = g0 + tid / KS;
    const bool active = grp < GA;
    const int m0 = active ? (grp / gnc) * 4 : 0;
    const int n0 = active ? (grp % gnc) * 4 : 0;
    float acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;

#pragma unroll 1
    for (int s = 0; s < S - 1; ++s) mm_issue<float, TM, TN, TK>(ring, s, nk, a_rows, ap, bp, nullptr, tb, g);

#pragma unroll 1
    for (int kt = 0; kt < nk; ++kt) {
      cp_async_wait<S - 2>();
      __syncthreads();
      mm_issue<float, TM, TN, TK>(ring, kt + S - 1, nk, a_rows, ap, bp, nullptr, tb, g);
      const float* As = ring + (kt % S) * (Geo::A_ELEMS + Geo::B_ELEMS);
      const float* Bs = As + Geo::A_ELEMS;
      if (active) {
#pragma unroll 1
        for (int kc = ks * 4; kc < TK; kc += KS * 4) {
          float4 av[4], bv[4];
#pragma unroll
          for (int i = 0; i < 4; ++i)
            av[i] = *reinterpret_cast<const float4*>(As + (m0 + i) * Geo::A_PITCH + kc);
          if (tb) {
            // bv[j] = b[n0 + j][kc .. kc + 3]
#pragma unroll
            for (int j = 0; j < 4; ++j)
              bv[j] = *reinterpret_cast<const float4*>(Bs + (n0 + j) * Geo::BT_PITCH + kc);
          } else {
            // Read b[kc + q][n0 .. n0 + 3] and transpose in registers.
            float4 r[4];
#pragma unroll
            for (int q = 0; q < 4; ++q)
              r[q] = *reinterpret_cast<const float4*>(Bs + (kc + q) * Geo::BN_PITCH + n0);
            bv[0] = make_float4(r[0].x, r[1].x, r[2].x, r[3].x);
            bv[1] = make_float4(r[0].y, r[1].y, r[2].y, r[3].y);
            bv[2] = make_float4(r[0].z, r[1].z, r[2].z, r[3].z);
            bv[3] = make_float4(r[0].w, r[1].w, r[2].w, r[3].w);
          }
#pragma unroll
          for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int j = 0; j < 4; ++j) {
              acc[i][j] = fmaf(av[i].x, bv[j].x, acc[i][j]);
              acc[i][j] = fmaf(av[i].y, bv[j].y, acc[i][j]);
              acc[i][j] = fmaf(av[i].z, bv[j].z, acc[i][j]);
              acc[i][j] = fmaf(av[i].w, bv[j].w, acc[i][j]);
            }
        }
      }
    }
    cp_async_wait<0>();
    // The KS threads of a micro-tile are adjacent lanes of one warp.
#pragma unroll 1
    for (int o = KS / 2; o > 0; o >>= 1)
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] += __shfl_xor_sync(0xffffffffu, acc[i][j], o);
    if (active && ks == 0) {
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
          if (m0 + i < g.M && n0 + j < g.N)
            yp[(m0 + i) * g.yms + (n0 + j) * g.yns] = from_f32<TY>(acc[i][j]);
    }
    __syncthreads();  // the ring is reused by the next round or the next op
  }
}

}  // namespace detail

// Dynamic shared memory matmul<TM, TN, TK> needs for input dtype T (T: float, __half,
// __nv_bfloat16); ctx.smem must be 16-byte aligned.
template <class T, int TM, int TN, int TK>
__host__ __device__ constexpr unsigned matmul_smem_bytes() {
  return detail::MmGeom<T, TM, TN, TK>::SMEM;
}

namespace detail {
template <int TM, int TN, class TA, class TB>
__device__ __forceinline__ MmArgs mm_args(const View<TA>& a, const View<TB>& b, bool transpose_b) {
  MmArgs g;
  const bool avec = a.rank == 1;
  g.M = avec ? 1 : a.ext[0];
  g.K = pick(a.ext, a.rank - 1);
  g.N = transpose_b ? b.ext[0] : b.ext[1];
  if (g.M > TM) g.M = TM;
  if (g.N > TN) g.N = TN;
  g.ams = avec ? 0 : a.stride[0];
  g.aks = pick(a.stride, a.rank - 1);
  g.bks = transpose_b ? b.stride[1] : b.stride[0];
  g.bns = transpose_b ? b.stride[0] : b.stride[1];
  return g;
}
}  // namespace detail

namespace detail {
// matmul_prefetch and matmul_silu_mul_prefetch: b's (and with PAIR b_up's, at bp2) tiles of
// stages 0 .. mm_prefetch_stages(S) - 1 into the ring.
template <int TM, int TN, int TK, bool PAIR, class TA, class TB>
__device__ void mm_prefetch(const Ctx& ctx, const View<TA>& a, const View<TB>& b, const bare_t<TB>* bp2, bool transpose_b,
                            TmaB tb, TmaB tb2) {
  using T = bare_t<TA>;
  if constexpr (!same_v<T, float>) {
    using Geo = MmGeom<T, TM, TN, TK>;
    const MmArgs g = mm_args<TM, PAIR ? TN / 2 : TN>(a, b, transpose_b);
    const int nk = (int)((g.K + TK - 1) / TK);
    if (mm_use_wgmma<T, TM, TN, TK>(a.ptr, b.ptr, bp2, transpose_b, g)) {
      constexpr int S = MmWgGeom<T, TM, TN, TK>::STAGES;
      T* ring = mm_wg_ring<T>(ctx);
      TmaStream ts;
      const bool tma = mm_wg_tma<T, TM, TN, TK, PAIR>(b.ptr, bp2, g, tb, tb2, ts);
      if (tma) mm_tma_ring_setup<S>();  // its matmul then finds the mbarriers set up
#pragma unroll 1
      for (int s = 0; s < mm_prefetch_stages(S); ++s)
        mm_issue_wg<T, TM, TN, TK, PAIR>(ring, s, nk, a.ptr, b.ptr, bp2, g, false, true, tma ? &ts : nullptr);
      return;
    }
    T* ring = reinterpret_cast<T*>(ctx.smem);
#pragma unroll 1
    for (int s = 0; s < mm_prefetch_stages(Geo::STAGES); ++s)
      mm_issue<T, TM, TN, TK, PAIR>(ring, s, nk, 0, a.ptr, b.ptr, bp2, transpose_b, g, false, true);
  }
}
}  // namespace detail

// Starts loading b's first tiles (the weights of a decode step: never written during the launch)
// into the shared-memory ring, to be called before the task waits on its events: the weights
// stream in while the task waits for a. The matmul that follows, with the same operands and
// prefetched = true, must be the next use of ctx.smem. 16-bit dtypes; for f32 it does nothing.
template <int TM, int TN, int TK, class TA, class TB>
__device__ void matmul_prefetch(const Ctx& ctx, const View<TA>& a, const View<TB>& b, bool transpose_b,
                                TmaB tb = TmaB{}) {
  detail::mm_prefetch<TM, TN, TK, false>(ctx, a, b, nullptr, transpose_b, tb, TmaB{});
}

// matmul_prefetch for matmul_silu_mul (TN: the columns of both halves).
template <int TM, int TN, int TK, class TA, class TB>
__device__ void matmul_silu_mul_prefetch(const Ctx& ctx, const View<TA>& a, const View<TB>& b, const View<TB>& b_up,
                                         bool transpose_b, TmaB tb = TmaB{}, TmaB tb_up = TmaB{}) {
  detail::mm_prefetch<TM, TN, TK, true>(ctx, a, b, b_up.ptr, transpose_b, tb, tb_up);
}

// The stages of this matmul's weight stream (stream.cuh), into the stream's walk: what a
// streaming kernel's generated etc_describe_K calls in place of the matmul, with its operands.
template <int TM, int TN, int TK, class TA, class TB>
__device__ void matmul_describe(const Ctx& ctx, const View<TA>& a, const View<TB>& b, bool transpose_b,
                                TmaB tb = TmaB{}) {
  using T = bare_t<TA>;
  StreamDesc& d = *static_cast<StreamDesc*>(ctx.desc);
  d.nk = 0;
  if constexpr (!same_v<T, float>) {
    const detail::MmArgs g = detail::mm_args<TM, TN>(a, b, transpose_b);
    detail::mm_stream_of<T, TM, TN, TK, false>(a.ptr, b.ptr, nullptr, transpose_b, g, tb, TmaB{}, d);
  }
}

// matmul_describe for matmul_silu_mul (TN: the columns of both halves).
template <int TM, int TN, int TK, class TA, class TB>
__device__ void matmul_silu_mul_describe(const Ctx& ctx, const View<TA>& a, const View<TB>& b, const View<TB>& b_up,
                                         bool transpose_b, TmaB tb = TmaB{}, TmaB tb_up = TmaB{}) {
  using T = bare_t<TA>;
  StreamDesc& d = *static_cast<StreamDesc*>(ctx.desc);
  d.nk = 0;
  if constexpr (!same_v<T, float>) {
    const detail::MmArgs g = detail::mm_args<TM, TN / 2>(a, b, transpose_b);
    detail::mm_stream_of<T, TM, TN, TK, true>(a.ptr, b.ptr, b_up.ptr, transpose_b, g, tb, tb_up, d);
  }
}

// y = a @ b (transpose_b: a @ b^T). a is [M, K] or [K]; b is [K, N] or [N, K]; y is [M, N]
// or [N]; M <= TM, N <= TN (larger extents are clipped), any K; any strides. prefetched: see
// matmul_prefetch. kFallbackCall: the mma.sync form as a call (ETC_MM_FALLBACK_CALL).
template <int TM, int TN, int TK, bool kFallbackCall = false, class TA, class TB, class TY>
__device__ void matmul(const Ctx& ctx, const View<TA>& a, const View<TB>& b, bool transpose_b,
                       const View<TY>& y, bool prefetched = false, TmaB tb = TmaB{}) {
  using T = bare_t<TA>;
  static_assert(same_v<T, bare_t<TB>>, "matmul: a and b must have the same dtype");
  static_assert(is_float_v<T> && is_float_v<TY>, "matmul: float dtypes only");
  detail::MmArgs g = detail::mm_args<TM, TN>(a, b, transpose_b);
  g.yms = y.rank == 1 ? 0 : y.stride[0];
  g.yns = pick(y.stride, y.rank - 1);
  const T* ap = a.ptr;
  const T* bp = b.ptr;
  if constexpr (same_v<T, float>) {
    detail::mm_f32<TM, TN, TK>(ctx, ap, bp, transpose_b, g, y.ptr);
  } else {
    if constexpr (ETC_MM_STREAM != 0)
      if (ctx.stream) {
        detail::mm_streamed<T, TM, TN, TK, TY, false>(ctx, ap, bp, nullptr, transpose_b, g, y.ptr, tb, TmaB{});
        return;
      }
    if constexpr (detail::MmWgGeom<T, TM, TN, TK>::ON)
      if (detail::mm_use_wgmma<T, TM, TN, TK>(ap, bp, nullptr, transpose_b, g)) {
        detail::mm_wgmma<T, TM, TN, TK, TY, false>(ctx, ap, bp, nullptr, g, y.ptr, prefetched, tb);
        return;
      }
    if constexpr (detail::mm_has_large_m_tiling(TM))
      if (g.M > 16 * ETC_MM_LARGE_M_FM) {
        detail::mm_tensor_core_fallback<T, TM, TN, TK, TY, kFallbackCall, ETC_MM_LARGE_M_FM>(
            ctx, ap, bp, nullptr, transpose_b, g, y.ptr, prefetched);
        return;
      }
    detail::mm_tensor_core_fallback<T, TM, TN, TK, TY, kFallbackCall>(ctx, ap, bp, nullptr, transpose_b, g, y.ptr,
                                                                     prefetched);
  }
}

// Shared memory of matmul_silu_mul<TM, TN, TK> for input dtype T. f32 computes the halves one
// after the other into a tile kept after the ring.
template <class T, int TM, int TN, int TK>
__host__ __device__ constexpr unsigned matmul_silu_mul_smem_bytes() {
  using F = detail::MmGeom<float, TM, TN / 2, TK>;
  return same_v<T, float> ? F::SMEM + (unsigned)F::TMP * (TN + 8) * 4u : detail::MmGeom<T, TM, TN, TK>::SMEM;
}

// The gated matmul: y = silu_mul(a @ b, a @ b_up) (transpose_b: b and b_up are [N, K]), each
// product rounded to y's dtype before silu_mul, as if written to tensors of that dtype: the
// same bits as two matmuls and a silu_mul. TN covers both products (y gets TN / 2 columns);
// both weights stream through one pipeline. b_up must have b's extents and strides (etcc checks
// it). prefetched: see matmul_silu_mul_prefetch; kFallbackCall: see matmul.
template <int TM, int TN, int TK, bool kFallbackCall = false, class TA, class TB, class TY>
__device__ void matmul_silu_mul(const Ctx& ctx, const View<TA>& a, const View<TB>& b, const View<TB>& b_up,
                                bool transpose_b, const View<TY>& y, bool prefetched = false, TmaB tb = TmaB{},
                                TmaB tb_up = TmaB{}) {
  using T = bare_t<TA>;
  static_assert(same_v<T, bare_t<TB>>, "matmul_silu_mul: a and b must have the same dtype");
  static_assert(is_float_v<T> && is_float_v<TY>, "matmul_silu_mul: float dtypes only");
  static_assert(TN % 16 == 0, "matmul_silu_mul: TN covers two halves of a multiple of 8");
  detail::MmArgs g = detail::mm_args<TM, TN / 2>(a, b, transpose_b);
  g.yms = y.rank == 1 ? 0 : y.stride[0];
  g.yns = pick(y.stride, y.rank - 1);
  if constexpr (same_v<T, float>) {
    // Each half into an f32 tile after the ring, then the epilogue from the tile.
    using F = detail::MmGeom<float, TM, TN / 2, TK>;
    float* c = reinterpret_cast<float*>(ctx.smem + F::SMEM);
    constexpr int CP = TN + 8;
    detail::MmArgs h = g;
    h.yms = CP;
    h.yns = 1;
    detail::mm_f32<TM, TN / 2, TK>(ctx, a.ptr, b.ptr, transpose_b, h, c);
    detail::mm_f32<TM, TN / 2, TK>(ctx, a.ptr, b_up.ptr, transpose_b, h, c + TN / 2);
    detail::mm_gated_store<TN>(c, CP, g, y.ptr);
  } else {
    if constexpr (ETC_MM_STREAM != 0)
      if (ctx.stream) {
        detail::mm_streamed<T, TM, TN, TK, TY, true>(ctx, a.ptr, b.ptr, b_up.ptr, transpose_b, g, y.ptr, tb, tb_up);
        return;
      }
    if constexpr (detail::MmWgGeom<T, TM, TN, TK>::ON)
      if (detail::mm_use_wgmma<T, TM, TN, TK>(a.ptr, b.ptr, b_up.ptr, transpose_b, g)) {
        detail::mm_wgmma<T, TM, TN, TK, TY, true>(ctx, a.ptr, b.ptr, b_up.ptr, g, y.ptr, prefetched, tb, tb_up);
        return;
      }
    if constexpr (detail::mm_has_large_m_tiling(TM))
      if (g.M > 16 * ETC_MM_LARGE_M_FM) {
        detail::mm_tensor_core_fallback<T, TM, TN, TK, TY, kFallbackCall, ETC_MM_LARGE_M_FM, true>(
            ctx, a.ptr, b.ptr, b_up.ptr, transpose_b, g, y.ptr, prefetched);
        return;
      }
    detail::mm_tensor_core_fallback<T, TM, TN, TK, TY, kFallbackCall, 16, true>(ctx, a.ptr, b.ptr, b_up.ptr,
                                                                               transpose_b, g, y.ptr, prefetched);
  }
}

}  // namespace dev
}  // namespace etc
