// How long an event's notify takes to reach its waiters, by how many CTAs poll the counter and
// how many notify it: the hop of a decode step's chain, alone. One CTA an SM (256 threads,
// thread 0 working, as the megakernel's tasks wait and notify); P producer CTAs each wait
// 20 us (so that every consumer is polling), then notify as etc's static schedule does
// (fence.acq_rel.gpu, then red.relaxed.gpu.add of 1); C consumer CTAs spin with ld.acquire.gpu
// (events.cuh's wait_spin, without its watchdog) until the count reaches P. With K copies of
// the counter (each on its own 128-byte line), each producer adds to every copy and consumer c
// polls copy c % K: the question is whether spreading the pollers over lines makes a notify
// seen sooner. Each line: the median over 31 launches of (the last consumer to see the count,
// and the median one) less the last producer's notify (%globaltimer, ns on every SM).
//   nvcc -std=c++17 -O3 -I runtime/include -gencode arch=compute_90a,code=sm_90a tools/bench_poll.cu -o bench_poll && ./bench_poll
#include <algorithm>
#include <cstdio>
#include <vector>

#include "bench_copies.cuh"
#include "etc/device/events.cuh"

constexpr int kLine = 32;  // counters a 128-byte line

using etc::dev::detail::ld_acquire_gpu;

// CTAs [0, P) notify, [P, P + C) wait; t_notify[p] and t_seen[c] get their times, polls[c] the
// loads consumer c made.
__global__ void __launch_bounds__(256, 1) hop(unsigned* counters, int P, int C, int K, unsigned long long* t_notify,
                                              unsigned long long* t_seen, unsigned* polls) {
  if (threadIdx.x != 0) return;
  const int b = blockIdx.x;
  if (b < P) {
    const unsigned long long t0 = globaltimer_ns();
    while (globaltimer_ns() - t0 < 20000ull) {
    }
    asm volatile("fence.acq_rel.gpu;" ::: "memory");
    t_notify[b] = globaltimer_ns();
    for (int k = 0; k < K; ++k)
      asm volatile("red.relaxed.gpu.global.add.u32 [%0], %1;" ::"l"(counters + k * kLine), "r"(1u) : "memory");
  } else if (b < P + C) {
    const int c = b - P;
    const unsigned* p = counters + (c % K) * kLine;
    unsigned n = 1;
    while (ld_acquire_gpu(p) < (unsigned)P) ++n;
    t_seen[c] = globaltimer_ns();
    polls[c] = n;
  }
}

int main() {
  const int sms = print_device();
  constexpr int kMaxK = 64, kRuns = 31;
  unsigned *counters, *polls;
  unsigned long long *t_notify, *t_seen;
  CK(cudaMalloc(&counters, kMaxK * kLine * sizeof(unsigned)));
  CK(cudaMalloc(&polls, sms * sizeof(unsigned)));
  CK(cudaMalloc(&t_notify, sms * sizeof(unsigned long long)));
  CK(cudaMalloc(&t_seen, sms * sizeof(unsigned long long)));
  struct Case {
    int P, C, K;
  };
  std::vector<Case> cases;
  for (int C : {1, 8, 32, 64, 96, 128})
    for (int K : {1, 4, 16, 32})
      if (K <= C) cases.push_back({1, C, K});
  for (int P : {8, 32, 64, 128}) cases.push_back({P, 1, 1});
  cases.push_back({32, 32, 1});
  cases.push_back({4, 128, 1});
  cases.push_back({4, 128, 16});
  std::printf("%9s %9s %9s %14s %14s %12s\n", "notifiers", "waiters", "copies", "last seen ns", "median ns",
              "polls (med)");
  for (const Case& k : cases) {
    if (k.P + k.C > sms) continue;
    std::vector<double> last, med, pol;
    for (int r = 0; r < kRuns; ++r) {
      CK(cudaMemset(counters, 0, kMaxK * kLine * sizeof(unsigned)));
      hop<<<sms, 256>>>(counters, k.P, k.C, k.K, t_notify, t_seen, polls);
      CK(cudaGetLastError());
      CK(cudaDeviceSynchronize());
      std::vector<unsigned long long> tn(k.P), ts(k.C);
      std::vector<unsigned> pl(k.C);
      CK(cudaMemcpy(tn.data(), t_notify, k.P * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(ts.data(), t_seen, k.C * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(pl.data(), polls, k.C * sizeof(unsigned), cudaMemcpyDeviceToHost));
      const unsigned long long t0 = *std::max_element(tn.begin(), tn.end());
      std::sort(ts.begin(), ts.end());
      std::sort(pl.begin(), pl.end());
      last.push_back((double)(long long)(ts.back() - t0));
      med.push_back((double)(long long)(ts[ts.size() / 2] - t0));
      pol.push_back(pl[pl.size() / 2]);
    }
    std::printf("%9d %9d %9d %14.0f %14.0f %12.0f\n", k.P, k.C, k.K, median(last), median(med), median(pol));
  }
  return 0;
}
