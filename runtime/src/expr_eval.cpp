#include "expr_eval.h"

#include <limits>
#include <string>

#include "rt_error.h"

namespace etc::rt {
namespace {

[[noreturn]] void malformed(const nlohmann::json& e, const std::string& why) {
  fail(ETC_STATUS_BAD_DESCRIPTOR, "bad shape expression " + e.dump() + ": " + why);
}

[[noreturn]] void overflow(const char* op) {
  fail(ETC_STATUS_BAD_SHAPE, std::string("shape expression overflows int64 (in ") + op + ")");
}

void checkDivisor(int64_t a, int64_t b, const char* op) {
  if (b == 0) fail(ETC_STATUS_BAD_SHAPE, std::string("shape expression divides by zero (in ") + op + ")");
  if (a == std::numeric_limits<int64_t>::min() && b == -1) overflow(op);
}

struct OpInfo {
  const char* name;
  size_t min_args;  // operands after the operator name
  size_t max_args;
};

constexpr OpInfo kOps[] = {
    {"sym", 1, 1}, {"add", 2, SIZE_MAX}, {"mul", 2, SIZE_MAX}, {"div", 2, 2},
    {"mod", 2, 2}, {"cdiv", 2, 2},       {"min", 2, SIZE_MAX}, {"max", 2, SIZE_MAX},
};

const OpInfo& opOf(const nlohmann::json& e) {
  if (!e.is_array() || e.empty() || !e[0].is_string()) malformed(e, "expected an integer or [\"op\", ...]");
  const std::string& name = e[0].get_ref<const std::string&>();
  for (const OpInfo& op : kOps) {
    if (name == op.name) {
      size_t n = e.size() - 1;
      if (n < op.min_args || n > op.max_args) malformed(e, "wrong number of operands for '" + name + "'");
      return op;
    }
  }
  malformed(e, "unknown operator '" + name + "'");
}

size_t symIndex(const nlohmann::json& e, size_t nsyms) {
  const nlohmann::json& i = e[1];
  if (!i.is_number_integer() || i.get<int64_t>() < 0 || static_cast<uint64_t>(i.get<int64_t>()) >= nsyms)
    malformed(e, "sym index out of range (the module has " + std::to_string(nsyms) + " syms)");
  return static_cast<size_t>(i.get<int64_t>());
}

}  // namespace

int64_t floorDiv(int64_t a, int64_t b) {
  checkDivisor(a, b, "div");
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t floorMod(int64_t a, int64_t b) {
  if (b == 0) fail(ETC_STATUS_BAD_SHAPE, "shape expression divides by zero (in mod)");
  if (b == -1) return 0;  // INT64_MIN % -1 traps on x86
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

int64_t ceilDiv(int64_t a, int64_t b) {
  checkDivisor(a, b, "cdiv");
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) == (b < 0))) ++q;
  return q;
}

void checkExpr(const nlohmann::json& e, size_t nsyms) {
  if (e.is_number_integer()) return;
  if (e.is_number()) malformed(e, "not an integer");
  const OpInfo& op = opOf(e);
  if (std::string_view(op.name) == "sym") {
    symIndex(e, nsyms);
    return;
  }
  for (size_t i = 1; i < e.size(); ++i) checkExpr(e[i], nsyms);
}

std::string exprToText(const nlohmann::json& e, std::span<const std::string> sym_names) {
  if (e.is_number_integer()) return e.dump();
  const std::string_view name = opOf(e).name;
  if (name == "sym") return sym_names[symIndex(e, sym_names.size())];
  const char* infix = name == "add" ? " + " : name == "mul" ? " * " : name == "div" ? " / " : name == "mod" ? " % " : nullptr;
  std::string out = infix ? "" : std::string(name) + "(";
  for (size_t i = 1; i < e.size(); ++i) {
    if (i > 1) out += infix ? infix : ", ";
    std::string operand = exprToText(e[i], sym_names);
    // Parenthesise compound infix operands so that the text reads back unambiguously.
    bool compound = infix && e[i].is_array() && e[i][0] != "sym" && e[i][0] != "min" && e[i][0] != "max" && e[i][0] != "cdiv";
    out += compound ? "(" + operand + ")" : operand;
  }
  return infix ? out : out + ")";
}

int64_t evalExpr(const nlohmann::json& e, std::span<const int64_t> syms) {
  if (e.is_number_integer()) {
    if (e.is_number_unsigned() && e.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      malformed(e, "integer does not fit int64");
    return e.get<int64_t>();
  }
  if (e.is_number()) malformed(e, "not an integer");
  const std::string_view name = opOf(e).name;
  if (name == "sym") return syms[symIndex(e, syms.size())];

  int64_t acc = evalExpr(e[1], syms);
  for (size_t i = 2; i < e.size(); ++i) {
    int64_t v = evalExpr(e[i], syms);
    if (name == "add") {
      if (__builtin_add_overflow(acc, v, &acc)) overflow("add");
    } else if (name == "mul") {
      if (__builtin_mul_overflow(acc, v, &acc)) overflow("mul");
    } else if (name == "div") {
      acc = floorDiv(acc, v);
    } else if (name == "mod") {
      acc = floorMod(acc, v);
    } else if (name == "cdiv") {
      acc = ceilDiv(acc, v);
    } else if (name == "min") {
      acc = std::min(acc, v);
    } else {
      acc = std::max(acc, v);
    }
  }
  return acc;
}

}  // namespace etc::rt
