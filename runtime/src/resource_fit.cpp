#include "resource_fit.h"

#include <algorithm>

#include "rt_error.h"

namespace etc::rt {

namespace {

constexpr int64_t kWarp = 32, kRegisterUnit = 256;

int64_t roundUp(int64_t x, int64_t unit) { return (x + unit - 1) / unit * unit; }

}  // namespace

std::string bytesText(int64_t bytes) {
  std::string out = std::to_string(bytes) + " bytes";
  if (bytes >= 1024 && bytes % 1024 == 0) out += " (" + std::to_string(bytes / 1024) + " KiB)";
  return out;
}

KernelFit fitKernel(const DeviceLimits& d, const KernelUsage& k) {
  KernelFit fit;
  const std::string on = " on " + d.name;
  const int64_t smem = k.static_smem + k.dynamic_smem;
  if (k.threads < 1 || k.threads > d.threads_per_block || (k.max_threads > 0 && k.threads > k.max_threads)) {
    const int64_t most = k.max_threads > 0 ? std::min(k.max_threads, d.threads_per_block) : d.threads_per_block;
    fit.limiter = "threads";
    fit.problem = "kernel " + k.kernel + " is launched with " + std::to_string(k.threads) +
                  " threads per CTA, and at most " + std::to_string(most) + " are allowed" + on;
    return fit;
  }
  if (k.registers > d.regs_per_thread) {
    fit.limiter = "registers";
    fit.problem = "kernel " + k.kernel + " uses " + std::to_string(k.registers) + " registers per thread, more than the " +
                  std::to_string(d.regs_per_thread) + " a thread may have" + on;
    return fit;
  }
  if (smem > d.smem_per_block_optin) {
    fit.limiter = "shared memory";
    fit.problem = "kernel " + k.kernel + " needs " + bytesText(smem) + " of shared memory per CTA (" +
                  std::to_string(k.static_smem) + " static + " + std::to_string(k.dynamic_smem) +
                  " dynamic), more than the " + bytesText(d.smem_per_block_optin) + " a CTA may have" + on;
    return fit;
  }
  const int64_t warps = (k.threads + kWarp - 1) / kWarp;
  const int64_t regs_per_cta = warps * roundUp(std::max<int64_t>(k.registers, 1) * kWarp, kRegisterUnit);
  struct Bound {
    int64_t ctas;
    const char* what;
  };
  const Bound bounds[] = {
      {d.blocks_per_sm, "CTA slots"},
      {d.threads_per_sm / k.threads, "threads"},
      {d.regs_per_sm / regs_per_cta, "registers"},
      {smem > 0 ? d.smem_per_sm / (smem + d.reserved_smem_per_block) : d.blocks_per_sm, "shared memory"},
  };
  fit.ctas_per_sm = bounds[0].ctas;
  fit.limiter = bounds[0].what;
  for (const Bound& b : bounds)
    if (b.ctas < fit.ctas_per_sm) fit.ctas_per_sm = b.ctas, fit.limiter = b.what;
  if (fit.ctas_per_sm < 1) {
    fit.ctas_per_sm = 0;
    fit.problem = "not one CTA of kernel " + k.kernel + " fits on an SM" + on + " (" + std::to_string(k.threads) +
                  " threads, " + std::to_string(k.registers) + " registers per thread = " + std::to_string(regs_per_cta) +
                  " of the SM's " + std::to_string(d.regs_per_sm) + ", " + bytesText(smem) + " of shared memory + " +
                  std::to_string(d.reserved_smem_per_block) + " reserved of the SM's " + bytesText(d.smem_per_sm) +
                  "): " + fit.limiter + " run out";
  }
  return fit;
}

KernelFit requireFit(const DeviceLimits& d, const KernelUsage& k) {
  KernelFit fit = fitKernel(d, k);
  if (fit.problem.empty()) return fit;
  std::string advice;
  if (fit.limiter == "shared memory")
    advice = "recompile the module with smaller tiles in its largest matmul or MoE tasks (etcc --resource-usage shows "
             "what each kernel needs), or run it on a GPU with more shared memory per CTA";
  else if (fit.limiter == "registers")
    advice = "the kernel was compiled for another GPU: recompile the module with etcc for this one (--arch)";
  else
    advice = "recompile the module with etcc for this GPU (--arch)";
  fail(ETC_STATUS_CUDA, fit.problem + ": " + advice);
}

}  // namespace etc::rt
