#include "compiler/support/suggest.h"

#include <gtest/gtest.h>

namespace etc {
namespace {

TEST(Suggest, OneEditFromThreeLetters) {
  EXPECT_EQ(closestMatch("cdvi", {"cdiv", "min", "max", "load"}), "cdiv");
  EXPECT_EQ(closestMatch("tile_nn", {"tile_m", "tile_n", "tile_k"}), "tile_n");
  EXPECT_EQ(didYouMean("matmull", {"matmul", "add"}), "; did you mean 'matmul'?");
}

TEST(Suggest, SwappedNeighboursCountOnce) {
  EXPECT_EQ(closestMatch("inptu", {"input", "output", "param", "temp"}), "input");
  EXPECT_EQ(closestMatch("bf61", {"f32", "f16", "bf16", "i32"}), "bf16");
}

TEST(Suggest, NothingForShortOrFarNames) {
  EXPECT_EQ(closestMatch("Q", {"w", "x", "B"}), "");
  EXPECT_EQ(closestMatch("ab", {"ac"}), "");
  EXPECT_EQ(closestMatch("xx", {"x", "y"}), "x");
  EXPECT_EQ(closestMatch("mx", {"cdiv", "min", "max"}), "max");
  EXPECT_EQ(closestMatch("softmax", {"rmsnorm", "matmul", "add"}), "");
  EXPECT_EQ(didYouMean("gelu", {"silu_mul"}), "");
}

TEST(Suggest, NeverSuggestsTheSameName) { EXPECT_EQ(closestMatch("add", {"add"}), ""); }

}  // namespace
}  // namespace etc
