// Per-task timeline records of a megakernel compiled with etcc --profile (ETC_PROFILE defined
// before the device headers). Without --profile none of this is included or called: the
// generated code is the same as if this file did not exist.
#pragma once

#include "etc/abi.h"

namespace etc {
namespace dev {
namespace profile {

__device__ __forceinline__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Nanoseconds the current task of this CTA spent in waits (only thread 0 spins, so only
// thread 0 touches it). One instance per kernel: a non-template function's __shared__.
__device__ __forceinline__ unsigned long long& wait_ns() {
  __shared__ unsigned long long acc;
  return acc;
}

// When the current task's ops began and ended (thread 0; 0 = not reached), as globaltimer
// values: the task function marks them, the record stores them relative to the start.
__device__ __forceinline__ unsigned long long* ops_marks() {
  __shared__ unsigned long long marks[2];
  return marks;
}

// Called by the task function before its first op and before its first notify after an op
// (by all threads; thread 0 records). A mark already set is kept.
__device__ __forceinline__ void mark(int which) {
  if (threadIdx.x == 0 && ops_marks()[which] == 0) ops_marks()[which] = now_ns();
}

// Called by events.cuh's wait() after a spin (thread 0).
__device__ __forceinline__ void waited(unsigned long long ns) { wait_ns() += ns; }

// Before a task, by all threads; thread 0's timestamp is the one recorded.
__device__ __forceinline__ unsigned long long begin() {
  if (threadIdx.x == 0) {
    wait_ns() = 0;
    ops_marks()[0] = ops_marks()[1] = 0;
  }
  return now_ns();
}

// After a task, by all threads: once every thread is done, thread 0 writes the record with
// the coordinates unravelled from the task's number `t` over its grid `extents` (row-major).
template <int R>
__device__ __forceinline__ void end(unsigned int* area, long long max_records, unsigned long long start, int task,
                                    long long t, const long long (&extents)[R]) {
  __syncthreads();
  if (threadIdx.x != 0) return;
  const unsigned long long stop = now_ns();
  const unsigned slot = atomicAdd(area, 1u);
  if ((long long)slot >= max_records) return;
  EtcProfileRecord r;
  r.start_ns = start;
  r.end_ns = stop;
  const unsigned long long w = wait_ns();
  r.wait_ns = w > 0xffffffffull ? 0xffffffffu : (unsigned)w;
  // Offsets clamp to [start, stop]: a task with no ops records ops_ns = 0 at its end.
  auto offset = [&](unsigned long long t) {
    t = t < start ? start : (t > stop ? stop : t);
    const unsigned long long d = t - start;
    return d > 0xffffffffull ? 0xffffffffu : (unsigned)d;
  };
  const unsigned long long* m = ops_marks();
  const unsigned long long ob = m[0] ? m[0] : stop, oe = m[1] ? m[1] : stop;
  r.ops_begin_ns = offset(ob);
  r.ops_ns = offset(oe < ob ? ob : oe) - r.ops_begin_ns;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(r.sm));
  r.cta = blockIdx.x;
  r.task = task;
  for (int k = 0; k < ETC_MAX_RANK; ++k) r.coords[k] = 0;
  for (int k = R - 1; k >= 0; --k) {
    const long long e = extents[k] > 0 ? extents[k] : 1;
    r.coords[k] = (int)(t % e);
    t /= e;
  }
  reinterpret_cast<EtcProfileRecord*>(area + 2)[slot] = r;
}

}  // namespace profile
}  // namespace dev
}  // namespace etc
