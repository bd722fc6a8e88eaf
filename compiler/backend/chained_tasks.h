// Tasks that the last notifier of their event element runs (etcc --run-by-last-notifier): a
// task of a static megakernel whose one wait is on an element only it waits for can run in the
// CTA of the task whose notify completes that element, right after that notify, instead of in a
// CTA of its own that spins on the element. A one-CTA link of a decode layer (the merge after
// the split-KV attention, a norm after a split-K projection) then costs no hop from counter to
// spinning waiter and no task start. See docs/backend.md, "Tasks run by their last notifier".
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "compiler/ir/ir.h"

namespace etc::backend {

struct ChainedTask {
  uint32_t task = 0;  // the waiting task, run by the last notifier
  // Per coordinate of the task: the event dimension whose index it is, or -1 for a coordinate
  // that the wait does not index (its grid extent is then one of `limits`).
  std::vector<int> coord_dim;
  // Per event dimension: the coordinate-free index that the wait gives it (null where a
  // coordinate indexes it); an element with another index is waited for by no task.
  std::vector<ir::Expr> fixed_index;
  // Sym-only expressions that must all be at most 1 at run time for the chaining to hold: the
  // task grid's extents along unindexed coordinates (one task per element), and the lengths of
  // notify ranges that may cover several elements (one notifier completing several elements
  // would run their tasks one after another). Where one is larger, the event is notified and
  // waited on as usual, in that launch.
  std::vector<ir::Expr> limits;
};

// The chained tasks of m by their event's index. `static_mega(task)` says whether every kernel
// that holds the task is a megakernel with the static schedule. A task qualifies where:
// - it runs no matmul, its grid reads no data, and its body begins with its one wait;
// - no other task waits on that event, and every task that notifies it runs in a static
//   megakernel (a chained task may notify another chained event: the kernel runs the chained
//   tasks from a queue after each task, so no task function calls another);
// - every wait index is a point: a coordinate of the task (each at most once) or
//   coordinate-free;
// - each notify range of the event covers at most one element, proved (by ir::Prover, or its end
//   being its start one coordinate step on, with a start that grows by at most 1 a step) or
//   checked at run time (a sym-only length, in `limits`).
std::map<uint32_t, ChainedTask> chainedTasks(const ir::Module& m, const std::vector<bool>& static_mega);

}  // namespace etc::backend
