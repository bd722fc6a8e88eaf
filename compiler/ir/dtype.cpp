#include "compiler/ir/dtype.h"

#include <cstddef>

namespace etc::ir {

namespace {
constexpr DType kAllDTypes[] = {DType::F32, DType::F16, DType::BF16,
                                DType::I32, DType::I64, DType::U8};
static_assert(std::size(kAllDTypes) == std::size(kDTypeNames));
}  // namespace

std::string_view dtypeName(DType t) {
  auto i = static_cast<size_t>(t);
  return i < std::size(kDTypeNames) ? kDTypeNames[i] : std::string_view("<bad dtype>");
}

std::optional<DType> parseDType(std::string_view name) {
  for (DType t : kAllDTypes)
    if (kDTypeNames[static_cast<size_t>(t)] == name) return t;
  return std::nullopt;
}

int dtypeBytes(DType t) {
  switch (t) {
    case DType::F32: return 4;
    case DType::F16: return 2;
    case DType::BF16: return 2;
    case DType::I32: return 4;
    case DType::I64: return 8;
    case DType::U8: return 1;
  }
  return 0;
}

bool isFloat(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

bool isInteger(DType t) { return t == DType::I32 || t == DType::I64 || t == DType::U8; }

}  // namespace etc::ir
