// Tests of the reference interpreter's scheduling, events, tensor binding and errors
// (compiler/interp/interpreter.h), on task-level modules parsed from text.

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "compiler/frontend/frontend.h"
#include "compiler/interp/interpreter.h"
#include "tests/unit/parsed_module.h"

namespace etc::interp {
namespace {

using Parsed = test::ParsedModule;

std::unique_ptr<Parsed> parse(std::string text) { return test::parseVerified(std::move(text)); }

std::string readSample(const std::string& name) {
  auto path = std::filesystem::path(ETC_SOURCE_DIR) / "samples" / name;
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// ---- two_stage_sum (the sample file itself) ------------------------------------------------

// sum over k < n of (k % 7) + 0.5, exactly.
double closedSum(int64_t n) { return 21.0 * static_cast<double>(n / 7) + (n % 7) * (n % 7 - 1) / 2 + 0.5 * n; }

double twoStageSum(const ir::Module& m, int64_t n) {
  std::vector<double> a(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) a[k] = static_cast<double>(k % 7) + 0.5;
  TensorMap t;
  t["a"] = makeTensor(ir::DType::F32, {n}, a);
  RunResult r = run(m, "main", {{"N", n}}, t);
  EXPECT_TRUE(r.ok) << r.error;
  EXPECT_EQ(t.at("p").shape, std::vector<int64_t>{(n + 1023) / 1024});
  return toDoubles(t.at("out"))[0];
}

TEST(InterpTwoStageSum, ClosedFormForRaggedAndExactSizes) {
  auto p = parse(readSample("two_stage_sum.etir"));
  ASSERT_TRUE(p->module);
  // Every partial and the total are multiples of 0.5 below 2^23: exact in f32.
  for (int64_t n : {1, 1023, 1024, 1025, 1000000}) EXPECT_EQ(twoStageSum(*p->module, n), closedSum(n)) << "N = " << n;
}

TEST(InterpTwoStageSum, TenMillionIsFastAndRoundedOnce) {
  auto p = parse(readSample("two_stage_sum.etir"));
  ASSERT_TRUE(p->module);
  const int64_t n = 10000000;
  auto start = std::chrono::steady_clock::now();
  double got = twoStageSum(*p->module, n);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // The partials are exact; the total is summed in double and rounded to f32 once.
  EXPECT_EQ(got, static_cast<double>(static_cast<float>(closedSum(n))));
  EXPECT_LT(secs, 10.0);  // about 0.3 s in a release build; generous for sanitizers
}

// ---- a two-layer program with explicit events ---------------------------------------------

// y = (x * x) @ w, row tiles then column tiles; `ready` counts the rows, `cols` one element per
// column tile with a per-element count.
const char* kTwoLayers = R"(
module @two_layers
sym T in [1, 8]
tensor x : f32[T, 4] input
tensor w : f32[4, 4] param
tensor h : f32[T, 4] temp
tensor y : f32[T, 4] output
tensor s : f32[2] output
event ready : [1] init T
event cols : [2] init (j) -> 1

task @square grid [T] (t) {
  mul(x[t, :], x[t, :]) -> h[t, :]
  notify ready[0]
}
task @project grid [2] (j) {
  wait ready[0]
  matmul(h, w[:, j * 2 : j * 2 + 2]) -> y[:, j * 2 : j * 2 + 2]
  notify cols[j]
}
task @total grid [1] (u) {
  wait cols[0:2]
  reduce_sum(y[0, 0:2]) -> s[0]
  reduce_sum(y[0, 2:4]) -> s[1]
}
graph @main { run @square run @project run @total }
graph @reversed { run @total run @project run @square }
)";

TEST(InterpEvents, TwoLayerProgramInEitherRunOrder) {
  auto p = parse(kTwoLayers);
  ASSERT_TRUE(p->module);
  const int64_t T = 3;
  std::vector<double> x, w;
  for (int i = 0; i < T * 4; ++i) x.push_back(i - 5);
  for (int i = 0; i < 16; ++i) w.push_back((i % 5) - 2);
  for (const char* g : {"main", "@reversed"}) {
    TensorMap t;
    t["x"] = makeTensor(ir::DType::F32, {T, 4}, x);
    t["w"] = makeTensor(ir::DType::F32, {4, 4}, w);
    RunResult r = run(*p->module, g, {{"T", T}}, t);
    ASSERT_TRUE(r.ok) << g << ": " << r.error;
    std::vector<double> y = toDoubles(t.at("y"));
    for (int i = 0; i < T; ++i)
      for (int j = 0; j < 4; ++j) {
        double want = 0;
        for (int k = 0; k < 4; ++k) want += x[i * 4 + k] * x[i * 4 + k] * w[k * 4 + j];
        EXPECT_EQ(y[i * 4 + j], want) << g << " y[" << i << ", " << j << "]";
      }
    std::vector<double> s = toDoubles(t.at("s"));
    EXPECT_EQ(s[0], y[0] + y[1]);
    EXPECT_EQ(s[1], y[2] + y[3]);
  }
}

// ---- errors -----------------------------------------------------------------------------------

std::string countsModule(int init, int producers, bool waiter) {
  std::string m = "module @counts\n"
                  "tensor a : f32[8] input\n"
                  "tensor p : f32[8] temp\n"
                  "tensor out : f32[1] output\n"
                  "event done : [1] init " + std::to_string(init) + "\n"
                  "task @partial grid [" + std::to_string(producers) + "] (i) {\n"
                  "  copy(a[i]) -> p[i]\n"
                  "  notify done[0]\n"
                  "}\n";
  if (waiter)
    m += "task @final grid [1] (j) {\n"
         "  wait done[0]\n"
         "  reduce_sum(p) -> out[0]\n"
         "}\n";
  m += waiter ? "graph @main { run @partial run @final }\n" : "graph @main { run @partial }\n";
  return m;
}

RunResult runCounts(int init, int producers, bool waiter) {
  auto p = parse(countsModule(init, producers, waiter));
  if (!p->module) return {};
  TensorMap t;
  t["a"] = makeTensor(ir::DType::F32, {8}, std::vector<double>(8, 1.0));
  return run(*p->module, "main", {}, t);
}

TEST(InterpErrors, BalancedCountsRun) {
  RunResult r = runCounts(4, 4, true);
  EXPECT_TRUE(r.ok) << r.error;
}

TEST(InterpErrors, WaitThatCanNeverReturn) {
  RunResult r = runCounts(4, 3, true);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error, "task @final (0) waits forever on done[0]: 1 of 4 notifies never arrives");
  r = runCounts(5, 2, true);
  EXPECT_EQ(r.error, "task @final (0) waits forever on done[0]: 3 of 5 notifies never arrive");
}

TEST(InterpErrors, OverNotify) {
  RunResult r = runCounts(2, 3, true);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error, "task @partial (2) notifies done[0], which is already at 0: more notifies than its initial count 2");
}

TEST(InterpErrors, UnderNotifyWithoutWaiter) {
  RunResult r = runCounts(4, 3, false);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error, "event done[0] ends at 1: 1 of 4 notifies never arrived");
}

TEST(InterpErrors, CycleNamesTheLowestBlockedTile) {
  auto p = parse(R"(
module @cycle
tensor a : f32[2] input
tensor b : f32[2] output
event e : [2] init 1
task @t grid [2] (i) {
  wait e[1 - i]
  copy(a[i]) -> b[i]
  notify e[i]
}
graph @main { run @t }
)");
  ASSERT_TRUE(p->module);
  TensorMap t;
  t["a"] = zeros(ir::DType::F32, {2});
  RunResult r = run(*p->module, "main", {}, t);
  EXPECT_EQ(r.error, "task @t (0) waits forever on e[1]: 1 of 1 notify never arrives (1 other tile is blocked too)");
}

TEST(InterpErrors, Inputs) {
  auto p = parse(readSample("two_stage_sum.etir"));
  ASSERT_TRUE(p->module);
  TensorMap t;
  RunResult r = run(*p->module, "main", {{"N", 5}}, t);
  EXPECT_EQ(r.error, "input 'a' is missing (expected f32[5])");
  t["a"] = zeros(ir::DType::F32, {4});
  r = run(*p->module, "main", {{"N", 5}}, t);
  EXPECT_EQ(r.error, "input 'a' is f32[4]; expected f32[5]");
  t["a"] = zeros(ir::DType::BF16, {5});
  r = run(*p->module, "main", {{"N", 5}}, t);
  EXPECT_EQ(r.error, "input 'a' is bf16[5]; expected f32[5]");
  t["a"] = zeros(ir::DType::F32, {5});
  t["a"].bytes.pop_back();
  r = run(*p->module, "main", {{"N", 5}}, t);
  EXPECT_EQ(r.error, "input 'a' holds 19 bytes; f32[5] needs 20");
}

TEST(InterpErrors, Syms) {
  auto p = parse(readSample("two_stage_sum.etir"));
  ASSERT_TRUE(p->module);
  TensorMap t;
  EXPECT_EQ(run(*p->module, "main", {{"N", 0}}, t).error, "sym 'N' = 0 is outside its range [1, 100000000]");
  EXPECT_EQ(run(*p->module, "main", {{"N", 100000001}}, t).error,
            "sym 'N' = 100000001 is outside its range [1, 100000000]");
  EXPECT_EQ(run(*p->module, "main", {}, t).error, "sym 'N' is not given (its range is [1, 100000000])");
  EXPECT_EQ(run(*p->module, "main", {{"N", 3}, {"M", 1}}, t).error, "'M' is not a sym of module @two_stage_sum");
  EXPECT_EQ(run(*p->module, "nope", {{"N", 3}}, t).error, "module @two_stage_sum has no graph '@nope'");
}

TEST(InterpErrors, OpLevelGraphIsRefused) {
  auto p = parse(R"(
module @ol
tensor x : f32[4] input
graph @main {
  y = copy(x)
}
)");
  ASSERT_TRUE(p->module);
  TensorMap t;
  t["x"] = zeros(ir::DType::F32, {4});
  EXPECT_EQ(run(*p->module, "main", {}, t).error,
            "graph '@main' has an op-level statement ('y = copy(...)'); the interpreter runs task-level graphs: "
            "lower it first (lower-ops)");
}

// ---- outputs and temps ---------------------------------------------------------------------

TEST(InterpTensors, PresentOutputIsUpdatedInPlaceAbsentOneIsZeroed) {
  auto p = parse(R"(
module @partial_write
tensor a : f32[4] input
tensor y : f32[4] output
task @k grid [2] (i) {
  copy(a[i]) -> y[i]
}
graph @main { run @k }
)");
  ASSERT_TRUE(p->module);
  TensorMap t;
  t["a"] = makeTensor(ir::DType::F32, {4}, {1, 2, 3, 4});
  ASSERT_TRUE(run(*p->module, "main", {}, t).ok);
  EXPECT_EQ(toDoubles(t.at("y")), (std::vector<double>{1, 2, 0, 0}));
  t["y"] = makeTensor(ir::DType::F32, {4}, {9, 9, 9, 9});
  ASSERT_TRUE(run(*p->module, "main", {}, t).ok);
  EXPECT_EQ(toDoubles(t.at("y")), (std::vector<double>{1, 2, 9, 9}));
  t["y"] = zeros(ir::DType::F32, {5});
  EXPECT_EQ(run(*p->module, "main", {}, t).error, "output 'y' is f32[5]; expected f32[4]");
}

// ---- data-dependent grids and counts ---------------------------------------------------------

const char* kDataDependent = R"(
module @dd
tensor n : i32[1] input
tensor a : f32[4] input
tensor y : f32[4] output
event done : [1] init load(n[0]) <= 8
task @k grid [load(n[0]) <= 4] (i) {
  copy(a[i]) -> y[i]
  notify done[0]
}
task @last grid [1] (j) {
  wait done[0]
  fill() { value = 7.0 } -> y[3]
}
graph @main { run @k run @last }
)";

TEST(InterpDataDependent, GridAndCountReadTheData) {
  auto p = parse(kDataDependent);
  ASSERT_TRUE(p->module);
  TensorMap t;
  t["n"] = makeIntTensor(ir::DType::I32, {1}, {2});
  t["a"] = makeTensor(ir::DType::F32, {4}, {1, 2, 3, 4});
  RunResult r = run(*p->module, "main", {}, t);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(toDoubles(t.at("y")), (std::vector<double>{1, 2, 0, 7}));
  t["n"] = makeIntTensor(ir::DType::I32, {1}, {5});
  EXPECT_EQ(run(*p->module, "main", {}, t).error,
            "task @k: grid extent 0 ('load(n[0]) <= 4'): 'load(n[0])' is 5, above its stated bound 4");
  // @last waits on done (its first touch) before the data-dependent grid @k starts.
  t["n"] = makeIntTensor(ir::DType::I32, {1}, {9});
  EXPECT_EQ(run(*p->module, "main", {}, t).error,
            "the count of done[0] ('load(n[0]) <= 8'): 'load(n[0])' is 9, above its stated bound 8");
}

// ---- Order::LatestFirst ------------------------------------------------------------------------

// Two layers of `h = x * 2; y = h + 1` through one temp `h`, reused by the second layer.
// `events` picks which orderings are written: the reads after their writes (RAW) and the
// second layer's write of h after the first layer's read of it (WAR).
std::string reuseModule(bool raw, bool war) {
  std::string s = R"(
module @reuse
sym T in [1, 8]
tensor x : f32[T] input
tensor h : f32[T] temp
tensor y0 : f32[T] output
tensor y1 : f32[T] output
event w0 : [T] init 1
event r0 : [T] init 1
event w1 : [T] init 1
task @write0 grid [T] (t) {
  mul(x[t], x[t]) -> h[t]
  notify w0[t]
}
task @read0 grid [T] (t) {
)";
  if (raw) s += "  wait w0[t]\n";
  s += "  add(h[t], x[t]) -> y0[t]\n  notify r0[t]\n}\ntask @write1 grid [T] (t) {\n";
  if (war) s += "  wait r0[t]\n";
  s += "  add(x[t], x[t]) -> h[t]\n  notify w1[t]\n}\ntask @read1 grid [T] (t) {\n";
  if (raw) s += "  wait w1[t]\n";
  s += "  add(h[t], x[t]) -> y1[t]\n}\ngraph @main { run @write0 run @read0 run @write1 run @read1 }\n";
  return s;
}

std::pair<std::vector<double>, std::vector<double>> runReuse(bool raw, bool war, Order order, uint64_t seed = 0) {
  auto p = parse(reuseModule(raw, war));
  EXPECT_TRUE(p->module);
  if (!p->module) return {};
  TensorMap t;
  t["x"] = makeTensor(ir::DType::F32, {3}, {1, 2, 3});
  RunResult r = run(*p->module, "main", {{"T", 3}}, t, order, seed);
  EXPECT_TRUE(r.ok) << r.error;
  return {toDoubles(t.at("y0")), toDoubles(t.at("y1"))};
}

TEST(InterpLatestFirst, CorrectEventsGiveTheSameValuesInEveryOrder) {
  using V = std::vector<double>;
  EXPECT_EQ(runReuse(true, true, Order::RunOrder), std::make_pair(V{2, 6, 12}, V{3, 6, 9}));
  EXPECT_EQ(runReuse(true, true, Order::LatestFirst), std::make_pair(V{2, 6, 12}, V{3, 6, 9}));
  for (uint64_t seed = 0; seed < 20; ++seed)
    EXPECT_EQ(runReuse(true, true, Order::Random, seed), std::make_pair(V{2, 6, 12}, V{3, 6, 9})) << seed;
}

TEST(InterpLatestFirst, ShowsAMissingReadAfterWrite) {
  using V = std::vector<double>;
  // Run order hides the missing waits; latest first runs each reader before its writer.
  EXPECT_EQ(runReuse(false, true, Order::RunOrder), std::make_pair(V{2, 6, 12}, V{3, 6, 9}));
  EXPECT_NE(runReuse(false, true, Order::LatestFirst), std::make_pair(V{2, 6, 12}, V{3, 6, 9}));
}

TEST(InterpRandomOrder, ShowsAMissingWriteAfterRead) {
  using V = std::vector<double>;
  // Without `wait r0` the second layer may overwrite h between the first layer's write and read
  // (y0 wrong), or before the first layer's write (y1 wrong). Run order and latest first hide it
  // (the latter runs write0 last, just before read0).
  EXPECT_EQ(runReuse(true, false, Order::RunOrder), std::make_pair(V{2, 6, 12}, V{3, 6, 9}));
  EXPECT_EQ(runReuse(true, false, Order::LatestFirst), std::make_pair(V{2, 6, 12}, V{3, 6, 9}));
  int wrong = 0;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    wrong += runReuse(true, false, Order::Random, seed) != std::make_pair(V{2, 6, 12}, V{3, 6, 9});
  }
  EXPECT_GT(wrong, 0);
}

TEST(InterpOtherOrders, TwoLayerProgramAndADataDependentGrid) {
  auto p = parse(kTwoLayers);
  ASSERT_TRUE(p->module);
  for (Order order : {Order::RunOrder, Order::LatestFirst, Order::Random}) {
    TensorMap t;
    t["x"] = makeTensor(ir::DType::F32, {2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
    t["w"] = makeTensor(ir::DType::F32, {4, 4}, std::vector<double>(16, 1));
    RunResult r = run(*p->module, "main", {{"T", 2}}, t, order);
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(toDoubles(t.at("s")), (std::vector<double>{60, 60}));
  }
  auto d = parse(kDataDependent);
  ASSERT_TRUE(d->module);
  TensorMap t;
  t["n"] = makeIntTensor(ir::DType::I32, {1}, {2});
  t["a"] = makeTensor(ir::DType::F32, {4}, {1, 2, 3, 4});
  for (Order order : {Order::LatestFirst, Order::Random}) {
    RunResult r = run(*d->module, "main", {}, t, order, 7);
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(toDoubles(t.at("y")), (std::vector<double>{1, 2, 0, 7}));
  }
}

}  // namespace
}  // namespace etc::interp
