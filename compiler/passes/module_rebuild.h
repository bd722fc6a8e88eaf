// A module without some of its events, task grids and tensors. The name index lives inside
// Module, so the copy is rebuilt through the add* functions; references are renumbered and the
// dropped declarations leave the order.
#pragma once

#include <memory>
#include <vector>

#include "compiler/ir/ir.h"

namespace etc {

// drop_events / drop_tasks / drop_tensors: one flag per event / task / tensor of m (empty:
// drop none). A dropped declaration must no longer be referenced (waited on, notified, run,
// read or written). Every other reference is renumbered: slices, assignment results, run
// statements, kernels, loads in expressions, the declaration order. Consumes m.
// tensor_into (empty, or one entry per tensor): a dropped tensor t with tensor_into[t] != t is
// still referenced, and its references go to tensor tensor_into[t], which is kept (reuse-temps).
std::unique_ptr<ir::Module> moduleWithout(ir::Module& m, const std::vector<bool>& drop_events,
                                          const std::vector<bool>& drop_tasks,
                                          const std::vector<bool>& drop_tensors = {},
                                          const std::vector<uint32_t>& tensor_into = {});

}  // namespace etc
