// The published per-architecture limits (CUDA C++ Programming Guide, "Technical Specifications
// per Compute Capability") that etcc checks every cubin against at compile time. The runtime
// checks again against the real device (runtime/src/resource_fit.h), which stays the authority:
// a compute_XY PTX image, for one, may be JIT-compiled for a newer GPU with less shared memory.
#pragma once

#include <optional>

#include "compiler/backend/toolchain.h"
#include "runtime/src/resource_fit.h"

namespace etc::backend {

// The limits of the architecture a target compiles for (sm_90a: sm_90), or nullopt for an
// architecture this table does not know.
std::optional<rt::DeviceLimits> archLimits(const Target& t);

}  // namespace etc::backend
