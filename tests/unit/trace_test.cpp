// etc-run --trace's writer and summary on synthetic records (no GPU).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "trace.h"

namespace etc::tools {
namespace {

EtcProfileRecord rec(uint64_t start, uint64_t end, unsigned sm, unsigned cta, int task, int c0, int c1 = 0,
                     unsigned wait = 0) {
  EtcProfileRecord r{};
  r.start_ns = start;
  r.end_ns = end;
  r.sm = sm;
  r.cta = cta;
  r.task = task;
  r.coords[0] = c0;
  r.coords[1] = c1;
  r.wait_ns = wait;
  return r;
}

// Two SMs over 10 us: SM 0 (CTA 0) runs two matmul tiles back to back, SM 1 runs one CTA with a
// tile, then (as CTA 1 and CTA 3, two CTAs on one SM) the final task overlapping nothing.
TraceInput sample() {
  TraceInput in;
  in.title = "m @main B=2";
  in.task_names = {"matmul_y", "final"};
  in.task_ops = {{"matmul"}, {"reduce_sum", "add"}};
  in.records = {rec(1000, 5000, 0, 0, 0, 0, 0), rec(5000, 9000, 0, 0, 0, 1, 0, 500),
                rec(1000, 3000, 1, 1, 0, 0, 1), rec(8000, 11000, 1, 3, 1, 0, 0, 2000)};
  in.records[1].ops_begin_ns = 700;  // 500 of it spinning in waits
  in.records[1].ops_ns = 3000;
  in.written = 4;
  return in;
}

TEST(Trace, ChromeJsonHasOneTrackPerCtaAndOneSlicePerTaskRun) {
  nlohmann::json j = nlohmann::json::parse(chromeTraceJson(sample()));
  std::map<int, std::string> tracks;
  std::vector<nlohmann::json> slices;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") tracks[e["tid"].get<int>()] = e["args"]["name"];
    if (e["ph"] == "X") slices.push_back(e);
  }
  EXPECT_EQ(tracks, (std::map<int, std::string>{{0, "SM 0"}, {1, "SM 1 / CTA 1"}, {3, "SM 1 / CTA 3"}}));
  ASSERT_EQ(slices.size(), 4u);
  // Microseconds from the first start; names, ops, coordinates and waits in args.
  EXPECT_EQ(slices[1]["name"], "matmul_y");
  EXPECT_DOUBLE_EQ(slices[1]["ts"].get<double>(), 4.0);
  EXPECT_DOUBLE_EQ(slices[1]["dur"].get<double>(), 4.0);
  EXPECT_EQ(slices[1]["args"]["coords"], nlohmann::json::parse("[1, 0, 0, 0]"));
  EXPECT_DOUBLE_EQ(slices[1]["args"]["wait_us"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(slices[1]["args"]["ops_begin_us"].get<double>(), 0.7);
  EXPECT_DOUBLE_EQ(slices[1]["args"]["ops_us"].get<double>(), 3.0);
  EXPECT_EQ(slices[3]["name"], "final");
  EXPECT_EQ(slices[3]["args"]["op"], "reduce_sum, add");
  EXPECT_EQ(slices[3]["tid"], 3);
  EXPECT_EQ(j["otherData"]["written"], 4);
}

TEST(Trace, SummaryTimesPerTaskBusyFractionAndWaits) {
  EXPECT_EQ(traceSummary(sample()),
            "trace m @main B=2: 4 task runs on 2 SMs, 10.00 us from the first start to the last end\n"
            "  task                         op                 runs   total us   mean us    max us waiting us\n"
            "  matmul_y                     matmul                3      10.00      3.33      4.00       0.50\n"
            "  final                        reduce_sum, add       1       3.00      3.00      3.00       2.00\n"
            // SM 0: 8 of 10 us; SM 1: [1, 3) and [8, 11) = 5 of 10 us.
            "SM busy: 65.0% (time inside tasks over the span, mean over 2 SMs)\n"
            "waiting on events: 2.50 us of 13.00 us in tasks (19.2%)\n");
}

TEST(Trace, OverlappingCtasOnOneSmCountOnceAndDropsAreReported) {
  TraceInput in = sample();
  in.records = {rec(0, 4000, 0, 0, 0, 0), rec(2000, 6000, 0, 1, 0, 1), rec(8000, 10000, 1, 2, 1, 0)};
  in.written = 7;
  std::string s = traceSummary(in);
  // SM 0: [0, 6) of 10 us; SM 1: [8, 10): (60% + 20%) / 2.
  EXPECT_NE(s.find("SM busy: 40.0%"), std::string::npos) << s;
  EXPECT_NE(s.find("dropped: 4 task runs beyond the 3 records"), std::string::npos) << s;
}

TEST(Trace, EmptyAndUnknownTasksAreSaidNotCrashed) {
  TraceInput in = sample();
  in.records.clear();
  EXPECT_EQ(traceSummary(in), "trace m @main B=2: no task records (was the megakernel launched?)\n");
  EXPECT_NO_THROW(nlohmann::json::parse(chromeTraceJson(in)));
  in.records = {rec(0, 10, 0, 0, 7, 0)};
  EXPECT_NE(chromeTraceJson(in).find("\"task 7\""), std::string::npos);
}

}  // namespace
}  // namespace etc::tools
