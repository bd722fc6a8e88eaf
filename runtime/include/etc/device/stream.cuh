// The weight stream across tasks (opt-in, ETC_MM_STREAM=1; docs/backend.md, "The weight stream
// across tasks"). In a static megakernel a CTA's tasks are known in advance (g, g + gridDim.x,
// ...), and a matmul's weights (params) never depend on an event. So thread 0 walks the CTA's
// coming tasks and keeps a ring of shared-memory units filled with the weights of the next
// matmul tiles, by TMA, whatever the CTA is doing: the ring's turnaround no longer ends with
// each task (its last stages drained, the next task's first loads issued only after its waits).
//
// A unit is 64 rows x 128 columns of a [N, K] 16-bit weight (16 KiB: two 64 x 64 boxes in the
// 128-byte swizzle, wgmma.cuh's operand layout), counted on an mbarrier of its own. A streamed
// matmul stage takes one unit (a 64-column tile) or two (the gated tile's gate and up halves,
// or a 128-column tile's two halves of rows). Units are numbered in the order the walk issues
// them, which is the order the CTA's tasks consume them: unit n sits in slot n % kStreamUnits,
// in that slot's mbarrier phase n / kStreamUnits; it is issued only once unit n - kStreamUnits
// has been consumed (every warp's products of it waited for), so a slot holds one phase at a
// time.
//
// Thread 0 alone issues: before each task and in a streamed matmul's K loop once a stage's
// products are done (stream_issue, within the tasks described so far), and while it spins in a
// task's wait or where a matmul's first units are not yet issued (stream_pump, which describes
// the coming tasks). Which tasks stream, and their stages, come from the generated
// code (etc_describe_K: the task function run in kProduce mode, which only builds the matmul's
// views and calls matmul_describe), so the walk and the tasks agree by construction.
#pragma once

#include "etc/device/common.cuh"
#include "etc/device/tma.cuh"

// 1: static megakernels whose matmuls all take the streamed form (etcc decides) stream their
// weights across tasks; 0: off.
#ifndef ETC_MM_STREAM
#define ETC_MM_STREAM 0
#endif
// The ring's units (16 KiB each).
#ifndef ETC_MM_STREAM_UNITS
#define ETC_MM_STREAM_UNITS 8
#endif
// The CTA's first tasks whose stages the kernel's threads describe together at its start (a
// table in shared memory, 40 bytes an entry); the walk describes the rest one by one.
#ifndef ETC_MM_STREAM_TABLE
#define ETC_MM_STREAM_TABLE 192
#endif

namespace etc {
namespace dev {

constexpr int kStreamUnitRows = 64;
constexpr int kStreamUnitK = 128;
constexpr unsigned kStreamUnitBytes = kStreamUnitRows * kStreamUnitK * 2u;
constexpr int kStreamUnits = ETC_MM_STREAM_UNITS;
static_assert(kStreamUnits >= 4, "ETC_MM_STREAM_UNITS: a two-unit stage needs a ring of at least 4");
constexpr unsigned kStreamRingBytes = (unsigned)kStreamUnits * kStreamUnitBytes;
constexpr int kStreamTable = ETC_MM_STREAM_TABLE;
static_assert(kStreamTable >= 0, "ETC_MM_STREAM_TABLE: a count of tasks");
// a's ring in a streamed matmul (ctx.smem: 4 stages of 64 rows x 128 columns, 16-bit) and its
// 1024-byte alignment; the epilogue's f32 tile (at most 64 x 136 floats) fits in it.
constexpr int kStreamAStages = 4;
constexpr unsigned kStreamCtxBytes = kStreamAStages * 64u * 128u * 2u + 1024u;
// The kernel's dynamic shared memory beyond ctx's: the ring and its alignment.
constexpr unsigned kStreamKernelBytes = kStreamRingBytes + 1024u;

// The stages of one streamed matmul: box coordinates (x: column = K, y: row) of its first unit
// at stage 0, and of the second unit where a stage has two.
struct StreamDesc {
  const void* map;
  const void* map2;  // the second unit's map (the gated tile's up weights; else map)
  int x, y, x2, y2;
  int nk;   // stages; 0: the task does not stream
  int ups;  // units a stage: 1 or 2
};

struct StreamState {
  unsigned char* ring;
  unsigned issued;    // units issued so far
  unsigned consumed;  // units every warp is done with
  int walk_kt;        // the next stage of `cur` to issue
  int walk_i;         // the next task's place among the CTA's tasks (stream_task)
  long long total;
  StreamDesc cur;     // the task the walk is in
  bool (*describe)(const void* params, long long g, StreamDesc* out);
  const void* params;
};

// One per kernel (a non-template function's __shared__ has one instance).
__device__ __forceinline__ StreamState& stream_state() {
  __shared__ StreamState s;
  return s;
}
__device__ __forceinline__ unsigned long long* stream_bars() {
  __shared__ unsigned long long bars[kStreamUnits];
  return bars;
}
// The stages of the CTA's first kStreamTable tasks (stream_start).
__device__ __forceinline__ StreamDesc* stream_table() {
  __shared__ StreamDesc table[kStreamTable > 0 ? kStreamTable : 1];
  return table;
}

// The task number of the CTA's i-th task (a static schedule deals grid tasks round robin).
__device__ __forceinline__ long long stream_task(int i) {
  return blockIdx.x + (long long)i * gridDim.x;
}

__device__ __forceinline__ unsigned char* align_1024(unsigned char* p) {
  return p + ((1024u - (detail::smem_addr(p) & 1023u)) & 1023u);
}

// Thread 0 issues units of the task the walk is in while the ring has room; it stops at that
// task's last stage (the walk goes on only in stream_pump). Inline and without a call: a matmul's
// K loop and its epilogue call it with the accumulators live, and a call there (stream_pump, which
// is noinline) made ptxas spill them around it (the reduced Llama's B <= 31 megakernel: 4.7 KB of
// spills against 8 bytes without the stream).
__device__ __forceinline__ void stream_issue() {
  StreamState& s = stream_state();
  unsigned long long* bars = stream_bars();
  const unsigned long long policy = detail::l2_evict_first();
  while (s.walk_kt < s.cur.nk) {
    const unsigned ups = (unsigned)s.cur.ups;
    if (s.issued + ups > s.consumed + (unsigned)kStreamUnits) return;
    const int dk = s.walk_kt * kStreamUnitK;
    for (unsigned u = 0; u < ups; ++u) {
      const unsigned n = s.issued + u;
      unsigned long long* bar = bars + n % kStreamUnits;
      unsigned char* dst = s.ring + (n % kStreamUnits) * kStreamUnitBytes;
      const void* map = u ? s.cur.map2 : s.cur.map;
      const int x = (u ? s.cur.x2 : s.cur.x) + dk, y = u ? s.cur.y2 : s.cur.y;
      detail::mbar_expect_tx(bar, kStreamUnitBytes);
      detail::tma_box(dst, map, x, y, bar, policy);
      detail::tma_box(dst + kStreamUnitBytes / 2, map, x + 64, y, bar, policy);
    }
    s.issued += ups;
    ++s.walk_kt;
  }
}

// stream_issue, walking on to the CTA's next tasks as each streamed one's stages are all issued.
// The walk reads the first kStreamTable tasks' stages from the table; past it, it describes
// each task itself (etc_describe_K: the task function's kProduce code, cold in the instruction
// cache, and 64-bit arithmetic: microseconds), so it runs only where thread 0 spins in a wait
// anyway, or where a matmul starts whose first units are not issued yet, never inside a K loop.
// (Describing wherever the walk got to, before every task and at every stage, made the
// Llama-3.2-1B step 1.9x slower on an H200.)
__device__ __noinline__ void stream_pump() {
  StreamState& s = stream_state();
  for (;;) {
    stream_issue();
    if (s.walk_kt < s.cur.nk) return;  // the ring is full
    const int i = s.walk_i;
    const long long g = stream_task(i);
    if (g >= s.total) return;
    ++s.walk_i;
    s.walk_kt = 0;
    if (i < kStreamTable) {
      s.cur = stream_table()[i];
    } else {
      s.cur.nk = 0;
      s.describe(s.params, g, &s.cur);
    }
  }
}

// Kernel start (every thread): the ring at `ring` (1024-byte aligned), the walk from this CTA's
// first task, fresh mbarriers, and the table of its first tasks' stages, which the threads
// describe side by side (a describe in a wait delays the task's start when its event comes
// during it).
__device__ __forceinline__ void stream_start(unsigned char* ring, const void* params,
                                             bool (*describe)(const void*, long long, StreamDesc*), long long total) {
  if (threadIdx.x == 0) {
    StreamState& s = stream_state();
    s.ring = ring;
    s.issued = s.consumed = 0u;
    s.walk_kt = 0;
    s.walk_i = 0;
    s.total = total;
    s.cur.nk = 0;
    s.describe = describe;
    s.params = params;
    for (int i = 0; i < kStreamUnits; ++i) detail::mbar_init(stream_bars() + i, 1u);
    detail::mbar_fence_init();
  }
  for (int i = threadIdx.x; i < kStreamTable; i += blockDim.x) {
    StreamDesc& d = stream_table()[i];
    d.nk = 0;
    const long long g = stream_task(i);
    if (g < total) describe(params, g, &d);
  }
  __syncthreads();
}

// Unit n has landed (every thread that reads it waits).
__device__ __forceinline__ void stream_wait(unsigned n) {
  detail::mbar_wait(stream_bars() + n % kStreamUnits, (n / kStreamUnits) & 1u);
}
__device__ __forceinline__ const unsigned char* stream_unit(unsigned n) {
  return stream_state().ring + (n % kStreamUnits) * kStreamUnitBytes;
}

// Thread 0, before the CTA leaves early (a task reported an error): no copy may still be
// writing into its shared memory.
__device__ __forceinline__ void stream_drain() {
  if (threadIdx.x != 0) return;
  const StreamState& s = stream_state();
  for (unsigned n = s.consumed; n != s.issued; ++n) stream_wait(n);
}

}  // namespace dev
}  // namespace etc
