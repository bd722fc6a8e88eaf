// Hopper's warpgroup matrix products (wgmma, sm_90a only): D[64 x N] += A[64 x 16] B[16 x N]
// with both operands in shared memory, K-major, in the 128-byte swizzle (a row of 64 16-bit
// elements is 8 chunks of 16 bytes, chunk c of row r stored at c ^ (r % 8); 8 rows make a
// 1024-byte atom, which must start 1024-byte aligned). f32 accumulators: thread l of warp w of
// the warpgroup holds, for each 8 columns j, rows 16 w + l / 4 and that + 8, columns
// 8 j + 2 (l % 4) and the next (d[4 j .. 4 j + 3]: row r, r; r + 8, r + 8).
#pragma once

#include "etc/device/common.cuh"

namespace etc {
namespace dev {
namespace detail {

// Whether this compilation can issue wgmma (NVRTC defines the feature macro for sm_90a).
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
constexpr bool kHaveWgmma = true;
#else
constexpr bool kHaveWgmma = false;
#endif

// The descriptor of a K-major, 128-byte-swizzled operand whose first row starts at p (16-byte
// units; a k16 step within the row adds 32 bytes): 8-row groups 1024 bytes apart.
__device__ __forceinline__ unsigned long long wgmma_desc(const void* p) {
  const unsigned long long a = (smem_addr(p) & 0x3FFFFu) >> 4;
  return a | (1ull << 16) | ((1024ull >> 4) << 32) | (1ull << 62);
}

__device__ __forceinline__ void wgmma_fence() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void wgmma_commit() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
// Until at most N of this warpgroup's committed groups of products are pending (0: all done).
template <int N>
__device__ __forceinline__ void wgmma_wait() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}
// Shared memory written through the generic proxy (cp.async, stores), read next by wgmma.
__device__ __forceinline__ void fence_proxy_async_smem() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

// D += A B for one k16 step (T: __half or __nv_bfloat16, N: 8, 16, 24, 32, 64 or 128: the
// specializations below; MmWgGeom's tiles take 32 to 128, with ETC_MM_WG_NARROW 8 to 24 too;
// tools/bench_prefetch.cu's swapped products 16).
template <class T, int N>
__device__ __forceinline__ void wgmma_ss(float (&d)[N / 2], unsigned long long da, unsigned long long db) {
  static_assert(N < 0, "wgmma_ss: no m64nNk16 product of this N and dtype");
}

// The accumulators are operands of the asynchronous products between wgmma_fence and
// wgmma_wait, which the compiler does not see: an empty asm that reads and writes each
// keeps its other accesses (the zeroing, the epilogue's reads) on their side of those.
template <int R>
__device__ __forceinline__ void wgmma_fence_operands(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// ETC_WGMMA_*R for the product of N = 2 R columns: its R accumulator registers (operands 0 ..
// R - 1), then the two descriptors and the scale-d flag (1: D += A B) as operands R .. R + 2.
#define ETC_WGMMA_D4 "{%0, %1, %2, %3}, %4, %5, p, 1, 1, 0, 0;\n}\n"
#define ETC_WGMMA_SCALE4 "%6"
#define ETC_WGMMA_OPS4 "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
#define ETC_WGMMA_D8 "{%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9, p, 1, 1, 0, 0;\n}\n"
#define ETC_WGMMA_SCALE8 "%10"
#define ETC_WGMMA_OPS8 "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
#define ETC_WGMMA_D12 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11}, %12, %13, p, 1, 1, 0, 0;\n}\n"
#define ETC_WGMMA_SCALE12 "%14"
#define ETC_WGMMA_OPS12 "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11])
#define ETC_WGMMA_D16 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, %16, %17, p, 1, 1, 0, 0;\n}\n"
#define ETC_WGMMA_SCALE16 "%18"
#define ETC_WGMMA_OPS16 "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
#define ETC_WGMMA_D32 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
#define ETC_WGMMA_SCALE32 "%34"
#define ETC_WGMMA_OPS32 "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define ETC_WGMMA_D64 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
#define ETC_WGMMA_SCALE64 "%66"
#define ETC_WGMMA_OPS64 "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
#define ETC_WGMMA_SS(T, PTX, N, R)                                                                    \
  template <>                                                                                       \
  __device__ __forceinline__ void wgmma_ss<T, N>(float (&d)[R], unsigned long long da, unsigned long long db) { \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " ETC_WGMMA_SCALE##R ", 0;\n"                  \
                 "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." PTX "." PTX " " ETC_WGMMA_D##R  \
                 : ETC_WGMMA_OPS##R                                                                 \
                 : "l"(da), "l"(db), "r"(1));                                                       \
  }
ETC_WGMMA_SS(__nv_bfloat16, "bf16", 8, 4)
ETC_WGMMA_SS(__nv_bfloat16, "bf16", 16, 8)
ETC_WGMMA_SS(__nv_bfloat16, "bf16", 24, 12)
ETC_WGMMA_SS(__nv_bfloat16, "bf16", 32, 16)
ETC_WGMMA_SS(__nv_bfloat16, "bf16", 64, 32)
ETC_WGMMA_SS(__nv_bfloat16, "bf16", 128, 64)
ETC_WGMMA_SS(__half, "f16", 8, 4)
ETC_WGMMA_SS(__half, "f16", 16, 8)
ETC_WGMMA_SS(__half, "f16", 24, 12)
ETC_WGMMA_SS(__half, "f16", 32, 16)
ETC_WGMMA_SS(__half, "f16", 64, 32)
ETC_WGMMA_SS(__half, "f16", 128, 64)
#undef ETC_WGMMA_SS
#undef ETC_WGMMA_D4
#undef ETC_WGMMA_SCALE4
#undef ETC_WGMMA_OPS4
#undef ETC_WGMMA_D8
#undef ETC_WGMMA_SCALE8
#undef ETC_WGMMA_OPS8
#undef ETC_WGMMA_D12
#undef ETC_WGMMA_SCALE12
#undef ETC_WGMMA_OPS12
#undef ETC_WGMMA_D16
#undef ETC_WGMMA_SCALE16
#undef ETC_WGMMA_OPS16
#undef ETC_WGMMA_D32
#undef ETC_WGMMA_SCALE32
#undef ETC_WGMMA_OPS32
#undef ETC_WGMMA_D64
#undef ETC_WGMMA_SCALE64
#undef ETC_WGMMA_OPS64
#endif

}  // namespace detail
}  // namespace dev
}  // namespace etc
