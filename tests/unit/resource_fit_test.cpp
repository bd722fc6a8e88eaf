// The resource check shared by etcc (against an architecture's published limits) and the
// runtime (against the device's attributes), with fake devices.
#include <gtest/gtest.h>

#include "compiler/backend/arch_limits.h"
#include "runtime/src/resource_fit.h"
#include "runtime/src/rt_error.h"

namespace {

using etc::backend::archLimits;
using etc::backend::Target;
using etc::rt::DeviceLimits;
using etc::rt::fitKernel;
using etc::rt::KernelUsage;

// What cuDeviceGetAttribute reports on an H100 and on an A10 (sm_86).
DeviceLimits h100() { return {"H100 (sm_90)", 232448, 233472, 1024, 65536, 255, 1024, 2048, 32}; }
DeviceLimits a10() { return {"A10 (sm_86)", 101376, 102400, 1024, 65536, 255, 1024, 1536, 16}; }

KernelUsage kernel(int64_t threads, int64_t regs, int64_t static_smem, int64_t dynamic_smem) {
  KernelUsage k;
  k.kernel = "etc_main_mega";
  k.threads = threads;
  k.registers = regs;
  k.static_smem = static_smem;
  k.dynamic_smem = dynamic_smem;
  return k;
}

TEST(ResourceFit, CountsCtasPerSmByTheTightestLimit) {
  // 256 threads, 64 registers: 16K registers per CTA -> 4 CTAs; 40 KiB + 1 KiB reserve of
  // 228 KiB -> 5; threads 2048 / 256 -> 8.
  auto fit = fitKernel(h100(), kernel(256, 64, 1024, 40 * 1024));
  EXPECT_EQ(fit.ctas_per_sm, 4);
  EXPECT_EQ(fit.limiter, "registers");
  EXPECT_TRUE(fit.problem.empty());
  fit = fitKernel(h100(), kernel(256, 32, 0, 100 * 1024));
  EXPECT_EQ(fit.ctas_per_sm, 2);
  EXPECT_EQ(fit.limiter, "shared memory");
  // Registers are allocated per warp in units of 256: 33 registers count as 40.
  fit = fitKernel(a10(), kernel(1024, 33, 0, 0));
  EXPECT_EQ(fit.ctas_per_sm, 1);
  EXPECT_EQ(fit.limiter, "threads");
  fit = fitKernel(a10(), kernel(32, 8, 0, 0));
  EXPECT_EQ(fit.ctas_per_sm, 16);
  EXPECT_EQ(fit.limiter, "CTA slots");
}

TEST(ResourceFit, SharedMemoryAboveTheCtaLimitSaysHowMuch) {
  const KernelUsage k = kernel(256, 40, 2048, 150 * 1024);
  EXPECT_TRUE(fitKernel(h100(), k).problem.empty());
  const auto fit = fitKernel(a10(), k);
  EXPECT_EQ(fit.ctas_per_sm, 0);
  EXPECT_EQ(fit.limiter, "shared memory");
  EXPECT_EQ(fit.problem,
            "kernel etc_main_mega needs 155648 bytes (152 KiB) of shared memory per CTA (2048 static + 153600 dynamic), "
            "more than the 101376 bytes (99 KiB) a CTA may have on A10 (sm_86)");
}

TEST(ResourceFit, RegistersThreadsAndLaunchBounds) {
  // 1024 threads at 128 registers need 128K registers: not one CTA fits.
  auto fit = fitKernel(h100(), kernel(1024, 128, 0, 0));
  EXPECT_EQ(fit.ctas_per_sm, 0);
  EXPECT_EQ(fit.limiter, "registers");
  EXPECT_NE(fit.problem.find("not one CTA of kernel etc_main_mega fits on an SM on H100 (sm_90) (1024 threads, 128 "
                             "registers per thread = 131072 of the SM's 65536"),
            std::string::npos)
      << fit.problem;
  EXPECT_NE(fit.problem.find("registers run out"), std::string::npos);
  fit = fitKernel(h100(), kernel(256, 256, 0, 0));
  EXPECT_EQ(fit.problem, "kernel etc_main_mega uses 256 registers per thread, more than the 255 a thread may have on H100 (sm_90)");
  KernelUsage bounded = kernel(256, 32, 0, 0);
  bounded.max_threads = 128;  // __launch_bounds__(128), or what the driver allows for its registers
  fit = fitKernel(h100(), bounded);
  EXPECT_EQ(fit.problem, "kernel etc_main_mega is launched with 256 threads per CTA, and at most 128 are allowed on H100 (sm_90)");
  EXPECT_EQ(fitKernel(h100(), kernel(2048, 16, 0, 0)).limiter, "threads");
}

TEST(ResourceFit, RequireFitSaysWhatToChange) {
  try {
    etc::rt::requireFit(a10(), kernel(256, 40, 0, 120 * 1024));
    FAIL() << "accepted";
  } catch (const etc::rt::Error& e) {
    EXPECT_EQ(e.status(), ETC_STATUS_CUDA);
    EXPECT_NE(std::string(e.what()).find("recompile the module with smaller tiles"), std::string::npos) << e.what();
  }
  EXPECT_EQ(etc::rt::requireFit(h100(), kernel(256, 40, 0, 120 * 1024)).ctas_per_sm, 1);
}

TEST(ArchLimits, PublishedNumbers) {
  auto sm90 = archLimits(*Target::parse("sm_90a"));
  ASSERT_TRUE(sm90);
  EXPECT_EQ(sm90->name, "sm_90a");
  EXPECT_EQ(sm90->smem_per_block_optin, 232448);
  EXPECT_EQ(sm90->smem_per_sm, 233472);
  auto sm80 = archLimits(*Target::parse("sm_80"));
  ASSERT_TRUE(sm80);
  EXPECT_EQ(sm80->smem_per_block_optin, 166912);
  EXPECT_EQ(sm80->reserved_smem_per_block, 1024);
  auto sm86 = archLimits(*Target::parse("sm_86"));
  ASSERT_TRUE(sm86);
  EXPECT_EQ(sm86->smem_per_block_optin, 101376);
  EXPECT_EQ(sm86->threads_per_sm, 1536);
  EXPECT_FALSE(archLimits(*Target::parse("sm_99")));
  // What fits sm_90a but not sm_80: the check is per architecture.
  const KernelUsage k = kernel(256, 40, 0, 200 * 1024);
  EXPECT_TRUE(fitKernel(*sm90, k).problem.empty());
  EXPECT_FALSE(fitKernel(*sm80, k).problem.empty());
}

}  // namespace
