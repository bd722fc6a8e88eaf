// Which merged tasks etcc emits as one fused row chain (compiler/backend/fused_rows.h): the
// decode step's norm (reduce_sum + add_rmsnorm) and its q/k/v chain (reduce_sum x 3, the
// optional per-head q/k rmsnorm, rope, kv_append), and only where the values passed along the
// chain are temps that nothing else reads, written and read as the same elements.

#include "compiler/backend/fused_rows.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "compiler/frontend/frontend.h"
#include "tests/unit/parsed_module.h"

namespace etc {
namespace {

using backend::FusedRows;
using backend::matchFusedRows;

using Parsed = test::ParsedModule;

std::unique_ptr<Parsed> parse(std::string text) { return test::parseVerified(std::move(text)); }

std::optional<FusedRows> matchTask(const Parsed& p, const std::string& name) {
  for (const ir::Task& t : p.module->tasks)
    if (t.name == name) return matchFusedRows(*p.module, t);
  ADD_FAILURE() << "no task " << name;
  return std::nullopt;
}

// The norm of a decode layer; `extra` adds declarations and tasks, `t_role` is t's role.
std::string normModule(const std::string& extra = "", const std::string& t_role = "temp",
                       const std::string& t_read = "t[i : min(B, i + 1), :]") {
  return R"(module @fused
sym B in [1, 8]
const H = 256
tensor parts : f32[4, B, H] input
tensor res : f32[B, H] output
tensor w : bf16[H] param
tensor t : bf16[B, H] )" + t_role + R"(
tensor y : bf16[B, H] output
)" + extra + R"(
task @norm grid [B] (i) {
  reduce_sum(parts[:, i : min(B, i + 1), :]) { axis = 0 } -> t[i : min(B, i + 1), :]
  add_rmsnorm()" + t_read + R"(, res[i : min(B, i + 1), :], w) { eps = 1e-5 } -> y[i : min(B, i + 1), :], res[i : min(B, i + 1), :]
}
graph @main schedule static {
  run @norm
}
)";
}

TEST(FusedRows, NormChainOfReduceAndAddRmsnorm) {
  auto p = parse(normModule());
  std::optional<FusedRows> f = matchTask(*p, "norm");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->kind, FusedRows::Kind::ReduceAddRmsnorm);
  EXPECT_EQ(f->first, 0u);
  EXPECT_EQ(f->count, 2u);
  // Views: reduce_sum's parts (0) and t (1); add_rmsnorm's t (2), res (3), w (4), y (5), res (6).
  EXPECT_EQ(f->operands, (std::vector<int>{0, 1, 3, 4, 5, 6}));
  EXPECT_EQ(f->n, 256);
  EXPECT_DOUBLE_EQ(f->eps, 1e-5);
}

TEST(FusedRows, NormNotFusedWhereTheSumIsReadElsewhere) {
  auto p = parse(normModule("tensor z : f32[B, H] output\ntask @other grid [B] (i) {\n  cast(t[i, :]) -> z[i, :]\n}\n"));
  EXPECT_FALSE(matchTask(*p, "norm"));
}

TEST(FusedRows, NormNotFusedWhereTheSumIsAnOutput) {
  auto p = parse(normModule("", "output"));
  EXPECT_FALSE(matchTask(*p, "norm"));
}

TEST(FusedRows, NormNotFusedWhereTheNormReadsOtherElements) {
  // Row 0 for every task: not what task i's reduce_sum wrote.
  auto p = parse(normModule("", "temp", "t[0 : 1, :]"));
  EXPECT_FALSE(matchTask(*p, "norm"));
}

// The q/k/v chain of a decode layer with 4 query and 2 key/value heads of 64; with `norm`,
// Qwen3's per-head rmsnorm of q and k. `extra` adds declarations and tasks.
std::string qkvModule(bool norm, const std::string& extra = "") {
  std::string text = R"(module @fused
sym B in [1, 8]
const D = 64
const S = 128
tensor pos : i32[B] input
tensor q_part : f32[2, B, 256] input
tensor k_part : f32[2, B, 128] input
tensor v_part : f32[2, B, 128] input
tensor q_norm : bf16[D] param
tensor k_norm : bf16[D] param
tensor q : bf16[B, 256] temp
tensor k : bf16[B, 128] temp
tensor v : bf16[B, 128] temp
tensor qn : bf16[B, 256] temp
tensor kn : bf16[B, 128] temp
tensor qr : bf16[B, 256] output
tensor kr : bf16[B, 128] temp
tensor k_cache : bf16[B, S, 128] output
tensor v_cache : bf16[B, S, 128] output
)" + extra + R"(
task @qkv grid [B] (i) {
  reduce_sum(k_part[:, i : min(B, i + 1), :]) { axis = 0 } -> k[i : min(B, i + 1), :]
)";
  if (norm)
    text += "  rmsnorm(k[i : min(B, i + 1), :], k_norm) { eps = 1e-6, head_dim = D } -> kn[i : min(B, i + 1), :]\n";
  text += "  reduce_sum(q_part[:, i, :]) { axis = 0 } -> q[i, :]\n";
  if (norm) text += "  rmsnorm(q[i, :], q_norm) { eps = 1e-6, head_dim = D } -> qn[i, :]\n";
  text += norm ? "  rope(qn[i, :], kn[i, :], pos[i]) { head_dim = D, theta = 1000000.0 } -> qr[i, :], kr[i, :]\n"
               : "  rope(q[i, :], k[i, :], pos[i]) { head_dim = D, theta = 500000.0 } -> qr[i, :], kr[i, :]\n";
  text += R"(  reduce_sum(v_part[:, i, :]) { axis = 0 } -> v[i, :]
  kv_append(kr[i, :], v[i, :], pos[i]) -> k_cache[i, :, :], v_cache[i, :, :]
}
graph @main schedule static {
  run @qkv
}
)";
  return text;
}

TEST(FusedRows, QkvChainOfLlama) {
  auto p = parse(qkvModule(false));
  std::optional<FusedRows> f = matchTask(*p, "qkv");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->kind, FusedRows::Kind::QkvRopeAppend);
  EXPECT_EQ(f->count, 5u);
  // Views: reduce k (0, 1), reduce q (2, 3), rope (4 q, 5 k, 6 pos, 7 qr, 8 kr), reduce v
  // (9, 10), kv_append (11 kr, 12 v, 13 pos, 14 k_cache, 15 v_cache).
  EXPECT_EQ(f->operands, (std::vector<int>{2, 0, 9, -1, -1, 6, 7, 14, 15}));
  EXPECT_EQ(f->n, 256);
  EXPECT_EQ(f->nk, 128);
  EXPECT_EQ(f->head_dim, 64);
  EXPECT_EQ(f->parts, 2);
  EXPECT_EQ(f->temp, ir::DType::BF16);
  ASSERT_TRUE(f->rope);
  EXPECT_EQ(f->rope->call.op, "rope");
}

TEST(FusedRows, QkvChainOfQwen3WithPerHeadNorms) {
  auto p = parse(qkvModule(true));
  std::optional<FusedRows> f = matchTask(*p, "qkv");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->count, 7u);
  // Views: reduce k (0, 1), k norm (2 k, 3 weight, 4 kn), reduce q (5, 6), q norm (7, 8, 9),
  // rope (10 .. 14), reduce v (15, 16), kv_append (17 .. 21).
  EXPECT_EQ(f->operands, (std::vector<int>{5, 0, 15, 8, 3, 12, 13, 20, 21}));
  EXPECT_DOUBLE_EQ(f->eps, 1e-6);
}

TEST(FusedRows, QkvNotFusedWhereRotatedKIsReadElsewhere) {
  auto p = parse(qkvModule(false, "tensor z : bf16[B, 128] output\ntask @other grid [B] (i) {\n  cast(kr[i, :]) -> z[i, :]\n}\n"));
  EXPECT_FALSE(matchTask(*p, "qkv"));
}

TEST(FusedRows, QkvNotFusedWithMoreSplitKPartsThanRegistersHold) {
  std::string text = qkvModule(false);
  const std::string from = "q_part : f32[2, B, 256]", to = "q_part : f32[16, B, 256]";
  text.replace(text.find(from), from.size(), to);
  auto p = parse(text);
  EXPECT_FALSE(matchTask(*p, "qkv"));
}

// The q/k/v chain folded into attention tasks (fold-into-attention): task `name` over rows
// `row` (of its coordinates b, g) and cache head g runs the chain for its heads (2 query heads
// of 64 a cache head), then attends. Two such tasks write and read the same temps, each its own
// elements.
std::string foldedTask(const std::string& name, const std::string& grid, const std::string& row) {
  const std::string q = "g * 128 : g * 128 + 128", k = "g * 64 : g * 64 + 64";
  return "task @" + name + " grid " + grid + " (b, g) {\n" +
         "  reduce_sum(k_part[:, " + row + ", " + k + "]) { axis = 0 } -> k[" + row + ", " + k + "]\n" +
         "  reduce_sum(q_part[:, " + row + ", " + q + "]) { axis = 0 } -> q[" + row + ", " + q + "]\n" +
         "  rope(q[" + row + ", " + q + "], k[" + row + ", " + k + "], pos[" + row + "]) { head_dim = D, theta = 500000.0 } -> qr[" +
         row + ", " + q + "], kr[" + row + ", " + k + "]\n" +
         "  reduce_sum(v_part[:, " + row + ", " + k + "]) { axis = 0 } -> v[" + row + ", " + k + "]\n" +
         "  kv_append(kr[" + row + ", " + k + "], v[" + row + ", " + k + "], pos[" + row + "]) -> k_cache[" + row + ", :, " + k +
         "], v_cache[" + row + ", :, " + k + "]\n" +
         "  attention_decode(qr[" + row + ", " + q + "], k_cache[" + row + ", :, " + k + "], v_cache[" + row + ", :, " + k +
         "], lens[" + row + "]) { head_dim = D } -> o[" + row + ", " + q + "]\n}\n";
}

std::string foldedModule(const std::string& extra) {
  return R"(module @fused
sym B in [1, 8]
const D = 64
const S = 128
tensor pos : i32[B] input
tensor lens : i32[B] input
tensor q_part : f32[2, B, 256] input
tensor k_part : f32[2, B, 128] input
tensor v_part : f32[2, B, 128] input
tensor q : bf16[B, 256] temp
tensor k : bf16[B, 128] temp
tensor v : bf16[B, 128] temp
tensor qr : bf16[B, 256] temp
tensor kr : bf16[B, 128] temp
tensor k_cache : bf16[B, S, 128] output
tensor v_cache : bf16[B, S, 128] output
tensor o : bf16[B, 256] output
)" + foldedTask("front", "[min(B, 4), 2]", "b") +
         foldedTask("back", "[B - min(B, 4), 2]", "min(B, 4) + b") + extra + R"(graph @main schedule static {
  run @front
  run @back
}
)";
}

TEST(FusedRows, QkvChainBeforeAttentionInTwoGrids) {
  auto p = parse(foldedModule(""));
  for (const char* name : {"front", "back"}) {
    std::optional<FusedRows> f = matchTask(*p, name);
    ASSERT_TRUE(f) << name;
    EXPECT_EQ(f->kind, FusedRows::Kind::QkvRopeAppend);
    EXPECT_EQ(f->first, 0u);
    EXPECT_EQ(f->count, 5u);  // the attention call after the chain runs as itself
    EXPECT_EQ(f->operands, (std::vector<int>{2, 0, 9, -1, -1, 6, 7, 14, 15}));
    EXPECT_EQ(f->n, 128);
    EXPECT_EQ(f->nk, 64);
  }
}

TEST(FusedRows, QkvChainNotFusedWhereAnotherTaskReadsATempItDidNotWrite) {
  auto p = parse(foldedModule("tensor z : bf16[B, 128] output\ntask @other grid [B] (i) {\n  cast(k[i, :]) -> z[i, :]\n}\n"));
  EXPECT_FALSE(matchTask(*p, "front"));
}

}  // namespace
}  // namespace etc
