// How fast can CTAs stream a decode matmul's weights through a cp.async shared-memory ring,
// depending on the shape of a ring stage? A matmul task of tile_n output columns over all of
// K reads, per K step, tile_k elements of each of its tile_n weight rows: rows * bytes-per-row
// is the stage (16 KiB as etc's rings, or 32 KiB), and the bytes per row are what DRAM sees as
// one contiguous run. This times that stream alone (no products) for several shapes, every CTA
// owning the same number of rows of one [N, K] bf16 matrix, and prints each shape's bandwidth
// as a ratio of a plain device-to-device copy timed in the same process; also the same stream
// through TMA bulk copies (one per row and stage), through TMA tensor copies (a tensor map of
// the matrix, one copy of a 2-D box per stage, or two where a row's bytes pass the box's 256
// elements) and through 16-byte loads into registers.
//
//   nvcc -O3 -std=c++17 -I runtime/include -gencode arch=compute_90a,code=sm_90a tools/bench_stream.cu -o bench_stream
//   ./bench_stream [K] [N]      (default K = 2048, N = 16384: Llama-3.2-1B's gate and up)
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "bench_copies.cuh"

// One CTA: rows [r0, r0 + R) of w [N, K] (u16), stage = SR rows x SC columns, S stages.
// Step order as a matmul's: for each block of SR rows (TN), K in steps of SC (TK).
template <int S>
__global__ void __launch_bounds__(256) stream(const unsigned short* w, long long K, int R, int SR, int SC,
                                              unsigned* sink) {
  extern __shared__ __align__(16) unsigned char ring[];
  const unsigned acc = ring_rows<S>(ring, w, K, blockIdx.x * R, R, SR, SC);
  if (acc == 0x12345678u) sink[blockIdx.x] = acc;  // keeps the reads
}

// The same stream with the TMA engine: each row's bytes of a stage are one bulk copy
// (cp.async.bulk, issued by warp 0's lanes), a stage's copies complete on its mbarrier.

// The consumer side of the bulk and tma forms: the stages' mbarriers set up, the first S stages
// requested (issue(st) requests stage st, or nothing past the last), then each stage waited for,
// read and its slot requested again. Returns the xor of what it read.
template <int S, class Issue>
__device__ unsigned mbar_stream(unsigned long long* bar, const unsigned char* ring, int steps, int stage_elems,
                                Issue issue) {
  if (threadIdx.x < S) mbar_init(&bar[threadIdx.x], 1);
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  __syncthreads();
  for (int s = 0; s < S; ++s) issue(s);
  unsigned acc = 0;
  for (int st = 0; st < steps; ++st) {
    mbar_wait(&bar[st % S], (st / S) & 1);
    const unsigned* src = reinterpret_cast<const unsigned*>(ring + (st % S) * stage_elems * 2);
    for (int i = threadIdx.x; i < stage_elems / 2; i += blockDim.x * 8) acc ^= src[i];
    __syncthreads();  // the slot is free
    issue(st + S);
  }
  return acc;
}

template <int S>
__global__ void __launch_bounds__(256) stream_bulk(const unsigned short* w, long long K, int R, int SR, int SC,
                                                   unsigned* sink) {
  extern __shared__ __align__(16) unsigned char ring[];
  __shared__ __align__(8) unsigned long long bar[S];
  const int r0 = blockIdx.x * R;
  const int stage_elems = SR * SC;
  const int kb = (int)(K / SC), steps = (R / SR) * kb;
  const unsigned acc = mbar_stream<S>(bar, ring, steps, stage_elems, [&](int st) {
    if (st >= steps || threadIdx.x >= 32) return;
    const int rb = st / kb, k0 = (st % kb) * SC;
    unsigned short* dst = reinterpret_cast<unsigned short*>(ring) + (st % S) * stage_elems;
    if (threadIdx.x == 0) mbar_expect_tx(&bar[st % S], stage_elems * 2);
    __syncwarp();
    for (int r = threadIdx.x; r < SR; r += 32)
      bulk(dst + r * SC, w + (long long)(r0 + rb * SR + r) * K + k0, SC * 2, &bar[st % S]);
  });
  if (acc == 0x12345678u) sink[blockIdx.x] = acc;
}

// The same stream with TMA tensor copies: thread 0 copies each stage as SC / BOX boxes of BOX
// columns by SR rows of the tensor map `map` (the whole [N, K] matrix), completing on the
// stage's mbarrier.
constexpr int kBox = 256;  // the most elements of a box's dimension

template <int S>
__global__ void __launch_bounds__(256) stream_tma(const __grid_constant__ CUtensorMap map, long long K, int R, int SR,
                                                  int SC, unsigned* sink) {
  extern __shared__ __align__(16) unsigned char ring_raw[];
  __shared__ __align__(8) unsigned long long bar[S];
  // A box's destination must be 128-byte aligned: the launch gives 128 bytes of slack.
  unsigned char* ring = ring_raw + ((128u - (smem_addr(ring_raw) & 127u)) & 127u);
  const int r0 = blockIdx.x * R;
  const int stage_elems = SR * SC, bw = SC < kBox ? SC : kBox;
  const int kb = (int)(K / SC), steps = (R / SR) * kb;
  const unsigned acc = mbar_stream<S>(bar, ring, steps, stage_elems, [&](int st) {
    if (st >= steps || threadIdx.x != 0) return;
    const int rb = st / kb, k0 = (st % kb) * SC;
    unsigned short* dst = reinterpret_cast<unsigned short*>(ring) + (st % S) * stage_elems;
    mbar_expect_tx(&bar[st % S], stage_elems * 2);
    for (int x = 0; x < SC; x += bw) tma2d(dst + x * SR, &map, k0 + x, r0 + rb * SR, &bar[st % S]);
  });
  if (acc == 0x12345678u) sink[blockIdx.x] = acc;
}

// The stream into registers: 16-byte loads, U of them in flight per thread, the CTA's rows
// read row after row (each row's bytes by consecutive threads).
template <int U>
__global__ void __launch_bounds__(256) stream_ldg(const unsigned short* w, long long K, int R, unsigned* sink) {
  const int4* base = reinterpret_cast<const int4*>(w + (long long)blockIdx.x * R * K);
  const long long n = (long long)R * K / 8;
  unsigned acc = 0;
  for (long long i0 = threadIdx.x; i0 < n; i0 += (long long)blockDim.x * U) {
    int4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const long long i = i0 + (long long)u * blockDim.x;
      if (i < n) asm volatile("ld.global.cg.v4.s32 {%0,%1,%2,%3}, [%4];\n" : "=r"(v[u].x), "=r"(v[u].y), "=r"(v[u].z), "=r"(v[u].w) : "l"(base + i));
      else v[u] = make_int4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  if (acc == 0x12345678u) sink[blockIdx.x] = acc;
}

int main(int argc, char** argv) {
  const long long K = argc > 1 ? std::atoll(argv[1]) : 2048, N = argc > 2 ? std::atoll(argv[2]) : 16384;
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, 0));
  const long long bytes = N * K * 2;
  // Several copies of the matrix, used in turn, so that no run finds its bytes in L2.
  const int copies = (int)std::max(2LL, (2LL * p.l2CacheSize) / bytes + 2);
  std::vector<unsigned short*> w(copies);
  for (auto& x : w) {
    CK(cudaMalloc(&x, bytes));
    CK(cudaMemset(x, 0x3c, bytes));
  }
  unsigned* sink;
  CK(cudaMalloc(&sink, 4096 * sizeof(unsigned)));
  // A map of copy i with boxes of bw columns by rows rows.
  auto tensor_map = [&](int i, int bw, int rows) { return tensor_map_2d(w[i], K, N, bw, rows); };
  float copy_ms;
  const double copy_bw = copy_gbs(p, &copy_ms) / 1e3;
  std::printf("%s, %d SMs, L2 %d MiB; copy of 1 GiB: %.3f ms, %.2f TB/s (read + write)\n", p.name,
              p.multiProcessorCount, p.l2CacheSize >> 20, copy_ms, copy_bw);
  std::printf("matrix [%lld, %lld] bf16, %.1f MiB. how: ring = cp.async ring of `stages` stages of KiB, each\n"
              "`rows` rows of B/row bytes; bulk = the same through cp.async.bulk (TMA), one copy a row, and mbarriers;\n"
              "tma = the same through TMA tensor copies of 2-D boxes; ldg = 16-byte\n"
              "loads into registers, `stages` of them in flight per thread\n",
              N, K, bytes / 1048576.0);
  auto report = [&](const char* how, int ctas, int R, int rows, int bpr, int S, int stage_kib, float ms) {
    const double bw = (double)R * ctas * K * 2 / (ms * 1e-3) / 1e12;
    std::printf("%-6s %5d %5d %6d %6d %6d %9.1f %8.2f %7.2fx\n", how, ctas, rows, bpr, S, stage_kib, ms * 1e3, bw,
                bw / copy_bw);
  };
  std::printf("%-6s %5s %5s %6s %6s %6s %9s %8s %8s\n", "how", "ctas", "rows", "B/row", "stages", "KiB", "us", "TB/s",
              "/copy");
  auto set_smem = [](auto kernel) { CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024)); };
  set_smem(stream<4>);
  set_smem(stream<6>);
  set_smem(stream<8>);
  set_smem(stream_bulk<4>);
  set_smem(stream_bulk<6>);
  set_smem(stream_bulk<8>);
  set_smem(stream_tma<4>);
  set_smem(stream_tma<6>);
  set_smem(stream_tma<8>);
  for (int ctas : {128, p.multiProcessorCount}) {
    const int R = (int)(N / ctas) / 16 * 16;  // every CTA the same rows (a few left over)
    int it = 0;
    for (int stage : {16384, 32768}) {
      for (int S : {4, 6, 8}) {
        if ((size_t)S * stage > 200 * 1024) continue;
        for (int bpr : {128, 256, 1024, 4096}) {  // 4096: whole rows of K = 2048, a contiguous stage
          const int SC = bpr / 2, SR = stage / bpr;
          if (SC > K || SR > R || R % SR) continue;
          const size_t smem = (size_t)S * stage;
          // Each kernel form instantiated for the stage counts above.
          using Kernel = void (*)(const unsigned short*, long long, int, int, int, unsigned*);
          auto run = [&](const char* how, Kernel k4, Kernel k6, Kernel k8) {
            const Kernel k = S == 4 ? k4 : S == 6 ? k6 : k8;
            const float ms = time_ms([&] { k<<<ctas, 256, smem>>>(w[it++ % copies], K, R, SR, SC, sink); }, 30);
            report(how, ctas, R, SR, bpr, S, stage / 1024, ms);
          };
          run("ring", stream<4>, stream<6>, stream<8>);
          run("bulk", stream_bulk<4>, stream_bulk<6>, stream_bulk<8>);
          if (SR <= kBox) {
            const int bw = SC < kBox ? SC : kBox;
            std::vector<CUtensorMap> maps;
            for (int i = 0; i < copies; ++i) maps.push_back(tensor_map(i, bw, SR));
            const float ms = time_ms([&] {
              const CUtensorMap& m = maps[it++ % copies];
              if (S == 4) stream_tma<4><<<ctas, 256, smem + 128>>>(m, K, R, SR, SC, sink);
              else if (S == 6) stream_tma<6><<<ctas, 256, smem + 128>>>(m, K, R, SR, SC, sink);
              else stream_tma<8><<<ctas, 256, smem + 128>>>(m, K, R, SR, SC, sink);
            }, 30);
            report("tma", ctas, R, SR, bpr, S, stage / 1024, ms);
          }
        }
      }
    }
    for (int U : {4, 8, 16}) {
      const float ms = time_ms([&] {
        const unsigned short* wi = w[it++ % copies];
        if (U == 4) stream_ldg<4><<<ctas, 256>>>(wi, K, R, sink);
        else if (U == 8) stream_ldg<8><<<ctas, 256>>>(wi, K, R, sink);
        else stream_ldg<16><<<ctas, 256>>>(wi, K, R, sink);
      }, 30);
      report("ldg", ctas, R, 0, (int)(K * 2), U, U * 4, ms);
    }
  }
  return 0;
}
