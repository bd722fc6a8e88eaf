// Which tasks etcc --run-by-last-notifier runs in the CTA of their last notifier
// (compiler/backend/chained_tasks.h), and under which run-time limits.

#include "compiler/backend/chained_tasks.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "compiler/frontend/frontend.h"
#include "tests/unit/parsed_module.h"

namespace etc {
namespace {

using backend::ChainedTask;
using backend::chainedTasks;

using Parsed = test::ParsedModule;

std::unique_ptr<Parsed> parse(std::string text) { return test::parseVerified(std::move(text)); }

// A producer grid @prod over `prod_grid` (coordinate i) that fills x and notifies `notify`, and a
// consumer @cons over `cons_grid` (coordinate b) whose body is `cons_body`; `extra` adds
// declarations and tasks, run after @cons.
std::string module(const std::string& prod_grid, const std::string& notify, const std::string& cons_grid,
                   const std::string& cons_body, const std::string& extra = "", const std::string& extra_runs = "") {
  return R"(module @chain
sym B in [1, 64]
tensor x : f32[B, 16] temp
tensor y : f32[B, 16] output
event ev : [B] init (e) -> 1
event ev1 : [1] init B
)" + extra + "task @prod grid [" + prod_grid + R"(] (i) {
  fill() { value = 1 } -> x[min(B, i) : min(B, i + 1), :]
  notify )" + notify + R"(
}
task @cons grid [)" + cons_grid + R"(] (b) {
)" + cons_body + R"(
}
graph @main schedule static {
  run @prod
  run @cons
)" + extra_runs + R"(}
)";
}

const char* kCopyRow = "  copy(x[b, :]) -> y[b, :]";

std::map<uint32_t, ChainedTask> chained(const Parsed& p, bool static_mega = true) {
  return chainedTasks(*p.module, std::vector<bool>(p.module->tasks.size(), static_mega));
}

std::string limits(const ChainedTask& c) {
  std::string out;
  for (const ir::Expr& l : c.limits) out += (out.empty() ? "" : ", ") + ir::toString(l);
  return out;
}

TEST(ChainedTasks, OneNotifierAnElementChainsAtEveryB) {
  // Attention's notify of its row: [min(B, i) : min(B, i + 1)] holds one element or none.
  auto p = parse(module("B", "ev[min(B, i) : min(B, i + 1)]", "B", std::string("  wait ev[b]\n") + kCopyRow));
  auto c = chained(*p);
  ASSERT_EQ(c.size(), 1u);
  const ChainedTask& t = c.begin()->second;
  EXPECT_EQ(p->module->tasks[t.task].name, "cons");
  EXPECT_EQ(t.coord_dim, (std::vector<int>{0}));
  EXPECT_EQ(limits(t), "");
}

TEST(ChainedTasks, AWholeRangeNotifyChainsOnlyAtOneElement) {
  // Every producer notifies all B elements: one of them would run B tasks, so only where B <= 1.
  auto p = parse(module("4", "ev[0:B]", "B", std::string("  wait ev[b]\n") + kCopyRow));
  auto c = chained(*p);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(limits(c.begin()->second), "B");
}

TEST(ChainedTasks, AnUnindexedCoordinateChainsOnlyAtOneTask) {
  // Task b of B waits on the one element ev1[0]: kv_append's and the norms' form.
  auto p = parse(module("4", "ev1[0]", "B", std::string("  wait ev1[0]\n") + kCopyRow));
  auto c = chained(*p);
  ASSERT_EQ(c.size(), 1u);
  const ChainedTask& t = c.begin()->second;
  EXPECT_EQ(t.coord_dim, (std::vector<int>{-1}));
  ASSERT_EQ(t.fixed_index.size(), 1u);
  EXPECT_EQ(ir::toString(t.fixed_index[0]), "0");
  EXPECT_EQ(limits(t), "B");
}

TEST(ChainedTasks, AOneTaskGridHasNoLimit) {
  // two_stage_sum's final sum: a grid of one waiting on the one element.
  auto p = parse(module("4", "ev1[0]", "1", "  wait ev1[0]\n  copy(x[0, :]) -> y[0, :]"));
  auto c = chained(*p);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(limits(c.begin()->second), "");
}

TEST(ChainedTasks, NotChainedWhereANotifyCoversSeveralElementsByCoordinate) {
  // Four elements a producer, at every B: no sym-only limit can allow it.
  auto p = parse(module("cdiv(B, 4)", "ev[min(B, i * 4) : min(B, i * 4 + 4)]", "B",
                        std::string("  wait ev[b]\n") + kCopyRow));
  EXPECT_TRUE(chained(*p).empty());
}

TEST(ChainedTasks, NotChainedWhereALimitIsNeverMet) {
  // A constant range of 2 elements: a limit of 2 at every B (an event of 2 elements a row).
  auto p = parse(module("B", "ev3[min(B, i), 0:2]", "B", std::string("  wait ev3[b, 0]\n") + kCopyRow,
                        "event ev3 : [B, 2] init 1\n"));
  EXPECT_TRUE(chained(*p).empty());
}

TEST(ChainedTasks, NotChainedWithTwoWaits) {
  auto p = parse(module("B", "ev[min(B, i) : min(B, i + 1)]", "B",
                        std::string("  wait ev[b]\n  wait ev2[0]\n") + kCopyRow,
                        "event ev2 : [1] init 1\ntask @other grid [1] (k) {\n  notify ev2[0]\n}\n", "  run @other\n"));
  EXPECT_TRUE(chained(*p).empty());
}

TEST(ChainedTasks, NotChainedWhereAnotherTaskWaitsOnTheEvent) {
  auto p = parse(module("B", "ev[min(B, i) : min(B, i + 1)]", "B", std::string("  wait ev[b]\n") + kCopyRow,
                        "tensor z : f32[B, 16] output\ntask @other grid [B] (k) {\n  wait ev[k]\n  copy(x[k, :]) -> z[k, :]\n}\n",
                        "  run @other\n"));
  EXPECT_TRUE(chained(*p).empty());
}

TEST(ChainedTasks, NotChainedWhereTheWaitIsNotFirst) {
  auto p = parse(module("B", "ev[min(B, i) : min(B, i + 1)]", "B",
                        "  fill() { value = 2 } -> y[b, :]\n  wait ev[b]\n  copy(x[b, :]) -> y[b, :]"));
  EXPECT_TRUE(chained(*p).empty());
}

TEST(ChainedTasks, NotChainedOutsideAStaticMegakernel) {
  auto p = parse(module("B", "ev[min(B, i) : min(B, i + 1)]", "B", std::string("  wait ev[b]\n") + kCopyRow));
  EXPECT_TRUE(chained(*p, false).empty());
}

}  // namespace
}  // namespace etc
