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

// Called by events.cuh's wait() after a spin (thread 0).
__device__ __forceinline__ void waited(unsigned long long ns) { wait_ns() += ns; }

// Before a task, by all threads; thread 0's timestamp is the one recorded.
__device__ __forceinline__ unsigned long long begin() {
  if (threadIdx.x == 0) wait_ns() = 0;
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
