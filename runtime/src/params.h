// The kernel parameter block: the byte image of abi.h's EtcParams for this module, passed as
// the single entry of kernelParams.
#pragma once

#include <cstdint>
#include <vector>

#include "descriptor.h"
#include "sym_state.h"
#include "workspace.h"

namespace etc::rt {

// tmaps: the device array of tensor maps (abi.h EtcParams.tmaps), 0 for none.
std::vector<unsigned char> buildParams(const Descriptor& d, const std::vector<int64_t>& syms,
                                       const std::vector<uint64_t>& tensor_ptrs, uint64_t events, uint64_t error,
                                       int64_t watchdog_ns, uint32_t flags, uint64_t tmaps = 0);

// buildParams for a launch with the workspace at `ws`, laid out as `layout`: temps there, the
// other tensors where `st` binds them.
std::vector<unsigned char> launchParams(const Descriptor& d, const SymState& st, const std::vector<int64_t>& syms,
                                        const WorkspaceLayout& layout, uint64_t ws, int64_t watchdog_ns, uint32_t flags,
                                        uint64_t tmaps = 0);

}  // namespace etc::rt
