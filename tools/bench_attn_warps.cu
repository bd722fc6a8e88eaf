// Decode attention's cache stream alone, against a device-to-device copy: a grid of 132 CTAs
// (one an SM) runs tasks of one (request, cache head) over n positions of a [B, S, HK, D] bf16
// cache, the way the megakernel's attention tasks run, at Llama-3.2-1B's shape (D 64, G 4) and
// Qwen3-0.6B's (D 128, G 2), B = 1 (8 split-KV parts of 64 positions) and B = 128 (512
// positions). The kernels, by the label each line starts with:
//   proto     the form of independent warps written out here with compile-time strides (each
//             of 8 warps takes interleaved steps of rows and keeps its own online softmax, U
//             steps of K and V rows in flight a lane, the warps combined once at the end);
//   header    etc's attention_decode (runtime/include/etc/device/attention.cuh) as the
//             generated code calls it, in the form the knobs pick for the shape (by default
//             the tensor-core form of independent warps, mma-warp's port);
//   hdr-rt, hdr-call, hdr-smem
//             the header in steps toward the megakernel (attn_header_kernel's H): to find what
//             costs the form its speed there;
//   mma-warp  a second prototype: the tensor-core form with a cp.async ring for each warp (U is
//             then its slots a warp); attention.cuh's attn_head_mma_warps is its port;
//   mma-lens  the same with each task's length read from memory first, as the header reads lens.
// Each line: the median span of 25 launches (first task start to last task end, %globaltimer),
// the cache's K and V bytes over it, that as a ratio of the copy, and the relative L2 error of
// o against an f32 reference. The proto's load: 0 ld.global.nc.L1::no_allocate (as run), 1 .cg
// with an L2 evict-first hint, 2 .cg, 3 ld.relaxed.gpu, 4 .cg.L2::256B: within 2% of each other
// on an H200 at B = 128 (docs/benchmarks.md, session 42).
//   nvcc -std=c++17 -O3 -I runtime/include -gencode arch=compute_90a,code=sm_90a \
//     [-DETC_ATTN_MMA_WARPS=0 -DETC_ATTN_WARPS=8] tools/bench_attn_warps.cu -o bench_attn_warps && ./bench_attn_warps
// (the defaults: the header's tensor-core form of independent warps at both shapes, as run.sh
// builds it; -DETC_ATTN_MMA_WARPS=0 -DETC_ATTN_WARPS=8: its FMA form of independent warps at both.)
#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "bench_copies.cuh"
#include "etc/device/attention.cuh"

constexpr int kS = 4097;
constexpr int kHK = 8;
constexpr int kWarps = 8;

// How a lane loads 16 bytes of a cache row: 0 ld.global.nc.L1::no_allocate, 1 ld.global.cg with
// an L2 evict-first hint, 2 ld.global.cg, 3 ld.relaxed.gpu, 4 ld.global.cg.L2::256B.
template <int M>
__device__ __forceinline__ uint4 ld_row(const void* p, unsigned long long pol) {
  uint4 r;
  if constexpr (M == 0)
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));
  else if constexpr (M == 1)
    asm volatile("ld.global.cg.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;\n"
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p), "l"(pol));
  else if constexpr (M == 2)
    asm volatile("ld.global.cg.v4.u32 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));
  else if constexpr (M == 3)
    asm volatile("ld.relaxed.gpu.global.v4.u32 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));
  else
    asm volatile("ld.global.cg.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));
  return r;
}
__device__ __forceinline__ void unpack8(uint4 r, float (&f)[8]) {
  const unsigned w[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = __uint_as_float(w[i] << 16);
    f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
  }
}

// One cache head and its G query heads over positions [0, n): rows rs elements apart.
template <int D, int G, int U, int M>
__device__ void attn_warps(const __nv_bfloat16* q, const __nv_bfloat16* kp, const __nv_bfloat16* vp, long long rs,
                           int n, float scale, __nv_bfloat16* o, float* red) {
  constexpr int PE = 8, L = D / PE, R = 32 / L;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int c = lane % L, rg = lane / L;
  float qf[G][PE];
  const float qs = scale * 1.4426950408889634f;
#pragma unroll
  for (int h = 0; h < G; ++h) {
    float f[8];
    unpack8(*reinterpret_cast<const uint4*>(q + h * D + c * PE), f);
#pragma unroll
    for (int e = 0; e < PE; ++e) qf[h][e] = f[e] * qs;
  }
  float m[G], l[G], acc[G][PE];
#pragma unroll
  for (int h = 0; h < G; ++h) {
    m[h] = -INFINITY;
    l[h] = 0.0f;
#pragma unroll
    for (int e = 0; e < PE; ++e) acc[h][e] = 0.0f;
  }
  unsigned long long pol;
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(pol));
  const int nsteps = (n + R - 1) / R;
  for (int t0 = warp; t0 < nsteps; t0 += kWarps * U) {
    uint4 kr[U], vr[U];
    bool ok[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int j = (t0 + u * kWarps) * R + rg;
      ok[u] = j < n;
      kr[u] = ok[u] ? ld_row<M>(kp + (long long)j * rs + c * PE, pol) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int j = (t0 + u * kWarps) * R + rg;
      vr[u] = ok[u] ? ld_row<M>(vp + (long long)j * rs + c * PE, pol) : make_uint4(0, 0, 0, 0);
    }
    float s[U][G];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      float k[8];
      unpack8(kr[u], k);
#pragma unroll
      for (int h = 0; h < G; ++h) {
        float d = 0.0f;
#pragma unroll
        for (int e = 0; e < PE; ++e) d = fmaf(qf[h][e], k[e], d);
#pragma unroll
        for (int x = L / 2; x > 0; x >>= 1) d += __shfl_xor_sync(0xffffffffu, d, x);
        s[u][h] = ok[u] ? d : -INFINITY;
      }
    }
#pragma unroll
    for (int h = 0; h < G; ++h) {
      float mx = m[h];
#pragma unroll
      for (int u = 0; u < U; ++u) mx = fmaxf(mx, s[u][h]);
      if (mx == -INFINITY) continue;  // no valid row yet in this row group
      const float alpha = exp2f(m[h] - mx);
      m[h] = mx;
      l[h] *= alpha;
#pragma unroll
      for (int e = 0; e < PE; ++e) acc[h][e] *= alpha;
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const float p = exp2f(s[u][h] - mx);
        l[h] += p;
        float v[8];
        unpack8(vr[u], v);
#pragma unroll
        for (int e = 0; e < PE; ++e) acc[h][e] = fmaf(p, v[e], acc[h][e]);
      }
    }
  }
  // The warp's row groups, then the warps: attention.cuh's end of its form of independent warps.
  etc::dev::detail::attn_warps_combine<D, G, PE>(red, kWarps, m, l, acc, o, 1, nullptr, 0);
}

// Runs task(b, g, p, base) for this CTA's tasks: request b, cache head g, part p of P parts of n
// positions, base the element offset of the task's first cache row (rows rs elements apart).
// Records the earliest start in span[0] and the latest end in span[1] (%globaltimer, ns).
template <class Task>
__device__ __forceinline__ void run_tasks(int B, int P, int n, long long rs, int d, unsigned long long* span,
                                          Task task) {
  unsigned long long t0, t1;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  const int tasks = B * kHK * P;
  for (int t = blockIdx.x; t < tasks; t += gridDim.x) {
    const int p = t % P, g = (t / P) % kHK, b = t / (P * kHK);
    task(b, g, p, (long long)b * kS * rs + (long long)p * n * rs + (long long)g * d);
  }
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
  if (threadIdx.x == 0) {
    atomicMin(&span[0], t0);
    atomicMax(&span[1], t1);
  }
}

// Tasks (b, g, p): request b, cache head g, part p of P parts of n positions each.
template <int D, int G, int U, int M>
__global__ void __launch_bounds__(256, 1) attn_kernel(const __nv_bfloat16* q, const __nv_bfloat16* kc,
                                                      const __nv_bfloat16* vc, __nv_bfloat16* o, int B, int P, int n,
                                                      unsigned long long* span) {
  __shared__ float red[kWarps * G * (D + 2)];
  const long long rs = (long long)kHK * D;
  run_tasks(B, P, n, rs, D, span, [&](int b, int g, int p, long long base) {
    attn_warps<D, G, U, M>(q + (long long)b * kHK * G * D + g * G * D, kc + base, vc + base, rs, n, 1.0f / sqrtf((float)D),
                           o + ((long long)(b * P + p) * kHK + g) * G * D, red);
  });
}

// The same tasks through etc's device header. H picks how, each step closer to the generated
// megakernel: 1 attention_decode inlined with the cache's row stride a compile-time constant;
// 2 the stride at run time (a kernel argument, as the megakernel reads it from its
// parameters); 3 also through a __noinline__ function that takes the views by value (the
// generated code's etc_opN); 4 as 3 with the dynamic shared memory of Llama-3.2-1B's
// megakernel reserved (139264 bytes: the L1 cache is what is left of the SM's 256 KiB).
template <int D, int G, class TQ, class TK, class TL, class TO>
__device__ __noinline__ void attn_op_call(const etc::dev::Ctx& ctx, etc::dev::View<TQ> q, etc::dev::View<TK> k,
                                          etc::dev::View<TK> v, etc::dev::View<TL> lens, etc::dev::View<TO> o) {
  etc::dev::attention_decode<D, G>(ctx, q, k, v, lens, o, 1.0f / sqrtf((float)D));
}
constexpr unsigned kMegaSmem = 139264;
template <int D, int G, int H>
__global__ void __launch_bounds__(256, 1) attn_header_kernel(const __nv_bfloat16* q, const __nv_bfloat16* kc,
                                                             const __nv_bfloat16* vc, __nv_bfloat16* o, int B, int P,
                                                             int n, const int* len, long long row_stride,
                                                             unsigned long long* span) {
  extern __shared__ __align__(128) unsigned char smem[];
  using namespace etc::dev;
  Ctx ctx{smem, attention_decode_smem_bytes<D, G>()};
  const long long rs = H == 1 ? (long long)kHK * D : row_stride;
  run_tasks(B, P, n, rs, D, span, [&](int b, int g, int p, long long base) {
    View<const __nv_bfloat16> qv{}, kv{}, vv{};
    View<const int> lv{};
    View<__nv_bfloat16> ov{};
    qv.ptr = q + (long long)b * kHK * G * D + g * G * D, qv.rank = 1, qv.ext[0] = G * D, qv.stride[0] = 1;
    kv.ptr = kc + base, kv.rank = 2, kv.ext[0] = n, kv.ext[1] = D, kv.stride[0] = rs, kv.stride[1] = 1;
    vv = kv;
    vv.ptr = vc + base;
    lv.ptr = len, lv.rank = 0;
    ov.ptr = o + ((long long)(b * P + p) * kHK + g) * G * D, ov.rank = 1, ov.ext[0] = G * D, ov.stride[0] = 1;
    if constexpr (H >= 3)
      attn_op_call<D, G>(ctx, qv, kv, vv, lv, ov);
    else
      attention_decode<D, G>(ctx, qv, kv, vv, lv, ov, 1.0f / sqrtf((float)D));
  });
}

// A second prototype, "mma-warp": the tensor-core form of attention.cuh (attn_heads_mma: K
// times q^T and V^T times p^T with mma.sync m16n8k16, each warp its own online softmax over the
// 16-row tiles it takes) with a ring of its own for each warp instead of the CTA's: each warp
// copies its tiles (K and V rows, cp.async, XOR-swizzled as there) into its NSW slots, waits for
// them with its own cp.async groups and __syncwarp, and never waits for another warp until the
// end. That form's products cost a few instructions a tile where the FMA warps spend some 440
// (Llama's shape: 16 rows of 4 heads), and its CTA ring's barriers are what the warps form took
// away. The products, the online softmax and the final combination are attention.cuh's own
// (attn_mma_start, attn_mma_tile, attn_mma_finish), which took this form as the default in
// session 44; the prototype keeps its ring of each warp.
template <int D, int G, int NSW>
__device__ void attn_mma_warps(const __nv_bfloat16* q, const __nv_bfloat16* kp, const __nv_bfloat16* vp, long long rs,
                               int n, float scale, __nv_bfloat16* o, unsigned char* smem) {
  namespace edd = etc::dev::detail;
  using K = __nv_bfloat16;
  constexpr int PE = 8, CPR = D / PE, DT = D / 16, TILE = 16 * D;
  static_assert(CPR >= 8 && G <= 8, "mma-warp: rows of 8 or more 16-byte chunks, at most 8 heads");
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  K* const ring = reinterpret_cast<K*>(smem) + (size_t)warp * NSW * 2 * TILE;
  float* const red = reinterpret_cast<float*>(smem + (size_t)nw * NSW * 2 * TILE * sizeof(K));  // [nw][G][D]
  float* const wm = red + nw * G * D;                                                            // [nw][G]
  float* const wl = wm + nw * G;                                                                 // [nw][G]
  const int tiles = (n + 15) / 16, mine = tiles > warp ? (tiles - warp + nw - 1) / nw : 0;
  const unsigned long long policy = edd::l2_evict_first();
  // The warp's i-th tile (tile warp + i * nw) into slot i % NSW; an empty group past its last.
  auto request = [&](int i) {
    if (i < mine) {
      const int t = warp + i * nw;
      K* const dk = ring + (i % NSW) * 2 * TILE;
      K* const dv = dk + TILE;
      for (int idx = lane; idx < 16 * CPR; idx += 32) {
        const int r = idx / CPR, cc = idx - r * CPR, j = t * 16 + r;
        const long long row = (long long)(j < n ? j : 0) * rs + cc * PE;
        edd::cp_async16_hint(dk + edd::attn_mma_at<D, K>(r, cc), kp + row, j < n ? 16u : 0u, policy);
        edd::cp_async16_hint(dv + edd::attn_mma_at<D, K>(r, cc), vp + row, j < n ? 16u : 0u, policy);
      }
    }
    edd::cp_async_commit();
  };
  for (int i = 0; i < NSW; ++i) request(i);
  // The products, the online softmax and the warps' final combination are attention.cuh's own
  // pieces; what this prototype adds is the ring of each warp.
  unsigned qf[DT][2];
  float m[2], l[2], ot[DT][4];
  edd::attn_mma_start<D, G>(q, 1, qf, m, l, ot);
  for (int i = 0; i < mine; ++i) {
    const int t = warp + i * nw;
    const K* const k_s = ring + (i % NSW) * 2 * TILE;
    edd::cp_async_wait<NSW - 1>();
    __syncwarp();
    edd::attn_mma_tile<D, K>(k_s, k_s + TILE, n - t * 16, qf, scale, m, l, ot);
    __syncwarp();  // every lane is done with the slot
    request(i + NSW);
  }
  edd::attn_mma_finish<D, G>(wm, wl, red, m, l, ot, o, 1, nullptr, 0);
}
template <int D, int G, int NSW>
constexpr unsigned mma_warps_smem() {
  return 8u * NSW * 2 * 16 * D * 2 + 4u * 8 * G * (D + 2);
}
// kLoadN: each task reads its length from memory first (len, as the header reads lens), where
// the prototype otherwise takes it as an argument: what one dependent load a task costs.
template <int D, int G, int NSW, bool kLoadN>
__global__ void __launch_bounds__(256, 1) attn_mma_kernel(const __nv_bfloat16* q, const __nv_bfloat16* kc,
                                                          const __nv_bfloat16* vc, __nv_bfloat16* o, int B, int P, int n,
                                                          const int* len, unsigned long long* span) {
  extern __shared__ __align__(128) unsigned char smem[];
  const long long rs = (long long)kHK * D;
  run_tasks(B, P, n, rs, D, span, [&](int b, int g, int p, long long base) {
    attn_mma_warps<D, G, NSW>(q + (long long)b * kHK * G * D + g * G * D, kc + base, vc + base, rs, kLoadN ? __ldcg(len) : n,
                              1.0f / sqrtf((float)D), o + ((long long)(b * P + p) * kHK + g) * G * D, smem);
  });
}

// The reference: one thread a (task, query head), f32.
template <int D, int G>
__global__ void attn_ref(const __nv_bfloat16* q, const __nv_bfloat16* kc, const __nv_bfloat16* vc, float* o, int B,
                         int P, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= B * kHK * P * G) return;
  const int h = i % G, t = i / G;
  const int p = t % P, g = (t / P) % kHK, b = t / (P * kHK);
  const long long rs = (long long)kHK * D;
  const __nv_bfloat16* qp = q + (long long)b * kHK * G * D + (g * G + h) * D;
  const __nv_bfloat16* kp = kc + (long long)b * kS * rs + (long long)p * n * rs + g * D;
  const __nv_bfloat16* vp = vc + (long long)b * kS * rs + (long long)p * n * rs + g * D;
  const float scale = 1.0f / sqrtf((float)D);
  float mx = -INFINITY;
  for (int j = 0; j < n; ++j) {
    float s = 0;
    for (int d = 0; d < D; ++d) s += __bfloat162float(qp[d]) * __bfloat162float(kp[j * rs + d]);
    mx = fmaxf(mx, s * scale);
  }
  float den = 0, acc[D];
  for (int d = 0; d < D; ++d) acc[d] = 0;
  for (int j = 0; j < n; ++j) {
    float s = 0;
    for (int d = 0; d < D; ++d) s += __bfloat162float(qp[d]) * __bfloat162float(kp[j * rs + d]);
    const float pr = expf(s * scale - mx);
    den += pr;
    for (int d = 0; d < D; ++d) acc[d] += pr * __bfloat162float(vp[j * rs + d]);
  }
  float* op = o + ((long long)(b * P + p) * kHK + g) * G * D + h * D;
  for (int d = 0; d < D; ++d) op[d] = acc[d] / den;
}

__global__ void fill(__nv_bfloat16* p, long long n, unsigned seed) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    unsigned x = (unsigned)i * 2654435761u ^ seed;
    x ^= x >> 13;
    x *= 0x5bd1e995u;
    x ^= x >> 15;
    p[i] = __float2bfloat16(((x & 0xffff) / 65536.0f - 0.5f) * 2.0f);
  }
}

// H: 0 the prototype (with load M), 1 to 4 attn_header_kernel's variant H, 5 the mma-warp
// prototype with U slots a warp, 6 the same with each task's length read from memory.
template <int D, int G, int U, int M = 0, int H = 0>
void run(const char* name, int B, int P, int n, int sms, double copy_tbs) {
  constexpr unsigned smem = H >= 5   ? mma_warps_smem<D, G, U>()
                           : H == 4 ? kMegaSmem
                                    : etc::dev::attention_decode_smem_bytes<D, G>();
  const long long cache = (long long)B * kS * kHK * D;
  __nv_bfloat16 *q, *kc, *vc, *o;
  float* ref;
  unsigned long long* span;
  CK(cudaMalloc(&q, (long long)B * kHK * G * D * 2));
  CK(cudaMalloc(&kc, cache * 2));
  CK(cudaMalloc(&vc, cache * 2));
  CK(cudaMalloc(&o, (long long)B * P * kHK * G * D * 2));
  CK(cudaMalloc(&ref, (long long)B * P * kHK * G * D * 4));
  CK(cudaMalloc(&span, 16));
  int* len;
  CK(cudaMalloc(&len, 4));
  CK(cudaMemcpy(len, &n, 4, cudaMemcpyHostToDevice));
  if constexpr (H >= 5)
    CK(cudaFuncSetAttribute(attn_mma_kernel<D, G, U, H == 6>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  else if constexpr (H != 0)
    CK(cudaFuncSetAttribute(attn_header_kernel<D, G, H>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  fill<<<1024, 256>>>(q, (long long)B * kHK * G * D, 1);
  fill<<<1024, 256>>>(kc, cache, 2);
  fill<<<1024, 256>>>(vc, cache, 3);
  const int tasks = B * kHK * P;
  attn_ref<D, G><<<(tasks * G + 127) / 128, 128>>>(q, kc, vc, ref, B, P, n);
  std::vector<float> times;
  for (int it = 0; it < 30; ++it) {
    const unsigned long long init[2] = {~0ull, 0ull};
    CK(cudaMemcpy(span, init, 16, cudaMemcpyHostToDevice));
    if constexpr (H >= 5)
      attn_mma_kernel<D, G, U, H == 6><<<sms, 256, smem>>>(q, kc, vc, o, B, P, n, len, span);
    else if constexpr (H != 0)
      attn_header_kernel<D, G, H><<<sms, 256, smem>>>(q, kc, vc, o, B, P, n, len, (long long)kHK * D, span);
    else
      attn_kernel<D, G, U, M><<<sms, 256>>>(q, kc, vc, o, B, P, n, span);
    CK(cudaGetLastError());
    unsigned long long got[2];
    CK(cudaMemcpy(got, span, 16, cudaMemcpyDeviceToHost));
    if (it >= 5) times.push_back((got[1] - got[0]) / 1000.0);
  }
  std::sort(times.begin(), times.end());
  const double us = times[times.size() / 2];
  std::vector<__nv_bfloat16> oh((size_t)tasks * G * D);
  std::vector<float> rh((size_t)tasks * G * D);
  CK(cudaMemcpy(oh.data(), o, oh.size() * 2, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(rh.data(), ref, rh.size() * 4, cudaMemcpyDeviceToHost));
  double err = 0, norm = 0;
  for (size_t i = 0; i < oh.size(); ++i) {
    const double d = (double)__bfloat162float(oh[i]) - rh[i];
    err += d * d;
    norm += (double)rh[i] * rh[i];
  }
  const double bytes = (double)B * P * n * kHK * D * 2 * 2;
  static const char* const kVariant[] = {"proto", "header", "hdr-rt", "hdr-call", "hdr-smem", "mma-warp", "mma-lens"};
  std::printf("%-6s %-8s M %d D %3d G %d U %d B %3d parts %d n %4d: %8.2f us  %6.2f TB/s  %5.2fx copy  rel L2 %.2e\n", name, kVariant[H], M, D, G,
              U, B, P, n, us, bytes / us / 1e6, bytes / us / 1e6 / copy_tbs, std::sqrt(err / norm));
  CK(cudaFree(q));
  CK(cudaFree(kc));
  CK(cudaFree(vc));
  CK(cudaFree(o));
  CK(cudaFree(ref));
  CK(cudaFree(span));
  CK(cudaFree(len));
}

// The warps form at one shape: the prototype, then the header's four variants.
template <int D, int G>
void run_warps(const char* name, int B, int P, int n, int sms, double copy) {
  run<D, G, 8, 0>(name, B, P, n, sms, copy);
  run<D, G, 8, 0, 1>(name, B, P, n, sms, copy);
  run<D, G, 8, 0, 2>(name, B, P, n, sms, copy);
  run<D, G, 8, 0, 3>(name, B, P, n, sms, copy);
  run<D, G, 8, 0, 4>(name, B, P, n, sms, copy);
}

int main() {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const size_t bytes = 1ull << 30;
  void *a, *b;
  CK(cudaMalloc(&a, bytes));
  CK(cudaMalloc(&b, bytes));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  float best = 1e30f;
  for (int i = 0; i < 5; ++i) {
    CK(cudaEventRecord(e0));
    CK(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice));
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    best = std::min(best, ms);
  }
  const double copy = 2.0 * bytes / (best * 1e-3) / 1e12;
  std::printf("%d SMs, copy %.2f TB/s; ETC_ATTN_MMA_WARPS %d, ETC_ATTN_WARPS %d\n", sms, copy, ETC_ATTN_MMA_WARPS, ETC_ATTN_WARPS);
  CK(cudaFree(a));
  CK(cudaFree(b));
  for (int B : {1, 128}) {
    const int P = B == 1 ? 8 : 1, n = B == 1 ? 64 : 512;
    run_warps<64, 4>("llama", B, P, n, sms, copy);
    run<64, 4, 2, 0, 5>("llama", B, P, n, sms, copy);
    run<64, 4, 4, 0, 5>("llama", B, P, n, sms, copy);
    run<64, 4, 2, 0, 6>("llama", B, P, n, sms, copy);
    run_warps<128, 2>("qwen3", B, P, n, sms, copy);
    run<128, 2, 2, 0, 5>("qwen3", B, P, n, sms, copy);
    run<128, 2, 2, 0, 6>("qwen3", B, P, n, sms, copy);
  }
  return 0;
}
