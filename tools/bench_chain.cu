// What one link of a decode step's chain costs by how it hands data on: etc's event counters
// (the producer's writes, a CTA barrier, a gpu-scope fence, a relaxed add; the consumer's
// acquire spin, a barrier, then its loads of the data) against data that carries its own flag
// (NCCL's "LL" form: each 32-bit value stored with the launch's epoch in one 64-bit word, no
// fence and no counter; the consumer's loads of the data are its wait, re-issued until every
// word it needs carries the epoch), and against no norm task at all. Models the B = 1 layer's
// alternation of a one-CTA row task and a 128-task matmul grid: L pairs of
//   mm(l):   CTAs 0 .. 127 each read h[l] (1024 words: 2048 bf16), reduce them in the CTA and
//            write 128 words of parts[l] (8 split-K parts of 2048 f32 in all);
//   norm(l): CTA 128 reads every word of parts[l] (16384) and writes h[l + 1].
// `fold` drops norm(l): each mm(l + 1) task reads all of parts[l] and computes the h words it
// needs itself (what folding the norms into the next matmuls would do; session 61).
// Optionally every CTA's 4 more warps stream a 2 GiB buffer meanwhile (the weight stream under
// which session 22 found a fence takes about a microsecond). Every launch starts from an h of
// its own and its final h is checked against the host's integer model of the same sums, so a
// word read before its producer wrote it (a stale word of an earlier launch) would show as a
// mismatch, in every form. Caveats: the 64 flagged words a thread of the norm polls spill
// (ptxas: 732 bytes of stores in this kernel), a part of flag_p's cost; and fold's pair includes
// the last norm that the check needs (1/L of a norm link too much, against the fold).
//
// Per row, medians over the launches: link_ns, (the last norm's end less the first mm CTA's
// start) over the links; pair_ns, the same over the L pairs; h_to_mm0, norm(l - 1)'s end to mm
// CTA 0 holding h[l]; mm0_to_nm, that to norm(l) holding all of parts[l]; norm, that to its end.
// (Session 61, H200, under the stream: counters 2.2 us a link, 4.3 a pair; flagged h no better,
// flagged parts 4x worse (one CTA re-polling 128 KiB); fold 3.2 us a pair.)
//   nvcc -std=c++17 -O3 -I runtime/include -gencode arch=compute_90a,code=sm_90a \
//     tools/bench_chain.cu -o bench_chain && ./bench_chain
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "bench_copies.cuh"
#include "etc/device/events.cuh"

using etc::dev::detail::ld_acquire_gpu;

constexpr int kMm = 128;         // matmul-like tasks a link
constexpr int kH = 1024;         // words of h
constexpr int kPart = 128;       // words each mm task writes
constexpr int kParts = kMm * kPart;
constexpr int kChainThreads = 256;
constexpr int kBgWarps = 4;
constexpr int kLine = 32;        // counters a 128-byte line
constexpr int kMaxL = 32;
constexpr size_t kBgBytes = size_t(2) << 30;

// Which links carry their data flagged: kFlagH, h (one writer, 128 readers); kFlagParts, parts
// (128 writers, one reader). 0: counters everywhere. kFold (counters): no norm task between the
// mm grids; every mm task computes the h words it needs from all of parts[l - 1] itself (the
// norm folded into the next matmul's tasks: one link a pair, each task gathering 64 KiB).
enum Proto { kFlagH = 1, kFlagParts = 2, kFold = 4 };

struct Bufs {
  unsigned* h;             // [kMaxL + 1][kH]      (counter form)
  unsigned* parts;         // [kMaxL][kParts]
  unsigned* cnt_h;         // [kMaxL + 1][kLine]
  unsigned* cnt_p;         // [kMaxL][kLine]
  unsigned long long* hf;  // [kMaxL + 1][kH]      (flagged form: epoch << 32 | value)
  unsigned long long* pf;  // [kMaxL][kParts]
  const uint4* bg;         // the background stream's buffer
  unsigned* stop;          // set when the chain is done: the stream stops
  unsigned* sink;
  unsigned long long* t_start;  // [gridDim.x]
  unsigned long long* t_end;    // [1]
  unsigned long long* t_link;   // [3][kMaxL]: the norm CTA has parts[l], it has written h[l + 1],
                                // mm CTA 0 has h[l]
};

// The chain warps' barrier (named: the background warps never reach it). For the same reason
// notify_counter and wait_counter below restate events.cuh's notify_fence + notify_add and
// wait(), whose barriers take every thread of the CTA.
__device__ __forceinline__ void chain_sync() { asm volatile("bar.sync 1, %0;" ::"n"(kChainThreads) : "memory"); }

__device__ __forceinline__ unsigned long long ld_relaxed_u64(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_relaxed_u64(unsigned long long* p, unsigned long long v) {
  asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

// The N words at p[i * stride], each once it carries `epoch`: every load issued, then in rounds
// every word not yet current re-issued together (one round trip a round; re-polling one word at
// a time costs a round trip per late word).
template <int N>
__device__ __forceinline__ void load_flagged(const unsigned long long* p, int stride, unsigned epoch, unsigned* out) {
  unsigned long long v[N];
#pragma unroll
  for (int i = 0; i < N; ++i) v[i] = ld_relaxed_u64(p + (size_t)i * stride);
  for (;;) {
    bool late = false;
#pragma unroll
    for (int i = 0; i < N; ++i) late |= (unsigned)(v[i] >> 32) != epoch;
    if (!late) break;
#pragma unroll
    for (int i = 0; i < N; ++i)
      if ((unsigned)(v[i] >> 32) != epoch) v[i] = ld_relaxed_u64(p + (size_t)i * stride);
  }
#pragma unroll
  for (int i = 0; i < N; ++i) out[i] = (unsigned)v[i];
}

// norm(l)'s words t + 256 k (k < 4) of h[l + 1] from thread t's 64 words of parts[l].
__device__ __forceinline__ void norm_words(const unsigned* p, int l, unsigned* out) {
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    unsigned v = (unsigned)l;
#pragma unroll
    for (int j = 16 * k; j < 16 * k + 16; ++j) v += p[j];
    out[k] = v;
  }
}

// The CTA's sum of one value a thread (chain threads only).
__device__ __forceinline__ unsigned cta_sum(unsigned v, unsigned* red) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  chain_sync();
  unsigned s = 0;
#pragma unroll
  for (int w = 0; w < kChainThreads / 32; ++w) s += red[w];
  chain_sync();
  return s;
}

__device__ __forceinline__ void notify_counter(unsigned* c) {
  chain_sync();
  if (threadIdx.x < 32) asm volatile("fence.acq_rel.gpu;" ::: "memory");
  if (threadIdx.x == 0) asm volatile("red.relaxed.gpu.global.add.u32 [%0], %1;" ::"l"(c), "r"(1u) : "memory");
}
__device__ __forceinline__ void wait_counter(const unsigned* c, unsigned target) {
  if (threadIdx.x == 0)
    while (ld_acquire_gpu(c) < target) {
    }
  chain_sync();
}

__global__ void __launch_bounds__(kChainThreads + 32 * kBgWarps, 1)
    chain(Bufs b, int proto, int L, unsigned epoch, int bg) {
  __shared__ unsigned red[kChainThreads / 32];
  const int t = threadIdx.x, c = blockIdx.x;
  if (t >= kChainThreads) {  // the background stream
    if (!bg) return;
    const int w = (t - kChainThreads) >> 5, lane = t & 31;
    const size_t n = kBgBytes / sizeof(uint4), step = (size_t)gridDim.x * kBgWarps * 32 * 16;
    size_t i = ((size_t)c * kBgWarps + w) * 32 * 16 + lane;
    unsigned x = 0;
    for (;;) {
      uint4 v[16];
#pragma unroll
      for (int u = 0; u < 16; ++u) v[u] = __ldcs(b.bg + ((i + u * 32) % n));
#pragma unroll
      for (int u = 0; u < 16; ++u) x ^= v[u].x ^ v[u].w;
      i += step;
      if (*reinterpret_cast<volatile unsigned*>(b.stop)) break;
    }
    if (x == 0x9e3779b9u) *b.sink = x;  // keeps the loads
    return;
  }
  if (c > kMm) return;
  if (t == 0) b.t_start[c] = globaltimer_ns();
  const bool hflag = proto & kFlagH, pflag = proto & kFlagParts, fold = proto & kFold;
  for (int l = 0; l < L; ++l) {
    if (c < kMm) {  // mm(l)
      unsigned w[4];
      if (fold && l > 0) {
        wait_counter(b.cnt_p + (l - 1) * kLine, (unsigned)kMm);
        const unsigned* src = b.parts + (size_t)(l - 1) * kParts + t;
        unsigned p[64];
#pragma unroll
        for (int j = 0; j < 64; ++j) p[j] = __ldcg(src + 256 * j);
        norm_words(p, l - 1, w);
      } else if (!hflag) {
        wait_counter(b.cnt_h + l * kLine, 1u);
        const unsigned* h = b.h + (size_t)l * kH;
#pragma unroll
        for (int k = 0; k < 4; ++k) w[k] = __ldcg(h + t + 256 * k);
      } else {
        load_flagged<4>(b.hf + (size_t)l * kH + t, 256, epoch, w);
      }
      if (c == 0 && t == 0) b.t_link[2 * kMaxL + l] = globaltimer_ns();
      const unsigned s = cta_sum(w[0] + w[1] + w[2] + w[3], red);
      if (t < kPart) {
        const unsigned v = s + (unsigned)c * 131u + (unsigned)t;
        if (!pflag)
          b.parts[(size_t)l * kParts + c * kPart + t] = v;
        else
          st_relaxed_u64(b.pf + (size_t)l * kParts + c * kPart + t, (unsigned long long)epoch << 32 | v);
      }
      if (!pflag) notify_counter(b.cnt_p + l * kLine);
    } else if (!fold || l == L - 1) {  // norm(l), CTA kMm (folded: only the last, for the check)
      unsigned p[64];
      if (!pflag) {
        wait_counter(b.cnt_p + l * kLine, (unsigned)kMm);
        const unsigned* src = b.parts + (size_t)l * kParts + t;
#pragma unroll
        for (int j = 0; j < 64; ++j) p[j] = __ldcg(src + 256 * j);
      } else {
        load_flagged<64>(b.pf + (size_t)l * kParts + t, 256, epoch, p);
      }
      if (t == 0) b.t_link[l] = globaltimer_ns();
      unsigned v[4];
      norm_words(p, l, v);
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        if (!hflag)
          b.h[(size_t)(l + 1) * kH + t + 256 * k] = v[k];
        else
          st_relaxed_u64(b.hf + (size_t)(l + 1) * kH + t + 256 * k, (unsigned long long)epoch << 32 | v[k]);
      }
      if (!hflag) notify_counter(b.cnt_h + (l + 1) * kLine);
      if (t == 0) b.t_link[kMaxL + l] = globaltimer_ns();
    }
  }
  if (c == kMm) {
    chain_sync();
    if (t == 0) {
      *b.t_end = globaltimer_ns();
      *reinterpret_cast<volatile unsigned*>(b.stop) = 1u;
    }
  }
}

// The host's model of the chain: h[L] from h[0].
static std::vector<unsigned> expected(const std::vector<unsigned>& h0, int L) {
  std::vector<unsigned> h = h0, parts(kParts);
  for (int l = 0; l < L; ++l) {
    unsigned s = 0;
    for (unsigned x : h) s += x;
    for (int c = 0; c < kMm; ++c)
      for (int t = 0; t < kPart; ++t) parts[c * kPart + t] = s + (unsigned)c * 131u + (unsigned)t;
    for (int t = 0; t < 256; ++t)
      for (int k = 0; k < 4; ++k) {
        unsigned v = (unsigned)l;
        for (int j = 16 * k; j < 16 * k + 16; ++j) v += parts[t + 256 * j];
        h[t + 256 * k] = v;
      }
  }
  return h;
}

int main() {
  const int sms = print_device();
  if (sms < kMm + 1) {
    std::printf("needs %d SMs\n", kMm + 1);
    return 1;
  }
  Bufs b{};
  CK(cudaMalloc(&b.h, (kMaxL + 1) * kH * sizeof(unsigned)));
  CK(cudaMalloc(&b.parts, (size_t)kMaxL * kParts * sizeof(unsigned)));
  CK(cudaMalloc(&b.cnt_h, (kMaxL + 1) * kLine * sizeof(unsigned)));
  CK(cudaMalloc(&b.cnt_p, kMaxL * kLine * sizeof(unsigned)));
  CK(cudaMalloc(&b.hf, (kMaxL + 1) * kH * sizeof(unsigned long long)));
  CK(cudaMalloc(&b.pf, (size_t)kMaxL * kParts * sizeof(unsigned long long)));
  CK(cudaMemset(b.hf, 0, (kMaxL + 1) * kH * sizeof(unsigned long long)));
  CK(cudaMemset(b.pf, 0, (size_t)kMaxL * kParts * sizeof(unsigned long long)));
  uint4* bgbuf;
  CK(cudaMalloc(&bgbuf, kBgBytes));
  CK(cudaMemset(bgbuf, 1, kBgBytes));
  b.bg = bgbuf;
  CK(cudaMalloc(&b.stop, sizeof(unsigned)));
  CK(cudaMalloc(&b.sink, sizeof(unsigned)));
  CK(cudaMalloc(&b.t_start, sms * sizeof(unsigned long long)));
  CK(cudaMalloc(&b.t_end, sizeof(unsigned long long)));
  CK(cudaMalloc(&b.t_link, 3 * kMaxL * sizeof(unsigned long long)));

  std::vector<unsigned> h0(kH);
  constexpr int kRuns = 21;
  const int L = 16;
  unsigned epoch = 0;
  bool all_ok = true;
  struct Form {
    const char* name;
    int proto;
  };
  static const Form kForms[] = {{"counter", 0}, {"flag_h", kFlagH}, {"flag_p", kFlagParts},
                                {"flag_hp", kFlagH | kFlagParts}, {"fold", kFold}};
  std::printf("%-8s %4s %3s %12s %12s %10s %10s %10s %10s  %s\n", "form", "bg", "L", "link_ns", "launch_us", "h_to_mm0",
              "mm0_to_nm", "norm", "pair_ns", "check");
  for (int bg : {0, 1})
    for (const Form& form : kForms) {
      const int proto = form.proto;
      std::vector<double> link, span, hop_h, hop_p, norm, pair;
      bool ok = true;
      for (int r = 0; r < kRuns; ++r) {
        ++epoch;
        // Every launch starts from its own h (and so computes its own parts): a link read before
        // its producer wrote would take the previous launch's values and show as a mismatch.
        for (int w = 0; w < kH; ++w) h0[w] = (unsigned)w * 7u + 1u + epoch * 131u;
        const std::vector<unsigned> want = expected(h0, L);
        CK(cudaMemset(b.stop, 0, sizeof(unsigned)));
        CK(cudaMemset(b.cnt_h, 0, (kMaxL + 1) * kLine * sizeof(unsigned)));
        CK(cudaMemset(b.cnt_p, 0, kMaxL * kLine * sizeof(unsigned)));
        const unsigned one = 1u;
        CK(cudaMemcpy(b.cnt_h, &one, sizeof(unsigned), cudaMemcpyHostToDevice));
        CK(cudaMemcpy(b.h, h0.data(), kH * sizeof(unsigned), cudaMemcpyHostToDevice));
        {
          std::vector<unsigned long long> f(kH);
          for (int w = 0; w < kH; ++w) f[w] = (unsigned long long)epoch << 32 | h0[w];
          CK(cudaMemcpy(b.hf, f.data(), kH * sizeof(unsigned long long), cudaMemcpyHostToDevice));
        }
        cudaEvent_t e0, e1;
        CK(cudaEventCreate(&e0));
        CK(cudaEventCreate(&e1));
        CK(cudaEventRecord(e0));
        chain<<<sms, kChainThreads + 32 * kBgWarps>>>(b, proto, L, epoch, bg);
        CK(cudaEventRecord(e1));
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        CK(cudaEventDestroy(e0));
        CK(cudaEventDestroy(e1));
        std::vector<unsigned long long> ts(kMm + 1), te(1);
        CK(cudaMemcpy(ts.data(), b.t_start, (kMm + 1) * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(te.data(), b.t_end, sizeof(unsigned long long), cudaMemcpyDeviceToHost));
        const unsigned long long t0 = *std::min_element(ts.begin(), ts.begin() + kMm);
        const double total = (double)(long long)(te[0] - t0);
        pair.push_back(total / L);
        link.push_back(proto & kFold ? total / (L + 1) : total / (2.0 * L));
        std::vector<unsigned long long> tl(3 * kMaxL);
        CK(cudaMemcpy(tl.data(), b.t_link, tl.size() * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
        for (int l = 1; l < L && !(proto & kFold); ++l) {
          hop_h.push_back((double)(long long)(tl[2 * kMaxL + l] - tl[kMaxL + l - 1]));
          hop_p.push_back((double)(long long)(tl[l] - tl[2 * kMaxL + l]));
          norm.push_back((double)(long long)(tl[kMaxL + l] - tl[l]));
        }
        span.push_back(ms * 1000.0);
        std::vector<unsigned> got(kH);
        if (!(proto & kFlagH)) {
          CK(cudaMemcpy(got.data(), b.h + (size_t)L * kH, kH * sizeof(unsigned), cudaMemcpyDeviceToHost));
        } else {
          std::vector<unsigned long long> f(kH);
          CK(cudaMemcpy(f.data(), b.hf + (size_t)L * kH, kH * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
          for (int w = 0; w < kH; ++w) {
            if ((unsigned)(f[w] >> 32) != epoch) ok = false;
            got[w] = (unsigned)f[w];
          }
        }
        if (got != want) ok = false;
      }
      all_ok = all_ok && ok;
      std::printf("%-8s %4d %3d %12.0f %12.1f %10.0f %10.0f %10.0f %10.0f  %s\n", form.name, bg, L, median(link),
                  median(span), median(hop_h), median(hop_p), median(norm), median(pair), ok ? "ok" : "MISMATCH");
    }
  return all_ok ? 0 : 1;
}
