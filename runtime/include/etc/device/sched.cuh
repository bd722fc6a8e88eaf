// The dynamic schedule's task queue (docs/backend.md, "The dynamic schedule"). A megakernel with
// a dynamic schedule keeps, in the zeroed event-counter area of its launch:
//
//   head, tail, 2 spare | pending[max_tasks] | queue[max_tasks + max_ctas]
//
// A task word is the task's number in the kernel's static numbering plus 1 (0 = slot not yet
// written). Every task is pushed exactly once, when the last event element it waits on
// completes (or at the start when it waits on nothing), so no CTA ever spins on a producer
// that is not running: a CTA with nothing to do spins only on its next queue slot. As every
// task takes exactly one slot, slots [0, total) hold all of them and a CTA that pops a slot
// >= total leaves: no end marker, no count of finished tasks.
//
// Memory ordering: a notifier writes its data, passes a CTA barrier, fences (gpu scope) and
// adds to the counter. The thread that completes an element (its add returns count - 1) fences
// after the add, so every notifier's writes happen before what follows; that thread's CTA then
// fences and adds to the consumer's pending count, the last adder fences again before it
// publishes the task word with an atomic exchange, and the popping CTA fences after it reads
// the word. Each step is a fence on both sides of a relaxed atomic on one location, the
// pattern that the PTX memory model makes a synchronization, and causality order is
// transitive, so the consumer task sees every producer's data.
#pragma once

#include "etc/device/events.cuh"

namespace etc {
namespace dev {

// The grid that holds task number g (0 <= g < ends[n - 1]): the first k with g < ends[k], where
// ends[k] is the first task number after grid k (empty grids repeat the previous end).
__device__ __forceinline__ int grid_of(const long long* ends, int n, long long g) {
  int lo = 0, hi = n - 1;
  while (lo < hi) {
    const int mid = (lo + hi) >> 1;
    if (g < ends[mid]) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

constexpr unsigned kQueueEnd = 0xffffffffu;      // what sched_pop returns once every task is taken
constexpr unsigned kQueueStarved = 0xfffffffeu;  // ... when the queue stayed empty past the watchdog budget

struct Sched {
  unsigned int* head;     // next queue slot to pop
  unsigned int* tail;     // next queue slot to push
  unsigned int* pending;  // per task: wait elements completed so far
  unsigned int* queue;    // task words
};

__device__ __forceinline__ Sched sched_at(unsigned int* base, long long max_tasks) {
  return Sched{base, base + 1, base + 4, base + 4 + max_tasks};
}

// Called by one thread; the caller has fenced after the writes the task must see.
__device__ __forceinline__ void sched_push(const Sched& s, unsigned word) {
  unsigned slot = atomicAdd(s.tail, 1u);
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(s.queue + slot), "r"(word) : "memory");
}

// One of the task's `waits` elements completed (called by one thread): the last one makes it
// ready. `waits` is the number of (wait statement, element) pairs with a non-zero count.
__device__ __forceinline__ void sched_pend(const Sched& s, long long task, unsigned waits) {
  __threadfence();
  if (atomicAdd(s.pending + task, 1u) + 1u == waits) {
    __threadfence();
    sched_push(s, static_cast<unsigned>(task) + 1u);
  }
}

// The next task word for this CTA (same value in every thread): kQueueEnd once all `total`
// tasks are taken, 0 if another CTA recorded an error (the caller leaves the kernel),
// kQueueStarved if the queue stayed empty past the watchdog budget. Starving means no task
// became ready: a dependency cycle or a missing notify that verification would have rejected.
// The caller then names a task that never became ready (sched_pending) and finally calls
// sched_starved.
template <class P>
__device__ __forceinline__ unsigned sched_pop(const P& p, const Sched& s, unsigned total, unsigned& claimed) {
  __shared__ unsigned word;
  if (threadIdx.x == 0) {
    // The slot after this one is claimed now, so that its atomic overlaps this wait and the
    // task that follows (a claimed slot is always filled: every task gets pushed).
    const unsigned slot = claimed;
    claimed = atomicAdd(s.head, 1u);
    unsigned w = kQueueEnd;
    if (slot < total) {
      const unsigned* q = s.queue + slot;
      w = detail::ld_acquire_gpu(q);
      if (w == 0u) {
        const long long budget = p.watchdog_ns;
        const unsigned long long start = detail::globaltimer_ns();
        unsigned sleep = 32;
        for (;;) {
          if (detail::error_code(p.error) != 0u) break;
          __nanosleep(sleep);
          sleep = sleep < 256u ? sleep * 2u : 256u;
          w = detail::ld_acquire_gpu(q);
          if (w != 0u) break;
          if (budget > 0 && detail::globaltimer_ns() - start > (unsigned long long)budget) {
            w = kQueueStarved;
            break;
          }
        }
      }
    }
    word = w;
  }
  __syncthreads();
  unsigned w = word;
  __syncthreads();  // `word` is reused by the next pop
  return w;
}

// Wait elements of task number g completed so far (compared with its waits_T count).
__device__ __forceinline__ unsigned sched_pending(const Sched& s, long long g) {
  return *(volatile const unsigned*)(s.pending + g);
}

// Records that the queue starved (thread 0), unless an error is recorded already: the record
// says how many of the `total` tasks had become ready.
template <class P>
__device__ __forceinline__ void sched_starved(const P& p, const Sched& s, unsigned total) {
  if (threadIdx.x != 0) return;
  WaitSite site{-1, -1, 0, {0, 0, 0, 0}, -1};
  detail::record_error(p.error, ETC_ERR_QUEUE_STARVED, site, -1, *(volatile unsigned*)s.tail, total);
}

namespace detail {
// Completed elements of one notify round: one array per kernel (a non-template function's
// __shared__ has one instance), as the notifies of every task share it.
__device__ __forceinline__ int* completed_list() {
  __shared__ int list[257];  // [0]: count
  return list;
}
}  // namespace detail

// Notify of `n` consecutive elements (counters[0 .. n)) in a dynamic schedule, by all threads.
// Each thread adds to its elements, in rounds of blockDim.x; the elements a round completes
// (count reaches init(i)) are then handed to ready(i) one after the other, which the whole CTA
// runs (it splits the waiters among the threads). The first barrier of a round also orders
// the task's writes before any add. In debug mode an add past the count is recorded and the
// function returns false (the caller leaves the kernel).
template <class P, class Init, class Ready>
__device__ __forceinline__ bool notify_range(const P& p, unsigned int* counters, long long n, Init init,
                                             Ready ready, const WaitSite& site) {
  int* list = detail::completed_list();
  for (long long base = 0; base < n; base += blockDim.x) {
    if (threadIdx.x == 0) list[0] = 0;
    __syncthreads();
    const long long i = base + threadIdx.x;
    int bad = 0;
    if (i < n) {
      const unsigned target = init(i);
      __threadfence();
      const unsigned old = atomicAdd(counters + i, 1u);
      if (old + 1u == target) {
        __threadfence();
        list[1 + atomicAdd(&list[0], 1)] = static_cast<int>(i - base);
      } else if (old >= target && (p.flags & ETC_FLAG_DEBUG)) {
        detail::record_error(p.error, ETC_ERR_OVER_NOTIFY, site, site.element + i, old + 1u, target);
        bad = 1;
      }
    }
    if (__syncthreads_or(bad)) return false;
    const int done = list[0];
    for (int k = 0; k < done; ++k) ready(base + list[1 + k]);
    __syncthreads();  // list is reset by the next round
  }
  return true;
}

}  // namespace dev
}  // namespace etc
