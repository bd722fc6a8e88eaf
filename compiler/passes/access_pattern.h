// How a task's slice of a tensor moves with the task's coordinates, dimension by dimension:
// either fixed (the same range for every task) or tiled (task c covers [t*c + b, t*c + b + t),
// clamped at the tensor's end). infer-events turns a producer's and a consumer's patterns
// into exact overlap counts; slices that fit neither form get a conservative dependency.
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "compiler/ir/ir.h"

namespace etc {

struct DimAccess {
  bool tiled = false;
  ir::Expr lo, hi;     // fixed: the range, free of coordinates
  uint32_t coord = 0;  // tiled: the coordinate, the tile size and the offset
  int64_t tile = 0;
  ir::Expr offset;
};

// One entry per dimension of the target tensor, or nullopt when some dimension fits neither
// form (data-dependent, diagonal, overlapping tiles...).
std::optional<std::vector<DimAccess>> matchAccess(const ir::Module& m, const ir::Slice& s);

// One operand slice of a task's calls: an argument (read) or a destination (written); or an
// element that a grid extent loads (read, its point slice held in `owned`).
struct SliceAccess {
  const ir::Slice* slice;
  bool write;
  std::shared_ptr<const ir::Slice> owned;
};
// Every element t's grid extents load, then every operand slice of t's calls in statement
// order (pointers into t). A task reads its extent after its waits, so the tensor an extent
// loads orders the grid after the grid that writes it, as an argument would.
std::vector<SliceAccess> taskAccesses(const ir::Task& t);
// The tensors t's calls write (writes) or read (!writes).
std::set<uint32_t> touchedTensors(const ir::Task& t, bool writes);

}  // namespace etc
