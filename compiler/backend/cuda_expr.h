// Symbolic integer expressions as CUDA C++ (long long arithmetic, floor semantics).
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "compiler/ir/ir.h"

namespace etc::backend {

class DerivedSyms;

// Names for the leaves that are variables in the generated code.
struct CudaNames {
  std::function<std::string(uint32_t)> coord;  // coordinate id -> C++ expression
  DerivedSyms* derived = nullptr;              // where set, sym-only subexpressions it takes print as etc_d<k>
};

// Syms print as locals etc_s<k>: every function whose code uses cudaExpr declares them first
// with symLocals (`[[maybe_unused]] const long long etc_s<k> = p.sym[<k>];` per sym, with p in
// scope), followed by kDerivedLocalsMark, which resolveDerivedLocals replaces with the etc_d<k>
// locals that the function's code uses.
std::string cudaExpr(const ir::Module& m, const ir::Expr& e, const CudaNames& names);
std::string symLocals(const ir::Module& m, std::string_view indent);
inline constexpr std::string_view kDerivedLocalsMark = "@ETC_DERIVED_LOCALS@";

// Replaces each mark in `code` (a whole translation unit, functions one after another) with
// `const long long etc_d<k> = p.derived[<k>];` for every etc_d<k> between it and the next mark.
// Returns false where an etc_d<k> comes before any mark (code outside a function with locals).
bool resolveDerivedLocals(std::string& code);

// A megakernel runs the tasks and counts the notifies of every data-dependent extent at its
// bound, whatever the data (surplus tasks skip their ops but notify): `e` with every
// `load(..) <= b` replaced by `b`, and every term of only loads and constants by the end of
// its interval that bounds `e` (an indicator min(max(T + 1 - load(..), 0), 1), which shrinks
// as the load grows, by 1; subtracted, by its least value). Where neither bounds `e` (a
// Bounded node that `e` shrinks with, a product of two data terms), the constant upper bound
// over the sym ranges instead.
ir::Expr dataBound(const ir::Module& m, const ir::Expr& e);

// The C++ element type of a dtype ("float", "__nv_bfloat16", ...).
std::string cudaType(ir::DType t);

}  // namespace etc::backend
