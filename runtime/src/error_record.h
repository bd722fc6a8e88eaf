// Turns the kernel's EtcError record into a message with names from the descriptor:
// "wait timed out in task @final (0): event done[0] has 3 of 4 notifies".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "descriptor.h"
#include "etc/abi.h"

namespace etc::rt {

// syms: the values of the launch (to turn the event element back into indices).
std::string describeError(const EtcError& e, const Descriptor& d, const std::vector<int64_t>& syms);

}  // namespace etc::rt
