// Whether a kernel's resources (registers, shared memory, threads) fit a GPU, and how many of
// its CTAs an SM holds. One rule for both ends: etcc checks every cubin against the published
// limits of its architecture (compiler/backend/arch_limits), the runtime checks the kernel the
// driver loaded against the device's attributes before the first launch.
#pragma once

#include <cstdint>
#include <string>

namespace etc::rt {

struct DeviceLimits {
  std::string name;                     // "sm_80", or the device's name
  int64_t smem_per_block_optin = 0;     // static + dynamic shared memory one CTA may have
  int64_t smem_per_sm = 0;              // shared memory of one SM
  int64_t reserved_smem_per_block = 0;  // what the system takes per CTA on top (1 KiB since sm_80)
  int64_t regs_per_sm = 0;
  int64_t regs_per_thread = 0;          // 255
  int64_t threads_per_block = 0;        // 1024
  int64_t threads_per_sm = 0;
  int64_t blocks_per_sm = 0;
};

struct KernelUsage {
  std::string kernel;
  int64_t threads = 0;         // per CTA, as launched
  int64_t registers = 0;       // per thread
  int64_t static_smem = 0;     // __shared__ variables
  int64_t dynamic_smem = 0;    // the kernel's <kernel>_smem
  int64_t local_bytes = 0;     // per thread: the stack frame (spills and local arrays)
  int64_t max_threads = 0;     // what the compiled kernel allows per CTA (launch bounds); 0: no bound
};

struct KernelFit {
  int64_t ctas_per_sm = 0;
  std::string limiter;  // "shared memory", "registers", "threads", "CTA slots"
  std::string problem;  // empty when at least one CTA fits; else one sentence, without advice
};

// Registers are allocated per warp in units of 256; shared memory per CTA adds the reserve.
KernelFit fitKernel(const DeviceLimits& d, const KernelUsage& k);

std::string bytesText(int64_t bytes);

// The launch-time check: throws ETC_STATUS_CUDA with fitKernel's sentence and what to do about
// it when not one CTA of the kernel fits on the device; returns the fit otherwise.
KernelFit requireFit(const DeviceLimits& d, const KernelUsage& k);  // "4096 bytes", "166912 bytes (163 KiB)"

}  // namespace etc::rt
