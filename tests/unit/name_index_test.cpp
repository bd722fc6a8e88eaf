// Tests of NameIndex (compiler/support/name_index.h), the flat name -> value map behind the
// module's symbol tables.

#include "compiler/support/name_index.h"

#include <gtest/gtest.h>

#include <string>

namespace etc {
namespace {

TEST(NameIndex, EmptyFindsNothing) {
  NameIndex<int> index;
  EXPECT_EQ(index.find("x"), nullptr);
  EXPECT_EQ(index.find(""), nullptr);
  EXPECT_EQ(index.size(), 0u);
}

TEST(NameIndex, InsertKeepsTheFirstValue) {
  NameIndex<int> index;
  EXPECT_TRUE(index.insert("x", 1));
  EXPECT_FALSE(index.insert("x", 2));  // as std::unordered_map::emplace: no overwrite
  ASSERT_NE(index.find("x"), nullptr);
  EXPECT_EQ(*index.find("x"), 1);
  EXPECT_EQ(index.find("y"), nullptr);
  EXPECT_EQ(index.find("xx"), nullptr);
  EXPECT_EQ(index.size(), 1u);
}

TEST(NameIndex, ManyNamesSurviveGrowth) {
  // Enough names to grow the table many times; long names (heap strings) and short ones
  // (inline strings) both move with the slots.
  NameIndex<int> index;
  auto name = [](int i) { return (i % 2 ? "a_long_name_that_does_not_fit_inline_" : "t") + std::to_string(i); };
  for (int i = 0; i < 20000; ++i) ASSERT_TRUE(index.insert(name(i), i));
  EXPECT_EQ(index.size(), 20000u);
  for (int i = 0; i < 20000; ++i) {
    const int* v = index.find(name(i));
    ASSERT_NE(v, nullptr) << name(i);
    EXPECT_EQ(*v, i);
  }
  for (int i = 20000; i < 20100; ++i) EXPECT_EQ(index.find(name(i)), nullptr);
  // A copy is independent of the original.
  NameIndex<int> copy = index;
  EXPECT_TRUE(copy.insert("only_in_copy", -1));
  EXPECT_EQ(index.find("only_in_copy"), nullptr);
  EXPECT_EQ(*copy.find("t0"), 0);
}

}  // namespace
}  // namespace etc
