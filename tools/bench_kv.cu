// How fast can a persistent grid stream a decode step's KV cache, the way etc's attention tasks
// read it (a task per request and cache head, its K and V rows through a ring of shared-memory
// slots, a block of positions a slot, K and V of a block waited for one after the other), and
// what sets that speed: the copies (16-byte cp.async by every thread as attention.cuh issues
// them, one cp.async.bulk per block half where the cache is head-major, or one TMA tensor copy
// of a 2-D box of D columns by the block's rows), the block's size, the slots, and the cache's
// layout ([B, S, HK, D] as the decode samples keep it, a head's positions strided by the other
// heads, or head-major [B, HK, S, D]). No products: each block's words are summed, so that the
// loads are used. Prints each variant's time for one layer's cache and its bandwidth as a
// ratio of a device-to-device copy timed in the same process (read + write counted).
//
//   nvcc -O3 -std=c++17 -I runtime/include -gencode arch=compute_90a,code=sm_90a tools/bench_kv.cu -o bench_kv
//   ./bench_kv [D] [B] [N]   (default D = 128, B = 128, N = 512 positions: Qwen3-0.6B at KV 511)
//
// H200, session 38 (docs/benchmarks.md): the block's size sets the speed (D = 128, one slot:
// cp.async 0.37 / 0.46 / 0.52x of the copy at 16 / 32 / 64 KiB blocks, TMA 2-D boxes 0.45 /
// 0.61 / 0.70x), the slots do not (1, 2 or 3 within 2%), nor the layout.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "bench_copies.cuh"

constexpr int kHk = 8;    // cache heads
constexpr int kS = 4097;  // cache positions a request (the samples' S)
constexpr int kThreads = 256;
constexpr int kMaxSlots = 4;

enum class Copy { kCpAsync, kBulk, kTma2d };

// At most n of this thread's groups still pending (n = 2 * slots - 1: one of 1 to 4 values).
__device__ __forceinline__ void wait_pending(int n) {
  switch (n) {
    case 1: wait_group<1>(); break;
    case 3: wait_group<3>(); break;
    case 5: wait_group<5>(); break;
    default: wait_group<7>(); break;
  }
}

struct Args {
  const unsigned short* k;
  const unsigned short* v;
  int D, B, N;      // head dim, requests, positions read a request
  bool head_major;  // [B, HK, S, D] instead of [B, S, HK, D]
  int block_bytes;  // K bytes of a block (as many of V)
  int slots;
  Copy copy;
  unsigned* sink;
};

__global__ void __launch_bounds__(kThreads) stream_kv(Args a, const __grid_constant__ CUtensorMap km,
                                                      const __grid_constant__ CUtensorMap vm) {
  extern __shared__ __align__(16) unsigned char ring_raw[];
  __shared__ __align__(8) unsigned long long bar[2 * kMaxSlots];  // K and V of each slot (bulk, TMA)
  // A box's destination must be 128-byte aligned: the launch gives 128 bytes of slack.
  unsigned char* ring = ring_raw + ((128u - (smem_addr(ring_raw) & 127u)) & 127u);
  const bool mbar = a.copy != Copy::kCpAsync;
  if (mbar) {
    if (threadIdx.x < 2 * kMaxSlots) mbar_init(&bar[threadIdx.x], 1);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    __syncthreads();
  }
  const int row_bytes = a.D * 2, cpr = row_bytes / 16, sr = a.block_bytes / row_bytes;
  const int nblk = (a.N + sr - 1) / sr;
  auto rows_in = [&](long long blk) { return (int)(a.N - blk * sr < sr ? a.N - blk * sr : sr); };
  const long long tasks = (long long)a.B * kHk;
  const long long my_tasks = tasks > blockIdx.x ? (tasks - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
  // Block i of this CTA is block i % nblk of its (i / nblk)-th task; the ring drains at every
  // task's end, as etc's tasks do (running it on across tasks changed nothing measurable).
  // Element offset of a task's row at position pos; the tensor maps see the caches as rows of
  // `inner` elements (as main encodes them).
  const long long inner = a.head_major ? a.D : (long long)kHk * a.D;
  auto offset = [&](long long task, long long pos) {
    const long long b = task / kHk, g = task % kHk;
    return a.head_major ? ((b * kHk + g) * kS + pos) * a.D : ((b * kS + pos) * kHk + g) * a.D;
  };
  auto row_ptr = [&](bool v, long long task, long long pos) { return (v ? a.v : a.k) + offset(task, pos); };
  auto request = [&](bool v, long long i, long long limit) {
    if (i < limit) {
      const long long task = blockIdx.x + (i / nblk) * gridDim.x, blk = i % nblk;
      const int rows = rows_in(blk);
      unsigned char* dst = ring + (int)(i % a.slots) * 2 * a.block_bytes + (v ? a.block_bytes : 0);
      if (a.copy == Copy::kCpAsync) {
        for (int idx = threadIdx.x; idx < rows * cpr; idx += blockDim.x) {
          const int r = idx / cpr, cc = idx - r * cpr;
          cp16(dst + r * row_bytes + cc * 16, row_ptr(v, task, blk * sr + r) + cc * 8);
        }
      } else if (threadIdx.x == 0) {
        unsigned long long* b = &bar[(i % a.slots) * 2 + v];
        if (a.copy == Copy::kBulk) {
          mbar_expect_tx(b, rows * row_bytes);
          bulk(dst, row_ptr(v, task, blk * sr), rows * row_bytes, b);
        } else {
          // A box is always sr rows: the last block's rows past N are read too (the cache has
          // room), so that the bytes expected are the box's.
          mbar_expect_tx(b, sr * row_bytes);
          const long long off = offset(task, blk * sr);
          tma2d(dst, v ? &vm : &km, (int)(off % inner), (int)(off / inner), b);
        }
      }
    }
    if (a.copy == Copy::kCpAsync) commit();
  };
  // Block i's K (v = false) or V: its group (2 * slots - 1 committed after it) or its mbarrier
  // (the slot's (i / slots)-th use).
  auto wait_for = [&](bool v, long long i) {
    if (mbar) mbar_wait(&bar[(i % a.slots) * 2 + v], (unsigned)((i / a.slots) & 1));
    else wait_pending(2 * a.slots - 1);
    __syncthreads();
  };
  unsigned acc = 0;
  for (long long t0 = 0; t0 < my_tasks * nblk; t0 += nblk) {
    const long long limit = t0 + nblk;
    for (int s = 0; s < a.slots; ++s) {
      request(false, t0 + s, limit);
      request(true, t0 + s, limit);
    }
    for (long long i = t0; i < limit; ++i) {
      const int rows = rows_in(i % nblk);
      const unsigned* ks = reinterpret_cast<const unsigned*>(ring + (int)(i % a.slots) * 2 * a.block_bytes);
      const unsigned* vs = ks + a.block_bytes / 4;
      wait_for(false, i);
      for (int idx = threadIdx.x; idx < rows * row_bytes / 4; idx += blockDim.x) acc += ks[idx];
      __syncthreads();  // the slot's K half is free
      request(false, i + a.slots, limit);
      wait_for(true, i);
      for (int idx = threadIdx.x; idx < rows * row_bytes / 4; idx += blockDim.x) acc += vs[idx];
      __syncthreads();
      request(true, i + a.slots, limit);
    }
    if (!mbar) asm volatile("cp.async.wait_all;\n" ::: "memory");
    __syncthreads();
  }
  if (acc == 0x12345678u) *a.sink = acc;
}

int main(int argc, char** argv) {
  const int D = argc > 1 ? std::atoi(argv[1]) : 128;
  const int B = argc > 2 ? std::atoi(argv[2]) : 128;
  const int N = argc > 3 ? std::atoi(argv[3]) : 512;
  if ((D != 64 && D != 128) || B < 1 || N < 1 || N > kS) {
    std::fprintf(stderr, "usage: bench_kv [D: 64 or 128] [B >= 1] [N: 1 .. %d]\n", kS);
    return 2;
  }
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  // Room for one box past the last position read (the TMA copies read whole boxes).
  const size_t elems = (size_t)B * kS * kHk * D + (size_t)256 * kHk * D;
  unsigned short *k, *v;
  unsigned* sink;
  CK(cudaMalloc(&k, elems * 2));
  CK(cudaMalloc(&v, elems * 2));
  CK(cudaMalloc(&sink, 4));
  CK(cudaMemset(k, 1, elems * 2));
  CK(cudaMemset(v, 1, elems * 2));
  auto time_us = [&](auto&& launch) { return time_ms(launch, 15, 3) * 1000.0f; };
  const size_t cb = size_t{1} << 30;
  void *x, *y;
  CK(cudaMalloc(&x, cb));
  CK(cudaMalloc(&y, cb));
  const float copy_us = time_us([&] { CK(cudaMemcpyAsync(y, x, cb, cudaMemcpyDeviceToDevice)); });
  const double copy_bw = 2.0 * cb / (copy_us * 1e-6);
  const double bytes = 2.0 * B * kHk * N * D * 2;  // K and V rows read
  std::printf("D %d, B %d, %d positions, %d cache heads, %d CTAs: %.1f MB of K and V a layer; copy %.2f TB/s -> floor %.1f us\n",
              D, B, N, kHk, sms, bytes / 1e6, copy_bw / 1e12, bytes / copy_bw * 1e6);
  // A cache as 2-D rows (HK * D columns by B * S rows, or D by B * HK * S), boxes of D columns
  // by `rows` rows.
  auto tensor_map = [&](const unsigned short* base, bool hm, int rows) {
    const unsigned long long inner = hm ? D : (unsigned long long)kHk * D;
    return tensor_map_2d(base, inner, elems / inner, D, rows);
  };
  std::printf("%-12s %-9s %6s %5s %9s %8s %6s\n", "layout", "copies", "block", "slots", "us", "TB/s", "x copy");
  const char* names[] = {"cp.async", "bulk", "tma2d"};
  for (int hm = 0; hm < 2; ++hm)
    for (Copy copy : {Copy::kCpAsync, Copy::kBulk, Copy::kTma2d})
      for (int kib : {16, 32, 48, 64})
        for (int slots = 1; slots <= 3; ++slots) {
          const int smem = 2 * kib * 1024 * slots + 128, rows = kib * 1024 / (D * 2);
          if (smem > 227 * 1024 || (copy == Copy::kBulk && !hm) || (copy == Copy::kTma2d && rows > 256)) continue;
          CK(cudaFuncSetAttribute(stream_kv, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
          const Args a{k, v, D, B, N, hm != 0, kib * 1024, slots, copy, sink};
          const CUtensorMap km = tensor_map(k, hm != 0, std::min(rows, 256)), vm = tensor_map(v, hm != 0, std::min(rows, 256));
          const float us = time_us([&] {
            stream_kv<<<sms, kThreads, smem>>>(a, km, vm);
            CK(cudaGetLastError());
          });
          std::printf("%-12s %-9s %4d K %5d %9.1f %8.2f %6.2f\n", hm ? "[B,HK,S,D]" : "[B,S,HK,D]",
                      names[static_cast<int>(copy)], kib, slots, us, bytes / (us * 1e-6) / 1e12, bytes / (us * 1e-6) / copy_bw);
          std::fflush(stdout);
        }
  CK(cudaDeviceSynchronize());
  return 0;
}
