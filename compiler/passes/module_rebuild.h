// A module without some of its events and task grids. The name index lives inside Module, so the
// copy is rebuilt through the add* functions; references (waits, notifies, run statements, the
// declaration order) are renumbered and the dropped declarations leave the order.
#pragma once

#include <memory>
#include <vector>

#include "compiler/ir/ir.h"

namespace etc {

// drop_events / drop_tasks: one flag per event / task of m (empty: drop none). A dropped event
// must no longer be waited on or notified, and a dropped task no longer run. Consumes m.
std::unique_ptr<ir::Module> moduleWithout(ir::Module& m, const std::vector<bool>& drop_events,
                                          const std::vector<bool>& drop_tasks);

// m without the tensors flagged in drop (one flag per tensor), which nothing may reference any
// more; every other reference (slices, assignment results, loads in expressions, the
// declaration order) is renumbered. Consumes m.
std::unique_ptr<ir::Module> moduleWithoutTensors(ir::Module& m, const std::vector<bool>& drop);

}  // namespace etc
