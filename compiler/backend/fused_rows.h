// Which merged tasks run as one fused row chain (runtime/include/etc/device/fused_rows.cuh):
// the task's calls are exactly one of the chains below, contiguous, and every value passed
// from one call to the next is a temp that no other task reads or writes, so the fused device
// function may keep it in registers and never store it.
//   ReduceAddRmsnorm: reduce_sum(x) {axis = 0} -> t; add_rmsnorm(t, r, w) -> y, r (or -> y, r2;
//     then a matmul where fold-norms put the chain before one)
//   QkvRopeAppend: reduce_sum of the q, k and v partials; optionally rmsnorm {head_dim} of q and
//     of k; rope(q, k, pos) -> qo, kr; kv_append(kr, v, pos) -> k_cache, v_cache
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "compiler/ir/ir.h"

namespace etc::backend {

struct FusedRows {
  enum class Kind { ReduceAddRmsnorm, QkvRopeAppend };
  Kind kind = Kind::ReduceAddRmsnorm;
  size_t first = 0, count = 0;  // the chain's calls: body statements [first, first + count)
  // The fused call's operands in its order, as indexes into the chain's views: each call's
  // args then dests, calls in body order. -1: none (the q/k norm weights without a norm).
  //   ReduceAddRmsnorm: x, t, r, w, y, ro
  //   QkvRopeAppend: q parts, k parts, v parts, q norm weight, k norm weight, pos, qo, k cache,
  //   v cache
  std::vector<int> operands;
  int64_t n = 0;         // ReduceAddRmsnorm: the row length; QkvRopeAppend: q's width
  int64_t rows = 1;      // ReduceAddRmsnorm: the most rows of a task's tile (etcc --norm-rows)
  int64_t nk = 0;        // QkvRopeAppend: k's and v's width
  int64_t head_dim = 0;  // QkvRopeAppend
  int64_t parts = 0;     // QkvRopeAppend: the most split-K parts of q, k or v
  double eps = 0;        // add_rmsnorm's, or the q/k norms'
  ir::DType temp = ir::DType::BF16;     // QkvRopeAppend: the dtype of q, k, v and the values between
  const ir::CallStmt* rope = nullptr;   // QkvRopeAppend: its attributes
};

std::optional<FusedRows> matchFusedRows(const ir::Module& m, const ir::Task& t);

}  // namespace etc::backend
