#include <gtest/gtest.h>

#include <cstring>

#include "etc/abi.h"
#include "runtime/src/descriptor.h"
#include "runtime/src/params.h"
#include "runtime/src/rt_error.h"
#include "runtime/src/workspace.h"
#include "runtime_fixtures.h"

namespace {

using etc::rt::layoutWorkspace;

etc::rt::Descriptor sample() { return etc::rt::parseDescriptor(etc::rt::testing::sampleDescriptor().dump()); }

std::vector<std::vector<int64_t>> shapes(int64_t B, int64_t N) {
  return {{B, 64}, {64, 32}, {B, (N + 15) / 16}, {B, 32}};
}

TEST(RuntimeWorkspace, LayoutErrorRecordCountersTemps) {
  etc::rt::Descriptor d = sample();
  static_assert(sizeof(EtcError) == 72);
  etc::rt::WorkspaceLayout w = layoutWorkspace(d, shapes(4, 100));
  EXPECT_EQ(w.error_offset, 0u);
  EXPECT_EQ(w.events_offset, 256u);
  EXPECT_EQ(w.events_bytes, 80u);  // 20 words
  EXPECT_EQ(w.tensor_offset[2], 512u);
  EXPECT_EQ(w.tensor_offset[0], UINT64_MAX);  // bound by the user
  EXPECT_EQ(w.total, 512u + 256u);            // t: 4 x 7 f32 = 112 bytes, rounded up
}

TEST(RuntimeWorkspace, GrowsWithSyms) {
  etc::rt::Descriptor d = sample();
  EXPECT_EQ(layoutWorkspace(d, shapes(128, 1000000)).total, 512u + 128u * 62500u * 4u);
  EXPECT_LT(layoutWorkspace(d, shapes(1, 1000)).total, layoutWorkspace(d, shapes(2, 1000)).total);
}

TEST(RuntimeWorkspace, NoEventsStillGetsOneWord) {
  nlohmann::json j = etc::rt::testing::sampleDescriptor();
  j["events"] = nlohmann::json::array();
  j["event_words"] = 0;
  EXPECT_EQ(layoutWorkspace(etc::rt::parseDescriptor(j.dump()), shapes(1, 1)).events_bytes, 4u);
}

TEST(RuntimeWorkspace, OverflowIsAnError) {
  etc::rt::Descriptor d = sample();
  auto s = shapes(1, 1);
  s[2] = {int64_t(1) << 40, int64_t(1) << 40};
  try {
    layoutWorkspace(d, s);
    ADD_FAILURE();
  } catch (const etc::rt::Error& e) {
    EXPECT_EQ(e.status(), ETC_STATUS_BAD_SHAPE);
    EXPECT_STREQ(e.what(), "the size of tensor t overflows 64 bits");
  }
}

TEST(RuntimeParams, MatchesAbiLayout) {
  etc::rt::Descriptor d = sample();
  std::vector<unsigned char> p =
      etc::rt::buildParams(d, {4, 1000}, {0x10, 0x20, 0x30, 0x40}, 0xE0, 0xF0, 123456789, 1, 0x7000);
  ASSERT_EQ(p.size(), 88u);
  auto at = [&](size_t off) {
    int64_t v;
    std::memcpy(&v, p.data() + off, 8);
    return v;
  };
  EXPECT_EQ(at(0), 4);
  EXPECT_EQ(at(8), 1000);
  EXPECT_EQ(at(16), 0x10);
  EXPECT_EQ(at(40), 0x40);
  EXPECT_EQ(at(48), 0xE0);  // events
  EXPECT_EQ(at(56), 0xF0);  // error
  EXPECT_EQ(at(64), 123456789);
  uint32_t flags, pad;
  std::memcpy(&flags, p.data() + 72, 4);
  std::memcpy(&pad, p.data() + 76, 4);
  EXPECT_EQ(flags, 1u);
  EXPECT_EQ(pad, 0u);
  EXPECT_EQ(at(80), 0x7000);  // tmaps
}

TEST(RuntimeParams, EmptyModuleKeepsOneSlotEach) {
  nlohmann::json j = etc::rt::testing::sampleDescriptor();
  j["syms"] = nlohmann::json::array();
  j["tensors"] = nlohmann::json::array();
  j["events"] = nlohmann::json::array();
  j["params_bytes"] = 56;
  etc::rt::Descriptor d = etc::rt::parseDescriptor(j.dump());
  std::vector<unsigned char> p = etc::rt::buildParams(d, {}, {}, 0xE0, 0xF0, 5, 0);
  ASSERT_EQ(p.size(), 56u);
  int64_t events;
  std::memcpy(&events, p.data() + 16, 8);
  EXPECT_EQ(events, 0xE0);
}

TEST(RuntimeParams, DerivedSymsFollowTheTail) {
  using J = nlohmann::json;
  J j = etc::rt::testing::sampleDescriptor();
  J b = J::array({"sym", 0}), n = J::array({"sym", 1});
  j["derived"] = J::array({{{"expr", J::array({"cdiv", 16, b})}},
                           {{"expr", J::array({"mul", n, J::array({"min", J::array({"add", J::array({"cdiv", 16, b}), -1}), 1})})}}});
  j["params_bytes"] = 104;
  etc::rt::Descriptor d = etc::rt::parseDescriptor(j.dump());
  EXPECT_EQ(d.derived_text, (std::vector<std::string>{"cdiv(16, B)", "N * min(cdiv(16, B) + -1, 1)"}));
  auto derived = [&](int64_t B, int64_t N, size_t k) {
    std::vector<unsigned char> p = etc::rt::buildParams(d, {B, N}, {0x10, 0x20, 0x30, 0x40}, 0xE0, 0xF0, 5, 0);
    EXPECT_EQ(p.size(), 104u);
    int64_t v;
    std::memcpy(&v, p.data() + 88 + 8 * k, 8);
    return v;
  };
  EXPECT_EQ(derived(3, 1000, 0), 6);
  EXPECT_EQ(derived(3, 1000, 1), 1000);
  EXPECT_EQ(derived(16, 1000, 0), 1);
  EXPECT_EQ(derived(16, 1000, 1), 0);
  EXPECT_EQ(derived(128, 7, 0), 1);
}

TEST(RuntimeParams, ADerivedSymThatCannotBeEvaluatedIsABadDescriptor) {
  using J = nlohmann::json;
  J j = etc::rt::testing::sampleDescriptor();
  j["derived"] = J::array({{{"expr", J::array({"div", 16, J::array({"add", J::array({"sym", 0}), -4})})}}});
  j["params_bytes"] = 96;
  etc::rt::Descriptor d = etc::rt::parseDescriptor(j.dump());
  EXPECT_EQ(etc::rt::buildParams(d, {5, 1}, {0, 0, 0, 0}, 0, 0, 0, 0).size(), 96u);
  try {
    etc::rt::buildParams(d, {4, 1}, {0, 0, 0, 0}, 0, 0, 0, 0);
    ADD_FAILURE();
  } catch (const etc::rt::Error& e) {
    EXPECT_EQ(e.status(), ETC_STATUS_BAD_DESCRIPTOR);
    EXPECT_STREQ(e.what(), "descriptor: derived sym 0 (16 / (B + -4)): shape expression divides by zero (in div)");
  }
}

}  // namespace
