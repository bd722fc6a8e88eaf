// Derived syms: sym-only subexpressions of the generated code that divide, or take a min or a
// max, evaluated by the runtime once per binding of the syms and read by the kernels from
// EtcParams.derived (etc/abi.h). In a megakernel every task run would otherwise redo them,
// 64-bit divisions included, and some of them sit on the decode step's chain of tasks
// (docs/backend.md, "Derived syms").
#pragma once

#include <cstddef>
#include <optional>
#include <unordered_map>
#include <vector>

#include "compiler/ir/ir.h"

namespace etc::backend {

class DerivedSyms {
 public:
  explicit DerivedSyms(const ir::Module& m);

  // The index of `e` in the table, added if new. nullopt where `e` stays in the code: it
  // reads a coordinate or data, it is a leaf or linear in the syms (a multiply-add at most),
  // or the sym ranges do not prove it safe to evaluate on the host whatever the path that
  // uses it (a divisor that may be zero, a value that may overflow).
  std::optional<size_t> intern(const ir::Expr& e);

  // In order of first use; their values follow the syms in the descriptor's order.
  const std::vector<ir::Expr>& exprs() const { return exprs_; }

 private:
  ir::RangeEnv env_;
  std::vector<ir::Expr> exprs_;
  std::unordered_multimap<size_t, size_t> by_hash_;  // structural hash -> index
};

}  // namespace etc::backend
