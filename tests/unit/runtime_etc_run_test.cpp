// etc-run's host-side helpers: random inputs, input gathering and its errors, comparisons.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
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

// Large tensors fill in parallel chunks of 2^22 values: every value is written, and it is the
// value a small tensor of the same seed and name has at that index (no dependence on the split).
TEST(EtcRunHost, RandomTensorsOfAnySizeAgreeElementByElement) {
  const int64_t big = (int64_t{1} << 23) + 12345;  // three chunks, the last one partial
  auto large = etc::interp::toDoubles(randomTensor(DType::F32, {big}, 5, "w"));
  auto small = etc::interp::toDoubles(randomTensor(DType::F32, {1000}, 5, "w"));
  ASSERT_EQ(large.size(), static_cast<size_t>(big));
  EXPECT_TRUE(std::equal(small.begin(), small.end(), large.begin()));
  int64_t zeros = 0, off_range = 0;
  double sum = 0;
  for (double v : large) {
    zeros += v == 0.0;
    off_range += v < -1.0 || v >= 1.0;
    sum += v;
  }
  EXPECT_EQ(zeros, 0);
  EXPECT_EQ(off_range, 0);
  EXPECT_LT(std::abs(sum / static_cast<double>(big)), 1e-3);  // uniform in [-1, 1): mean ~0
  auto tail = etc::interp::toDoubles(randomTensor(DType::F32, {big - 1}, 5, "w"));
  EXPECT_TRUE(std::equal(tail.begin(), tail.end(), large.begin()));
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

// A .safetensors file of bf16 [8, 8] entries named `names` (entry k holds k everywhere).
void writeWeights(const std::string& path, const std::vector<std::string>& names) {
  std::string header = "{";
  for (size_t k = 0; k < names.size(); ++k)
    header += (k ? "," : "") + ("\"" + names[k] + "\": {\"dtype\": \"BF16\", \"shape\": [8, 8], \"data_offsets\": [") +
              std::to_string(k * 128) + ", " + std::to_string(k * 128 + 128) + "]}";
  header += "}";
  std::FILE* f = std::fopen(path.c_str(), "wb");
  uint64_t n = header.size();
  std::fwrite(&n, 8, 1, f);
  std::fwrite(header.data(), 1, header.size(), f);
  for (size_t k = 0; k < names.size(); ++k) {
    std::vector<uint16_t> v(64);
    const float x = static_cast<float>(k);
    uint32_t bits;
    std::memcpy(&bits, &x, 4);
    std::fill(v.begin(), v.end(), static_cast<uint16_t>(bits >> 16));
    std::fwrite(v.data(), 2, v.size(), f);
  }
  std::fclose(f);
}

TEST(EtcRunHost, ParamsBindToDottedSafetensorsNames) {
  std::vector<TensorSpec> sp = {{"model_norm_weight", DType::BF16, "param", {8, 8}, {"8", "8"}},
                                {"w", DType::BF16, "param", {8, 8}, {"8", "8"}}};
  const std::string path = ::testing::TempDir() + "/etc_run_dotted.safetensors";
  RunInputs ri;
  ri.weights.push_back(path);
  // '.' in the file reads as '_' in the module; an exact name is taken as it is.
  writeWeights(path, {"other", "model.norm.weight", "w"});
  etc::interp::TensorMap m = gatherInputs(sp, ri);
  EXPECT_EQ(etc::interp::toDoubles(m["model_norm_weight"])[0], 1.0);
  EXPECT_EQ(etc::interp::toDoubles(m["w"])[0], 2.0);
  // The exact name wins over a dotted one.
  writeWeights(path, {"model.norm.weight", "model_norm_weight", "w"});
  EXPECT_EQ(etc::interp::toDoubles(gatherInputs(sp, ri)["model_norm_weight"])[0], 1.0);
  // Two dotted names that read the same: an error naming both.
  writeWeights(path, {"model.norm.weight", "model.norm_weight", "w"});
  try {
    gatherInputs(sp, ri);
    ADD_FAILURE() << "ambiguous names accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "param model_norm_weight matches several --weights entries ('model.norm.weight', "
                                     "'model.norm_weight'): name one exactly");
  }
  // A name that matches nothing is still missing.
  writeWeights(path, {"model.norm.bias", "w"});
  try {
    gatherInputs(sp, ri);
    ADD_FAILURE() << "missing param accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "param model_norm_weight is in none of the --weights files (and no --param gives it)");
  }
  std::remove(path.c_str());
}

TEST(EtcRunHost, RandomOutputsStartFromTheSeed) {
  RunInputs ri;
  EXPECT_EQ(gatherInputs(specs(), ri).count("y"), 0u);  // zeros by default (initialOutput)
  EXPECT_EQ(etc::interp::toDoubles(initialOutput(specs()[3], gatherInputs(specs(), ri)))[0], 0.0);
  ri.random_outputs = true;
  etc::interp::TensorMap m = gatherInputs(specs(), ri);
  ASSERT_EQ(m.count("y"), 1u);
  EXPECT_EQ(m["y"].bytes, randomTensor(DType::F32, {4, 8}, 0, "y").bytes);
  EXPECT_EQ(initialOutput(specs()[3], m).bytes, m["y"].bytes);
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

// --argmax-of: a token that differs passes only where the reference's scores tie it with their
// maximum to one ulp of the scores' dtype (bf16 at 32: 0.25).
TEST(EtcRunHost, ArgmaxDifferencesPassOnlyAtNearTies) {
  auto i32 = [](std::vector<int64_t> v) { return etc::interp::makeIntTensor(DType::I32, {int64_t(v.size())}, v); };
  // Two rows of three scores: row 0's top two one bf16 ulp apart, row 1's two ulps apart.
  const auto scores = etc::interp::makeTensor(DType::BF16, {2, 3}, {32.5, 32.75, 1.0, 33.0, 32.5, 1.0});
  Comparison c = compareOutput("t", i32({0, 0}), i32({1, 0}), &scores, "logits");
  EXPECT_TRUE(c.ok) << c.line;
  EXPECT_EQ(c.line, "t: i32 [2] 1 of 2 elements differ, 0 of them not a near-tie of logits (within one ulp of the "
                    "reference's maximum) ok");
  c = compareOutput("t", i32({1, 1}), i32({1, 0}), &scores, "logits");
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.line, "t: i32 [2] 1 of 2 elements differ, 1 of them not a near-tie of logits (within one ulp of the "
                    "reference's maximum) FAIL");
  // An index outside the scores never passes; equal tokens are not compared with the scores.
  EXPECT_FALSE(compareOutput("t", i32({3, 0}), i32({1, 0}), &scores, "logits").ok);
  EXPECT_FALSE(compareOutput("t", i32({-1, 0}), i32({1, 0}), &scores, "logits").ok);
  c = compareOutput("t", i32({1, 0}), i32({1, 0}), &scores, "logits");
  EXPECT_EQ(c.line, "t: i32 [2] 0 of 2 elements differ ok");
  // f32 scores: one f32 ulp at 32 is 2^-18.
  const auto f = etc::interp::makeTensor(DType::F32, {1, 2}, {32.0, 32.0 + std::ldexp(1.0, -18)});
  EXPECT_TRUE(compareOutput("t", i32({0}), i32({1}), &f, "s").ok);
  const auto f2 = etc::interp::makeTensor(DType::F32, {1, 2}, {32.0, 32.0 + std::ldexp(1.0, -17)});
  EXPECT_FALSE(compareOutput("t", i32({0}), i32({1}), &f2, "s").ok);
}

TEST(EtcRunHost, ArgmaxOfNamesTwoOutputsOfMatchingShapes) {
  std::vector<TensorSpec> sp = {{"x", DType::F32, "input", {4, 8}, {"B", "8"}},
                                {"logits", DType::BF16, "output", {4, 8}, {"B", "V"}},
                                {"tok", DType::I32, "output", {4}, {"B"}},
                                {"short", DType::BF16, "output", {3, 8}, {"3", "V"}}};
  auto err = [&](const std::string& out, const std::string& scores) {
    RunInputs ri;
    ri.argmax_of[out] = scores;
    try {
      gatherInputs(sp, ri);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("(ok)");
  };
  EXPECT_EQ(err("tok", "logits"), "(ok)");
  EXPECT_EQ(err("q", "logits"), "--argmax-of q=logits: the module has no tensor named 'q'");
  EXPECT_EQ(err("x", "logits"), "--argmax-of x=logits: tensor x is input, not output");
  EXPECT_EQ(err("tok", "zz"), "--argmax-of tok=zz: the module has no tensor named 'zz'");
  EXPECT_EQ(err("tok", "x"), "--argmax-of tok=x: tensor x is input, not output");
  EXPECT_EQ(err("logits", "tok"), "--argmax-of logits=tok: logits is bf16, not an integer");
  EXPECT_EQ(err("tok", "tok"), "--argmax-of tok=tok: tok is i32, not a float");
  EXPECT_EQ(err("tok", "short"), "--argmax-of tok=short: short [3, 8] is not tok [4] plus a last axis");
}

}  // namespace
