// Tests of the op references of the interpreter: each op on small tensors against values
// worked out here by hand or from the formulas of docs/ops.md.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>

#include "compiler/frontend/frontend.h"
#include "compiler/interp/interpreter.h"
#include "compiler/interp/view.h"

namespace etc::interp {
namespace {

using F = ir::DType;
using Doubles = std::vector<double>;
using Ints = std::vector<int64_t>;

// Parses a module with the given declarations and one task of one tile, runs it, and returns
// the tensors (or fails the test).
struct OneTask {
  SourceManager sources;
  DiagnosticEngine diags{sources};
  std::unique_ptr<ir::Module> module;
  TensorMap t;
  RunResult result;

  OneTask(const std::string& decls, const std::string& body, TensorMap inputs) : t(std::move(inputs)) {
    diags.setCollect(true);
    std::string text = "module @op\n" + decls + "\ntask @k grid [1] (i) {\n" + body + "\n}\ngraph @main { run @k }\n";
    module = parseAndVerifyBuffer(sources.addBuffer("op.etir", text), LoadOptions{}, sources, diags);
    std::string errors;
    for (const Diagnostic& d : diags.collected()) errors += diags.render(d);
    EXPECT_TRUE(module) << errors;
    if (!module) return;
    result = run(*module, "main", {}, t);
  }
  Doubles f(const std::string& name) const { return toDoubles(t.at(name)); }
  Ints i(const std::string& name) const { return toInts(t.at(name)); }
};

#define EXPECT_RUNS(x) ASSERT_TRUE((x).result.ok) << (x).result.error

double f32(double x) { return static_cast<float>(x); }
const double kTie = std::ldexp(1, -8);  // half a bf16 ulp at 1

// ---- copy, fill, cast ----------------------------------------------------------------------

TEST(InterpView, ViewsOfAnEmptyTensorKeepANullBase) {
  // An empty tensor has no bytes; offsetting its null base would be undefined behaviour (the
  // decode pipeline's cache that may be empty slices one so).
  HostTensor t{F::BF16, {0, 4, 8}, {}};
  View v = View::whole(t);
  ASSERT_EQ(v.base, nullptr);
  EXPECT_EQ(v.range(1, 2, 4).base, nullptr);
  EXPECT_EQ(v.range(1, 2, 4).shape, (Ints{0, 2, 8}));
  EXPECT_EQ(v.at(2, 3).base, nullptr);
  HostTensor u{F::F32, {2, 3}, std::vector<uint8_t>(24)};
  View w = View::whole(u);
  EXPECT_EQ(w.range(1, 1, 3).base, w.base + 4);
  EXPECT_EQ(w.at(0, 1).base, w.base + 12);
  EXPECT_EQ(w.lead(1, 1).base, w.base + 12);
}

TEST(InterpOps, CopyIsBitExactAndStrided) {
  HostTensor x = makeTensor(F::F32, {3, 2}, {1, 2, 3, 4, 5, 6});
  uint32_t payload_nan = 0x7FC00123;
  std::memcpy(x.bytes.data() + 4, &payload_nan, 4);  // x[0, 1]
  OneTask k("tensor x : f32[3, 2] input\ntensor y : f32[2, 3] output",
            "copy(x[:, 1]) -> y[0, :]\ncopy(x[0:2, 0]) -> y[1, 1:3]", {{"x", x}});
  EXPECT_RUNS(k);
  uint32_t bits;
  std::memcpy(&bits, k.t.at("y").bytes.data(), 4);
  EXPECT_EQ(bits, payload_nan);
  Doubles y = k.f("y");
  EXPECT_EQ((Doubles{y[1], y[2], y[3], y[4], y[5]}), (Doubles{4, 6, 0, 1, 3}));
}

TEST(InterpOps, FillRoundsToTheDestination) {
  OneTask k("tensor a : bf16[2] output\ntensor b : f32[2] output\ntensor c : i32[3] output",
            "fill() { value = 1.00390625 } -> a\nfill() { value = 1.00390625 } -> b\nfill() { value = -7.0 } -> c[1:3]",
            {});
  EXPECT_RUNS(k);
  EXPECT_EQ(k.f("a"), (Doubles{1.0, 1.0}));
  EXPECT_EQ(k.f("b"), (Doubles{1.00390625, 1.00390625}));
  EXPECT_EQ(k.i("c"), (Ints{0, -7, -7}));
}

TEST(InterpOps, Cast) {
  TensorMap in;
  in["x"] = makeTensor(F::F32, {6}, {2.7, -2.7, 3e9, -3e9, NAN, 1.0 + 3 * kTie});
  in["n"] = makeIntTensor(F::I32, {3}, {300, -1, 16777217});
  OneTask k("tensor x : f32[6] input\ntensor n : i32[3] input\n"
            "tensor ci : i32[6] output\ntensor b : bf16[6] output\ntensor u : u8[3] output\n"
            "tensor g : f32[3] output\ntensor h : f32[6] output",
            "cast(x) { to = i32 } -> ci\ncast(x) -> b\ncast(n) { to = u8 } -> u\ncast(n) { to = f32 } -> g\n"
            "cast(x) { to = bf16 } -> h",
            in);
  EXPECT_RUNS(k);
  EXPECT_EQ(k.i("ci"), (Ints{2, -2, 2147483647, -2147483648LL, 0, 1}));  // toward zero, saturating, NaN -> 0
  Doubles b = k.f("b");
  EXPECT_EQ(b[0], 2.703125);  // 2.7 in bf16
  EXPECT_EQ(b[5], 1.0 + 4 * kTie);
  EXPECT_EQ(k.i("u"), (Ints{44, 255, 1}));  // wraps modulo 256
  EXPECT_EQ(k.f("g"), (Doubles{300, -1, 16777216}));  // 2^24 + 1 rounds to even
  Doubles h = k.f("h");  // rounded to bf16 by `to`, then stored exactly in f32
  EXPECT_EQ(h[0], 2.703125);
  EXPECT_EQ(h[5], 1.0 + 4 * kTie);
}

// ---- add, mul, silu_mul --------------------------------------------------------------------

TEST(InterpOps, AddMulRoundOnceAndIntegersWrap) {
  TensorMap in;
  in["a"] = makeTensor(F::BF16, {2}, {1.0, 1.0});
  in["b"] = makeTensor(F::BF16, {2}, {kTie, 3 * kTie});
  in["p"] = makeIntTensor(F::I32, {2}, {2147483647, 65536});
  in["q"] = makeIntTensor(F::I32, {2}, {1, 65536});
  OneTask k("tensor a : bf16[2] input\ntensor b : bf16[2] input\ntensor p : i32[2] input\ntensor q : i32[2] input\n"
            "tensor s : bf16[2] output\ntensor s32 : f32[2] output\ntensor m : f32[2] output\n"
            "tensor ps : i32[2] output\ntensor pm : i32[2] output",
            "add(a, b) -> s\nadd(a, b) -> s32\nmul(a, b) -> m\nadd(p, q) -> ps\nmul(p, q) -> pm", in);
  EXPECT_RUNS(k);
  EXPECT_EQ(k.f("s"), (Doubles{1.0, 1.0 + 4 * kTie}));  // 1 + 2^-8 ties down; 1 + 3 * 2^-8 up
  EXPECT_EQ(k.f("s32"), (Doubles{1.0 + kTie, 1.0 + 3 * kTie}));
  EXPECT_EQ(k.f("m"), (Doubles{kTie, 3 * kTie}));
  EXPECT_EQ(k.i("ps"), (Ints{-2147483648LL, 131072}));
  EXPECT_EQ(k.i("pm"), (Ints{2147483647, 0}));  // 2^32 wraps to 0
}

TEST(InterpOps, SiluMul) {
  TensorMap in;
  in["g"] = makeTensor(F::F32, {4}, {0, 1, -1, 2});
  in["u"] = makeTensor(F::F32, {4}, {5, 2, 3, -4});
  OneTask k("tensor g : f32[4] input\ntensor u : f32[4] input\ntensor y : f32[4] output", "silu_mul(g, u) -> y", in);
  EXPECT_RUNS(k);
  auto silu = [](double g) { return g / (1 + std::exp(-g)); };
  EXPECT_EQ(k.f("y"), (Doubles{0, f32(silu(1) * 2), f32(silu(-1) * 3), f32(silu(2) * -4)}));
  EXPECT_NEAR(k.f("y")[1], 1.4621172, 1e-6);
}

// ---- reductions ----------------------------------------------------------------------------

TEST(InterpOps, ReduceSumAndMaxOverEitherAxis) {
  TensorMap in;
  in["x"] = makeTensor(F::F32, {2, 3}, {1, -2, 3, 4, 5, -6});
  in["n"] = makeIntTensor(F::I32, {2, 2}, {2147483647, 1, -5, 3});
  in["z"] = makeTensor(F::F32, {2, 2}, {1, NAN, -INFINITY, -INFINITY});
  OneTask k("tensor x : f32[2, 3] input\ntensor n : i32[2, 2] input\ntensor z : f32[2, 2] input\n"
            "tensor rows : f32[2] output\ntensor cols : f32[3] output\ntensor mx : f32[3] output\n"
            "tensor all : f32[] output\ntensor ni : i32[2] output\ntensor nm : i32[2] output\n"
            "tensor zm : f32[2] output",
            "reduce_sum(x) -> rows\nreduce_sum(x) { axis = 0 } -> cols\nreduce_max(x) { axis = -2 } -> mx\n"
            "reduce_sum(x[1, :]) -> all\nreduce_sum(n) -> ni\nreduce_max(n) { axis = 0 } -> nm\nreduce_max(z) -> zm",
            in);
  EXPECT_RUNS(k);
  EXPECT_EQ(k.f("rows"), (Doubles{2, 3}));
  EXPECT_EQ(k.f("cols"), (Doubles{5, 3, -3}));
  EXPECT_EQ(k.f("mx"), (Doubles{4, 5, 3}));
  EXPECT_EQ(k.f("all"), (Doubles{3}));
  EXPECT_EQ(k.i("ni"), (Ints{-2147483648LL, -2}));  // wraps
  EXPECT_EQ(k.i("nm"), (Ints{2147483647, 3}));
  Doubles zm = k.f("zm");
  EXPECT_TRUE(std::isnan(zm[0]));
  EXPECT_EQ(zm[1], -INFINITY);
}

TEST(InterpOps, ReduceSumAccumulatesBeyondF32) {
  // 2^24 + 1 + 1 - 2^24 is 2 in exact arithmetic, 0 or 1 in f32 sequential accumulation.
  TensorMap in;
  in["x"] = makeTensor(F::F32, {4}, {16777216, 1, 1, -16777216});
  OneTask k("tensor x : f32[4] input\ntensor s : f32[] output", "reduce_sum(x) -> s", in);
  EXPECT_RUNS(k);
  EXPECT_EQ(k.f("s"), (Doubles{2}));
}

TEST(InterpOps, ArgmaxTiesGoLow) {
  TensorMap in;
  in["x"] = makeTensor(F::BF16, {3, 4}, {1, 3, 3, 2, -5, -4, -4, -9, 0, 0, 0, 0});
  in["n"] = makeIntTensor(F::I64, {4}, {7, 9, 9, 1});
  OneTask k("tensor x : bf16[3, 4] input\ntensor n : i64[4] input\ntensor a : i32[3] output\ntensor b : i32[] output",
            "argmax(x) -> a\nargmax(n) -> b", in);
  EXPECT_RUNS(k);
  EXPECT_EQ(k.i("a"), (Ints{1, 1, 0}));
  EXPECT_EQ(k.i("b"), (Ints{1}));
}

TEST(InterpOps, TopkSoftmax) {
  TensorMap in;
  in["x"] = makeTensor(F::F32, {2, 4}, {1, 3, 2, 3, 0, 0, std::log(2.0), 0});
  OneTask k("tensor x : f32[2, 4] input\ntensor w : f32[2, 2] output\ntensor id : i32[2, 2] output\n"
            "tensor w1 : f32[2, 2] output\ntensor id1 : i32[2, 2] output",
            "topk_softmax(x) { k = 2 } -> w, id\ntopk_softmax(x) { k = 2, renormalize = false } -> w1, id1", in);
  EXPECT_RUNS(k);
  EXPECT_EQ(k.i("id"), (Ints{1, 3, 2, 0}));  // ties: lower index first
  EXPECT_EQ(k.f("w"), (Doubles{0.5, 0.5, f32(2.0 / 3), f32(1.0 / 3)}));
  double z = std::exp(1) + 2 * std::exp(3) + std::exp(2);
  EXPECT_EQ(k.f("w1"), (Doubles{f32(std::exp(3) / z), f32(std::exp(3) / z), f32(0.4), f32(0.2)}));
  EXPECT_EQ(k.i("id1"), k.i("id"));
}

TEST(InterpOps, TopkSoftmaxLeavesNaNLogitsOut) {
  // As the device kernel does: a NaN is never picked and is not in the denominator; a row
  // with fewer than k numbers fills the rest with id 0, weight 0.
  const double nan = std::nan("");
  TensorMap in;
  in["x"] = makeTensor(F::F32, {2, 3}, {nan, 0, std::log(3.0), nan, nan, 1});
  OneTask k("tensor x : f32[2, 3] input\ntensor w : f32[2, 2] output\ntensor id : i32[2, 2] output",
            "topk_softmax(x) { k = 2, renormalize = false } -> w, id", in);
  EXPECT_RUNS(k);
  EXPECT_EQ(k.i("id"), (Ints{2, 1, 2, 0}));
  EXPECT_EQ(k.f("w"), (Doubles{0.75, 0.25, 1, 0}));
}

// ---- rmsnorm, add_rmsnorm, rope --------------------------------------------------------------

TEST(InterpOps, Rmsnorm) {
  TensorMap in;
  in["x"] = makeTensor(F::F32, {2, 2}, {3, 4, 1, -1});
  in["w"] = makeTensor(F::BF16, {2}, {1, 2});
  OneTask k("tensor x : f32[2, 2] input\ntensor w : bf16[2] param\ntensor y : f32[2, 2] output\n"
            "tensor e : f32[2] output",
            "rmsnorm(x, w) { eps = 0.0 } -> y\nrmsnorm(x[1, :], w) { eps = 1.0 } -> e", in);
  EXPECT_RUNS(k);
  double r = std::sqrt(12.5);
  EXPECT_EQ(k.f("y"), (Doubles{f32(3 / r), f32(8 / r), 1, -2}));
  EXPECT_EQ(k.f("e"), (Doubles{f32(1 / std::sqrt(2.0)), f32(-2 / std::sqrt(2.0))}));
}

TEST(InterpOps, AddRmsnormNormalisesTheRoundedSumInPlace) {
  TensorMap in;
  in["x"] = makeTensor(F::BF16, {1, 2}, {1, 1});
  in["res"] = makeTensor(F::BF16, {1, 2}, {kTie, 0});
  in["w"] = makeTensor(F::F32, {2}, {1, 3});
  // s = [1 + 2^-8, 1] rounds to [1, 1] in bf16, and the norm is of the rounded sum: exactly w.
  OneTask k("tensor x : bf16[1, 2] input\ntensor w : f32[2] param\ntensor res : bf16[1, 2] output\n"
            "tensor y : f32[1, 2] output",
            "add_rmsnorm(x[0, :], res[0, :], w) { eps = 0.0 } -> y[0, :], res[0, :]", in);
  EXPECT_RUNS(k);
  EXPECT_EQ(k.f("res"), (Doubles{1, 1}));
  EXPECT_EQ(k.f("y"), (Doubles{1, 3}));
}

TEST(InterpOps, AddRmsnormKeepsAnF32ResidualUnrounded) {
  TensorMap in;
  in["x"] = makeTensor(F::BF16, {1, 2}, {1, 1});
  in["res"] = makeTensor(F::F32, {1, 2}, {kTie, 0});
  in["w"] = makeTensor(F::F32, {2}, {1, 1});
  // The same sum as above, but the residual stream is f32: s = [1 + 2^-8, 1] stays as it is
  // (a bf16 residual would drop the 2^-8), and the normed bf16 row comes from the exact sum.
  OneTask k("tensor x : bf16[1, 2] input\ntensor w : f32[2] param\ntensor res : f32[1, 2] output\n"
            "tensor y : bf16[1, 2] output",
            "add_rmsnorm(x[0, :], res[0, :], w) { eps = 0.0 } -> y[0, :], res[0, :]", in);
  EXPECT_RUNS(k);
  EXPECT_EQ(k.f("res"), (Doubles{1 + kTie, 1}));
  const double r = std::sqrt(((1 + kTie) * (1 + kTie) + 1) / 2);
  EXPECT_EQ(k.f("y"), (Doubles{etc::interp::roundTo(F::BF16, (1 + kTie) / r), etc::interp::roundTo(F::BF16, 1 / r)}));
}

TEST(InterpOps, RopeRotateHalf) {
  TensorMap in;
  in["q"] = makeTensor(F::F32, {1, 8}, {1, 2, 3, 4, -1, 0, 0, 1});
  in["k"] = makeTensor(F::F32, {1, 4}, {1, 2, 3, 4});
  in["pos"] = makeIntTensor(F::I32, {1}, {3});
  OneTask k("tensor q : f32[1, 8] input\ntensor k : f32[1, 4] input\ntensor pos : i32[1] input\n"
            "tensor qo : f32[1, 8] output\ntensor ko : f32[1, 4] output",
            "rope(q, k, pos) { head_dim = 4 } -> qo, ko", in);
  EXPECT_RUNS(k);
  // f0 = 1, f1 = 10000^(-1/2) = 0.01; angles 3 and 0.03.
  double c0 = std::cos(3.0), s0 = std::sin(3.0), c1 = std::cos(0.03), s1 = std::sin(0.03);
  Doubles want_k{f32(1 * c0 - 3 * s0), f32(2 * c1 - 4 * s1), f32(3 * c0 + 1 * s0), f32(4 * c1 + 2 * s1)};
  EXPECT_EQ(k.f("ko"), want_k);
  Doubles qo = k.f("qo");
  EXPECT_EQ((Doubles{qo[0], qo[1], qo[2], qo[3]}), want_k);  // head 0 is k's head
  EXPECT_EQ((Doubles{qo[4], qo[5], qo[6], qo[7]}), (Doubles{f32(-c0), f32(-s1), f32(-s0), f32(c1)}));
}

TEST(InterpOps, RopeLlama3Scaling) {
  TensorMap in;
  in["q"] = makeTensor(F::F32, {1, 4}, {1, 2, 3, 4});
  in["pos"] = makeIntTensor(F::I32, {1}, {5});
  // Wavelengths 2 pi (kept: below 1000 / 4) and 200 pi.
  OneTask k("tensor q : f32[1, 4] input\ntensor pos : i32[1] input\ntensor a : f32[1, 4] output\n"
            "tensor b : f32[1, 4] output\ntensor c : f32[1, 4] output\ntensor d : f32[1, 4] output",
            "rope(q, q, pos) { head_dim = 4, scaling = \"llama3\", scaling_factor = 8.0, original_max_position = 100 }"
            " -> a, b\n"
            "rope(q, q, pos) { head_dim = 4, scaling = \"llama3\", scaling_factor = 8.0, original_max_position = 1000 }"
            " -> c, d",
            in);
  EXPECT_RUNS(k);
  auto expect = [&](double f1) {
    double c0 = std::cos(5.0), s0 = std::sin(5.0), c1 = std::cos(5 * f1), s1 = std::sin(5 * f1);
    return Doubles{f32(1 * c0 - 3 * s0), f32(2 * c1 - 4 * s1), f32(3 * c0 + 1 * s0), f32(4 * c1 + 2 * s1)};
  };
  EXPECT_EQ(k.f("a"), expect(0.01 / 8));  // 200 pi > 100 / 1: divided by the factor
  double s = (1000 / (200 * M_PI) - 1) / (4 - 1);  // 250 <= 200 pi <= 1000: blended
  EXPECT_EQ(k.f("c"), expect((1 - s) * 0.01 / 8 + s * 0.01));
  EXPECT_EQ(k.f("b"), k.f("a"));
}

// ---- matmul ----------------------------------------------------------------------------------

TEST(InterpOps, Matmul) {
  TensorMap in;
  in["a"] = makeTensor(F::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  in["b"] = makeTensor(F::F32, {3, 2}, {7, 8, 9, 10, 11, 12});
  in["bt"] = makeTensor(F::F32, {2, 3}, {7, 9, 11, 8, 10, 12});
  in["h"] = makeTensor(F::BF16, {2}, {1, kTie});
  in["v"] = makeTensor(F::BF16, {2, 1}, {1, 1});
  OneTask k("tensor a : f32[2, 3] input\ntensor b : f32[3, 2] param\ntensor bt : f32[2, 3] param\n"
            "tensor h : bf16[2] input\ntensor v : bf16[2, 1] param\n"
            "tensor y : f32[2, 2] output\ntensor yt : f32[2, 2] output\ntensor yv : f32[2] output\n"
            "tensor yc : f32[2, 2] output\ntensor yb : bf16[1] output\ntensor yf : f32[1] output",
            "matmul(a, b) -> y\nmatmul(a, bt) { transpose_b = true } -> yt\nmatmul(a[1, :], b) -> yv\n"
            "matmul(a[:, 0:2], bt[:, 1:3]) { transpose_b = true } -> yc\nmatmul(h, v) -> yb\nmatmul(h, v) -> yf",
            in);
  EXPECT_RUNS(k);
  EXPECT_EQ(k.f("y"), (Doubles{58, 64, 139, 154}));
  EXPECT_EQ(k.f("yt"), k.f("y"));
  EXPECT_EQ(k.f("yv"), (Doubles{139, 154}));
  EXPECT_EQ(k.f("yc"), (Doubles{1 * 9 + 2 * 11, 1 * 10 + 2 * 12, 4 * 9 + 5 * 11, 4 * 10 + 5 * 12}));
  EXPECT_EQ(k.f("yb"), (Doubles{1}));  // 1 + 2^-8 rounds on store
  EXPECT_EQ(k.f("yf"), (Doubles{1 + kTie}));
}

// A bf16 b under transpose_b (read in place, row by row) and the same b untransposed (read as a
// copy of doubles) give the same exact sums, on whole rows and on a slice of the columns.
TEST(InterpOps, MatmulBf16RowsInPlace) {
  TensorMap in;
  in["a"] = makeTensor(F::BF16, {2, 3}, {1, 2, 3, 4, 5, 6});
  in["b"] = makeTensor(F::BF16, {3, 2}, {7, 8, 9, 10, 11, kTie});
  in["bt"] = makeTensor(F::BF16, {2, 3}, {7, 9, 11, 8, 10, kTie});
  OneTask k("tensor a : bf16[2, 3] input\ntensor b : bf16[3, 2] param\ntensor bt : bf16[2, 3] param\n"
            "tensor y : f32[2, 2] output\ntensor yt : f32[2, 2] output\ntensor yc : f32[2, 2] output",
            "matmul(a, b) -> y\nmatmul(a, bt) { transpose_b = true } -> yt\n"
            "matmul(a[:, 1:3], bt[:, 1:3]) { transpose_b = true } -> yc",
            in);
  EXPECT_RUNS(k);
  EXPECT_EQ(k.f("y"), (Doubles{58, 28 + 3 * kTie, 139, 82 + 6 * kTie}));
  EXPECT_EQ(k.f("yt"), k.f("y"));
  EXPECT_EQ(k.f("yc"), (Doubles{2 * 9 + 3 * 11, 2 * 10 + 3 * kTie, 5 * 9 + 6 * 11, 5 * 10 + 6 * kTie}));
}

// Weight rows read four at a time (and the rest one by one) sum each output in K's order, as the
// untransposed copy does: in row 0 of a, 2^40 w - 2^40 w + 2^-20 v is 2^-20 v in that order and
// 0 in the reverse one (2^-20 v - 2^40 w loses the small term in a double). Six weight rows: four,
// then two alone; bf16 and f32 weights.
TEST(InterpOps, MatmulRowsFourAtOnceSumInOrder) {
  const double big = std::ldexp(1, 40), tiny = std::ldexp(1, -20);
  const std::vector<double> a = {big, -big, tiny, 0, 0, 1, 2, 3, 4, 5};
  std::vector<double> bt;  // [6, 5]: small integers; columns 0 and 1 equal
  for (int j = 0; j < 6; ++j)
    for (int t = 0; t < 5; ++t) bt.push_back(((j + t) % 3 == 0 ? -1.0 : 1.0) * (1 + (j * 7 + (t == 1 ? 0 : t) * 3) % 4));
  for (int j = 0; j < 6; ++j) bt[j * 5 + 1] = bt[j * 5];
  std::vector<double> b(30), want(12);
  for (int j = 0; j < 6; ++j)
    for (int t = 0; t < 5; ++t) b[t * 6 + j] = bt[j * 5 + t];
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 6; ++j) {
      double sum = 0;
      for (int t = 0; t < 5; ++t) sum += a[i * 5 + t] * bt[j * 5 + t];
      want[i * 6 + j] = f32(sum);
    }
  ASSERT_NE(want[0], 0.0);
  for (F wt : {F::BF16, F::F32}) {
    const std::string w = wt == F::BF16 ? "bf16" : "f32";
    SCOPED_TRACE(w);
    TensorMap in;
    in["a"] = makeTensor(wt, {2, 5}, a);  // (every value of a is a bf16)
    in["b"] = makeTensor(wt, {5, 6}, b);
    in["bt"] = makeTensor(wt, {6, 5}, bt);
    OneTask k("tensor a : " + w + "[2, 5] input\ntensor b : " + w + "[5, 6] param\ntensor bt : " + w +
                  "[6, 5] param\ntensor y : f32[2, 6] output\ntensor yt : f32[2, 6] output",
              "matmul(a, b) -> y\nmatmul(a, bt) { transpose_b = true } -> yt", in);
    EXPECT_RUNS(k);
    EXPECT_EQ(k.f("yt"), want);
    EXPECT_EQ(k.f("y"), want);
  }
}

// ---- embedding, kv_append, attention ---------------------------------------------------------

TEST(InterpOps, Embedding) {
  TensorMap in;
  in["ids"] = makeIntTensor(F::I32, {2}, {2, 0});
  in["table"] = makeTensor(F::BF16, {3, 2}, {1, 2, 3, 4, 5, 6});
  OneTask k("tensor ids : i32[2] input\ntensor table : bf16[3, 2] param\ntensor y : bf16[2, 2] output\n"
            "tensor z : f32[2] output",
            "embedding(ids, table) -> y\nembedding(ids[1], table) -> z", in);
  EXPECT_RUNS(k);
  EXPECT_EQ(k.f("y"), (Doubles{5, 6, 1, 2}));
  EXPECT_EQ(k.f("z"), (Doubles{1, 2}));
  in["ids"] = makeIntTensor(F::I32, {2}, {3, 0});
  OneTask bad("tensor ids : i32[2] input\ntensor table : bf16[3, 2] param\ntensor y : bf16[2, 2] output",
              "embedding(ids, table) -> y", in);
  EXPECT_EQ(bad.result.error, "task @k (0): embedding: id 3 (element 0 of the ids) is outside the table's rows [0, 3)");
}

TEST(InterpOps, KvAppendUpdatesInPlace) {
  TensorMap in;
  in["k"] = makeTensor(F::F32, {2, 2}, {1, 2, 3, 4});
  in["v"] = makeTensor(F::F32, {2, 2}, {5, 6, 7, 8});
  in["pos"] = makeIntTensor(F::I32, {2}, {2, 0});
  in["kc"] = makeTensor(F::F32, {2, 3, 2}, Doubles(12, 9));
  OneTask k("tensor k : f32[2, 2] input\ntensor v : f32[2, 2] input\ntensor pos : i32[2] input\n"
            "tensor kc : f32[2, 3, 2] output\ntensor vc : f32[2, 3, 2] output",
            "kv_append(k, v, pos) -> kc, vc", in);
  EXPECT_RUNS(k);
  EXPECT_EQ(k.f("kc"), (Doubles{9, 9, 9, 9, 1, 2, 3, 4, 9, 9, 9, 9}));  // present on entry: kept
  EXPECT_EQ(k.f("vc"), (Doubles{0, 0, 0, 0, 5, 6, 7, 8, 0, 0, 0, 0}));  // absent: zeros
  in["pos"] = makeIntTensor(F::I32, {2}, {3, 0});
  OneTask bad("tensor k : f32[2, 2] input\ntensor v : f32[2, 2] input\ntensor pos : i32[2] input\n"
              "tensor kc : f32[2, 3, 2] output\ntensor vc : f32[2, 3, 2] output",
              "kv_append(k, v, pos) -> kc, vc", in);
  EXPECT_EQ(bad.result.error, "task @k (0): kv_append: position 3 of row 0 is outside the cache [0, 3)");
}

TEST(InterpOps, AttentionDecodeGroupedHeads) {
  // One row, two query heads sharing one cache head (D = 2), three cached positions, two used.
  TensorMap in;
  in["q"] = makeTensor(F::F32, {1, 4}, {1, 0, 0, 2});
  in["kc"] = makeTensor(F::F32, {1, 3, 2}, {1, 0, 0, 1, 100, 100});
  in["vc"] = makeTensor(F::F32, {1, 3, 2}, {1, 2, 3, 4, 1000, 1000});
  in["lens"] = makeIntTensor(F::I32, {1}, {2});
  in["zero"] = makeIntTensor(F::I32, {1}, {0});
  OneTask k("tensor q : f32[1, 4] input\ntensor kc : f32[1, 3, 2] input\ntensor vc : f32[1, 3, 2] input\n"
            "tensor lens : i32[1] input\ntensor zero : i32[1] input\n"
            "tensor o : f32[1, 4] output\ntensor lse : f32[1, 2] output\n"
            "tensor o0 : f32[1, 4] output\ntensor l0 : f32[1, 2] output",
            "attention_decode(q, kc, vc, lens) { head_dim = 2, scale = 0.5 } -> o, lse\n"
            "attention_decode(q, kc, vc, zero) { head_dim = 2 } -> o0, l0",
            in);
  EXPECT_RUNS(k);
  // Head 0: scores 0.5 * [1, 0]; head 1: 0.5 * [0, 2].
  double p0 = std::exp(0.5) / (std::exp(0.5) + 1), p1 = 1 / (1 + std::exp(1.0));
  EXPECT_EQ(k.f("o"), (Doubles{f32(p0 * 1 + (1 - p0) * 3), f32(p0 * 2 + (1 - p0) * 4), f32(p1 * 1 + (1 - p1) * 3),
                               f32(p1 * 2 + (1 - p1) * 4)}));
  EXPECT_EQ(k.f("lse"), (Doubles{f32(std::log(std::exp(0.5) + 1)), f32(std::log(1 + std::exp(1.0)))}));
  EXPECT_EQ(k.f("o0"), (Doubles{0, 0, 0, 0}));
  EXPECT_EQ(k.f("l0"), (Doubles{-INFINITY, -INFINITY}));
}

TEST(InterpOps, KvAppendPagedWritesThroughThePageTable) {
  // Pages of 2 rows, a pool of 4 pages, 2 table entries per row: row 0's position 1 is row 1 of
  // page table[0, 0] = 2, row 1's position 2 is row 0 of page table[1, 1] = 3.
  TensorMap in;
  in["k"] = makeTensor(F::F32, {2, 2}, {1, 2, 3, 4});
  in["v"] = makeTensor(F::F32, {2, 2}, {5, 6, 7, 8});
  in["pos"] = makeIntTensor(F::I32, {2}, {1, 2});
  in["pt"] = makeIntTensor(F::I32, {2, 2}, {2, 0, 1, 3});
  in["kp"] = makeTensor(F::F32, {4, 2, 2}, Doubles(16, 9));
  const std::string decls =
      "tensor k : f32[2, 2] input\ntensor v : f32[2, 2] input\ntensor pos : i32[2] input\n"
      "tensor pt : i32[2, 2] input\ntensor kp : f32[4, 2, 2] output\ntensor vp : f32[4, 2, 2] output";
  OneTask k(decls, "kv_append(k, v, pos, pt) -> kp, vp", in);
  EXPECT_RUNS(k);
  EXPECT_EQ(k.f("kp"), (Doubles{9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 1, 2, 3, 4, 9, 9}));
  EXPECT_EQ(k.f("vp"), (Doubles{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 6, 7, 8, 0, 0}));
  // A position past the table's pages, and a page id outside the pool.
  in["pos"] = makeIntTensor(F::I32, {2}, {4, 0});
  OneTask past(decls, "kv_append(k, v, pos, pt) -> kp, vp", in);
  EXPECT_EQ(past.result.error, "task @k (0): kv_append: position 4 of row 0 is outside the cache [0, 4)");
  in["pos"] = makeIntTensor(F::I32, {2}, {1, 2});
  in["pt"] = makeIntTensor(F::I32, {2, 2}, {2, 0, 1, 4});
  OneTask bad(decls, "kv_append(k, v, pos, pt) -> kp, vp", in);
  EXPECT_EQ(bad.result.error, "task @k (0): kv_append: page 4 of row 1 (for position 2) is outside the pool [0, 4)");
}

TEST(InterpOps, AttentionDecodePagedEqualsContiguous) {
  // One row, two query heads on one cache head (D = 2), 4 positions in pages of 2. The pool's
  // pages are the contiguous cache's in another order (table [2, 0]: positions 0-1 are page 2,
  // positions 2-3 page 0); page 1 is NaN and must not be read. Lengths 3 (mid-page) and 4.
  const Doubles kc{1, 0, 0, 1, 1, 1, -1, 2}, vc{1, 2, 3, 4, 5, 6, 7, 8};
  auto pool = [](const Doubles& c) {
    return Doubles{c[4], c[5], c[6], c[7], NAN, NAN, NAN, NAN, c[0], c[1], c[2], c[3]};
  };
  TensorMap in;
  in["q"] = makeTensor(F::F32, {1, 4}, {1, 0.5, -1, 2});
  in["kc"] = makeTensor(F::F32, {1, 4, 2}, kc);
  in["vc"] = makeTensor(F::F32, {1, 4, 2}, vc);
  in["kp"] = makeTensor(F::F32, {3, 2, 2}, pool(kc));
  in["vp"] = makeTensor(F::F32, {3, 2, 2}, pool(vc));
  in["pt"] = makeIntTensor(F::I32, {1, 2}, {2, 0});
  in["three"] = makeIntTensor(F::I32, {1}, {3});
  in["four"] = makeIntTensor(F::I32, {1}, {4});
  // The split form as lowered: parts of one page, each with its slice of the table, merged.
  in["parts"] = makeIntTensor(F::I32, {2}, {2, 1});
  OneTask k("tensor q : f32[1, 4] input\ntensor kc : f32[1, 4, 2] input\ntensor vc : f32[1, 4, 2] input\n"
            "tensor kp : f32[3, 2, 2] input\ntensor vp : f32[3, 2, 2] input\ntensor pt : i32[1, 2] input\n"
            "tensor three : i32[1] input\ntensor four : i32[1] input\ntensor parts : i32[2] input\n"
            "tensor o3 : f32[1, 4] output\ntensor l3 : f32[1, 2] output\n"
            "tensor p3 : f32[1, 4] output\ntensor pl3 : f32[1, 2] output\n"
            "tensor o4 : f32[1, 4] output\ntensor p4 : f32[1, 4] output\n"
            "tensor op : f32[2, 4] output\ntensor lp : f32[2, 2] output\ntensor m3 : f32[4] output",
            "attention_decode(q, kc, vc, three) { head_dim = 2 } -> o3, l3\n"
            "attention_decode(q, kp, vp, three, pt) { head_dim = 2 } -> p3, pl3\n"
            "attention_decode(q, kc, vc, four) { head_dim = 2 } -> o4\n"
            "attention_decode(q, kp, vp, four, pt) { head_dim = 2 } -> p4\n"
            "attention_decode(q[0, :], kp, vp, parts[0], pt[0, 0:1]) { head_dim = 2 } -> op[0, :], lp[0, :]\n"
            "attention_decode(q[0, :], kp, vp, parts[1], pt[0, 1:2]) { head_dim = 2 } -> op[1, :], lp[1, :]\n"
            "attention_merge(op, lp) { head_dim = 2 } -> m3",
            in);
  EXPECT_RUNS(k);
  EXPECT_EQ(k.f("p3"), k.f("o3"));
  EXPECT_EQ(k.f("pl3"), k.f("l3"));
  EXPECT_EQ(k.f("p4"), k.f("o4"));
  // Head 0 by hand at length 3: scores (1 / sqrt 2) * [1, 0.5, 1.5].
  const double sc = 1 / std::sqrt(2.0), e0 = std::exp(sc), e1 = std::exp(0.5 * sc), e2 = std::exp(1.5 * sc);
  const double sum = e0 + e1 + e2;
  EXPECT_EQ(k.f("p3")[0], f32((e0 * 1 + e1 * 3 + e2 * 5) / sum));
  EXPECT_EQ(k.f("p3")[1], f32((e0 * 2 + e1 * 4 + e2 * 6) / sum));
  Doubles m3 = k.f("m3"), o3 = k.f("o3");
  for (size_t i = 0; i < o3.size(); ++i) EXPECT_NEAR(m3[i], o3[i], 1e-6) << i;

  // A length past the table's pages, and a page id outside the pool.
  in["four"] = makeIntTensor(F::I32, {1}, {5});
  const std::string decls =
      "tensor q : f32[1, 4] input\ntensor kp : f32[3, 2, 2] input\ntensor vp : f32[3, 2, 2] input\n"
      "tensor pt : i32[1, 2] input\ntensor four : i32[1] input\ntensor o : f32[1, 4] output";
  OneTask past(decls, "attention_decode(q, kp, vp, four, pt) { head_dim = 2 } -> o", in);
  EXPECT_EQ(past.result.error, "task @k (0): attention_decode: length 5 of row 0 is outside [0, 4]");
  in["four"] = makeIntTensor(F::I32, {1}, {4});
  in["pt"] = makeIntTensor(F::I32, {1, 2}, {2, 3});
  OneTask bad(decls, "attention_decode(q, kp, vp, four, pt) { head_dim = 2 } -> o", in);
  EXPECT_EQ(bad.result.error,
            "task @k (0): attention_decode: page 3 of row 0 (for position 2) is outside the pool [0, 3)");
}

TEST(InterpOps, AttentionMerge) {
  // Two parts, one row, two heads of D = 2; head 1's second part saw nothing (-inf).
  TensorMap in;
  in["op"] = makeTensor(F::F32, {2, 1, 4}, {1, 2, 5, 6, 3, 4, NAN, NAN});
  in["lp"] = makeTensor(F::F32, {2, 1, 2}, {0, 7, std::log(3.0), -INFINITY});
  OneTask k("tensor op : f32[2, 1, 4] input\ntensor lp : f32[2, 1, 2] input\n"
            "tensor o : f32[1, 4] output\ntensor l : f32[1, 2] output",
            "attention_merge(op, lp) { head_dim = 2 } -> o, l", in);
  EXPECT_RUNS(k);
  EXPECT_EQ(k.f("o"), (Doubles{f32(0.25 * 1 + 0.75 * 3), f32(0.25 * 2 + 0.75 * 4), 5, 6}));
  EXPECT_EQ(k.f("l"), (Doubles{f32(std::log(4.0)), 7}));
}

// ---- mixture of experts ----------------------------------------------------------------------

const char* kMoeDecls =
    "tensor ids : i32[2, 2] input\ntensor x : f32[2, 2] input\ntensor w : f32[3, 2, 2] param\n"
    "tensor wt : f32[2, 2] input\n"
    "tensor sorted : i32[10] output\ntensor bexp : i32[5] output\ntensor nblk : i32[1] output\n"
    "tensor y : f32[4, 2] output\ntensor ys : f32[4, 1] output\ntensor out : f32[2, 2] output";

TensorMap moeInputs() {
  TensorMap in;
  in["ids"] = makeIntTensor(F::I32, {2, 2}, {1, 0, 1, 2});
  in["x"] = makeTensor(F::F32, {2, 2}, {1, 2, 3, 4});
  // Expert e's weight [N = 2, K = 2]: rows (e + 1, 0) and (0, 1).
  in["w"] = makeTensor(F::F32, {3, 2, 2}, {1, 0, 0, 1, 2, 0, 0, 1, 3, 0, 0, 1});
  in["wt"] = makeTensor(F::F32, {2, 2}, {0.25, 0.75, 0.5, 0.5});
  return in;
}

TEST(InterpOps, MoeAlignGroupedMatmulCombine) {
  OneTask k(kMoeDecls,
            "moe_align(ids) { num_experts = 3, block = 2 } -> sorted, bexp, nblk\n"
            "grouped_matmul(x, w, sorted, bexp, nblk) { top_k = 2, block = 2 } -> y\n"
            "grouped_matmul(x, w, sorted, bexp, nblk) { top_k = 2, block = 2, act = \"silu_mul\" } -> ys\n"
            "moe_combine(y, wt) -> out",
            moeInputs());
  EXPECT_RUNS(k);
  // Entries t * 2 + k: 0 -> expert 1, 1 -> 0, 2 -> 1, 3 -> 2; padding value 4.
  EXPECT_EQ(k.i("sorted"), (Ints{1, 4, 0, 2, 3, 4, 4, 4, 4, 4}));
  EXPECT_EQ(k.i("bexp"), (Ints{0, 1, 2, -1, -1}));
  EXPECT_EQ(k.i("nblk"), (Ints{3}));
  // y[s] = x[s / 2] @ w[e]^T = ((e + 1) * x0, x1).
  EXPECT_EQ(k.f("y"), (Doubles{2, 2, 1, 2, 6, 4, 9, 4}));
  auto silu = [](double g) { return g / (1 + std::exp(-g)); };
  EXPECT_EQ(k.f("ys"), (Doubles{f32(silu(2) * 2), f32(silu(1) * 2), f32(silu(6) * 4), f32(silu(9) * 4)}));
  EXPECT_EQ(k.f("out"), (Doubles{0.25 * 2 + 0.75 * 1, 0.25 * 2 + 0.75 * 2, 0.5 * 6 + 0.5 * 9, 0.5 * 4 + 0.5 * 4}));
}

TEST(InterpOps, GroupedMatmulTaskLevelBlock) {
  // One tile per aligned block; padding ids leave their rows alone. @experts is run first: its
  // data-dependent extent is read only after @align has written nblk.
  SourceManager sources;
  DiagnosticEngine diags{sources};
  diags.setCollect(true);
  std::string text = std::string("module @moe\n") + kMoeDecls +
                     "\nevent aligned : [1] init 1\n"
                     "task @align grid [1] (a) {\n"
                     "  moe_align(ids) { num_experts = 3, block = 2 } -> sorted, bexp, nblk\n"
                     "  notify aligned[0]\n"
                     "}\n"
                     "task @experts grid [load(nblk[0]) <= 5] (b) {\n"
                     "  wait aligned[0]\n"
                     "  grouped_matmul(x, w, sorted[b * 2 : b * 2 + 2], bexp[b], nblk[0]) { top_k = 2, block = 2 } -> y\n"
                     "}\n"
                     "graph @main { run @experts run @align }\n";
  auto m = parseAndVerifyBuffer(sources.addBuffer("moe.etir", text), LoadOptions{}, sources, diags);
  ASSERT_TRUE(m);
  TensorMap t = moeInputs();
  t["y"] = makeTensor(F::F32, {4, 2}, Doubles(8, -1));
  RunResult r = run(*m, "main", {}, t);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(toDoubles(t.at("y")), (Doubles{2, 2, 1, 2, 6, 4, 9, 4}));
}

TEST(InterpOps, MoeAlignRejectsABadExpert) {
  TensorMap in = moeInputs();
  in["ids"] = makeIntTensor(F::I32, {2, 2}, {1, 0, 3, 2});
  OneTask k(kMoeDecls, "moe_align(ids) { num_experts = 3, block = 2 } -> sorted, bexp, nblk", in);
  EXPECT_EQ(k.result.error, "task @k (0): moe_align: expert id 3 (entry 2) is outside [0, 3)");
}

}  // namespace
}  // namespace etc::interp
