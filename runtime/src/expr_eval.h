// Evaluates the descriptor's shape expressions (docs/backend.md, "Expressions") for given sym
// values, in exact int64: an overflow or a division by zero is an error, never a wrapped value.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

namespace etc::rt {

// Throws etc::rt::Error (ETC_STATUS_BAD_DESCRIPTOR for a malformed expression, ETC_STATUS_BAD_SHAPE for an
// overflow or a zero divisor) with a message naming the problem.
int64_t evalExpr(const nlohmann::json& e, std::span<const int64_t> syms);

// Checks the expression's form (operators, arities, sym indices < nsyms) without evaluating it,
// so that a bad descriptor is rejected at load time rather than at the first launch.
void checkExpr(const nlohmann::json& e, size_t nsyms);

// Renders an expression for people, with sym names: ["cdiv", ["sym", 0], 16] -> "cdiv(B, 16)".
std::string exprToText(const nlohmann::json& e, std::span<const std::string> sym_names);

// Floor semantics, as in the IR: div(a, b) = floor(a / b), mod(a, b) = a - b * div(a, b),
// cdiv(a, b) = ceil(a / b). Exposed for tests.
int64_t floorDiv(int64_t a, int64_t b);
int64_t floorMod(int64_t a, int64_t b);
int64_t ceilDiv(int64_t a, int64_t b);

}  // namespace etc::rt
