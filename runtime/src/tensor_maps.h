// The TMA tensor maps of a module's weights (the descriptor's "tmaps"; etc/device/tma.cuh): one
// 128-byte CUtensorMap per tensor of the module, those listed encoded for their bound memory,
// the rest zero.
#pragma once

#include <cuda.h>

#include <vector>

#include "cuda_driver.h"
#include "descriptor.h"
#include "sym_state.h"

namespace etc::rt {

// The maps for st's bindings: a [rows, columns] tensor with its columns contiguous, boxes of
// 64 x 64 elements in the 128-byte swizzle. Empty when the descriptor lists none, or when one
// cannot be made (an address not on 16 bytes, say): the kernels then stream by cp.async.
std::vector<CUtensorMap> encodeTensorMaps(const CudaDriver& cu, const Descriptor& d, const SymState& st);

}  // namespace etc::rt
