// The descriptor's "profile" (etcc --profile): where the timeline records are, checked.
#include <gtest/gtest.h>

#include "runtime/src/descriptor.h"
#include "runtime/src/rt_error.h"
#include "descriptor_rejection.h"
#include "runtime_fixtures.h"

namespace {

using etc::rt::parseDescriptor;
using etc::rt::testing::rejection;
using etc::rt::testing::sampleDescriptor;
using nlohmann::json;

// The sample has 20 counter words; a profile after them with room for 3 records.
json profiled() {
  json j = sampleDescriptor();
  json ops = json::array();
  for (size_t t = 0; t < j["tasks"].size(); ++t) ops.push_back(json::array({"matmul"}));
  j["event_words"] = 20 + 2 + 3 * ETC_PROFILE_RECORD_WORDS;
  j["profile"] = {{"offset", 20}, {"max_records", 3}, {"record_bytes", sizeof(EtcProfileRecord)}, {"task_ops", ops}};
  return j;
}

TEST(RuntimeProfile, AbsentMeansNotProfiled) {
  EXPECT_EQ(parseDescriptor(sampleDescriptor().dump()).profile.offset, -1);
}

TEST(RuntimeProfile, ParsesWhereTheRecordsAre) {
  etc::rt::Descriptor d = parseDescriptor(profiled().dump());
  EXPECT_EQ(d.profile.offset, 20);
  EXPECT_EQ(d.profile.max_records, 3);
  ASSERT_EQ(d.profile.task_ops.size(), d.tasks.size());
  EXPECT_EQ(d.profile.task_ops[0], std::vector<std::string>{"matmul"});
  EXPECT_EQ(sizeof(EtcProfileRecord), 56u);
}

TEST(RuntimeProfile, RejectsRecordsOutsideTheCounterArea) {
  json j = profiled();
  j["profile"]["max_records"] = 4;
  EXPECT_EQ(rejection(j), "descriptor: profile: the records (word 20, 4 records) do not fit in event_words 64");
  j = profiled();
  j["profile"]["offset"] = 21;
  EXPECT_EQ(rejection(j), "descriptor: profile: the records (word 21, 3 records) do not fit in event_words 64");
  j = profiled();
  j["profile"]["max_records"] = INT64_MAX;  // no overflow on the way
  EXPECT_NE(rejection(j).find("do not fit"), std::string::npos);
}

TEST(RuntimeProfile, RejectsMalformedFields) {
  json j = profiled();
  j["profile"]["record_bytes"] = 32;
  EXPECT_EQ(rejection(j), "descriptor: profile: record_bytes is not 56 (abi.h EtcProfileRecord)");
  j = profiled();
  j["profile"]["task_ops"].erase(0);
  EXPECT_EQ(rejection(j), "descriptor: profile: \"task_ops\" is not an array with one entry per task");
  j = profiled();
  j["profile"]["task_ops"][0] = json::array({1});
  EXPECT_EQ(rejection(j), "descriptor: profile: an entry of \"task_ops\" holds a non-string");
  j = profiled();
  j["profile"].erase("offset");
  EXPECT_EQ(rejection(j), "descriptor: profile: \"offset\" is missing or not a non-negative integer");
  j = profiled();
  j["profile"] = 3;
  EXPECT_EQ(rejection(j), "descriptor: profile: not an object");
}

}  // namespace
