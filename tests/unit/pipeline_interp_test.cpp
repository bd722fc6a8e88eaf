// The passes and the reference interpreter together: op-level modules are lowered, given their
// events and scheduled by the real pipeline, then interpreted; the results are compared with an
// independent computation written here in plain loops. A wrong tile, a missing dependency or a
// wrong event count shows up as a wrong value or an interpreter error.

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "compiler/frontend/frontend.h"
#include "compiler/interp/interpreter.h"
#include "compiler/passes/pipeline.h"

namespace etc {
namespace {

using interp::HostTensor;
using interp::TensorMap;

struct Compiled {
  SourceManager sources;
  DiagnosticEngine diags{sources};
  std::unique_ptr<ir::Module> module;
};

std::unique_ptr<Compiled> compile(std::string text) {
  auto c = std::make_unique<Compiled>();
  c->diags.setCollect(true);
  uint32_t id = c->sources.addBuffer("test.etir", std::move(text));
  c->module = parseAndVerifyBuffer(id, LoadOptions{}, c->sources, c->diags);
  if (c->module) c->module = runPipeline(std::move(c->module), PipelineOptions{}, c->diags);
  std::string errors;
  for (const Diagnostic& d : c->diags.collected()) errors += c->diags.render(d);
  EXPECT_TRUE(c->module) << errors;
  return c;
}

std::string sample(const std::string& name) {
  std::ifstream in(std::filesystem::path(__FILE__).parent_path() / ".." / ".." / "samples" / name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<double> randomValues(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> d(-1.0, 1.0);
  std::vector<double> v(n);
  for (double& x : v) x = d(gen);
  return v;
}

// The values a tensor of `dtype` holds for `v` (what the interpreter reads back).
std::vector<double> rounded(ir::DType dtype, const std::vector<double>& v) {
  return interp::toDoubles(interp::makeTensor(dtype, {static_cast<int64_t>(v.size())}, v));
}

double relativeL2(const std::vector<double>& got, const std::vector<double>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    num += (got[i] - want[i]) * (got[i] - want[i]);
    den += want[i] * want[i];
  }
  return std::sqrt(num / den);
}

// rmsnorm -> x @ w_gu^T -> silu(gate) * up -> act @ w_down^T -> + x, every intermediate rounded
// to bf16 as the op-level program stores it.
std::vector<double> mlpReference(int64_t b, int64_t h, int64_t i, const std::vector<double>& x,
                                 const std::vector<double>& ln, const std::vector<double>& wgu,
                                 const std::vector<double>& wd) {
  auto bf = [](std::vector<double> v) { return rounded(ir::DType::BF16, v); };
  std::vector<double> hn(b * h), gu(b * 2 * i), act(b * i), down(b * h), y(b * h);
  for (int64_t r = 0; r < b; ++r) {
    double ss = 0;
    for (int64_t k = 0; k < h; ++k) ss += x[r * h + k] * x[r * h + k];
    double inv = 1.0 / std::sqrt(ss / h + 1e-5);
    for (int64_t k = 0; k < h; ++k) hn[r * h + k] = x[r * h + k] * inv * ln[k];
  }
  hn = bf(hn);
  for (int64_t r = 0; r < b; ++r)
    for (int64_t n = 0; n < 2 * i; ++n) {
      double s = 0;
      for (int64_t k = 0; k < h; ++k) s += hn[r * h + k] * wgu[n * h + k];
      gu[r * 2 * i + n] = s;
    }
  gu = bf(gu);
  for (int64_t r = 0; r < b; ++r)
    for (int64_t n = 0; n < i; ++n) {
      double g = gu[r * 2 * i + n], u = gu[r * 2 * i + i + n];
      act[r * i + n] = g / (1 + std::exp(-g)) * u;
    }
  act = bf(act);
  for (int64_t r = 0; r < b; ++r)
    for (int64_t n = 0; n < h; ++n) {
      double s = 0;
      for (int64_t k = 0; k < i; ++k) s += act[r * i + k] * wd[n * i + k];
      down[r * h + n] = s;
    }
  down = bf(down);
  for (size_t k = 0; k < y.size(); ++k) y[k] = x[k] + down[k];
  return bf(y);
}

void checkMlp(const ir::Module& m, int64_t b, int64_t h, int64_t i) {
  std::vector<double> x = rounded(ir::DType::BF16, randomValues(b * h, 1));
  std::vector<double> ln = rounded(ir::DType::BF16, randomValues(h, 2));
  std::vector<double> wgu = rounded(ir::DType::BF16, randomValues(2 * i * h, 3));
  std::vector<double> wd = rounded(ir::DType::BF16, randomValues(h * i, 4));
  TensorMap t;
  t["x"] = interp::makeTensor(ir::DType::BF16, {b, h}, x);
  t["ln"] = interp::makeTensor(ir::DType::BF16, {h}, ln);
  t["w_gate_up"] = interp::makeTensor(ir::DType::BF16, {2 * i, h}, wgu);
  t["w_down"] = interp::makeTensor(ir::DType::BF16, {h, i}, wd);
  interp::RunResult r = interp::run(m, "main", {{"B", b}}, t);
  ASSERT_TRUE(r.ok) << r.error;
  std::vector<double> want = mlpReference(b, h, i, x, ln, wgu, wd);
  // Both sides round every intermediate to bf16; the only difference is where a sum of split-K
  // parts is rounded, so the results agree far inside the bf16 tolerance.
  EXPECT_LT(relativeL2(interp::toDoubles(t.at("y")), want), 2e-3) << "B = " << b;
}

TEST(PipelineInterp, MlpSampleMatchesAnIndependentComputation) {
  auto c = compile(sample("mlp.etir"));
  ASSERT_TRUE(c->module);
  checkMlp(*c->module, 2, 2048, 8192);  // the sample at its full size: one batch size keeps CI fast
}

// A small MLP with tile sizes and split-K written as attributes: ragged tiles everywhere.
TEST(PipelineInterp, SmallMlpWithExplicitTilesAndSplitK) {
  auto c = compile(R"(
module @mlp
sym B in [1, 40]
const H = 72
const I = 100
tensor x : bf16[B, H] input
tensor ln : bf16[H] param
tensor w_gate_up : bf16[2 * I, H] param
tensor w_down : bf16[H, I] param
tensor y : bf16[B, H] output
graph @main {
  h = rmsnorm(x, ln) { eps = 1e-5 }
  gate_up = matmul(h, w_gate_up) { transpose_b, tile_m = 16, tile_n = 32, tile_k = 16 }
  act = silu_mul(gate_up[:, 0:I], gate_up[:, I : 2 * I])
  down = matmul(act, w_down) { transpose_b, tile_m = 8, tile_n = 16, tile_k = 16, split_k = 3 }
  y = add(x, down)
}
)");
  ASSERT_TRUE(c->module);
  for (int64_t b : {1, 7, 16, 17, 40}) checkMlp(*c->module, b, 72, 100);
}

// The element-wise chain of the pass goldens: exact in f32 (no accumulation in the chain).
TEST(PipelineInterp, ElementwiseChainAndReduction) {
  auto c = compile(R"(
module @chain
sym N in [1, 100000]
tensor a : f32[N] input
tensor b : f32[N] input
tensor y : f32[N] output
tensor s : f32[] output
graph @main {
  t = add(a, b)
  u = mul(t, a)
  y = copy(u)
  s = reduce_sum(u)
}
)");
  ASSERT_TRUE(c->module);
  for (int64_t n : {1, 4095, 4096, 4097, 20000}) {
    std::vector<double> a = rounded(ir::DType::F32, randomValues(n, 5)), b = rounded(ir::DType::F32, randomValues(n, 6));
    TensorMap t;
    t["a"] = interp::makeTensor(ir::DType::F32, {n}, a);
    t["b"] = interp::makeTensor(ir::DType::F32, {n}, b);
    interp::RunResult r = interp::run(*c->module, "main", {{"N", n}}, t);
    ASSERT_TRUE(r.ok) << r.error;
    std::vector<double> u(n);
    double s = 0;
    for (int64_t k = 0; k < n; ++k) {
      u[k] = static_cast<float>(static_cast<float>(a[k] + b[k]) * a[k]);
      s += u[k];
    }
    EXPECT_EQ(interp::toDoubles(t.at("y")), u) << "N = " << n;
    EXPECT_NEAR(interp::toDoubles(t.at("s"))[0], s, 1e-6 * std::max(1.0, std::abs(s))) << "N = " << n;
  }
}

}  // namespace
}  // namespace etc
