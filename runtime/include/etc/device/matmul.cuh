// matmul tile op: y[M, N] = a[M, K] @ b (b [K, N], or [N, K] with transpose_b), f32 accumulate.
#pragma once

#include "etc/device/common.cuh"

namespace etc {
namespace dev {

template <class T, int TM, int TN, int TK>
__host__ __device__ constexpr unsigned matmul_smem_bytes() {
  return 0;
}

// Reference-simple version: one thread per output, exact f32 accumulation in k order.
template <int TM, int TN, int TK, class TA, class TB, class TY>
__device__ void matmul(const Ctx& ctx, const View<TA>& a, const View<TB>& b, bool transpose_b,
                       const View<TY>& y) {
  (void)ctx;
  const bool vec = a.rank == 1;
  const long long M = vec ? 1 : a.ext[0];
  const long long K = a.ext[a.rank - 1];
  const long long N = transpose_b ? b.ext[0] : b.ext[1];
  const long long ams = vec ? 0 : a.stride[0], aks = a.stride[a.rank - 1];
  const long long bks = transpose_b ? b.stride[1] : b.stride[0];
  const long long bns = transpose_b ? b.stride[0] : b.stride[1];
  const long long yms = y.rank == 1 ? 0 : y.stride[0], yns = y.stride[y.rank - 1];
  for (long long o = threadIdx.x; o < M * N; o += blockDim.x) {
    long long m = o / N, n = o % N;
    float acc = 0.0f;
    for (long long k = 0; k < K; ++k)
      acc += to_f32(ld(a.ptr + m * ams + k * aks)) * to_f32(ld(b.ptr + n * bns + k * bks));
    y.ptr[m * yms + n * yns] = from_f32<bare_t<TY>>(acc);
  }
  __syncthreads();
}

}  // namespace dev
}  // namespace etc
