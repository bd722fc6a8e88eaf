// What each kernel of a cubin uses, read from the cubin itself (no driver, no cuobjdump):
// registers (EIATTR_REGCOUNT in .nv.info), the stack frame (EIATTR_FRAME_SIZE), launch bounds
// (EIATTR_MAX_THREADS in .nv.info.<kernel>), static shared memory (.nv.shared.<kernel>, less
// the 1 KiB system reserve that sm_90 and later cubins place there) and the dynamic shared
// memory etcc asks for (the value of the kernel's <kernel>_smem global). Spills, which the cubin
// does not record, come from ptxas's verbose log when one is given.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/src/resource_fit.h"

namespace etc::backend {

struct CubinKernel {
  rt::KernelUsage usage;     // threads is left 0: the launch decides it
  int64_t spill_stores = -1;  // bytes; -1: unknown (no verbose log)
  int64_t spill_loads = -1;
};

// Reads `kernels` from `cubin`. False with a sentence for a malformed cubin or a kernel that is
// not in it. `ptxas_log` is nvJitLink's info log of a -verbose link ("" if none).
bool readCubinResources(std::span<const uint8_t> cubin, const std::vector<std::string>& kernels,
                        std::string_view ptxas_log, std::vector<CubinKernel>& out, std::string& error);

}  // namespace etc::backend
