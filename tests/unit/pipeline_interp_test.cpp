// The passes and the reference interpreter together: op-level modules are lowered, given their
// events and scheduled by the real pipeline, then interpreted; the results are compared with an
// independent computation written here in plain loops. A wrong tile, a missing dependency or a
// wrong event count shows up as a wrong value or an interpreter error.

#include <gtest/gtest.h>

#include <algorithm>
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
  std::ifstream in(std::filesystem::path(ETC_SOURCE_DIR) / "samples" / name);
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

// fuse-gated-matmul: the gated matmul gives the bits of the matmuls and the silu_mul it
// replaces (the products rounded to bf16 first), with separate weights and with a merged one
// whose row ranges it takes; ragged column tiles (I = 100) and the symbolic rows.
TEST(PipelineInterp, GatedMatmulGivesTheBitsOfItsThreeOps) {
  const std::string text = R"(
module @gated
sym B in [1, 40]
const H = 72
const I = 100
tensor x : bf16[B, H] input
tensor wg : bf16[I, H] param
tensor wu : bf16[I, H] param
tensor wgu : bf16[2 * I, H] param
tensor y1 : bf16[B, I] output
tensor y2 : bf16[B, I] output
graph @main {
  g = matmul(x, wg) { transpose_b }
  u = matmul(x, wu) { transpose_b }
  y1 = silu_mul(g, u)
  gu = matmul(x, wgu) { transpose_b }
  y2 = silu_mul(gu[:, 0:I], gu[:, I : 2 * I])
}
)";
  auto fused = compile(text);
  ASSERT_TRUE(fused->module);
  for (const ir::Task& t : fused->module->tasks)
    for (const ir::TaskStmt& st : t.body)
      if (const auto* c = std::get_if<ir::CallStmt>(&st)) {
        EXPECT_EQ(c->call.op, "matmul") << t.name;
        EXPECT_EQ(c->call.args.size(), 3u) << t.name;
      }
  auto plain = std::make_unique<Compiled>();
  plain->diags.setCollect(true);
  plain->module = parseAndVerifyBuffer(plain->sources.addBuffer("test.etir", text), LoadOptions{}, plain->sources,
                                       plain->diags);
  ASSERT_TRUE(plain->module);
  PipelineOptions no_fusion;
  no_fusion.gated_matmul = false;
  plain->module = runPipeline(std::move(plain->module), no_fusion, plain->diags);
  ASSERT_TRUE(plain->module);
  const int64_t h = 72, i = 100;
  for (int64_t b : {1, 17, 40}) {
    auto inputs = [&] {
      TensorMap t;
      t["x"] = interp::makeTensor(ir::DType::BF16, {b, h}, randomValues(b * h, 11));
      t["wg"] = interp::makeTensor(ir::DType::BF16, {i, h}, randomValues(i * h, 12));
      t["wu"] = interp::makeTensor(ir::DType::BF16, {i, h}, randomValues(i * h, 13));
      std::vector<double> wgu = randomValues(i * h, 12), wu = randomValues(i * h, 13);
      wgu.insert(wgu.end(), wu.begin(), wu.end());
      t["wgu"] = interp::makeTensor(ir::DType::BF16, {2 * i, h}, wgu);
      return t;
    };
    TensorMap a = inputs(), p = inputs();
    interp::RunResult ra = interp::run(*fused->module, "main", {{"B", b}}, a);
    interp::RunResult rp = interp::run(*plain->module, "main", {{"B", b}}, p);
    ASSERT_TRUE(ra.ok) << ra.error;
    ASSERT_TRUE(rp.ok) << rp.error;
    for (const char* y : {"y1", "y2"}) {
      const std::vector<double> got = interp::toDoubles(a.at(y)), want = interp::toDoubles(p.at(y));
      EXPECT_EQ(got, want) << y << " at B = " << b;
      EXPECT_GT(std::count_if(want.begin(), want.end(), [](double v) { return v != 0.0; }), 0) << y;
    }
    // The same weights, separate or merged: the two forms agree too.
    EXPECT_EQ(interp::toDoubles(a.at("y1")), interp::toDoubles(a.at("y2"))) << "B = " << b;
  }
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

// ---- mixture of experts ------------------------------------------------------------------------

// Sizes of an MoE block: hidden h, e experts, top k, expert MLP size i.
struct MoeShape {
  int64_t h, e, k, i;
  bool renormalize;
  bool split_weights;  // w_gate and w_up as two tensors (the six-operand grouped_matmul)
};

struct MoeWeights {
  std::vector<double> ln, wr, w13, w2;  // w13: [E, 2I, H] (gate rows, then up rows); w2: [E, H, I]
};

// Inputs that route unevenly: every x row and the router rows of the first few experts share a
// direction u, so those experts win for every token (in an order that varies with the token's
// own part), and the others - most of them - get no token at all.
std::vector<double> moeInput(int64_t t, const MoeShape& s, uint32_t seed) {
  std::vector<double> x = randomValues(t * s.h, seed);
  for (int64_t r = 0; r < t; ++r)
    for (int64_t c = 0; c < s.h; ++c) x[r * s.h + c] = 0.5 * x[r * s.h + c] + (c % 2 ? 1.0 : -1.0);
  return rounded(ir::DType::BF16, x);
}

MoeWeights moeWeights(const MoeShape& s) {
  MoeWeights w;
  w.ln = rounded(ir::DType::BF16, randomValues(s.h, 11));
  for (double& v : w.ln) v = 1.0 + 0.25 * v;  // positive: the shared direction survives rmsnorm
  w.ln = rounded(ir::DType::BF16, w.ln);
  w.wr = randomValues(s.e * s.h, 12);
  const int64_t favoured = s.k + 2;  // experts that share the inputs' direction
  for (int64_t e = 0; e < s.e; ++e)
    for (int64_t c = 0; c < s.h; ++c) {
      double u = c % 2 ? 1.0 : -1.0;
      w.wr[e * s.h + c] = 0.3 * w.wr[e * s.h + c] + (e < favoured ? 0.2 * u * (1.0 + 0.05 * e) : -0.2 * u);
    }
  w.wr = rounded(ir::DType::BF16, w.wr);
  w.w13 = rounded(ir::DType::BF16, randomValues(s.e * 2 * s.i * s.h, 13));
  w.w2 = rounded(ir::DType::BF16, randomValues(s.e * s.h * s.i, 14));
  for (double& v : w.w13) v *= 0.25;
  for (double& v : w.w2) v *= 0.25;
  w.w13 = rounded(ir::DType::BF16, w.w13);
  w.w2 = rounded(ir::DType::BF16, w.w2);
  return w;
}

struct MoeReference {
  std::vector<double> y;
  std::vector<int64_t> ids;  // [T, K]
  int64_t blocks = 0;        // what moe_align must report
  int64_t experts_used = 0;
  int64_t most_rows = 0;     // rows of the busiest expert
};

// The block in plain loops, token by token and choice by choice (no sorting, no blocks), every
// stored intermediate rounded as the op-level program stores it: h, act, down, moe, y in bf16,
// logits and the routing weights in f32.
MoeReference moeReference(int64_t t, const MoeShape& s, const std::vector<double>& x, const MoeWeights& w,
                          int64_t block) {
  auto bf = [](std::vector<double> v) { return rounded(ir::DType::BF16, v); };
  std::vector<double> hn(t * s.h), logits(t * s.e), act(t * s.k * s.i), down(t * s.k * s.h), moe(t * s.h, 0.0);
  MoeReference ref;
  for (int64_t r = 0; r < t; ++r) {
    double ss = 0;
    for (int64_t c = 0; c < s.h; ++c) ss += x[r * s.h + c] * x[r * s.h + c];
    double inv = 1.0 / std::sqrt(ss / s.h + 1e-6);
    for (int64_t c = 0; c < s.h; ++c) hn[r * s.h + c] = x[r * s.h + c] * inv * w.ln[c];
  }
  hn = bf(hn);
  for (int64_t r = 0; r < t; ++r)
    for (int64_t e = 0; e < s.e; ++e) {
      double a = 0;
      for (int64_t c = 0; c < s.h; ++c) a += hn[r * s.h + c] * w.wr[e * s.h + c];
      logits[r * s.e + e] = a;
    }
  logits = rounded(ir::DType::F32, logits);
  std::vector<double> topw(t * s.k);
  ref.ids.resize(t * s.k);
  std::vector<int64_t> per_expert(s.e, 0);
  for (int64_t r = 0; r < t; ++r) {
    double mx = -INFINITY, sum = 0;
    for (int64_t e = 0; e < s.e; ++e) mx = std::max(mx, logits[r * s.e + e]);
    std::vector<double> p(s.e);
    for (int64_t e = 0; e < s.e; ++e) sum += p[e] = std::exp(logits[r * s.e + e] - mx);
    std::vector<bool> taken(s.e, false);
    double chosen = 0;
    for (int64_t j = 0; j < s.k; ++j) {  // the largest remaining, lowest index on ties
      int64_t best = -1;
      for (int64_t e = 0; e < s.e; ++e)
        if (!taken[e] && (best < 0 || p[e] > p[best])) best = e;
      taken[best] = true;
      ref.ids[r * s.k + j] = best;
      ++per_expert[best];
      chosen += p[best] / sum;
    }
    for (int64_t j = 0; j < s.k; ++j) {
      double pj = p[ref.ids[r * s.k + j]] / sum;
      topw[r * s.k + j] = s.renormalize ? pj / chosen : pj;
    }
  }
  topw = rounded(ir::DType::F32, topw);
  for (int64_t e = 0; e < s.e; ++e) {
    ref.blocks += (per_expert[e] + block - 1) / block;
    ref.experts_used += per_expert[e] > 0;
    ref.most_rows = std::max(ref.most_rows, per_expert[e]);
  }
  for (int64_t r = 0; r < t; ++r)
    for (int64_t j = 0; j < s.k; ++j) {
      const int64_t e = ref.ids[r * s.k + j], row = r * s.k + j;
      for (int64_t n = 0; n < s.i; ++n) {
        double g = 0, u = 0;
        for (int64_t c = 0; c < s.h; ++c) {
          g += hn[r * s.h + c] * w.w13[(e * 2 * s.i + n) * s.h + c];
          u += hn[r * s.h + c] * w.w13[(e * 2 * s.i + s.i + n) * s.h + c];
        }
        act[row * s.i + n] = g / (1 + std::exp(-g)) * u;
      }
    }
  act = bf(act);
  for (int64_t row = 0; row < t * s.k; ++row) {
    const int64_t e = ref.ids[row];
    for (int64_t n = 0; n < s.h; ++n) {
      double a = 0;
      for (int64_t c = 0; c < s.i; ++c) a += act[row * s.i + c] * w.w2[(e * s.h + n) * s.i + c];
      down[row * s.h + n] = a;
    }
  }
  down = bf(down);
  for (int64_t r = 0; r < t; ++r)
    for (int64_t j = 0; j < s.k; ++j)
      for (int64_t n = 0; n < s.h; ++n) moe[r * s.h + n] += topw[r * s.k + j] * down[(r * s.k + j) * s.h + n];
  moe = bf(moe);
  ref.y.resize(t * s.h);
  for (size_t c = 0; c < moe.size(); ++c) ref.y[c] = x[c] + moe[c];
  ref.y = bf(ref.y);
  return ref;
}

void checkMoe(const ir::Module& m, const MoeShape& s, int64_t t, int64_t block) {
  SCOPED_TRACE("T = " + std::to_string(t));
  MoeWeights w = moeWeights(s);
  std::vector<double> x = moeInput(t, s, 10 + static_cast<uint32_t>(t));
  TensorMap tm;
  tm["x"] = interp::makeTensor(ir::DType::BF16, {t, s.h}, x);
  tm["ln"] = interp::makeTensor(ir::DType::BF16, {s.h}, w.ln);
  tm["w_router"] = interp::makeTensor(ir::DType::BF16, {s.e, s.h}, w.wr);
  if (s.split_weights) {
    std::vector<double> gate, up;
    for (int64_t e = 0; e < s.e; ++e) {
      auto at = w.w13.begin() + e * 2 * s.i * s.h;
      gate.insert(gate.end(), at, at + s.i * s.h);
      up.insert(up.end(), at + s.i * s.h, at + 2 * s.i * s.h);
    }
    tm["w_gate"] = interp::makeTensor(ir::DType::BF16, {s.e, s.i, s.h}, gate);
    tm["w_up"] = interp::makeTensor(ir::DType::BF16, {s.e, s.i, s.h}, up);
  } else {
    tm["w13"] = interp::makeTensor(ir::DType::BF16, {s.e, 2 * s.i, s.h}, w.w13);
  }
  tm["w2"] = interp::makeTensor(ir::DType::BF16, {s.e, s.h, s.i}, w.w2);
  interp::RunResult r = interp::run(m, "main", {{"T", t}}, tm);
  ASSERT_TRUE(r.ok) << r.error;
  MoeReference ref = moeReference(t, s, x, w, block);
  // The routing is as uneven as intended: few experts used, the busiest with half the tokens
  // or more (several blocks of it at T = 33).
  EXPECT_LE(ref.experts_used, s.k + 2);
  EXPECT_GE(2 * ref.most_rows, t);
  std::vector<int64_t> ids = interp::toInts(tm.at("topi"));
  EXPECT_EQ(ids, ref.ids);
  EXPECT_EQ(interp::toInts(tm.at("nblk")), std::vector<int64_t>{ref.blocks});
  // Same roundings on both sides; only summation order differs (bf16 ties may round apart).
  EXPECT_LT(relativeL2(interp::toDoubles(tm.at("y")), ref.y), 2e-3);
  std::vector<double> moe_got(t * s.h), moe_want(t * s.h);
  std::vector<double> y = interp::toDoubles(tm.at("y"));
  for (size_t c = 0; c < y.size(); ++c) {
    moe_got[c] = y[c] - x[c];
    moe_want[c] = ref.y[c] - x[c];
  }
  EXPECT_LT(relativeL2(moe_got, moe_want), 3e-2);  // the MoE part alone, through y's bf16 rounding
}

// The sample with its hidden, expert and MLP sizes reduced (the structure, top-8, block 16 and
// the T range as written): the full weights (1.2 GB) are too large for a unit test.
TEST(PipelineInterp, MoeBlockSampleMatchesAnIndependentComputation) {
  std::string text = sample("moe_block.etir");
  ASSERT_FALSE(text.empty());
  auto full = compile(text);  // the sample itself goes through the pipeline
  ASSERT_TRUE(full->module);
  auto replace = [&](const std::string& from, const std::string& to) {
    size_t at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
  };
  replace("const H = 2048", "const H = 64");
  replace("const E = 128", "const E = 32");
  replace("const I = 768", "const I = 40");
  auto c = compile(text);
  ASSERT_TRUE(c->module);
  MoeShape s{64, 32, 8, 40, true, false};
  for (int64_t t : {1, 2, 8, 33}) checkMoe(*c->module, s, t, 16);
}

// A small block in another configuration: top-2 of 6 experts, blocks of 4, separate gate and up
// weights (the six-operand grouped_matmul at the op level), weights not renormalized, ragged sizes.
TEST(PipelineInterp, SmallMoeWithSplitWeights) {
  auto c = compile(R"(
module @moe_small
sym T in [1, 40]
const H = 40
const E = 6
const I = 20
tensor x : bf16[T, H] input
tensor ln : bf16[H] param
tensor w_router : bf16[E, H] param
tensor w_gate : bf16[E, I, H] param
tensor w_up : bf16[E, I, H] param
tensor w2 : bf16[E, H, I] param
tensor logits : f32[T, E] temp
tensor y : bf16[T, H] output
graph @main {
  h = rmsnorm(x, ln) { eps = 1e-6 }
  logits = matmul(h, w_router) { transpose_b }
  topw, topi = topk_softmax(logits) { k = 2, renormalize = false }
  sorted, bexp, nblk = moe_align(topi) { num_experts = E, block = 4 }
  act = grouped_matmul(h, w_gate, sorted, bexp, nblk, w_up) { top_k = 2, block = 4, act = "silu_mul" }
  down = grouped_matmul(act, w2, sorted, bexp, nblk) { block = 4 }
  moe = moe_combine(down, topw)
  y = add(x, moe)
}
)");
  ASSERT_TRUE(c->module);
  MoeShape s{40, 6, 2, 20, false, true};
  for (int64_t t : {1, 2, 8, 33}) checkMoe(*c->module, s, t, 4);
}

}  // namespace
}  // namespace etc
