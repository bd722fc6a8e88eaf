// The copy primitives of the stream benchmarks (tools/bench_stream.cu, tools/bench_kv.cu):
// cp.async 16-byte copies and their groups, mbarriers, cp.async.bulk and TMA tensor copies,
// each as the inline PTX that etc's device headers use (the mbarriers are etc/device/tma.cuh's
// own), and a CUDA error check.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "etc/device/tma.cuh"

// tma.cuh's mbarriers compile to nothing below sm_90a; a benchmark would then spin forever.
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "the stream benchmarks need sm_90a: nvcc -gencode arch=compute_90a,code=sm_90a"
#endif

#define CK(x)                                                                               \
  do {                                                                                      \
    cudaError_t e_ = (x);                                                                   \
    if (e_ != cudaSuccess) {                                                                \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)

__device__ __forceinline__ unsigned smem_addr(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void cp16(void* s, const void* g) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(s)), "l"(g) : "memory");
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wait_group() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// The mbarriers as etc's TMA weight stream sets them up and waits on them.
using etc::dev::detail::mbar_expect_tx;
using etc::dev::detail::mbar_init;
using etc::dev::detail::mbar_wait;
// One bulk copy of `bytes` (a multiple of 16) to shared memory, completing on mbarrier b.
__device__ __forceinline__ void bulk(void* s, const void* g, unsigned bytes, unsigned long long* b) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                   smem_addr(s)),
               "l"(g), "r"(bytes), "r"(smem_addr(b))
               : "memory");
}
// One TMA copy of the 2-D box at (x, y) of tensor map `map`, completing on mbarrier b.
__device__ __forceinline__ void tma2d(void* s, const CUtensorMap* map, int x, int y, unsigned long long* b) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
          smem_addr(s)),
      "l"(map), "r"(x), "r"(y), "r"(smem_addr(b))
      : "memory");
}

// A 2-D tensor map of 16-bit elements, `inner` by `outer` with rows `inner` elements apart, and
// boxes of bw by rows elements (in the given shared-memory swizzle), through the driver's
// encoder (found at run time, without linking libcuda). Exits when the driver lacks it or refuses
// the map.
inline CUtensorMap tensor_map_2d(const void* base, unsigned long long inner, unsigned long long outer, int bw, int rows,
                                 CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_NONE) {
  static PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    PFN_cuTensorMapEncodeTiled_v12000 f = nullptr;
    cudaDriverEntryPointQueryResult found;
    CK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", reinterpret_cast<void**>(&f), 12000,
                                        cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess || !f) {
      std::fprintf(stderr, "cuTensorMapEncodeTiled: not found\n");
      std::exit(1);
    }
    return f;
  }();
  CUtensorMap m;
  const cuuint64_t dims[2] = {inner, outer}, strides[1] = {inner * 2};
  const cuuint32_t box[2] = {(cuuint32_t)bw, (cuuint32_t)rows}, estr[2] = {1, 1};
  const CUresult r = encode(&m, CU_TENSOR_MAP_DATA_TYPE_UINT16, 2, const_cast<void*>(base), dims, strides, box, estr,
                            CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    std::fprintf(stderr, "cuTensorMapEncodeTiled (box %d x %d): error %d\n", bw, rows, (int)r);
    std::exit(1);
  }
  return m;
}

// The copy whose bandwidth the benchmarks' ratios divide by: n 16-byte words from a to b.
__global__ void copy16(const int4* a, int4* b, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    b[i] = a[i];
}

// Reads n 16-byte words: run over a buffer twice L2's size, it leaves L2 holding nothing of what
// a benchmark streams next.
__global__ void flush_l2(const int4* buf, long long n, unsigned* sink) {
  unsigned acc = 0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    acc ^= (unsigned)buf[i].x;
  if (acc == 0x12345678u) sink[0] = acc;
}

// The median of a benchmark's samples (0 for none).
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// The current GPU's SM count, after printing its name and that count (a benchmark's first line).
inline int print_device() {
  int dev = 0, sms = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, dev));
  std::printf("%s, %d SMs\n", prop.name, sms);
  return sms;
}

__device__ __forceinline__ unsigned long long globaltimer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// A CTA's part of a launch timed in the kernel: after all its threads are done, its start t0
// and its end go to times[2 * blockIdx.x] and [2 * blockIdx.x + 1].
__device__ __forceinline__ void stamp_span(unsigned long long* times, unsigned long long t0) {
  __syncthreads();
  if (threadIdx.x == 0) {
    times[2 * blockIdx.x] = t0;
    times[2 * blockIdx.x + 1] = globaltimer_ns();
  }
}

// The launch's time from the stamps of its first `ctas` CTAs: the last end less the first
// start, in us.
inline double span_us(const unsigned long long* times, int ctas) {
  CK(cudaGetLastError());
  std::vector<unsigned long long> t(2 * ctas);
  CK(cudaMemcpy(t.data(), times, t.size() * 8, cudaMemcpyDeviceToHost));
  unsigned long long lo = ~0ULL, hi = 0;
  for (int c = 0; c < ctas; ++c) lo = std::min(lo, t[2 * c]), hi = std::max(hi, t[2 * c + 1]);
  return (hi - lo) / 1000.0;
}

// flush_l2 over a buffer of its own, twice L2's size: `flush()` before a launch leaves it L2
// cold.
struct L2Flush {
  int4* buf = nullptr;
  long long words = 0;
  unsigned* sink = nullptr;
  int blocks = 0;
  L2Flush(const cudaDeviceProp& p, unsigned* s) : words(2LL * p.l2CacheSize / 16), sink(s), blocks(p.multiProcessorCount * 4) {
    CK(cudaMalloc(&buf, words * 16));
    CK(cudaMemset(buf, 0, words * 16));
  }
  void operator()() const { flush_l2<<<blocks, 512>>>(buf, words, sink); }
};

// Median milliseconds of `reps` runs of f (after `warmups` untimed runs), by CUDA events.
template <class F>
static float time_ms(F f, int reps, int warmups = 1) {
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int i = 0; i < warmups; ++i) f();
  CK(cudaDeviceSynchronize());
  std::vector<float> t;
  for (int i = 0; i < reps; ++i) {
    CK(cudaEventRecord(e0));
    f();
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    t.push_back(ms);
  }
  CK(cudaGetLastError());
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// The stream benchmarks' ring (tools/bench_stream.cu, bench_pump.cu, bench_mm_stream.cu): one
// CTA reads rows [r0, r0 + R) of w [N, K] (16-bit) into `ring`, S stages of SR rows x SC columns,
// in a matmul's order (each block of SR rows over K in steps of SC), S - 1 stages in flight, and
// returns an xor of what it read. STEP: each thread's chunks of a stage (at most 8: a 32 KiB
// stage of 256 threads) are worked out once as offsets, which a stage then moves by its column
// (one block of rows, R == SR), as etc's wgmma stages do; otherwise each chunk's row and column
// come from its index by run-time division. progress: where not null, progress[blockIdx.x] is
// set to the stage the CTA waits for next.
template <int S, bool STEP = false>
__device__ unsigned ring_rows(unsigned char* ring, const unsigned short* w, long long K, int r0, int R, int SR, int SC,
                              volatile int* progress = nullptr) {
  const int kb = (int)(K / SC), steps = (R / SR) * kb;
  const int stage_elems = SR * SC, chunks = stage_elems / 8, cpr = SC / 8;
  constexpr int kMaxChunks = 8;
  int soff[kMaxChunks], doff[kMaxChunks];
  const int mine = STEP ? (chunks - (int)threadIdx.x + (int)blockDim.x - 1) / (int)blockDim.x : 0;
  if constexpr (STEP) {
#pragma unroll
    for (int i = 0; i < kMaxChunks; ++i) {
      const int c = threadIdx.x + i * blockDim.x, r = c / cpr, cc = c % cpr;
      soff[i] = (int)(r * K) + cc * 8;
      doff[i] = r * SC + cc * 8;
    }
  }
  auto issue = [&](int st) {
    if (st < steps) {
      const int rb = st / kb, k0 = (st % kb) * SC;
      unsigned short* dst = reinterpret_cast<unsigned short*>(ring) + (st % S) * stage_elems;
      if constexpr (STEP) {
        const unsigned short* src = w + (long long)r0 * K + k0;
#pragma unroll
        for (int i = 0; i < kMaxChunks; ++i)
          if (i < mine) cp16(dst + doff[i], src + soff[i]);
      } else {
        for (int c = threadIdx.x; c < chunks; c += blockDim.x) {
          const int r = c / cpr, cc = c % cpr;
          cp16(dst + r * SC + cc * 8, w + (long long)(r0 + rb * SR + r) * K + k0 + cc * 8);
        }
      }
    }
    commit();
  };
  for (int s = 0; s < S - 1; ++s) issue(s);
  unsigned acc = 0;
  for (int st = 0; st < steps; ++st) {
    wait_group<S - 2>();
    __syncthreads();
    if (progress && threadIdx.x == 0) progress[blockIdx.x] = st;
    issue(st + S - 1);
    const unsigned* src = reinterpret_cast<const unsigned*>(ring + (st % S) * stage_elems * 2);
    for (int i = threadIdx.x; i < stage_elems / 2; i += blockDim.x * 8) acc ^= src[i];
  }
  return acc;
}

// What the benchmarks' ratios divide by: a 1 GiB device-to-device copy's rate in GB/s, read and
// write counted; ms, where not null, gets its median time.
inline double copy_gbs(const cudaDeviceProp& p, float* ms = nullptr) {
  int4 *a, *b;
  const long long bytes = 1LL << 30;
  CK(cudaMalloc(&a, bytes));
  CK(cudaMalloc(&b, bytes));
  CK(cudaMemset(a, 1, bytes));
  const float t = time_ms([&] { copy16<<<p.multiProcessorCount * 8, 512>>>(a, b, bytes / 16); }, 20);
  CK(cudaFree(a));
  CK(cudaFree(b));
  if (ms) *ms = t;
  return 2.0 * bytes / (t * 1e-3) / 1e9;
}
