// The weight stream through Hopper's tensor memory accelerator (TMA): 2-D tensor copies of
// 64 x 64 boxes in the 128-byte swizzle (wgmma.cuh's operand layout), completing on an mbarrier
// per ring stage. One thread issues a stage, where cp.async takes 16 bytes a thread and keeps
// every thread issuing while the SM's queue is full. Alone it streams faster
// (tools/bench_prefetch.cu, H200, 128 CTAs of 256 KiB: 12.0 us by TMA against 13.6 by cp.async
// through 4 stages of 16 KiB), but in the decode step it was slower (H200, Llama-3.2-1B at B = 1,
// 16 and 128: +7.4, +6.4 and +5.8%; docs/benchmarks.md, session 51): opt-in, ETC_MM_TMA=1.
//
// The tensor maps are the runtime's: one 128-byte CUtensorMap per tensor that the descriptor's
// "tmaps" lists (rank-2 16-bit params, [rows, columns] with the columns contiguous), encoded
// when the tensors are bound, in an array indexed by tensor that EtcParams.tmaps points to
// (null when there are none, or when the device or a tensor's address rules TMA out).
#pragma once

#include "etc/device/common.cuh"

// 1: a wgmma matmul tile streams b (its weights) by TMA where the runtime made b's tensor map;
// 0: always by cp.async.
#ifndef ETC_MM_TMA
#define ETC_MM_TMA 0
#endif

namespace etc {
namespace dev {

// Where a matmul operand's tensor map is (null: none) and the start of its tensor, from which a
// view's offset gives the box coordinates.
struct TmaB {
  const void* map = nullptr;
  const void* base = nullptr;
};

// The TmaB of tensor slot `slot` of the kernel parameters p (&p.tensor[i]).
template <class P>
__device__ __forceinline__ TmaB tma_of(const P& p, void* const* slot) {
  TmaB t;
  t.map = p.tmaps ? static_cast<const unsigned char*>(p.tmaps) + 128 * (slot - p.tensor) : nullptr;
  t.base = *slot;
  return t;
}

namespace detail {

constexpr int kTmaBox = 64;  // a box's rows and its columns (64 16-bit elements: one 128-byte swizzle row)
constexpr int kMaxTmaStages = 8;

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
constexpr bool kHaveTma = ETC_MM_TMA != 0;
#else
constexpr bool kHaveTma = false;
#endif

// The ring stages' mbarriers (one per stage), in static shared memory of their own: the ring's
// bytes are also the f32 tile of the epilogue and other ops' scratch.
__device__ __forceinline__ unsigned long long* tma_bars() {
  __shared__ unsigned long long bars[kMaxTmaStages];
  return bars;
}

__device__ __forceinline__ void mbar_init(unsigned long long* b, unsigned count) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(b)), "r"(count) : "memory");
#endif
}
__device__ __forceinline__ void mbar_inval(unsigned long long* b) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("mbarrier.inval.shared::cta.b64 [%0];\n" ::"r"(smem_addr(b)) : "memory");
#endif
}
// The inits visible to the copy engine before its first complete_tx.
__device__ __forceinline__ void mbar_fence_init() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void mbar_expect_tx(unsigned long long* b, unsigned bytes) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(b)), "r"(bytes) : "memory");
#endif
}
__device__ __forceinline__ void mbar_wait(unsigned long long* b, unsigned parity) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile(
      "{\n .reg .pred p;\n ETC_MBAR_WAIT_%=:\n mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
      " @!p bra ETC_MBAR_WAIT_%=;\n}\n" ::"r"(smem_addr(b)),
      "r"(parity)
      : "memory");
#endif
}
// The box at column x, row y of the tensor map into shared memory at dst (1024-byte aligned),
// counted on mbarrier bar; evict-first in L2, as the cp.async weight stream.
__device__ __forceinline__ void tma_box(void* dst, const void* map, int x, int y, unsigned long long* bar,
                                        unsigned long long policy) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
      " [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(smem_addr(dst)),
      "l"(map), "r"(x), "r"(y), "r"(smem_addr(bar)), "l"(policy)
      : "memory");
#endif
}

// A matmul's b operand(s) by TMA: the maps and the coordinates of the view's first element.
struct TmaStream {
  const void* map = nullptr;
  const void* map2 = nullptr;  // the gated matmul's up weights
  int x = 0, y = 0, x2 = 0, y2 = 0;
};

// Whether b (and b_up) stream by TMA, and from where: both maps present, the view's rows `bns`
// elements apart (its tensor's row length: the map's), its first element on a whole 16 bytes
// (the wgmma form requires it already).
template <class T>
__device__ __forceinline__ bool tma_stream_of(const T* bp, const T* bp2, long long bns, TmaB tb, TmaB tb2, bool pair,
                                              TmaStream& s) {
  if (!kHaveTma || tb.map == nullptr || (pair && tb2.map == nullptr)) return false;
  const long long off = bp - static_cast<const T*>(tb.base);
  s.map = tb.map;
  s.y = (int)(off / bns);
  s.x = (int)(off - (long long)s.y * bns);
  if (pair) {
    const long long off2 = bp2 - static_cast<const T*>(tb2.base);
    s.map2 = tb2.map;
    s.y2 = (int)(off2 / bns);
    s.x2 = (int)(off2 - (long long)s.y2 * bns);
  }
  return true;
}

// Thread 0: S fresh mbarriers for a task's ring (after every thread's fence_proxy_async_smem and
// a barrier: the ring's bytes may hold an earlier op's ordinary stores).
// (A ring of more stages than kMaxTmaStages never streams by TMA: mm_wg_tma.)
template <int S>
__device__ __forceinline__ void tma_ring_init() {
  if (threadIdx.x == 0) {
    unsigned long long* bars = tma_bars();
#pragma unroll
    for (int s = 0; s < (S < kMaxTmaStages ? S : kMaxTmaStages); ++s) mbar_init(&bars[s], 1u);
    mbar_fence_init();
  }
}
// Thread 0, after the K loop waited for every stage: the mbarriers' phases end with the task.
template <int S>
__device__ __forceinline__ void tma_ring_release() {
  if (threadIdx.x == 0) {
    unsigned long long* bars = tma_bars();
#pragma unroll
    for (int s = 0; s < (S < kMaxTmaStages ? S : kMaxTmaStages); ++s) mbar_inval(&bars[s]);
  }
}

}  // namespace detail
}  // namespace dev
}  // namespace etc
