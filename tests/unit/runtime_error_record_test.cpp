#include <gtest/gtest.h>

#include "runtime/src/descriptor.h"
#include "runtime/src/error_record.h"
#include "runtime_fixtures.h"

namespace {

using etc::rt::describeError;

etc::rt::Descriptor sample() { return etc::rt::parseDescriptor(etc::rt::testing::sampleDescriptor().dump()); }

EtcError record(unsigned code, int task, int event, std::vector<long long> coords, long long element, unsigned count,
                unsigned target) {
  EtcError e{};
  e.code = code;
  e.task = task;
  e.event = event;
  e.ncoords = static_cast<int>(coords.size());
  for (size_t i = 0; i < coords.size(); ++i) e.coords[i] = coords[i];
  e.element = element;
  e.count = count;
  e.target = target;
  e.done = 1;
  return e;
}

TEST(RuntimeErrorRecord, WaitTimeout) {
  etc::rt::Descriptor d = sample();
  EXPECT_EQ(describeError(record(ETC_ERR_WAIT_TIMEOUT, 1, 1, {0}, 0, 3, 4), d, {4, 10}),
            "wait timed out in task @final (0): event flag[0] has 3 of 4 notifies");
  // done has extents [cdiv(B, 16), 2] = [2, 2] for B = 32: element 3 is [1, 1].
  EXPECT_EQ(describeError(record(ETC_ERR_WAIT_TIMEOUT, 0, 0, {1, 5}, 3, 0, 16), d, {32, 10}),
            "wait timed out in task @stage1 (1, 5): event done[1, 1] has 0 of 16 notifies");
}

TEST(RuntimeErrorRecord, OtherCodes) {
  etc::rt::Descriptor d = sample();
  EXPECT_EQ(describeError(record(ETC_ERR_OVER_NOTIFY, 0, 1, {2}, 3, 5, 4), d, {4, 10}),
            "too many notifies in task @stage1 (2): event flag[3] got 5 notifies, its count is 4");
  EXPECT_EQ(describeError(record(ETC_ERR_BOUND, 1, -1, {0}, 0, 0, 0), d, {4, 10}),
            "a data-dependent extent exceeded its stated bound in task @final (0)");
  EXPECT_EQ(describeError(record(ETC_ERR_ABORTED, -1, -1, {}, 0, 0, 0), d, {4, 10}),
            "the kernel was stopped by an error in another CTA");
  EXPECT_EQ(describeError(record(9, -1, -1, {}, 0, 0, 0), d, {4, 10}), "the kernel reported unknown error code 9");
}

TEST(RuntimeErrorRecord, DamagedRecordsStillDecode) {
  etc::rt::Descriptor d = sample();
  EtcError e = record(ETC_ERR_WAIT_TIMEOUT, 1, 1, {0}, 9, 1, 2);  // element outside flag's [4]
  e.done = 0;
  EXPECT_EQ(describeError(e, d, {4, 10}),
            "wait timed out in task @final (0): event flag[#9] has 1 of 2 notifies (the error record is incomplete)");
  EXPECT_EQ(describeError(record(ETC_ERR_WAIT_TIMEOUT, 7, 5, {0}, 0, 1, 2), d, {4, 10}),
            "wait timed out in task #7 (0): event #5 has 1 of 2 notifies");
}

}  // namespace
