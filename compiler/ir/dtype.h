// Element types of tensors.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace etc::ir {

enum class DType : uint8_t { F32, F16, BF16, I32, I64, U8 };

std::string_view dtypeName(DType t);                     // "f32", "bf16", ...
std::optional<DType> parseDType(std::string_view name);  // inverse of dtypeName
int dtypeBytes(DType t);
bool isFloat(DType t);
bool isInteger(DType t);

inline constexpr std::string_view kDTypeNames[] = {"f32", "f16", "bf16", "i32", "i64", "u8"};

}  // namespace etc::ir
