// Small helpers shared by the passes that build task-level IR: tile ranges over symbolic
// extents, slices of tensors, attribute values with their registry defaults, fresh names.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/ir.h"

namespace etc::tiling {

// Tile `c` of size `t` over an extent `e`: [c * t, min(e, c * t + t)).
ir::Expr tileLo(const ir::Expr& c, int64_t t);
ir::Expr tileHi(const ir::Expr& c, int64_t t, const ir::Expr& e);

// The largest value `e` takes in the sym ranges (saturated to int64 max when unbounded).
int64_t upperBound(const ir::Module& m, const ir::Expr& e);
int64_t lowerBound(const ir::Module& m, const ir::Expr& e);
int64_t pow2Ceil(int64_t v);
int64_t pow2Floor(int64_t v);

// One dimension of a tensor slice: a point index, or a range [lo, hi).
struct DimRange {
  bool point = false;
  ir::Expr lo, hi;  // hi unused for points
};
// A slice of tensor `t`; dimensions that cover the whole extent print as `:`, and a slice
// that covers the whole tensor has no subscript.
ir::Slice makeSlice(const ir::Module& m, uint32_t t, const std::vector<DimRange>& dims);

// The value of an attribute as written, else the op registry's default.
bool attrBool(const ir::OpCall& c, std::string_view name);
int64_t attrInt(const ir::OpCall& c, std::string_view name);
double attrFloat(const ir::OpCall& c, std::string_view name);
std::string attrString(const ir::OpCall& c, std::string_view name);
ir::Attr boolAttr(std::string name);
ir::Attr intAttr(std::string name, int64_t v);

// Moves the declaration just added (the order's last) to after the last tensor or event: the
// parser wants values declared before the tasks and graphs that use them.
void declareBeforeTasks(ir::Module& m);

// `base`, or `base_2`, `base_3`, ... : the first that no declaration of the module uses.
std::string freshValueName(const ir::Module& m, const std::string& base);
std::string freshTaskName(const ir::Module& m, const std::string& base);

}  // namespace etc::tiling
