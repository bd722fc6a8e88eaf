// How far below the bare weight stream does a decode matmul task run? A B = 1 decode step
// spends most of a Llama-3.2-1B layer in its gate/up and down grids, whose tasks stream their
// weights at about 19 GB/s an SM (docs/benchmarks.md, session 45), where 128 CTAs that only
// stream the same 64 MiB through etc's ring reach about 26. This times, in one process, with
// L2 flushed before each launch and each launch timed in the kernel (the last CTA's end less
// the first one's start):
//   ring     the bare stream: each of 128 CTAs reads its 128 rows of the [16384, 2048] gate/up
//            weights through a ring of 4 stages of 128 rows x 128 bytes, no products;
//   gated    etc's matmul_silu_mul<TM, 128, kGatedTK> (runtime/include/etc/device/matmul.cuh),
//            one task a CTA as the megakernel's gate/up grid: 64 gate and 64 up rows over all
//            of K, 128 deep as lower-ops tiles it since session 47 (-DGATED_TK=64: as before);
//   down     etc's matmul<TM, 64, 128>, the down projection's 128 tasks of 64 columns by a
//            quarter of K = 8192 (f32 partial sums), [2048, 8192] weights;
// at M = 1 (TM = 16: mma.sync) and M = 128 (TM = 128: wgmma), each with K = 512, 1024 and 2048
// a task (2048: the decode step's), and prints each one's time, the weights' GB/s an SM, its
// ratio to the ring's and to a device-to-device copy's rate, and a least-squares line through
// the three K ("fit": the fixed cost, the stream rate). Session 46 (H200): the ring 1.0 us +
// 29 GB/s an SM; gated M = 1 1.5 us + 23.5, down 1.7 + 25; gated M = 128 5.9 + 20 (of weights:
// a's tiles double the bytes), down 2.7 + 15 (the gated tiles then 64 deep).
//
//   nvcc -std=c++17 -O3 -I runtime/include -gencode arch=compute_90a,code=sm_90a \
//     tools/bench_mm_stream.cu -o bench_mm_stream
//   ./bench_mm_stream
#include <cuda_bf16.h>

#include <algorithm>
#include <vector>

#include "bench_copies.cuh"
#include "etc/device/matmul.cuh"

using etc::dev::Ctx;
using etc::dev::View;
using bf16 = __nv_bfloat16;

#ifndef GATED_TK
#define GATED_TK 128
#endif
constexpr int kTasks = 128, kH = 2048, kI = 8192, kGatedTK = GATED_TK;

template <class T>
__device__ View<T> view2(T* p, long long r, long long c, long long rs) {
  View<T> v{};
  v.ptr = p;
  v.rank = 2;
  v.ext[0] = r;
  v.ext[1] = c;
  v.stride[0] = rs;
  v.stride[1] = 1;
  return v;
}

// The bare stream: CTA i reads rows [128 i, 128 i + 128) of w [N, K], 4 stages of 128 x 64.
__global__ void __launch_bounds__(256) ring(const bf16* w, long long K, unsigned long long* times, unsigned* sink) {
  extern __shared__ __align__(128) unsigned char smem[];
  const unsigned long long t0 = globaltimer_ns();
  const unsigned acc = ring_rows<4>(smem, reinterpret_cast<const unsigned short*>(w), K, blockIdx.x * 128, 128, 128, 64);
  stamp_span(times, t0);
  if (acc == 0x12345678u) sink[blockIdx.x] = acc;
}

// The gate/up grid's task i: y[:, 64 i, +64) = silu(a @ gate[64 i, +64)^T) * (a @ up[...]^T).
template <int TM>
__global__ void __launch_bounds__(256, 1) gated(const bf16* a, const bf16* gate, const bf16* up, bf16* y, int M,
                                                 int K, unsigned long long* times) {
  extern __shared__ __align__(128) unsigned char smem[];
  const unsigned long long t0 = globaltimer_ns();
  const Ctx c{smem, etc::dev::matmul_silu_mul_smem_bytes<bf16, TM, 128, kGatedTK>()};
  const long long n0 = 64LL * blockIdx.x;
  etc::dev::matmul_silu_mul<TM, 128, kGatedTK>(c, view2(a, M, K, K), view2(gate + n0 * K, 64, K, K),
                                               view2(up + n0 * K, 64, K, K), true, view2(y + n0, M, 64, kI));
  stamp_span(times, t0);
}

// The down grid's task (i, j): part j of y[:, 64 i, +64) over K columns [2048 j, +2048).
template <int TM>
__global__ void __launch_bounds__(256, 1) down(const bf16* a, const bf16* w, float* y, int M, int Kp,
                                                unsigned long long* times) {
  extern __shared__ __align__(128) unsigned char smem[];
  const unsigned long long t0 = globaltimer_ns();
  const Ctx c{smem, etc::dev::matmul_smem_bytes<bf16, TM, 64, 128>()};
  const long long n0 = 64LL * (blockIdx.x / 4), k0 = (long long)Kp * (blockIdx.x % 4);
  etc::dev::matmul<TM, 64, 128>(c, view2(a + k0, M, Kp, kI), view2(w + n0 * kI + k0, 64, Kp, kI), true,
                                view2(y + (blockIdx.x % 4) * (long long)M * kH + n0, M, 64, kH));
  stamp_span(times, t0);
}

__global__ void fill_bf16(bf16* p, long long n, float v) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    p[i] = __float2bfloat16(v * (float)((i * 2654435761LL) % 17 - 8));
}

int main() {
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, 0));
  bf16 *gu, *dw, *a, *y;
  float* yp;
  unsigned* sink;
  unsigned long long* times;
  const long long gu_elems = 2LL * kI * kH, dw_elems = (long long)kH * kI;
  CK(cudaMalloc(&gu, gu_elems * 2));
  CK(cudaMalloc(&dw, dw_elems * 2));
  CK(cudaMalloc(&a, 128LL * kI * 2));
  CK(cudaMalloc(&y, 128LL * kI * 2));
  CK(cudaMalloc(&yp, 4LL * 128 * kH * 4));
  CK(cudaMalloc(&sink, 4096 * 4));
  CK(cudaMalloc(&times, 2 * kTasks * 8));
  fill_bf16<<<1024, 256>>>(gu, gu_elems, 0.01f);
  fill_bf16<<<1024, 256>>>(dw, dw_elems, 0.01f);
  fill_bf16<<<1024, 256>>>(a, 128LL * kI, 0.1f);
  CK(cudaDeviceSynchronize());
  const L2Flush flush(p, sink);

  const double copy_rate = copy_gbs(p);

  const unsigned ring_smem = 4 * 128 * 64 * 2;
  CK(cudaFuncSetAttribute(ring, cudaFuncAttributeMaxDynamicSharedMemorySize, ring_smem));
  const unsigned g16 = etc::dev::matmul_silu_mul_smem_bytes<bf16, 16, 128, kGatedTK>();
  const unsigned g128 = etc::dev::matmul_silu_mul_smem_bytes<bf16, 128, 128, kGatedTK>();
  const unsigned d16 = etc::dev::matmul_smem_bytes<bf16, 16, 64, 128>();
  const unsigned d128 = etc::dev::matmul_smem_bytes<bf16, 128, 64, 128>();
  CK(cudaFuncSetAttribute(gated<16>, cudaFuncAttributeMaxDynamicSharedMemorySize, g16));
  CK(cudaFuncSetAttribute(gated<128>, cudaFuncAttributeMaxDynamicSharedMemorySize, g128));
  CK(cudaFuncSetAttribute(down<16>, cudaFuncAttributeMaxDynamicSharedMemorySize, d16));
  CK(cudaFuncSetAttribute(down<128>, cudaFuncAttributeMaxDynamicSharedMemorySize, d128));

  // Median of 15 launches, each after an L2 flush, of the span from the first CTA's start to the
  // last one's end, in us.
  auto span = [&](auto launch) {
    std::vector<double> us;
    for (int r = 0; r < 15; ++r) {
      flush();
      launch();
      us.push_back(span_us(times, kTasks));
    }
    std::sort(us.begin(), us.end());
    return us[us.size() / 2];
  };
  std::printf("%s, %d SMs; copy %.0f GB/s (read + write), %.1f GB/s an SM at %d CTAs\n", p.name,
              p.multiProcessorCount, copy_rate, copy_rate / kTasks, kTasks);
  std::printf("%-6s %4s %5s %10s %9s %8s %7s %7s\n", "what", "M", "K", "weights", "us", "GB/s/SM", "/ring", "/copy");
  // Each form at K = 512, 1024 and 2048 a task (the decode step's is 2048): the slope of time
  // against K is the form's stream rate, the rest its fixed cost (start, epilogue, stragglers).
  const int ks[3] = {512, 1024, 2048};
  double ring_us[3] = {};
  // Times launch(K) at each K, prints a row for each (mib: its weights at K = 2048) and the
  // least-squares line us = fixed + K * per_k through the three.
  auto sweep = [&](const char* what, int M, double mib, auto launch) {
    double us[3];
    for (int i = 0; i < 3; ++i) {
      const int K = ks[i];
      us[i] = span([&] { launch(K); });
      if (M == 0) ring_us[i] = us[i];
      const double w = mib * K / 2048, gbs = w * 1048576.0 / kTasks / (us[i] * 1e-6) / 1e9;
      std::printf("%-6s %4d %5d %6.1f MiB %9.2f %8.1f %6.2fx %6.2fx\n", what, M, K, w, us[i], gbs,
                  ring_us[i] / us[i] * mib / 64.0, gbs / (copy_rate / kTasks));
    }
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (int i = 0; i < 3; ++i) sx += ks[i], sy += us[i], sxx += (double)ks[i] * ks[i], sxy += ks[i] * us[i];
    const double per_k = (3 * sxy - sx * sy) / (3 * sxx - sx * sx), fixed = (sy - per_k * sx) / 3;
    const double gbs = mib * 1048576.0 / 2048 / kTasks / (per_k * 1e-6) / 1e9;
    std::printf("fit    %-6s M=%-4d fixed %6.2f us, stream %6.1f GB/s an SM (%.3f us per 64 of K)\n", what, M, fixed, gbs,
                per_k * 64);
  };
  sweep("ring", 0, 64.0, [&](int K) { ring<<<kTasks, 256, ring_smem>>>(gu, K, times, sink); });
  for (int M : {1, 128}) {
    sweep("gated", M, 64.0, [&](int K) {
      const bf16* up = gu + (long long)kI * K;
      if (M <= 16)
        gated<16><<<kTasks, 256, g16>>>(a, gu, up, y, M, K, times);
      else
        gated<128><<<kTasks, 256, g128>>>(a, gu, up, y, M, K, times);
    });
    sweep("down", M, 32.0, [&](int K) {
      if (M <= 16)
        down<16><<<kTasks, 256, d16>>>(a, dw, yp, M, K, times);
      else
        down<128><<<kTasks, 256, d128>>>(a, dw, yp, M, K, times);
    });
  }
  return 0;
}
