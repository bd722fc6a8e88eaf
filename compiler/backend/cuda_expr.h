// Symbolic integer expressions as CUDA C++ (long long arithmetic, floor semantics).
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "compiler/ir/ir.h"

namespace etc::backend {

// Names for the leaves that are variables in the generated code.
struct CudaNames {
  std::function<std::string(uint32_t)> coord;  // coordinate id -> C++ expression
};

// Syms print as locals etc_s<k>: every function whose code uses cudaExpr declares them first
// with symLocals (`[[maybe_unused]] const long long etc_s<k> = p.sym[<k>];` per sym, with p in scope).
std::string cudaExpr(const ir::Module& m, const ir::Expr& e, const CudaNames& names);
std::string symLocals(const ir::Module& m, std::string_view indent);

// A megakernel runs the tasks and counts the notifies of every data-dependent extent at its
// bound, whatever the data (surplus tasks skip their ops but notify): `e` with every
// `load(..) <= b` replaced by `b`. Where `e` does not grow with those values (so that the
// replacement might not bound it), the constant upper bound over the sym ranges instead.
ir::Expr dataBound(const ir::Module& m, const ir::Expr& e);

// The C++ element type of a dtype ("float", "__nv_bfloat16", ...).
std::string cudaType(ir::DType t);

}  // namespace etc::backend
