// Where things live in the runtime's one device allocation: the EtcError record, the event
// counters (event_words 32-bit words, fixed by the descriptor at the syms' upper bounds) and
// every temp tensor (sized from the current syms). The runtime grows the allocation when a
// new sym set needs more; it never shrinks it.
#pragma once

#include <cstdint>
#include <vector>

#include "descriptor.h"
#include "sym_state.h"

namespace etc::rt {

inline constexpr uint64_t kWorkspaceAlign = 256;  // cudaMalloc's alignment: any dtype, vector loads

struct WorkspaceLayout {
  uint64_t error_offset = 0;
  uint64_t events_offset = 0;
  uint64_t events_bytes = 0;               // what the pre-launch memset clears
  std::vector<uint64_t> tensor_offset;     // per tensor; only temps have one (others: UINT64_MAX)
  uint64_t total = 0;
};

// tensor_shapes: the current extents of every tensor (index = descriptor order). Throws
// ETC_STATUS_BAD_SHAPE when a size overflows 64 bits.
WorkspaceLayout layoutWorkspace(const Descriptor& d, const std::vector<std::vector<int64_t>>& tensor_shapes);
// The same for the shapes the current syms give (throws as SymState::tensorShape does).
WorkspaceLayout layoutWorkspace(const Descriptor& d, const SymState& st);

// Bytes of a tensor with these extents, overflow-checked.
uint64_t tensorBytes(etc_dtype dtype, const std::vector<int64_t>& shape, const std::string& name);

}  // namespace etc::rt
