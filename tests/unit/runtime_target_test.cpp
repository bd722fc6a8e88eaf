#include <gtest/gtest.h>

#include "runtime/src/code_target.h"
#include "runtime/src/rt_error.h"

namespace {

using etc::rt::canRun;
using etc::rt::CodeTarget;

CodeTarget t(const char* s) {
  auto r = CodeTarget::parse(s);
  EXPECT_TRUE(r.has_value()) << s;
  return r.value_or(CodeTarget{});
}

TEST(RuntimeTarget, Parse) {
  EXPECT_EQ(t("sm_90a").name(), "sm_90a");
  EXPECT_TRUE(t("sm_90a").arch_specific);
  EXPECT_TRUE(t("compute_90").ptx);
  EXPECT_EQ(t("sm_100").sm, 100);
  EXPECT_FALSE(CodeTarget::parse("sm_9"));
  EXPECT_FALSE(CodeTarget::parse("gfx90a"));
  EXPECT_FALSE(CodeTarget::parse("sm_9x"));
}

TEST(RuntimeTarget, DriverRules) {
  EXPECT_TRUE(canRun(t("sm_80"), 8, 0));
  EXPECT_TRUE(canRun(t("sm_80"), 8, 6));   // same major, newer minor
  EXPECT_FALSE(canRun(t("sm_86"), 8, 0));  // minor too new
  EXPECT_FALSE(canRun(t("sm_80"), 9, 0));  // other major
  EXPECT_TRUE(canRun(t("sm_90a"), 9, 0));
  EXPECT_FALSE(canRun(t("sm_90a"), 9, 1));  // 'a': exactly this arch
  EXPECT_TRUE(canRun(t("compute_90"), 10, 0));
  EXPECT_TRUE(canRun(t("compute_80"), 9, 0));
  EXPECT_FALSE(canRun(t("compute_90"), 8, 9));
  EXPECT_FALSE(canRun(t("compute_90a"), 10, 0));
}

TEST(RuntimeTarget, NoCodeMessageListsWhatTheFatbinHas) {
  std::vector<CodeTarget> ts = {t("sm_90a"), t("sm_80"), t("compute_90")};
  EXPECT_NO_THROW(etc::rt::requireCodeFor(ts, 8, 6));
  EXPECT_NO_THROW(etc::rt::requireCodeFor(ts, 12, 0));
  try {
    etc::rt::requireCodeFor(ts, 7, 5);
    ADD_FAILURE();
  } catch (const etc::rt::Error& e) {
    EXPECT_EQ(e.status(), ETC_STATUS_NO_CODE_FOR_DEVICE);
    EXPECT_STREQ(e.what(), "this fatbin has no code for sm_75 (it has sm_90a, sm_80, compute_90)");
  }
}

}  // namespace
