// etc-run's host-side helpers: random inputs, input gathering and its errors, comparisons.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>

#include "etc_run_host.h"
#include "npy.h"

namespace {

using namespace etc::tools;
using etc::ir::DType;

std::vector<TensorSpec> specs() {
  return {{"x", DType::F32, "input", {4, 8}, {"B", "8"}},
          {"ids", DType::I32, "input", {4}, {"B"}},
          {"w", DType::BF16, "param", {8, 8}, {"H", "H"}},
          {"y", DType::F32, "output", {4, 8}, {"B", "8"}}};
}

std::string errorOf(const RunInputs& ri) {
  try {
    gatherInputs(specs(), ri);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(ok)";
}

TEST(EtcRunHost, RandomInputsAreSeededNonZeroAndInRange) {
  auto a = etc::interp::toDoubles(randomTensor(DType::F32, {1000}, 7, "x"));
  auto b = etc::interp::toDoubles(randomTensor(DType::F32, {1000}, 7, "x"));
  auto c = etc::interp::toDoubles(randomTensor(DType::F32, {1000}, 8, "x"));
  auto d = etc::interp::toDoubles(randomTensor(DType::F32, {1000}, 7, "z"));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, d);
  for (double v : a) {
    EXPECT_GE(v, -1.0);
    EXPECT_LT(v, 1.0);
    EXPECT_NE(v, 0.0);
  }
  for (double v : etc::interp::toDoubles(randomTensor(DType::BF16, {500}, 1, "w"))) EXPECT_NE(v, 0.0);
  for (int64_t v : etc::interp::toInts(randomTensor(DType::I32, {500}, 1, "ids"))) {
    EXPECT_GE(v, 1);
    EXPECT_LT(v, 8);
  }
}

TEST(EtcRunHost, GathersRandomAndFileInputs) {
  const std::string path = ::testing::TempDir() + "/etc_run_x.npy";
  etc::interp::HostTensor x = randomTensor(DType::F32, {4, 8}, 99, "q");
  writeNpy(path, x);
  RunInputs ri;
  ri.in["x"] = path;
  etc::interp::TensorMap m = gatherInputs(specs(), ri);
  EXPECT_EQ(m.size(), 3u);  // x, ids, w; outputs are not inputs
  EXPECT_EQ(m["x"].bytes, x.bytes);
  EXPECT_EQ(m["w"].dtype, DType::BF16);
  std::remove(path.c_str());
}

TEST(EtcRunHost, BadInputsAreOneSentence) {
  const std::string path = ::testing::TempDir() + "/etc_run_bad.npy";
  writeNpy(path, etc::interp::zeros(DType::F32, {3, 8}));
  RunInputs ri;
  ri.in["x"] = path;
  EXPECT_EQ(errorOf(ri), path + " has shape [3, 8], tensor x has shape [B, 8] = [4, 8]");
  writeNpy(path, etc::interp::zeros(DType::F16, {4, 8}));
  EXPECT_EQ(errorOf(ri), path + " holds f16 data, tensor x is f32");
  ri.in.clear();
  ri.in["w"] = path;
  EXPECT_EQ(errorOf(ri), "--in w=" + path + ": tensor w is param, not input");
  ri.in.clear();
  ri.out["q"] = "q.npy";
  EXPECT_EQ(errorOf(ri), "--out q=q.npy: the module has no tensor named 'q'");
  ri.out.clear();
  ri.weights.push_back(path);
  EXPECT_EQ(errorOf(ri), path + ": the .safetensors header length 379676406402707 is above the 100 MB limit");
  std::remove(path.c_str());
  EXPECT_THROW(splitAssignment("x", "--in"), std::runtime_error);
  EXPECT_EQ(splitAssignment("a=b=c", "--in"), (std::pair<std::string, std::string>{"a", "b=c"}));
}

TEST(EtcRunHost, ComparisonUsesBenchmarkTolerances) {
  auto f32 = [](std::vector<double> v) { return etc::interp::makeTensor(DType::F32, {int64_t(v.size())}, v); };
  Comparison c = compareOutput("y", f32({1, 2, 3}), f32({1, 2, 3}));
  EXPECT_TRUE(c.ok);
  EXPECT_EQ(c.line, "y: f32 [3] rel L2 0 (tolerance 1e-05) ok");
  c = compareOutput("y", f32({1, 2, 3.001}), f32({1, 2, 3}));
  EXPECT_FALSE(c.ok);
  EXPECT_NEAR(c.error, 0.001 / std::sqrt(14.0), 1e-7);
  c = compareOutput("y", f32({1, std::nan(""), 3}), f32({1, 2, 3}));
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.line, "y: f32 [3] rel L2 0 (tolerance 1e-05), 1 NaN or inf mismatches FAIL");
  c = compareOutput("y", f32({0, 0}), f32({0, 0}));
  EXPECT_TRUE(c.ok);
  EXPECT_EQ(c.line, "y: f32 [2] abs (the reference is 0) L2 0 (tolerance 1e-05) ok");
  auto bf = [](std::vector<double> v) { return etc::interp::makeTensor(DType::BF16, {int64_t(v.size())}, v); };
  c = compareOutput("y", bf({1, 2, 3.01}), bf({1, 2, 3}));
  EXPECT_TRUE(c.ok) << c.line;
  EXPECT_EQ(c.tolerance, 2e-2);
  auto i32 = [](std::vector<int64_t> v) { return etc::interp::makeIntTensor(DType::I32, {int64_t(v.size())}, v); };
  c = compareOutput("n", i32({1, 2, 4}), i32({1, 2, 3}));
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.line, "n: i32 [3] 1 of 3 elements differ (exact match needed) FAIL");
  c = compareOutput("y", f32({1, 2}), f32({1, 2, 3}));
  EXPECT_EQ(c.line, "y: f32 [3] FAIL: the result is f32 [2]");
}

}  // namespace
