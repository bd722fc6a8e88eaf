#include "compiler/backend/arch_limits.h"

namespace etc::backend {

namespace {

struct ArchRow {
  int sm;
  int smem_optin_kib;  // shared memory per CTA, opt-in maximum
  int smem_sm_kib;     // shared memory per SM
  int threads_per_sm;
  int blocks_per_sm;
};

// Every architecture since Volta has 64K registers per SM, 255 per thread, 1024 threads per
// CTA and, from sm_80 on, 1 KiB of shared memory reserved per CTA.
constexpr ArchRow kArchs[] = {
    {70, 96, 96, 2048, 32},    {72, 96, 96, 2048, 32},    {75, 64, 64, 1024, 16},
    {80, 163, 164, 2048, 32},  {86, 99, 100, 1536, 16},   {87, 163, 164, 2048, 32},
    {89, 99, 100, 1536, 24},   {90, 227, 228, 2048, 32},  {100, 227, 228, 2048, 32},
    {103, 227, 228, 2048, 32}, {120, 99, 100, 1536, 32},  {121, 99, 100, 1536, 32},
};

}  // namespace

std::optional<rt::DeviceLimits> archLimits(const Target& t) {
  for (const ArchRow& r : kArchs) {
    if (r.sm != t.sm) continue;
    rt::DeviceLimits d;
    d.name = t.name();
    d.smem_per_block_optin = int64_t(r.smem_optin_kib) * 1024;
    d.smem_per_sm = int64_t(r.smem_sm_kib) * 1024;
    d.reserved_smem_per_block = r.sm >= 80 ? 1024 : 0;
    d.regs_per_sm = 65536;
    d.regs_per_thread = 255;
    d.threads_per_block = 1024;
    d.threads_per_sm = r.threads_per_sm;
    d.blocks_per_sm = r.blocks_per_sm;
    return d;
  }
  return std::nullopt;
}

}  // namespace etc::backend
