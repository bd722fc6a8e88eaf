// dataBound: the value a data-dependent extent or count is numbered and counted at in a
// megakernel. It must never be below the extent at any data the Bounded nodes allow, and should
// keep the syms (a constant over the sym ranges makes B = 1 number B = 128's tasks).
#include <gtest/gtest.h>

#include "compiler/backend/cuda_expr.h"

// A named namespace: the unit tests build as one unity source in CI, where another file's
// anonymous helpers (B(), lit()) would clash with these.
namespace data_bound_test {

using namespace etc::ir;
using etc::backend::dataBound;

Module oneSym() {
  Module m;
  m.syms.push_back(Sym{"B", 1, 128, nullptr, nullptr, {}, {}, {}, {}});
  return m;
}

Expr B() { return symRef(0, "B"); }
Expr lit(int64_t v) { return intConst(v); }
// load(t[0]) <= bound, t being tensor 0.
Expr data(int64_t bound) { return bounded(load(0, "t", {lit(0)}), lit(bound)); }
// 1 where x >= 1, else 0.
Expr indicator(const Expr& x) { return min(max(x, lit(0)), lit(1)); }

std::string boundOf(const Expr& e) {
  Module m = oneSym();
  return toString(dataBound(m, e));
}

TEST(DataBound, ReplacesAGrowingLoadByItsBound) {
  EXPECT_EQ(boundOf(mul(B(), data(9))), "B * 9");
  EXPECT_EQ(boundOf(add(data(9), B())), "B + 9");
}

TEST(DataBound, BoundsAnIndicatorThatShrinksWithTheLoadByOne) {
  // Rows of short requests: B * [max(lens) <= 1024] takes up to B rows, not the 128 of B's range.
  EXPECT_EQ(boundOf(mul(B(), indicator(sub(lit(1025), data(4097))))), "B");
}

TEST(DataBound, BoundsASubtractedIndicatorByItsLeast) {
  // B - B * [max(lens) > 1024]: the rows left to the one-part grid, at most B.
  Expr long_rows = mul(B(), indicator(sub(data(4097), lit(1024))));
  EXPECT_EQ(boundOf(sub(B(), long_rows)), "B");
  EXPECT_EQ(boundOf(long_rows), "B");
}

TEST(DataBound, BoundsASubtractedLoadByTheLeastI32) {
  // Nothing bounds a load from below but its type.
  EXPECT_EQ(boundOf(sub(B(), data(9))), "B + 2147483648");
}

TEST(DataBound, FallsBackToTheConstantBoundOverTheSyms) {
  // A product of two data terms with a sym: neither side's growth is known.
  EXPECT_EQ(boundOf(min(mul(B(), mul(data(3), data(4))), lit(100))), "100");
  // Without the sym the product is one data term, bounded as a whole.
  EXPECT_EQ(boundOf(mul(B(), min(mul(data(3), data(4)), lit(5)))), "B * 5");
}

TEST(DataBound, LeavesDataFreeExpressionsAsTheyAre) { EXPECT_EQ(boundOf(mul(B(), lit(8))), "B * 8"); }

// dataIndicators: the indicator factors of an extent that the data chooses, and what is left.
TEST(DataIndicators, SplitsAProductIntoTheIndicatorsArgumentAndTheRest) {
  const Expr a = sub(lit(1025), data(4097));
  const std::vector<DataIndicator> f = dataIndicators(mul(mul(B(), lit(8)), indicator(a)));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(toString(f[0].arg), toString(a));
  EXPECT_EQ(toString(f[0].rest), "B * 8");
}

TEST(DataIndicators, TakesAnIndicatorAloneWithTheRestOne) {
  const std::vector<DataIndicator> f = dataIndicators(indicator(sub(data(4097), lit(1024))));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(toString(f[0].rest), "1");
}

TEST(DataIndicators, IgnoresIndicatorsOfTheSymsAndOtherClamps) {
  EXPECT_TRUE(dataIndicators(mul(B(), indicator(sub(lit(32), B())))).empty());   // no data
  EXPECT_TRUE(dataIndicators(mul(B(), min(max(data(9), lit(0)), lit(2)))).empty());  // not 0/1
  EXPECT_TRUE(dataIndicators(add(B(), indicator(data(9)))).empty());              // not a product
}

}  // namespace data_bound_test
