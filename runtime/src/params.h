// The kernel parameter block: the byte image of abi.h's EtcParams for this module, passed as
// the single entry of kernelParams.
#pragma once

#include <cstdint>
#include <vector>

#include "descriptor.h"

namespace etc::rt {

std::vector<unsigned char> buildParams(const Descriptor& d, const std::vector<int64_t>& syms,
                                       const std::vector<uint64_t>& tensor_ptrs, uint64_t events, uint64_t error,
                                       int64_t watchdog_ns, uint32_t flags);

}  // namespace etc::rt
