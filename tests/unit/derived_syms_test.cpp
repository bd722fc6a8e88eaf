// Derived syms: which sym-only subexpressions the runtime evaluates instead of every task, how
// the CUDA names them, and the per-function locals that read them.
#include <gtest/gtest.h>

#include "compiler/backend/cuda_expr.h"
#include "compiler/backend/derived_syms.h"

namespace {

using namespace etc::ir;
using etc::backend::CudaNames;
using etc::backend::cudaExpr;
using etc::backend::DerivedSyms;
using etc::backend::resolveDerivedLocals;

Module twoSyms() {
  Module m;
  m.syms.push_back(Sym{"B", 1, 128, nullptr, nullptr, {}, {}, {}, {}});
  m.syms.push_back(Sym{"N", 0, 4096, nullptr, nullptr, {}, {}, {}, {}});
  return m;
}

Expr B() { return symRef(0, "B"); }
Expr N() { return symRef(1, "N"); }
Expr lit(int64_t v) { return intConst(v); }

TEST(DerivedSyms, TakesSymOnlyDivisionsMinsAndMaxes) {
  Module m = twoSyms();
  DerivedSyms d(m);
  EXPECT_EQ(d.intern(cdiv(lit(16), B())), 0u);
  EXPECT_EQ(d.intern(min(N(), lit(7))), 1u);
  EXPECT_EQ(d.intern(mul(B(), min(sub(cdiv(lit(16), B()), lit(1)), lit(1)))), 2u);
  EXPECT_EQ(d.intern(cdiv(lit(16), symRef(0, "B"))), 0u);  // equal expressions share a slot
  ASSERT_EQ(d.exprs().size(), 3u);
  EXPECT_EQ(toString(d.exprs()[2]), "B * min(cdiv(16, B) - 1, 1)");
}

TEST(DerivedSyms, LeavesLeavesLinearMathCoordinatesAndConstantsInTheCode) {
  Module m = twoSyms();
  DerivedSyms d(m);
  EXPECT_FALSE(d.intern(B()));
  EXPECT_FALSE(d.intern(lit(4)));
  EXPECT_FALSE(d.intern(add(mul(B(), lit(4)), N())));  // a multiply-add
  EXPECT_FALSE(d.intern(floorDiv(coordRef(0, "i"), B())));
  EXPECT_FALSE(d.intern(min(constRef(0, "H", 32), constRef(1, "D", 64))));  // folds to 32
  EXPECT_TRUE(d.exprs().empty());
}

TEST(DerivedSyms, LeavesWhatTheRangesDoNotProveEvaluable) {
  Module m = twoSyms();
  DerivedSyms d(m);
  EXPECT_FALSE(d.intern(cdiv(lit(16), N())));            // N may be 0
  EXPECT_FALSE(d.intern(floorDiv(lit(16), sub(B(), lit(2)))));  // B - 2 may be 0
  EXPECT_TRUE(d.intern(floorDiv(lit(16), add(N(), lit(1)))));
  EXPECT_EQ(d.exprs().size(), 1u);
}

TEST(DerivedSyms, CudaNamesTheLargestSymOnlyPart) {
  Module m = twoSyms();
  DerivedSyms d(m);
  CudaNames names;
  names.coord = [](uint32_t id) { return "c" + std::to_string(id); };
  names.derived = &d;
  Expr e = add(mul(coordRef(0, "i"), cdiv(N(), B())), mul(N(), min(B(), lit(8))));
  EXPECT_EQ(cudaExpr(m, e, names), "(etc_d0 + (c0 * etc_d1))");
  EXPECT_EQ(toString(d.exprs()[0]), "N * min(B, 8)");
  EXPECT_EQ(toString(d.exprs()[1]), "cdiv(N, B)");
  names.derived = nullptr;
  EXPECT_EQ(cudaExpr(m, e, names), "((etc_s1 * etc::dev::imin(etc_s0, 8LL)) + (c0 * etc::dev::cdiv_rt(etc_s1, etc_s0)))");
}

TEST(DerivedSyms, EachFunctionDeclaresTheLocalsItUses) {
  std::string code =
      "int etc_descriptor_size = 3;\n"
      "void f(P p) {\n  const long long etc_s0 = p.sym[0];\n  @ETC_DERIVED_LOCALS@\n  g(etc_d3 + etc_d10, etc_d3);\n}\n"
      "void h(P p) {\n    @ETC_DERIVED_LOCALS@\n    g(0);\n}\n"
      "void k(P p) {\n  @ETC_DERIVED_LOCALS@\n  g(etc_d0, my_etc_d1, etc_d2x);\n}\n";
  ASSERT_TRUE(resolveDerivedLocals(code));
  EXPECT_EQ(code,
            "int etc_descriptor_size = 3;\n"
            "void f(P p) {\n  const long long etc_s0 = p.sym[0];\n"
            "  [[maybe_unused]] const long long etc_d3 = p.derived[3];\n"
            "  [[maybe_unused]] const long long etc_d10 = p.derived[10];\n"
            "  g(etc_d3 + etc_d10, etc_d3);\n}\n"
            "void h(P p) {\n    g(0);\n}\n"
            "void k(P p) {\n  [[maybe_unused]] const long long etc_d0 = p.derived[0];\n  g(etc_d0, my_etc_d1, etc_d2x);\n}\n");
}

TEST(DerivedSyms, AUseOutsideEveryFunctionIsAnError) {
  std::string code = "int x = etc_d0;\nvoid f(P p) {\n  @ETC_DERIVED_LOCALS@\n}\n";
  EXPECT_FALSE(resolveDerivedLocals(code));
}

}  // namespace
