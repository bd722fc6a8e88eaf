#include <gtest/gtest.h>

#include <limits>

#include "runtime/src/expr_eval.h"
#include "runtime/src/rt_error.h"

namespace {

using etc::rt::Error;
using etc::rt::evalExpr;
using nlohmann::json;

const std::vector<int64_t> kSyms = {7, -3, 100};
int64_t eval(const char* text) { return evalExpr(json::parse(text), kSyms); }

std::string errorOf(const char* text, etc_status want) {
  try {
    eval(text);
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), want) << e.what();
    return e.what();
  }
  ADD_FAILURE() << text << " did not fail";
  return "";
}

TEST(RuntimeExpr, EachOperator) {
  EXPECT_EQ(eval("42"), 42);
  EXPECT_EQ(eval(R"(["sym", 0])"), 7);
  EXPECT_EQ(eval(R"(["sym", 2])"), 100);
  EXPECT_EQ(eval(R"(["add", ["sym", 0], 3, ["sym", 2]])"), 110);
  EXPECT_EQ(eval(R"(["mul", ["sym", 0], 3, 2])"), 42);
  EXPECT_EQ(eval(R"(["div", ["sym", 2], 7])"), 14);
  EXPECT_EQ(eval(R"(["mod", ["sym", 2], 7])"), 2);
  EXPECT_EQ(eval(R"(["cdiv", ["sym", 2], 7])"), 15);
  EXPECT_EQ(eval(R"(["cdiv", 98, 7])"), 14);
  EXPECT_EQ(eval(R"(["min", ["sym", 2], 5, ["sym", 0]])"), 5);
  EXPECT_EQ(eval(R"(["max", ["sym", 2], 5, 300])"), 300);
}

TEST(RuntimeExpr, FloorSemanticsForNegativeOperands) {
  EXPECT_EQ(eval(R"(["div", -7, 2])"), -4);
  EXPECT_EQ(eval(R"(["div", 7, -2])"), -4);
  EXPECT_EQ(eval(R"(["div", -7, -2])"), 3);
  EXPECT_EQ(eval(R"(["mod", -7, 2])"), 1);
  EXPECT_EQ(eval(R"(["mod", 7, -2])"), -1);
  EXPECT_EQ(eval(R"(["cdiv", -7, 2])"), -3);
  EXPECT_EQ(eval(R"(["cdiv", 7, -2])"), -3);
  EXPECT_EQ(eval(R"(["div", ["sym", 1], 2])"), -2);
  EXPECT_EQ(etc::rt::floorMod(std::numeric_limits<int64_t>::min(), -1), 0);
}

TEST(RuntimeExpr, OverflowAndZeroDivisorAreErrors) {
  EXPECT_EQ(errorOf(R"(["add", 9223372036854775807, 1])", ETC_STATUS_BAD_SHAPE), "shape expression overflows int64 (in add)");
  EXPECT_EQ(errorOf(R"(["mul", 4294967296, 4294967296])", ETC_STATUS_BAD_SHAPE), "shape expression overflows int64 (in mul)");
  EXPECT_EQ(errorOf(R"(["div", -9223372036854775808, -1])", ETC_STATUS_BAD_SHAPE), "shape expression overflows int64 (in div)");
  EXPECT_EQ(errorOf(R"(["div", 1, 0])", ETC_STATUS_BAD_SHAPE), "shape expression divides by zero (in div)");
  EXPECT_EQ(errorOf(R"(["mod", 1, ["add", ["sym", 0], -7]])", ETC_STATUS_BAD_SHAPE), "shape expression divides by zero (in mod)");
  EXPECT_EQ(errorOf(R"(["cdiv", 1, 0])", ETC_STATUS_BAD_SHAPE), "shape expression divides by zero (in cdiv)");
}

TEST(RuntimeExpr, MalformedExpressionsAreDescriptorErrors) {
  EXPECT_EQ(errorOf(R"(["pow", 2, 3])", ETC_STATUS_BAD_DESCRIPTOR), R"(bad shape expression ["pow",2,3]: unknown operator 'pow')");
  EXPECT_EQ(errorOf(R"(["div", 2])", ETC_STATUS_BAD_DESCRIPTOR), R"(bad shape expression ["div",2]: wrong number of operands for 'div')");
  EXPECT_EQ(errorOf(R"(["add", 2])", ETC_STATUS_BAD_DESCRIPTOR), R"(bad shape expression ["add",2]: wrong number of operands for 'add')");
  EXPECT_EQ(errorOf(R"(["sym", 3])", ETC_STATUS_BAD_DESCRIPTOR), R"(bad shape expression ["sym",3]: sym index out of range (the module has 3 syms))");
  EXPECT_EQ(errorOf("2.5", ETC_STATUS_BAD_DESCRIPTOR), "bad shape expression 2.5: not an integer");
  EXPECT_EQ(errorOf(R"("B")", ETC_STATUS_BAD_DESCRIPTOR), R"(bad shape expression "B": expected an integer or ["op", ...])");
  EXPECT_THROW(etc::rt::checkExpr(json::parse(R"(["add", 1, ["sym", 5]])"), 2), Error);
  EXPECT_NO_THROW(etc::rt::checkExpr(json::parse(R"(["add", 1, ["sym", 1]])"), 2));
}

TEST(RuntimeExpr, TextForPeople) {
  std::vector<std::string> names = {"B", "N"};
  EXPECT_EQ(etc::rt::exprToText(json::parse(R"(["cdiv", ["sym", 0], 16])"), names), "cdiv(B, 16)");
  EXPECT_EQ(etc::rt::exprToText(json::parse(R"(["mul", ["add", ["sym", 0], 1], ["sym", 1]])"), names), "(B + 1) * N");
  EXPECT_EQ(etc::rt::exprToText(json::parse(R"(["max", ["div", ["sym", 1], 2], 1])"), names), "max(N / 2, 1)");
}

}  // namespace
