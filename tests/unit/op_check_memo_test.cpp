// Tests of the memo of clean op checks (OpCheckMemo in compiler/ir/op_check.h): a repeated
// call is a lookup, and a call that differs in anything the check depends on is checked (and
// reported) again.

#include <gtest/gtest.h>

#include <string>
#include <variant>
#include <vector>

#include "compiler/frontend/frontend.h"
#include "compiler/ir/op_check.h"

namespace etc::ir {
namespace {

struct Checked {
  SourceManager sources;
  DiagnosticEngine diags{sources};
  std::unique_ptr<Module> m;
  std::vector<std::string> errors;

  explicit Checked(std::string text) {
    diags.setCollect(true);
    uint32_t id = sources.addBuffer("memo.etir", std::move(text));
    m = parseAndVerifyBuffer(id, LoadOptions{}, sources, diags);
    for (const Diagnostic& d : diags.collected())
      if (d.severity == Severity::Error) errors.push_back(std::to_string(d.loc.line) + ": " + d.message);
  }
};

const char* kHeader = R"(module @memo
sym B in [1, 64]
tensor x : f32[B, 128] input
tensor w : f32[256, 128] param
tensor v : f32[128, 256] param
tensor y : f32[B, 256] output
tensor z : f32[B, 128] output
)";

TEST(OpCheckMemo, RepeatedCallIsRememberedOnceAndGivesTheSameResults) {
  Checked c(std::string(kHeader) + "graph @g {\n  a = matmul(x, w) { transpose_b }\n  y = add(a, a)\n}\n");
  ASSERT_TRUE(c.m) << (c.errors.empty() ? "" : c.errors[0]);
  const auto& st = std::get<AssignStmt>(c.m->graphs[0].body[0]);
  Prover prover(*c.m);
  OpCheckMemo memo;
  std::vector<OpResultSlot> slots(1);
  std::vector<OperandType> first, second;
  ASSERT_TRUE(checkOpCall(*c.m, st.call, slots, prover, c.diags, &first, &memo));
  EXPECT_EQ(memo.size(), 1u);
  ASSERT_TRUE(checkOpCall(*c.m, st.call, slots, prover, c.diags, &second, &memo));
  EXPECT_EQ(memo.size(), 1u);  // served from the memo
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(typeToString(first[0]), "f32[B, 256]");
  EXPECT_EQ(typeToString(second[0]), typeToString(first[0]));
  // A declared destination of another shape is a different call: checked, and it fails.
  OperandType wrong{DType::F32, {symRef(0, "B"), intConst(128)}};
  slots[0].declared = &wrong;
  slots[0].name = "z";
  EXPECT_FALSE(checkOpCall(*c.m, st.call, slots, prover, c.diags, nullptr, &memo));
  EXPECT_EQ(memo.size(), 1u);  // failures are not remembered
}

TEST(OpCheckMemo, EveryLayerThatDiffersIsCheckedAgain) {
  // Layers 1 and 3 repeat layer 0 exactly; layer 2 differs in an attribute (transpose_b
  // missing), layer 4 in an operand (v instead of w), layer 5 in the declared result: each of
  // those is reported where it is.
  Checked c(std::string(kHeader) + R"(graph @l0 {
  a0 = matmul(x, w) { transpose_b }
}
graph @l1 {
  a1 = matmul(x, w) { transpose_b }
}
graph @l2 {
  a2 = matmul(x, w)
}
graph @l3 {
  a3 = matmul(x, w) { transpose_b }
}
graph @l4 {
  a4 = matmul(x, v) { transpose_b }
}
graph @l5 {
  z = matmul(x, w) { transpose_b }
}
)");
  EXPECT_EQ(c.errors, (std::vector<std::string>{
                          "15: matmul: operand 1 (b) has extent 256 in dimension 0; expected 128 to match dimension 1 "
                          "of operand 0 (a); did you mean transpose_b = true?",
                          "21: matmul: operand 1 (b) has extent 256 in dimension 1; expected 128 to match dimension 1 "
                          "of operand 0 (a); did you mean transpose_b = false?",
                          "24: matmul: result 0 has shape [B, 256], but 'z' has shape [B, 128]: dimension 1 differs "
                          "(256 vs 128)"}));
}

TEST(OpCheckMemo, TheSameTaskCallOverAnotherGridIsCheckedAgain) {
  // The shape of the slice depends on the coordinate: fine over grid [1] (i = 0), wrong over
  // grid [2] (i = 1).
  Checked c(std::string(kHeader) + R"(task @t0 grid [1] (i) {
  copy(x[0, 0:128 - 64 * i]) -> z[0, 0:128]
}
task @t1 grid [1] (i) {
  copy(x[0, 0:128 - 64 * i]) -> z[0, 0:128]
}
task @t2 grid [2] (i) {
  copy(x[0, 0:128 - 64 * i]) -> z[0, 0:128]
}
graph @g {
  run @t0
  run @t1
  run @t2
}
)");
  EXPECT_EQ(c.errors, (std::vector<std::string>{"15: copy: result 0 has shape [128 - i * 64], but 'z[0, 0:128]' has "
                                                "shape [128]: dimension 0 differs (64 vs 128 at i = 1)"}));
}

}  // namespace
}  // namespace etc::ir
