// Event counters between CTAs of one launch. Counters count notifies up from 0 (the runtime
// zeroes them before every launch); a wait is satisfied when its counter reaches the element's
// initial count. P is the generated EtcParams (members events, error, watchdog_ns, flags).
#pragma once

#ifdef ETC_PROFILE
#include "etc/device/profile.cuh"
#endif

#include "etc/device/common.cuh"
#include "etc/device/stream.cuh"

namespace etc {
namespace dev {

// Where a wait (or a checked notify) is, for the error record.
struct WaitSite {
  int task;                        // index into the descriptor's "tasks", -1 if none
  int event;                       // index into the descriptor's "events"
  int ncoords;                     // valid entries of coords
  long long coords[ETC_MAX_RANK];  // the task's coordinates
  long long element;               // row-major linear index of the (first) event element
};

namespace detail {

__device__ __forceinline__ unsigned ld_acquire_gpu(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ unsigned long long globaltimer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ unsigned error_code(const EtcError* e) {
  return e ? *reinterpret_cast<const volatile unsigned*>(&e->code) : 0u;
}

// First failure wins the record; the fields are published before done = 1.
__device__ __forceinline__ void record_error(EtcError* e, unsigned code, const WaitSite& site,
                                             long long element, unsigned count, unsigned target) {
  if (!e || atomicCAS(&e->code, 0u, code) != 0u) return;
  volatile EtcError* v = e;
  v->task = site.task;
  v->event = site.event;
  int n = site.ncoords < 0 ? 0 : (site.ncoords > ETC_MAX_RANK ? ETC_MAX_RANK : site.ncoords);
  v->ncoords = n;
  for (int i = 0; i < ETC_MAX_RANK; ++i) v->coords[i] = i < n ? site.coords[i] : 0;
  v->element = element;
  v->count = count;
  v->target = target;
  __threadfence();
  v->done = 1u;
  __threadfence();
}

}  // namespace detail

// Adds 1 to each of counter[0 .. n_elements) once every thread of the CTA is done writing:
// barrier, then a gpu-scope release reduction per element (threads split the elements), the
// release half of the pattern that wait()'s acquire load completes. The barrier orders the
// other threads' writes before the releasing thread's, and release is cumulative, so the
// waiter sees them all (CUTLASS's split-K semaphore does the same). A release reduction does
// not wait for a reply, and costs less than the sequentially consistent fence
// (__threadfence) plus atomic it replaces.
__device__ __forceinline__ void red_release_gpu(unsigned int* p, unsigned int v) {
  asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

template <class P>
__device__ __forceinline__ void notify(const P& p, unsigned int* counter,
                                       unsigned int n_elements = 1) {
  (void)p;
  __syncthreads();
  for (unsigned i = threadIdx.x; i < n_elements; i += blockDim.x) red_release_gpu(counter + i, 1u);
}

// The static schedule's notifies of one task, after its ops: notify_fence() once (every
// thread: a barrier, then warp 0 fences at gpu scope), then notify_add() per notify statement,
// whose relaxed reductions warp 0 makes. The fence and each reduction of a lane are the PTX
// release pattern (a fence, then a strong write in program order), and the barrier puts the
// other warps' writes before the fence, so a waiter that acquires the counter sees them all.
// One fence per task instead of one release per notify: a fence waits for the task's writes to
// reach L2, which under a decode step's weight stream took about a microsecond each time.
__device__ __forceinline__ void notify_fence() {
  __syncthreads();
  if (threadIdx.x < 32) asm volatile("fence.acq_rel.gpu;" ::: "memory");
}
// Adds `times` to each of counter[0 .. n_elements) (a statement notifying the same elements
// `times` times over). Called by every thread, after notify_fence(); warp 0 adds.
__device__ __forceinline__ void notify_add(unsigned int* counter, unsigned int n_elements, unsigned int times = 1) {
  if (threadIdx.x >= 32) return;
  for (unsigned i = threadIdx.x; i < n_elements; i += 32)
    asm volatile("red.relaxed.gpu.global.add.u32 [%0], %1;" ::"l"(counter + i), "r"(times) : "memory");
}

// A static notify of an element whose one waiting task its last notifier runs (etcc
// --run-by-last-notifier), after notify_fence(): thread 0 adds `times` with a relaxed atomic
// that returns the old count, and the add that completes the element (old + times == target)
// fences again. That fence is the acquire half of the pattern whose release half is every other
// notifier's fence before its add, as a waiter's acquire load is: the CTA, which runs the
// waiting task next, sees what they wrote. Called by every thread; all get the same answer.
__device__ __forceinline__ bool notify_last(unsigned int* counter, unsigned int times, unsigned int target) {
  int last = 0;
  if (threadIdx.x == 0) {
    unsigned old;
    asm volatile("atom.relaxed.gpu.global.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(counter), "r"(times) : "memory");
    if (old + times == target) {
      asm volatile("fence.acq_rel.gpu;" ::: "memory");
      last = 1;
    }
  }
  return __syncthreads_or(last) != 0;
}

// notify() that also checks, from each add's old value, that no element goes past its initial
// count (the same `initial` for every element of the range). Reports ETC_ERR_OVER_NOTIFY with
// site (site.element = the element of counter[0]) and returns false in every thread if any
// element overflowed. Used when p.flags & ETC_FLAG_DEBUG.
template <class P>
__device__ __forceinline__ bool notify_checked(const P& p, unsigned int* counter,
                                               unsigned int n_elements, unsigned int initial,
                                               const WaitSite& site) {
  __syncthreads();
  int bad = 0;
  for (unsigned i = threadIdx.x; i < n_elements; i += blockDim.x) {
    __threadfence();
    unsigned old = atomicAdd(counter + i, 1u);
    if (old >= initial) {
      detail::record_error(p.error, ETC_ERR_OVER_NOTIFY, site, site.element + i, old + 1u, initial);
      bad = 1;
    }
  }
  return __syncthreads_or(bad) == 0;
}

// Spins (the calling thread alone) until *counter >= target: wait()'s loop, below. Returns false
// if another CTA recorded an error or the watchdog ran out (recorded here). Where it has to spin,
// --profile adds the spin's time to the task's wait time, unless `spun` is given: it is then set
// to 1 (a group of parallel waits records its own time).
// pump: a streaming megakernel's thread 0 (stream.cuh) tops the weight stream up while it spins.
template <class P>
__device__ __forceinline__ bool wait_spin(const P& p, const unsigned int* counter, unsigned int target,
                                          const WaitSite& site, int* spun = nullptr, bool pump = false) {
  if (target == 0u) return true;
  unsigned v = detail::ld_acquire_gpu(counter);
  if (v >= target) return true;
  bool ok = true;
  const long long budget = p.watchdog_ns;
  const unsigned long long start = detail::globaltimer_ns();
  for (unsigned spins = 1;; ++spins) {
    if constexpr (ETC_MM_STREAM != 0)  // no call to it at all otherwise (matmul.cuh, ETC_MM_INLINE)
      if (pump) stream_pump();
    v = detail::ld_acquire_gpu(counter);
    if (v >= target) break;
    if (spins % 32u == 0u) {
      if (detail::error_code(p.error) != 0u) {
        ok = false;
        break;
      }
      if (budget > 0 && detail::globaltimer_ns() - start > (unsigned long long)budget) {
        detail::record_error(p.error, ETC_ERR_WAIT_TIMEOUT, site, site.element, v, target);
        ok = false;
        break;
      }
    }
  }
  if (spun) {
    *spun = 1;
  } else {
#ifdef ETC_PROFILE
    profile::waited(detail::globaltimer_ns() - start);
#endif
  }
  return ok;
}

// Blocks the CTA until *counter >= target. Thread 0 spins with acquire loads, without back-off:
// each load is a round trip to L2, and a satisfied wait is seen within one, which a chain of
// dependent tasks pays once per link. Every 32 loads it checks whether another CTA recorded an
// error (it then gives up) and whether the spin exceeded p.watchdog_ns (<= 0: no watchdog;
// ETC_ERR_WAIT_TIMEOUT). H100, Llama-3.2-1B decode step, B = 1: 2317 -> 2283 us (three calls
// agree within 5 us), B = 128: 7277 -> 7207 us in one call and level in another, against a 32 to
// 256 ns __nanosleep back-off with the error checked before every load. The slow path stays
// inline: a __noinline__ record_error made the same step 2283 -> 2435 us.
// An element whose initial count is 0 at this launch's syms (the empty producer grid of two
// that the syms choose between, such as attention's split and whole grids) is not loaded.
// Ends with a barrier; every thread returns the same value, true when satisfied.
template <class P>
__device__ __forceinline__ bool wait(const P& p, const unsigned int* counter, unsigned int target,
                                     const WaitSite& site, bool pump = false) {
  int ok = 1;
  if (threadIdx.x == 0) ok = wait_spin(p, counter, target, site, nullptr, pump);
  return __syncthreads_and(ok) != 0;
}

// A task's consecutive waits checked in parallel (etcc --parallel-waits): the n-th event element
// waited on goes to thread n % blockDim.x, which spins on it (wait_spin), and one barrier ends
// the group, where wait() is a round trip to L2 and a barrier per element, one after another.
// Every thread calls check() for every element, in the same order, then join(); join() returns
// the same value to every thread, false if a spin gave up. --profile: the group's wait time is
// thread 0's clock from the group's start to the barrier's end, where any thread spun.
struct WaitGroup {
  unsigned n = 0;
  int ok = 1;
  int spun = 0;  // this thread spun (wait_spin set it)
#ifdef ETC_PROFILE
  unsigned long long start;
  __device__ WaitGroup() : start(detail::globaltimer_ns()) {}
#else
  __device__ WaitGroup() {}
#endif
  template <class P>
  __device__ __forceinline__ void check(const P& p, const unsigned int* counter, unsigned int target,
                                        const WaitSite& site) {
    if (n++ % blockDim.x != threadIdx.x || !ok) return;
    if (!wait_spin(p, counter, target, site, &spun)) ok = 0;
  }
  __device__ __forceinline__ bool join() {
#ifdef ETC_PROFILE
    if (__syncthreads_or(spun) && threadIdx.x == 0) profile::waited(detail::globaltimer_ns() - start);
#endif
    return __syncthreads_and(ok) != 0;
  }
};

// True once any CTA has recorded an error. Called by all threads; uniform across the CTA.
template <class P>
__device__ __forceinline__ bool aborted(const P& p) {
  int a = threadIdx.x == 0 ? (detail::error_code(p.error) != 0u) : 0;
  return __syncthreads_or(a) != 0;
}

}  // namespace dev
}  // namespace etc
