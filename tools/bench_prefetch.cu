// Does loading a decode matmul task's weights before its event wait pay, and by which copy
// engine? In the megakernel (etcc --weight-prefetch, session 51's traces) a task that issues
// 80 KiB of cp.async before its wait spends 3 to 5 us issuing them (the trace's `pre`): the SM
// takes no more requests than it has in flight, so the prefetch streams as a K loop would and
// the wait starts late. This models one hop of the B = 1 chain: 128 worker CTAs each own a task
// of 64 weight rows by K (stages of 64 x 128 16-bit elements, 16 KiB); each issues its first P
// stages, then spins on a flag that one more CTA sets `delay` us after its start (the producer
// of the chain), then streams the rest of its K through a ring of S stages and reads every
// stage. A few chain CTAs meanwhile load 16 KiB blocks of another buffer one after another (a
// chain task's latency-bound loads), so the prefetch's cost to the chain shows too. Two copy
// engines: cp.async (16 bytes a thread, etc's ring) and TMA tensor copies of 64 x 64 boxes on
// per-stage mbarriers (one thread issues a stage, so issuing costs nothing however deep).
//
// The TMA rows come in five forms: `tma` (boxes without a swizzle), `tsw` (the 128-byte swizzle
// of etc's wgmma stages) and `tswh` (that and etc's evict-first L2 hint, etc/device/tma.cuh's
// tma_box: the decode step's form, which ran slower there than cp.async, session 51). Two more
// take the map as the step does, from global memory (EtcParams.tmaps) rather than a kernel
// parameter: `tg`, and `tgp` that prefetches it into the descriptor cache at the CTA's start.
// (Session 52, H200: all five stream alike, 12.0 to 12.3 us for 256 KiB a task against cp.async's
// 13.6 to 13.8; a map prefetch before each task's waits, tried in the step (not kept), left its TMA
// form as slow as before: neither the swizzle, the hint nor the map's place is what it pays.)
//
// Session 53: what consuming a stage costs besides its copies, in the step's B = 1 forms (below,
// at the enum): `a`'s row by cp.async beside the boxes, the products (the step's, swapped, left
// in flight, after the refill, on the CUDA cores), the proxy fence alone. (H200: 14.1 us for 256
// KiB a task with `a` and no products, 17.7 to 19.2 with any of them; `a` by cp.async costs TMA
// 0.8 us of its lead, but TMA with the products still beats cp.async with them, 19.2 against 20.7:
// the step's TMA form being slower is not reproduced here. docs/benchmarks.md, session 53.)
//
// Per variant, medians over the launches (L2 flushed before each) of: issue (a worker's time from
// its start to its last prefetch issued), post (the flag's setting to a worker's end: what the
// hop costs after its producer), span (the launch), chain (a chain CTA's 8 loads). Every worker
// checks its tile's xor against the host's.
//
//   nvcc -std=c++17 -O3 -I runtime/include -gencode arch=compute_90a,code=sm_90a \
//     tools/bench_prefetch.cu -o bench_prefetch
//   ./bench_prefetch
#include <algorithm>
#include <cstring>
#include <vector>

#include "bench_copies.cuh"
#include "etc/device/events.cuh"
#include "etc/device/tma.cuh"
#include "etc/device/wgmma.cuh"

using etc::dev::detail::fence_proxy_async_smem;
using etc::dev::detail::wgmma_commit;
using etc::dev::detail::wgmma_desc;
using etc::dev::detail::wgmma_fence;
using etc::dev::detail::wgmma_fence_operands;
using etc::dev::detail::wgmma_ss;
using etc::dev::detail::wgmma_wait;

constexpr int kWorkers = 128, kRows = 64, kTK = 128, kChain = 3, kChainLoads = 8;
constexpr int kStageElems = kRows * kTK, kStageBytes = kStageElems * 2;

struct Rec {
  unsigned long long t0, t1, t2, t3;
  unsigned acc;
  unsigned pad;
};

// Stage `st` of a worker's tile (rows r0 .. r0 + 63, columns st * 128 ..) into its ring slot.
// The copy engines: cp.async, TMA boxes (no swizzle / etc's 128-byte swizzle / that with etc's
// evict-first hint).
enum Copy {
  kCpAsync = 0,
  kTma = 1,
  kTmaSwizzled = 2,
  kTmaSwizzledHint = 3,
  kTmaGlobal = 4,
  kTmaGlobalPrefetched = 5,
  kCpAsyncWithA = 6,
  kTmaWithA = 7,
  kCpAsyncWithAMma = 8,
  kTmaWithAMma = 9,
  kTmaWithASwap = 10,
  kCpAsyncWithASwap = 11,
  kTmaWithAMmaAsync = 12,
  kCpAsyncWithAMmaAsync = 13,
  kTmaWithAFence = 14,
  kTmaWithAMmaNoFence = 15,
  kTmaWithAMmaIssueAfter = 16,
  kCpAsyncWithAMmaIssueAfter = 17,
  kTmaWithAFma = 18
};
// The step's B = 1 stage also holds a's row (128 columns, 256 bytes), which etc copies by cp.async
// whichever engine takes b: `ca` and `ta` add it to `cpa` and `tswh` (a cp.async group a stage
// beside the TMA boxes' mbarrier, both waited for, as mm_wgmma does).
// `caw` and `taw` also run the step's B = 1 products on each stage (a 64-column tile in two
// warpgroups: wgmma m64n32k16, 8 a stage, waited for before the next stage, as mm_wgmma does).
// a's stage area is the step's too: 64 rows of which row 0 is loaded, in the 128-byte swizzle.
__host__ __device__ constexpr bool with_a(int copy) { return copy >= kCpAsyncWithA; }
// What a worker does with a stage besides reading its bytes (the kernel's template argument):
enum Consumer {
  kNothing,
  kProducts,            // `caw`, `taw`: the step's products, waited for
  kSwapped,             // `tas`, `cas`: the same product with its operands swapped, weights as
                        // the m64 side and a's first 16 rows as n16 (D^T = B A^T), each warpgroup
                        // one of the stage's two 64-column atoms: 4 products of a quarter of the work
  kInFlight,            // `tao`, `cao`: the step's products left in flight across the next stage's
                        // wait (a warpgroup waits for the previous stage's products, then a
                        // barrier, then that stage's slot is refilled)
  kFenceOnly,           // `taf`: ta with the proxy fence a stage that the products need after
                        // cp.async (no products)
  kProductsNoFence,     // `tan`: taw without it (a's bytes unordered for wgmma: for the time only)
  kProductsThenRefill,  // `tai`, `cai`: taw and caw with the stage's refill issued after its
                        // products instead of before them
  kCudaCores            // `tag`: ta with the stage's product for a's one row on the CUDA cores (a
                        // thread 4 of a weight row's 16-byte chunks, 32 multiply-adds, the row's
                        // 4 threads summed by shuffles at the end)
};
constexpr Consumer consumer(int copy) {
  switch (copy) {
    case kCpAsyncWithAMma:
    case kTmaWithAMma: return kProducts;
    case kTmaWithASwap:
    case kCpAsyncWithASwap: return kSwapped;
    case kTmaWithAMmaAsync:
    case kCpAsyncWithAMmaAsync: return kInFlight;
    case kTmaWithAFence: return kFenceOnly;
    case kTmaWithAMmaNoFence: return kProductsNoFence;
    case kTmaWithAMmaIssueAfter:
    case kCpAsyncWithAMmaIssueAfter: return kProductsThenRefill;
    case kTmaWithAFma: return kCudaCores;
    default: return kNothing;
  }
}
__host__ __device__ constexpr bool by_tma(int copy) {
  return copy != kCpAsync && copy != kCpAsyncWithA && copy != kCpAsyncWithAMma && copy != kCpAsyncWithASwap &&
         copy != kCpAsyncWithAMmaAsync && copy != kCpAsyncWithAMmaIssueAfter;
}
constexpr int kAElems = 64 * kTK, kABytes = kAElems * 2;
// Where element k (< kTK) of a's row 0 sits in a stage's area: 64-column atoms of 64 rows.
__host__ __device__ constexpr int a_at(int k) { return (k / 64) * (64 * 64) + (k % 64); }

// Stage st's copies: b (do_b) and, in the `ca` / `ta` forms, a's row (do_a). One cp.async group
// a call wherever cp.async copies anything in this form (empty ones keep wait_group's count
// uniform); TMA boxes count on the stage's mbarrier instead. As in mm_wgmma, a prefetch before
// the wait issues b alone, and a's rows of the prefetched stages follow the wait.
template <int S>
__device__ __forceinline__ void issue(int copy, const CUtensorMap* map, unsigned short* ring, unsigned long long* bar,
                                      const unsigned short* w, const unsigned short* a, long long K, int r0, int st,
                                      int nk, bool do_a = true, bool do_b = true) {
  const bool tma = by_tma(copy);
  const bool groups = !tma || with_a(copy);
  if (st < nk) {
    unsigned short* dst = ring + (st % S) * kStageElems;
    const int k0 = st * kTK;
    if (do_a && with_a(copy) && threadIdx.x < kTK / 8) {  // a's row 0, after the S stages of b
      unsigned short* adst = ring + S * kStageElems + (st % S) * kAElems;
      cp16(adst + a_at(threadIdx.x * 8), a + k0 + threadIdx.x * 8);
    }
    if (do_b && tma && threadIdx.x == 0) {
      mbar_expect_tx(&bar[st % S], kStageBytes);
      if (copy >= kTmaSwizzledHint) {
        const unsigned long long policy = etc::dev::detail::l2_evict_first();
        etc::dev::detail::tma_box(dst, map, k0, r0, &bar[st % S], policy);
        etc::dev::detail::tma_box(dst + kRows * 64, map, k0 + 64, r0, &bar[st % S], policy);
      } else {
        tma2d(dst, map, k0, r0, &bar[st % S]);                      // columns k0 .. k0 + 63
        tma2d(dst + kRows * 64, map, k0 + 64, r0, &bar[st % S]);  // k0 + 64 .. k0 + 127
      }
    }
    if (do_b && !tma)  // the same two halves as the TMA boxes: [64 rows x 64 columns] each, row-major
      for (int c = threadIdx.x; c < kStageElems / 8; c += blockDim.x) {
        const int half = c / (kRows * 8), r = (c / 8) % kRows, cc = c % 8;
        cp16(dst + half * kRows * 64 + r * 64 + cc * 8, w + (long long)(r0 + r) * K + k0 + half * 64 + cc * 8);
      }
  }
  if (groups) commit();
}

// The step's m64n32k16 products of a stage (a's area as, b's bs; warpgroup wg takes b's rows
// 32 wg ..), then a wait until at most PENDING stages' products are in flight.
template <int PENDING>
__device__ __forceinline__ void step_products(float (&d)[16], const unsigned short* as, const unsigned short* bs,
                                              int wg) {
  wgmma_fence();
  for (int ka = 0; ka < kTK / 64; ++ka)
    for (int kk = 0; kk < 4; ++kk)
      wgmma_ss<__nv_bfloat16, 32>(d, wgmma_desc(as + ka * (64 * 64) + kk * 16),
                                  wgmma_desc(bs + ka * (kRows * 64) + 32 * wg * 64 + kk * 16));
  wgmma_commit();
  wgmma_wait<PENDING>();
  wgmma_fence_operands(d);
}

template <int S, Consumer kUse>
__global__ void __launch_bounds__(256) hop(const __grid_constant__ CUtensorMap map, const CUtensorMap* gmap,
                                           const unsigned short* w, const unsigned short* a, long long K,
                                           int copy, int P, unsigned* flag, long long delay_ns, const int4* chain_buf,
                                           Rec* rec, unsigned long long* chain_ns, unsigned long long* flag_ns) {
  extern __shared__ __align__(1024) unsigned char smem[];
  __shared__ unsigned long long bar[S];
  __shared__ unsigned red[8];
  const unsigned long long t0 = globaltimer_ns();
  const int b = blockIdx.x;
  if (b == kWorkers) {  // the producer: sets the flag delay_ns after its start
    if (threadIdx.x == 0) {
      unsigned long long now;
      while ((now = globaltimer_ns()) < t0 + (unsigned long long)delay_ns) {
      }
      etc::dev::red_release_gpu(flag, 1u);  // the flag is 0 before the launch
      *flag_ns = now;
    }
    return;
  }
  if (b > kWorkers) {  // a chain CTA: 16 KiB blocks one after another, each waited for
    const int c = b - kWorkers - 1;
    int4* dst = reinterpret_cast<int4*>(smem);
    for (int i = 0; i < kChainLoads; ++i) {
      const int4* src = chain_buf + ((long long)(c * kChainLoads + i) * 1024);
      for (int j = threadIdx.x; j < 1024; j += blockDim.x) cp16(dst + j, src + j);
      commit();
      wait_group<0>();
      __syncthreads();
    }
    if (threadIdx.x == 0) chain_ns[c] = globaltimer_ns() - t0;
    return;
  }
  unsigned short* ring = reinterpret_cast<unsigned short*>(smem);
  const int nk = (int)(K / kTK), r0 = b * kRows;
  const bool tma = by_tma(copy), groups = !tma || with_a(copy);
  // The decode step's maps are in global memory (EtcParams.tmaps), not kernel parameters.
  const CUtensorMap* m = copy >= kTmaGlobal ? gmap : &map;
  if (tma) {
    if (threadIdx.x == 0) {
      if (copy == kTmaGlobalPrefetched) asm volatile("prefetch.tensormap [%0];\n" ::"l"(m) : "memory");
      for (int s = 0; s < S; ++s) mbar_init(&bar[s], 1);
      asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
  }
  for (int s = 0; s < P; ++s) issue<S>(copy, m, ring, bar, w, a, K, r0, s, nk, false, true);
  const unsigned long long t1 = globaltimer_ns();
  if (threadIdx.x == 0)
    while (etc::dev::detail::ld_acquire_gpu(flag) == 0u) {
    }
  __syncthreads();
  const unsigned long long t2 = globaltimer_ns();
  if (with_a(copy))
    for (int s = 0; s < P; ++s) issue<S>(copy, m, ring, bar, w, a, K, r0, s, nk, true, false);
  for (int s = P; s < S - 1; ++s) issue<S>(copy, m, ring, bar, w, a, K, r0, s, nk);
  unsigned acc = 0;
  float d[16], ds[8], fma_acc = 0.0f;
  for (int i = 0; i < 16; ++i) d[i] = 0.0f;
  for (int i = 0; i < 8; ++i) ds[i] = 0.0f;
  const int wg = threadIdx.x >> 7;
  for (int st = 0; st < nk; ++st) {
    if (groups) wait_group<S - 2>();
    if (tma) mbar_wait(&bar[st % S], (unsigned)((st / S) & 1));
    if constexpr (kUse != kNothing && kUse != kProductsNoFence && kUse != kCudaCores) fence_proxy_async_smem();  // cp.async wrote a; wgmma reads it
    __syncthreads();
    if constexpr (kUse != kInFlight && kUse != kProductsThenRefill) issue<S>(copy, m, ring, bar, w, a, K, r0, st + S - 1, nk);
    const unsigned short* bs = ring + (st % S) * kStageElems;
    const unsigned short* as = ring + S * kStageElems + (st % S) * kAElems;
    if constexpr (kUse == kSwapped) {  // swapped: the weights' 64 rows by a's 16, this warpgroup's atom
      wgmma_fence();
      for (int kk = 0; kk < 4; ++kk)
        wgmma_ss<__nv_bfloat16, 16>(ds, wgmma_desc(bs + wg * (kRows * 64) + kk * 16),
                                    wgmma_desc(as + wg * (64 * 64) + kk * 16));
      wgmma_commit();
      wgmma_wait<0>();
      wgmma_fence_operands(ds);
    }
    if constexpr (kUse == kInFlight) {
      step_products<1>(d, as, bs, wg);  // the previous stage's products done
      __syncthreads();                  // every warpgroup's: the previous stage's slot is free
      issue<S>(copy, m, ring, bar, w, a, K, r0, st + S - 1, nk);
    }
    if constexpr (kUse == kProducts || kUse == kProductsNoFence || kUse == kProductsThenRefill) step_products<0>(d, as, bs, wg);
    if constexpr (kUse == kCudaCores) {  // thread t: weight row t / 4, its chunks 4 (t % 4) .. + 3 of 16
      const int r = threadIdx.x >> 2;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int q = 4 * (threadIdx.x & 3) + j, atom = q >> 3, c = q & 7;
        const uint4 wv = *reinterpret_cast<const uint4*>(bs + atom * (kRows * 64) + r * 64 + ((c ^ (r & 7)) << 3));
        const uint4 av = *reinterpret_cast<const uint4*>(as + atom * (64 * 64) + (c << 3));
        const unsigned* wp = &wv.x;
        const unsigned* ap = &av.x;
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          fma_acc += __uint_as_float(wp[e] << 16) * __uint_as_float(ap[e] << 16);
          fma_acc += __uint_as_float(wp[e] & 0xffff0000u) * __uint_as_float(ap[e] & 0xffff0000u);
        }
      }
    }
    if constexpr (kUse == kProductsThenRefill) issue<S>(copy, m, ring, bar, w, a, K, r0, st + S - 1, nk);
    const unsigned* src = reinterpret_cast<const unsigned*>(bs);
    for (int i = threadIdx.x; i < kStageElems / 2; i += blockDim.x) acc ^= src[i];
    if (with_a(copy) && threadIdx.x < kTK / 2) acc ^= *reinterpret_cast<const unsigned*>(as + a_at(2 * threadIdx.x));
  }
  if (groups) wait_group<0>();
  if constexpr (kUse == kCudaCores) {
    fma_acc += __shfl_xor_sync(0xffffffffu, fma_acc, 1);
    fma_acc += __shfl_xor_sync(0xffffffffu, fma_acc, 2);
    d[0] = fma_acc;
  }
  if constexpr (kUse == kInFlight) {
    wgmma_wait<0>();
    wgmma_fence_operands(d);
  }
  for (int o = 16; o > 0; o >>= 1) acc ^= __shfl_xor_sync(0xffffffffu, acc, o);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned x = 0;
    for (int i = 0; i < 8; ++i) x ^= red[i];
    rec[b] = Rec{t0, t1, t2, globaltimer_ns(), x, __float_as_uint(d[0] + ds[0])};  // the products kept live
  }
}

int main() {
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, %d SMs; %d worker CTAs of %d rows, %d chain CTAs of %d x 16 KiB loads\n", prop.name,
              prop.multiProcessorCount, kWorkers, kRows, kChain, kChainLoads);
  const long long kMaxK = 2048, rows = (long long)kWorkers * kRows;
  std::vector<unsigned short> host(rows * kMaxK);
  unsigned seed = 12345u;
  for (auto& x : host) x = (unsigned short)((seed = seed * 1664525u + 1013904223u) >> 16);
  unsigned short* w;
  CK(cudaMalloc(&w, host.size() * 2));
  std::vector<unsigned short> host_a(kMaxK);  // a's row (the `ca` and `ta` forms)
  for (auto& x : host_a) x = (unsigned short)((seed = seed * 1664525u + 1013904223u) >> 16);
  unsigned short* a;
  CK(cudaMalloc(&a, host_a.size() * 2));
  CK(cudaMemcpy(a, host_a.data(), host_a.size() * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(w, host.data(), host.size() * 2, cudaMemcpyHostToDevice));
  int4* chain_buf;
  CK(cudaMalloc(&chain_buf, (long long)kChain * kChainLoads * 16384));
  CK(cudaMemset(chain_buf, 1, (long long)kChain * kChainLoads * 16384));
  CUtensorMap* gmap;
  CK(cudaMalloc(&gmap, sizeof(CUtensorMap)));
  unsigned *flag, *sink;
  Rec* rec;
  unsigned long long *chain_ns, *flag_ns;
  CK(cudaMalloc(&flag, 4));
  CK(cudaMalloc(&sink, 4));
  CK(cudaMalloc(&rec, kWorkers * sizeof(Rec)));
  CK(cudaMalloc(&chain_ns, kChain * 8));
  CK(cudaMalloc(&flag_ns, 8));
  L2Flush flush(prop, sink);
  std::printf("%-5s %5s %3s %3s %8s %9s %9s %9s %9s  %s\n", "copy", "K", "S", "P", "delay", "issue_us", "post_us",
              "span_us", "chain_us", "check");
  for (long long K : {512LL, 2048LL}) {
    // The tile's xor per worker, as the kernel folds it (every 32-bit word of its rows' K range).
    std::vector<unsigned> want(kWorkers, 0u);
    for (int b = 0; b < kWorkers; ++b)
      for (int r = 0; r < kRows; ++r)
        for (long long k = 0; k < K; k += 2) {
          const unsigned short* e = &host[(b * kRows + r) * kMaxK + k];
          want[b] ^= (unsigned)e[0] | ((unsigned)e[1] << 16);
        }
    unsigned want_a = 0;
    for (long long k = 0; k < K; k += 2) want_a ^= (unsigned)host_a[k] | ((unsigned)host_a[k + 1] << 16);
    // The weights as [rows, K] rows K apart: a copy of the first K columns of each host row.
    std::vector<unsigned short> packed(rows * K);
    for (long long r = 0; r < rows; ++r) std::memcpy(&packed[r * K], &host[r * kMaxK], K * 2);
    CK(cudaMemcpy(w, packed.data(), packed.size() * 2, cudaMemcpyHostToDevice));
    const CUtensorMap map = tensor_map_2d(w, K, rows, 64, kRows);
    const CUtensorMap map_sw = tensor_map_2d(w, K, rows, 64, kRows, CU_TENSOR_MAP_SWIZZLE_128B);
    CK(cudaMemcpy(gmap, &map_sw, sizeof map_sw, cudaMemcpyHostToDevice));
    struct V {
      int copy;
      int S, P;
    };
    const int nk = (int)(K / kTK);
    std::vector<V> vs = {{kCpAsync, 4, 0}, {kCpAsync, 4, 3}, {kTma, 4, 0}, {kTma, 4, 3}, {kTma, 8, 0}, {kTma, 8, 7},
                         {kTmaSwizzled, 4, 0}, {kTmaSwizzled, 4, 3}, {kTmaSwizzledHint, 4, 0}, {kTmaSwizzledHint, 4, 3},
                         {kTmaGlobal, 4, 0}, {kTmaGlobal, 4, 3}, {kTmaGlobalPrefetched, 4, 0},
                         {kTmaGlobalPrefetched, 4, 3}, {kCpAsyncWithA, 4, 0}, {kCpAsyncWithA, 4, 3},
                         {kTmaWithA, 4, 0}, {kTmaWithA, 4, 3}, {kCpAsyncWithAMma, 4, 0}, {kCpAsyncWithAMma, 4, 3},
                         {kTmaWithAMma, 4, 0}, {kTmaWithAMma, 4, 3}, {kTmaWithASwap, 4, 0}, {kTmaWithASwap, 4, 3},
                         {kCpAsyncWithASwap, 4, 0}, {kCpAsyncWithASwap, 4, 3}, {kTmaWithAMmaAsync, 4, 0},
                         {kTmaWithAMmaAsync, 4, 3}, {kCpAsyncWithAMmaAsync, 4, 0}, {kCpAsyncWithAMmaAsync, 4, 3},
                         {kTmaWithAFence, 4, 0}, {kTmaWithAFence, 4, 3}, {kTmaWithAMmaNoFence, 4, 0},
                         {kTmaWithAMmaNoFence, 4, 3}, {kTmaWithAMmaIssueAfter, 4, 0}, {kTmaWithAMmaIssueAfter, 4, 3},
                         {kCpAsyncWithAMmaIssueAfter, 4, 0}, {kCpAsyncWithAMmaIssueAfter, 4, 3}, {kTmaWithAFma, 4, 0},
                         {kTmaWithAFma, 4, 3}};
    if (nk >= 12) vs.push_back({kTma, 12, 11});
    static const char* const kCopyName[] = {"cpa", "tma", "tsw", "tswh", "tg", "tgp", "ca",
                                              "ta",  "caw", "taw", "tas", "cas", "tao", "cao", "taf", "tan", "tai", "cai", "tag"};
    for (long long delay_us : {0LL, 10LL}) {
      for (const V& v : vs) {
        const int P = std::min(v.P, nk);
        const unsigned smem = (unsigned)v.S * (kStageBytes + (with_a(v.copy) ? kABytes : 0));
        auto launch = [&](auto kern) {
          CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
          kern<<<kWorkers + 1 + kChain, 256, smem>>>(v.copy >= kTmaSwizzled ? map_sw : map, gmap, w, a, K, v.copy, P, flag,
                                                    delay_us * 1000, chain_buf, rec, chain_ns, flag_ns);
        };
        std::vector<double> issue, post, span, chain;
        bool ok = true;
        for (int it = 0; it < 12; ++it) {
          CK(cudaMemset(flag, 0, 4));
          flush();
          switch (consumer(v.copy)) {  // (the rows with a consumer are all S = 4)
            case kProducts: launch(hop<4, kProducts>); break;
            case kSwapped: launch(hop<4, kSwapped>); break;
            case kInFlight: launch(hop<4, kInFlight>); break;
            case kFenceOnly: launch(hop<4, kFenceOnly>); break;
            case kProductsNoFence: launch(hop<4, kProductsNoFence>); break;
            case kProductsThenRefill: launch(hop<4, kProductsThenRefill>); break;
            case kCudaCores: launch(hop<4, kCudaCores>); break;
            case kNothing:
              if (v.S == 4) launch(hop<4, kNothing>);
              else if (v.S == 8) launch(hop<8, kNothing>);
              else launch(hop<12, kNothing>);
          }
          CK(cudaDeviceSynchronize());
          std::vector<Rec> r(kWorkers);
          std::vector<unsigned long long> c(kChain), f(1);
          CK(cudaMemcpy(r.data(), rec, r.size() * sizeof(Rec), cudaMemcpyDeviceToHost));
          CK(cudaMemcpy(c.data(), chain_ns, c.size() * 8, cudaMemcpyDeviceToHost));
          CK(cudaMemcpy(f.data(), flag_ns, 8, cudaMemcpyDeviceToHost));
          if (it == 0) continue;  // warm-up
          std::vector<double> is, ps;
          unsigned long long lo = ~0ULL, hi = 0;
          for (int b = 0; b < kWorkers; ++b) {
            ok &= r[b].acc == (want[b] ^ (with_a(v.copy) ? want_a : 0u));
            is.push_back((r[b].t1 - r[b].t0) / 1e3);
            ps.push_back(((double)r[b].t3 - (double)f[0]) / 1e3);
            lo = std::min(lo, r[b].t0), hi = std::max(hi, r[b].t3);
          }
          issue.push_back(median(is));
          post.push_back(median(ps));
          span.push_back((hi - lo) / 1e3);
          std::vector<double> cs;
          for (unsigned long long x : c) cs.push_back(x / 1e3);
          chain.push_back(median(cs));
        }
        std::printf("%-5s %5lld %3d %3d %8lld %9.2f %9.2f %9.2f %9.2f  %s\n", kCopyName[v.copy], K, v.S, P, delay_us,
                    median(issue), median(post), median(span), median(chain), ok ? "ok" : "MISMATCH");
      }
    }
  }
  return 0;
}
