// Would a weight pump help a decode step at small batch? A decode matmul task streams its
// weights through a cp.async ring at about 20 GB/s an SM (docs/benchmarks.md, sessions 32 and
// 34), while DRAM idles through a layer's short links. This
// measures, on one short stream the size of Llama-3.2-1B's gate/up weights ([16384, 2048] bf16,
// 64 MiB, L2 cold), how long 128 CTAs take to stream it through etc's ring (4 stages of 128
// rows x 128 bytes):
//   - alone;
//   - after a separate kernel prefetched its first X MiB into L2 in the order the ring reads it
//     (every row's first K columns first): the chain's idle time spent on the next grid;
//   - with P extra CTAs in the same launch that prefetch ahead of the ring's slowest CTA, at most
//     `ahead` MiB ahead (the consumers publish their step; the pump polls the minimum);
//   - both.
// Then what a CTA streams by itself, from L2 or from DRAM, by the ring's shape and by how its
// copies are issued (each chunk's row and column from its index, or worked out once a thread),
// for 1 to 128 CTAs of 512 KiB each.
// The stream's time is in-kernel (globaltimer: the last consumer's end less the first one's
// start), so a prefetch kernel before it is not counted.
//
//   nvcc -O3 -std=c++17 -I runtime/include -gencode arch=compute_90a,code=sm_90a tools/bench_pump.cu -o bench_pump
//   ./bench_pump [K] [N]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "bench_copies.cuh"

constexpr int kCtas = 128, kS = 4, kSR = 128, kSC = 64;  // etc's gate/up ring: 16 KiB stages
constexpr int kSlabBytes = 512;                          // a pump's prefetch: 512 B of one row

__device__ __forceinline__ void prefetch_bulk(const void* g, unsigned bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(g), "r"(bytes) : "memory");
}
__device__ __forceinline__ void prefetch_line(const void* g) {
  asm volatile("prefetch.global.L2 [%0];" ::"l"(g) : "memory");
}

// Slab s of rows [r0, r1): bytes [s * kSlabBytes, +kSlabBytes) of each row, by this CTA's threads.
__device__ __forceinline__ void prefetch_slab(const unsigned short* w, long long K, int r0, int r1, int s, bool bulk) {
  const char* base = reinterpret_cast<const char*>(w) + (long long)s * kSlabBytes;
  if (bulk) {
    for (int r = r0 + threadIdx.x; r < r1; r += blockDim.x) prefetch_bulk(base + (long long)r * K * 2, kSlabBytes);
  } else {
    const int lines = kSlabBytes / 128;
    for (int i = threadIdx.x; i < (r1 - r0) * lines; i += blockDim.x)
      prefetch_line(base + (long long)(r0 + i / lines) * K * 2 + (i % lines) * 128);
  }
}

// A separate kernel: slabs [0, slabs) of every row, split by rows among the CTAs.
__global__ void prepump(const unsigned short* w, long long K, int N, int slabs, int bulk) {
  const int per = (N + gridDim.x - 1) / gridDim.x, r0 = blockIdx.x * per, r1 = min(N, r0 + per);
  for (int s = 0; s < slabs; ++s) prefetch_slab(w, K, r0, r1, s, bulk);
}

__global__ void spin(unsigned long long ns) {
  const unsigned long long t0 = globaltimer_ns();
  while (globaltimer_ns() - t0 < ns) {
  }
}

// CTAs [0, ctas): the ring of S stages of SR rows x SC columns, each CTA over its R rows; CTAs
// past them: the pump, from slab `first_slab`, at most `ahead` slabs past the slowest consumer's.
// STEP: see ring_rows (bench_copies.cuh).
template <int S, bool STEP = false>
__global__ void __launch_bounds__(256) stream_pumped(const unsigned short* w, long long K, int R, int SR, int SC,
                                                     int ctas, int first_slab, int ahead, int bulk,
                                                     volatile int* progress, unsigned long long* times,
                                                     unsigned* sink) {
  extern __shared__ __align__(16) unsigned char ring[];
  if (blockIdx.x >= ctas) {
    const int P = gridDim.x - ctas, N = R * ctas, per = (N + P - 1) / P;
    const int r0 = (blockIdx.x - ctas) * per, r1 = min(N, r0 + per);
    const int slabs = (int)(K * 2 / kSlabBytes), steps_per_slab = kSlabBytes / (SC * 2);
    __shared__ int lo;
    for (int s = first_slab; s < slabs; ++s) {
      for (;;) {
        if (threadIdx.x < 32) {
          int m = 1 << 30;
          for (int c = threadIdx.x; c < ctas; c += 32) m = min(m, progress[c]);
          m = __reduce_min_sync(0xffffffffu, m);
          if (threadIdx.x == 0) lo = m;
        }
        __syncthreads();
        const int cur = lo;
        __syncthreads();
        if (s < cur / steps_per_slab + ahead) break;
        __nanosleep(200);
      }
      prefetch_slab(w, K, r0, r1, s, bulk);
    }
    return;
  }
  const unsigned long long t0 = globaltimer_ns();
  const unsigned acc = ring_rows<S, STEP>(ring, w, K, blockIdx.x * R, R, SR, SC, progress);
  if (threadIdx.x == 0) progress[blockIdx.x] = 1 << 29;
  stamp_span(times, t0);
  if (acc == 0x12345678u) sink[blockIdx.x] = acc;
}

int main(int argc, char** argv) {
  const long long K = argc > 1 ? atoll(argv[1]) : 2048, N = argc > 2 ? atoll(argv[2]) : 16384;
  const int R = (int)(N / kCtas);
  if (N % kCtas || R % kSR || K % kSC || (K * 2) % kSlabBytes) {
    std::fprintf(stderr, "N must be a multiple of %d rows per CTA, K of %d\n", kCtas * kSR, kSlabBytes / 2);
    return 1;
  }
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, 0));
  const size_t bytes = (size_t)N * K * 2;
  const int copies = (int)std::max(2LL, (2LL * p.l2CacheSize) / (long long)bytes + 2);
  std::vector<unsigned short*> w(copies);
  for (auto& x : w) {
    CK(cudaMalloc(&x, bytes));
    CK(cudaMemset(x, 0x3c, bytes));
  }
  unsigned* sink;
  int* progress;
  unsigned long long* times;
  CK(cudaMalloc(&sink, 4096 * sizeof(unsigned)));
  CK(cudaMalloc(&progress, kCtas * sizeof(int)));
  CK(cudaMalloc(&times, 2 * kCtas * sizeof(unsigned long long)));
  const size_t smem = (size_t)kS * kSR * kSC * 2;
  CK(cudaFuncSetAttribute(stream_pumped<4>, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
  CK(cudaFuncSetAttribute(stream_pumped<8>, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
  CK(cudaFuncSetAttribute(stream_pumped<4, true>, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
  CK(cudaFuncSetAttribute(stream_pumped<8, true>, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
  std::printf("%s, %d SMs, L2 %d MiB; matrix [%lld, %lld] bf16 %.1f MiB, %d ring CTAs, %d x %d KiB stages\n", p.name,
              p.multiProcessorCount, p.l2CacheSize >> 20, N, K, bytes / 1048576.0, kCtas, kS, kSR * kSC * 2 / 1024);
  std::printf("%-6s %8s %6s %6s %5s %9s %8s %8s\n", "how", "pre MiB", "pump", "ahead", "bulk", "us", "GB/s/SM",
              "/alone");
  const int slabs = (int)(K * 2 / kSlabBytes);
  const double slab_mib = (double)N * kSlabBytes / 1048576.0;
  int it = 0;
  auto one = [&](int pre_slabs, int P, int ahead, int bulk) {
    const unsigned short* wi = w[it++ % copies];
    CK(cudaMemset(progress, 0, kCtas * sizeof(int)));
    if (pre_slabs > 0) prepump<<<16, 256>>>(wi, K, (int)N, pre_slabs, bulk);
    spin<<<1, 32>>>(60000);  // the prefetches land; the chain's idle time
    stream_pumped<kS><<<kCtas + P, 256, smem>>>(wi, K, R, kSR, kSC, kCtas, pre_slabs, ahead, bulk, progress, times,
                                               sink);
    return span_us(times, kCtas);
  };
  double alone = 0;  // the first row's time: the others' speed-up is against it
  auto row = [&](const char* how, int pre_slabs, int P, int ahead, int bulk) {
    std::vector<double> us;
    for (int r = 0; r < 25; ++r) us.push_back(one(pre_slabs, P, ahead, bulk));
    std::sort(us.begin(), us.end());
    const double med = us[us.size() / 2];
    if (alone == 0) alone = med;
    std::printf("%-6s %8.1f %6d %6.1f %5d %9.2f %8.1f %7.2fx\n", how, pre_slabs * slab_mib, P, ahead * slab_mib, bulk,
                med, (double)bytes / kCtas / (med * 1e-6) / 1e9, alone / med);
  };
  for (int r = 0; r < 3; ++r) one(0, 0, 0, 1);  // warm-up
  row("alone", 0, 0, 0, 1);
  for (int bulk : {1, 0})
    for (int pre : {slabs / 8, slabs / 4, 3 * slabs / 8, slabs / 2, slabs}) row("pre", pre, 0, 0, bulk);
  for (int bulk : {1, 0})
    for (int P : {2, 4, 8})
      for (int ahead : {slabs / 8, slabs / 4, slabs / 2}) row("pump", 0, P, ahead, bulk);
  for (int P : {4})
    for (int pre : {slabs / 4, 3 * slabs / 8})
      for (int ahead : {slabs / 4, 3 * slabs / 8}) row("both", pre, P, ahead, 1);
  row("alone", 0, 0, 0, 1);

  // What one SM streams: the first `ctas` x SR rows (one stage's rows a CTA: 128 rows, 512 KiB at
  // K = 2048, a gate/up task's share, for 16 KiB stages; 256 for 32 KiB) streamed by `ctas` CTAs,
  // by ring shape: `L2`, read once before to bring them into L2; `dram`, L2 flushed before (a
  // read of a buffer twice its size).
  const L2Flush flush(p, sink);
  std::printf("\n128 rows a CTA (512 KiB at K = 2048; 256 with 32 KiB stages), from L2 (read once before; 128 CTAs\n"
              "read 64 MiB, more than L2 holds) or from DRAM (L2 flushed before); step: each thread's\n"
              "chunks worked out once:\n%-5s %-6s %6s %6s %6s %9s %8s\n", "from", "ctas", "stages", "KiB", "step", "us",
              "GB/s/SM");
  for (int cold : {0, 1})
    for (int ctas : {1, 16, 64, 128})
      for (int S : {4, 8})
        for (int stage : {16384, 32768}) {
          if ((size_t)S * stage > 200 * 1024) continue;
          for (int step : {0, 1}) {
            const int bpr = 128, SC = bpr / 2, SR = stage / bpr, Rh = SR;
            if ((long long)ctas * Rh > N) continue;
            auto launch = [&](const unsigned short* wi) {
              const size_t sm = (size_t)S * stage;
              if (S == 4 && step)
                stream_pumped<4, true><<<ctas, 256, sm>>>(wi, K, Rh, SR, SC, ctas, 0, 0, 1, progress, times, sink);
              else if (S == 4)
                stream_pumped<4><<<ctas, 256, sm>>>(wi, K, Rh, SR, SC, ctas, 0, 0, 1, progress, times, sink);
              else if (step)
                stream_pumped<8, true><<<ctas, 256, sm>>>(wi, K, Rh, SR, SC, ctas, 0, 0, 1, progress, times, sink);
              else
                stream_pumped<8><<<ctas, 256, sm>>>(wi, K, Rh, SR, SC, ctas, 0, 0, 1, progress, times, sink);
            };
            std::vector<double> us;
            for (int r = 0; r < 15; ++r) {
              const unsigned short* wi = w[0];
              if (cold)
                flush();
              else
                launch(wi);  // brings the rows into L2
              launch(wi);
              us.push_back(span_us(times, ctas));
            }
            std::sort(us.begin(), us.end());
            const double med = us[us.size() / 2];
            std::printf("%-5s %-6d %6d %6d %6d %9.2f %8.1f\n", cold ? "dram" : "L2", ctas, S, stage / 1024, step, med,
                        (double)Rh * K * 2 / (med * 1e-6) / 1e9);
          }
        }
  return 0;
}
