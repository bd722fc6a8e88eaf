// Tests of the operator registry (compiler/ir/ops.h): every op's result types at the op level
// and the task level, and the exact errors of its rule.

#include "compiler/ir/ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace etc::ir {
namespace {

// ---- a fake context -----------------------------------------------------------------------

struct Dim {
  Expr e;
  Dim(int v) : e(intConst(v)) {}  // NOLINT: implicit on purpose, for shapes like {T, 2048}
  Dim(Expr x) : e(std::move(x)) {}  // NOLINT
};

OperandType ty(DType d, std::initializer_list<Dim> shape) {
  OperandType t;
  t.dtype = d;
  for (const Dim& x : shape) t.shape.push_back(x.e);
  return t;
}

std::string str(const OperandType& t) {
  std::string s = std::string(dtypeName(t.dtype)) + "[";
  for (size_t i = 0; i < t.shape.size(); ++i) {
    if (i) s += ", ";
    s += toString(t.shape[i]);
  }
  return s + "]";
}

AttrValue aInt(int64_t v) {
  AttrValue a;
  a.type = AttrType::Int;
  a.i = intConst(v);
  return a;
}
AttrValue aExpr(Expr e) {
  AttrValue a;
  a.type = AttrType::Int;
  a.i = std::move(e);
  return a;
}
AttrValue aFloat(double v) {
  AttrValue a;
  a.type = AttrType::Float;
  a.f = v;
  a.text = std::to_string(v);
  return a;
}
AttrValue aBool(bool v) {
  AttrValue a;
  a.type = AttrType::Bool;
  a.b = v;
  return a;
}
AttrValue aStr(std::string v) {
  AttrValue a;
  a.type = AttrType::String;
  a.text = std::move(v);
  return a;
}
AttrValue aType(DType t) {
  AttrValue a;
  a.type = AttrType::DType;
  a.dtype = t;
  return a;
}

using Attrs = std::map<std::string, AttrValue, std::less<>>;

class FakeOpContext final : public OpContext {
 public:
  FakeOpContext(const OpInfo& op, std::vector<OperandType> in, Attrs attrs, int nout,
                std::vector<std::optional<OperandType>> declared, bool keep_int_exprs)
      : op_(op), in_(std::move(in)), attrs_(std::move(attrs)), nout_(nout),
        keep_int_exprs_(keep_int_exprs) {
    decl_storage_.reserve(declared.size());
    for (auto& d : declared) {
      if (d) {
        decl_storage_.push_back(*d);
        decl_.push_back(&decl_storage_.back());
      } else {
        decl_.push_back(nullptr);
      }
    }
  }

  const std::vector<OperandType>& inputs() const override { return in_; }
  const std::vector<const OperandType*>& declaredOutputs() const override { return decl_; }
  int numOutputs() const override { return nout_; }

  bool attrBool(std::string_view n) const override { return value(n, AttrType::Bool).b; }
  int64_t attrInt(std::string_view n) const override {
    EvalResult r = evaluate(inlineConsts(value(n, AttrType::Int).i), {});
    EXPECT_TRUE(r.ok()) << n;
    return r.value;
  }
  double attrFloat(std::string_view n) const override { return value(n, AttrType::Float).f; }
  DType attrDType(std::string_view n) const override { return value(n, AttrType::DType).dtype; }
  std::string attrString(std::string_view n) const override {
    return value(n, AttrType::String).text;
  }
  bool attrWritten(std::string_view n) const override {
    spec(n);
    return attrs_.find(n) != attrs_.end();
  }
  Expr attrIntExpr(std::string_view n) const override {
    if (!keep_int_exprs_) return OpContext::attrIntExpr(n);
    return value(n, AttrType::Int).i;
  }

  bool sameExtent(const Expr& a, const Expr& b) const override {
    return equal(inlineConsts(a), inlineConsts(b));
  }

  void error(int operand, std::string message) override {
    std::string where = operand == kOpItself ? "op"
                        : operand < 0        ? "result " + std::to_string(-1 - operand)
                                             : std::to_string(operand);
    errors.push_back("[" + where + "] " + message);
  }
  void attrError(std::string_view name, std::string message) override {
    spec(name);
    errors.push_back("[attr " + std::string(name) + "] " + message);
  }

  std::vector<std::string> errors;

 private:
  const AttrSpec* spec(std::string_view n) const {
    for (const AttrSpec& s : op_.attrs)
      if (s.name == n) return &s;
    ADD_FAILURE() << op_.name << ": the rule asked for attribute '" << n
                  << "', which its spec does not list";
    return nullptr;
  }
  const AttrValue& value(std::string_view n, AttrType t) const {
    static const AttrValue none = aInt(0);
    const AttrSpec* s = spec(n);
    if (!s) return none;
    EXPECT_EQ(s->type, t) << op_.name << ": attribute '" << n << "' read with the wrong type";
    if (auto it = attrs_.find(n); it != attrs_.end()) return it->second;
    EXPECT_FALSE(s->required) << op_.name << ": required attribute '" << n << "' not written";
    return s->default_value;
  }

  const OpInfo& op_;
  std::vector<OperandType> in_;
  Attrs attrs_;
  int nout_;
  bool keep_int_exprs_;
  std::vector<OperandType> decl_storage_;
  std::vector<const OperandType*> decl_;
};

struct Result {
  bool ok = false;
  std::vector<OperandType> out;
  std::vector<std::string> errors;

  // The results as text, "bf16[T, H], f32[T]".
  std::string types() const {
    std::string s;
    for (size_t i = 0; i < out.size(); ++i) s += (i ? ", " : "") + str(out[i]);
    return s;
  }
  // The errors, one per line.
  std::string errs() const {
    std::string s;
    for (size_t i = 0; i < errors.size(); ++i) s += (i ? "\n" : "") + errors[i];
    return s;
  }
};

struct Call {
  std::string op;
  std::vector<OperandType> in;
  Attrs attrs = {};
  int nout = 1;
  std::vector<std::optional<OperandType>> declared = {};
  bool keep_int_exprs = false;
};

Result run(const Call& c) {
  Result r;
  const OpInfo* info = findOp(c.op);
  EXPECT_NE(info, nullptr) << c.op;
  if (!info) return r;
  EXPECT_GE(static_cast<int>(c.in.size()), info->min_inputs) << c.op;
  EXPECT_LE(static_cast<int>(c.in.size()), info->max_inputs) << c.op;
  EXPECT_GE(c.nout, info->min_outputs) << c.op;
  EXPECT_LE(c.nout, info->max_outputs) << c.op;
  for (const AttrSpec& s : info->attrs)
    if (s.required) {
      EXPECT_TRUE(c.attrs.count(std::string(s.name))) << c.op << ": " << s.name;
    }
  auto declared = c.declared;
  if (declared.empty()) declared.resize(c.nout);
  FakeOpContext ctx(*info, c.in, c.attrs, c.nout, declared, c.keep_int_exprs);
  r.ok = info->infer(ctx, r.out);
  r.errors = ctx.errors;
  if (r.ok) {
    EXPECT_TRUE(r.errors.empty()) << c.op << " succeeded but reported:\n" << r.errs();
    EXPECT_EQ(static_cast<int>(r.out.size()), c.nout) << c.op;
  } else {
    EXPECT_FALSE(r.errors.empty()) << c.op << " failed without reporting an error";
  }
  return r;
}

// Expects success with these result types.
#define EXPECT_TYPES(call, expected)            \
  do {                                          \
    Result r_ = run(call);                      \
    EXPECT_TRUE(r_.ok) << r_.errs();            \
    EXPECT_EQ(r_.types(), expected);            \
  } while (0)

// Expects failure with exactly these errors (one per line, in order).
#define EXPECT_ERRORS(call, expected)           \
  do {                                          \
    Result r_ = run(call);                      \
    EXPECT_FALSE(r_.ok);                        \
    EXPECT_EQ(r_.errs(), expected);             \
  } while (0)

constexpr DType F32 = DType::F32, F16 = DType::F16, BF16 = DType::BF16, I32 = DType::I32,
                I64 = DType::I64, U8 = DType::U8;

class OpsTest : public ::testing::Test {
 protected:
  Expr T = symRef(0, "T");
  Expr S = symRef(1, "S");
  Expr N = symRef(2, "N");
  Expr H = constRef(0, "H", 2048);
  Expr E = constRef(1, "E", 64);
  Expr i = coordRef(0, "i");
  // A task-level tile extent: min(N, i * 1024 + 1024) - i * 1024.
  Expr tile() const {
    return sub(min(N, add(mul(i, intConst(1024)), intConst(1024))), mul(i, intConst(1024)));
  }
};

// ---- registry -----------------------------------------------------------------------------

TEST(OpsRegistry, AllOpsInDocumentedOrder) {
  std::vector<std::string> names;
  for (const OpInfo& o : allOps()) names.emplace_back(o.name);
  EXPECT_EQ(names, (std::vector<std::string>{
                       "copy", "fill", "cast", "add", "mul", "silu_mul", "reduce_sum",
                       "reduce_max", "rmsnorm", "add_rmsnorm", "matmul", "rope", "kv_append",
                       "attention_decode", "attention_merge", "split_lens", "kv_ranges", "embedding", "argmax",
                       "topk_softmax", "moe_align", "grouped_matmul", "moe_combine"}));
}

TEST(OpsRegistry, FindOp) {
  for (const OpInfo& o : allOps()) EXPECT_EQ(findOp(o.name), &o) << o.name;
  EXPECT_EQ(findOp("nope"), nullptr);
  EXPECT_EQ(findOp(""), nullptr);
  EXPECT_EQ(findOp("Matmul"), nullptr);
  EXPECT_EQ(findOp("matmul "), nullptr);
}

TEST(OpsRegistry, SpecsAreConsistent) {
  for (const OpInfo& o : allOps()) {
    SCOPED_TRACE(std::string(o.name));
    EXPECT_LE(0, o.min_inputs);
    EXPECT_LE(o.min_inputs, o.max_inputs);
    EXPECT_LE(1, o.min_outputs);
    EXPECT_LE(o.min_outputs, o.max_outputs);
    EXPECT_TRUE(static_cast<bool>(o.infer));
    EXPECT_EQ(o.summary.substr(0, o.name.size() + 1), std::string(o.name) + "(");
    std::set<std::string_view> seen;
    for (const AttrSpec& a : o.attrs) {
      EXPECT_TRUE(seen.insert(a.name).second) << "duplicate attribute " << a.name;
      EXPECT_FALSE(a.doc.empty()) << a.name;
      EXPECT_EQ(a.default_value.type, a.type) << a.name;
      if (a.type == AttrType::Int) {
        EXPECT_TRUE(a.default_value.i != nullptr) << a.name;
      }
      if (a.type == AttrType::Float && !a.required) {
        EXPECT_FALSE(a.default_value.text.empty()) << a.name;
      }
    }
  }
}

TEST(OpsRegistry, Defaults) {
  auto def = [](std::string_view op, std::string_view attr) -> const AttrSpec& {
    for (const AttrSpec& a : findOp(op)->attrs)
      if (a.name == attr) return a;
    ADD_FAILURE() << op << "." << attr;
    static AttrSpec none{};
    return none;
  };
  EXPECT_EQ(def("rmsnorm", "eps").default_value.f, 1e-6);
  EXPECT_EQ(def("rope", "theta").default_value.f, 10000.0);
  EXPECT_EQ(def("rope", "scaling").default_value.text, "none");
  EXPECT_EQ(toString(def("rope", "original_max_position").default_value.i), "8192");
  EXPECT_TRUE(def("rope", "head_dim").required);
  EXPECT_EQ(toString(def("reduce_sum", "axis").default_value.i), "-1");
  EXPECT_FALSE(def("matmul", "transpose_b").default_value.b);
  EXPECT_TRUE(def("topk_softmax", "renormalize").default_value.b);
  EXPECT_FALSE(def("cast", "to").required);
  EXPECT_TRUE(def("fill", "value").required);
  EXPECT_EQ(def("grouped_matmul", "act").default_value.text, "none");
}

TEST(OpsRegistry, StorableAs) {
  EXPECT_TRUE(storableAs(F32, BF16));
  EXPECT_TRUE(storableAs(BF16, F32));
  EXPECT_TRUE(storableAs(F16, BF16));
  EXPECT_TRUE(storableAs(I32, I32));
  EXPECT_TRUE(storableAs(U8, U8));
  EXPECT_FALSE(storableAs(I32, I64));
  EXPECT_FALSE(storableAs(I32, F32));
  EXPECT_FALSE(storableAs(F32, I32));
  EXPECT_FALSE(storableAs(U8, I32));
}

TEST(DTypes, NamesBytesKinds) {
  for (DType t : {F32, F16, BF16, I32, I64, U8}) {
    EXPECT_EQ(parseDType(dtypeName(t)), t);
    EXPECT_NE(isFloat(t), isInteger(t)) << dtypeName(t);
  }
  EXPECT_EQ(dtypeName(BF16), "bf16");
  EXPECT_EQ(dtypeName(U8), "u8");
  EXPECT_EQ(parseDType("float"), std::nullopt);
  EXPECT_EQ(parseDType("F32"), std::nullopt);
  EXPECT_EQ(parseDType(""), std::nullopt);
  EXPECT_EQ(dtypeBytes(F32), 4);
  EXPECT_EQ(dtypeBytes(F16), 2);
  EXPECT_EQ(dtypeBytes(BF16), 2);
  EXPECT_EQ(dtypeBytes(I32), 4);
  EXPECT_EQ(dtypeBytes(I64), 8);
  EXPECT_EQ(dtypeBytes(U8), 1);
  EXPECT_TRUE(isFloat(BF16));
  EXPECT_TRUE(isInteger(U8));
}

// ---- copy, fill, cast ---------------------------------------------------------------------

TEST_F(OpsTest, Copy) {
  EXPECT_TYPES((Call{"copy", {ty(BF16, {T, H})}}), "bf16[T, H]");
  EXPECT_TYPES((Call{"copy", {ty(I32, {})}}), "i32[]");
  EXPECT_TYPES((Call{"copy", {ty(F32, {tile()})}}), "f32[" + toString(tile()) + "]");
}

TEST_F(OpsTest, Fill) {
  EXPECT_TYPES((Call{"fill", {}, {{"value", aFloat(0)}}, 1, {ty(F32, {T, 4})}}), "f32[T, 4]");
  EXPECT_TYPES((Call{"fill", {}, {{"value", aFloat(7)}}, 1, {ty(I32, {S})}}), "i32[S]");
  EXPECT_TYPES((Call{"fill", {}, {{"value", aFloat(-INFINITY)}}, 1, {ty(BF16, {N})}}),
               "bf16[N]");
  EXPECT_TYPES((Call{"fill", {}, {{"value", aFloat(255)}}, 1, {ty(U8, {4})}}), "u8[4]");
  EXPECT_TYPES((Call{"fill", {}, {{"value", aFloat(65504)}}, 1, {ty(F16, {4})}}), "f16[4]");
}

TEST_F(OpsTest, FillErrors) {
  EXPECT_ERRORS((Call{"fill", {}, {{"value", aFloat(0)}}}),
                "[result 0] fill needs a declared destination (its shape cannot be inferred)");
  EXPECT_ERRORS((Call{"fill", {}, {{"value", aFloat(1.5)}}, 1, {ty(I32, {4})}}),
                "[attr value] 1.5 cannot be stored in the i32 destination (it is not an "
                "integer)");
  EXPECT_ERRORS((Call{"fill", {}, {{"value", aFloat(300)}}, 1, {ty(U8, {4})}}),
                "[attr value] 300 is out of range for the u8 destination [0, 255]");
  EXPECT_ERRORS((Call{"fill", {}, {{"value", aFloat(-3e9)}}, 1, {ty(I32, {4})}}),
                "[attr value] -3000000000 is out of range for the i32 destination "
                "[-2147483648, 2147483647]");
  EXPECT_ERRORS((Call{"fill", {}, {{"value", aFloat(1e5)}}, 1, {ty(F16, {4})}}),
                "[attr value] 100000 overflows the f16 destination (largest finite value "
                "65504)");
}

TEST_F(OpsTest, Cast) {
  EXPECT_TYPES((Call{"cast", {ty(F32, {T, H})}, {{"to", aType(BF16)}}}), "bf16[T, H]");
  // Not written: the declared destination's dtype.
  EXPECT_TYPES((Call{"cast", {ty(F32, {T, H})}, {}, 1, {ty(F16, {T, H})}}), "f16[T, H]");
  // Written wins over the destination (the caller then checks storability).
  EXPECT_TYPES((Call{"cast", {ty(F32, {T})}, {{"to", aType(I32)}}, 1, {ty(I64, {T})}}),
               "i32[T]");
  EXPECT_TYPES((Call{"cast", {ty(BF16, {})}, {{"to", aType(F32)}}}), "f32[]");
  EXPECT_ERRORS((Call{"cast", {ty(F32, {T})}}),
                "[op] cast needs the attribute 'to' or a declared destination (the target dtype "
                "cannot be inferred)");
}

// ---- elementwise --------------------------------------------------------------------------

TEST_F(OpsTest, AddMul) {
  EXPECT_TYPES((Call{"add", {ty(BF16, {T, H}), ty(BF16, {T, 2048})}}), "bf16[T, H]");
  EXPECT_TYPES((Call{"mul", {ty(F32, {T}), ty(F32, {T})}}), "f32[T]");
  EXPECT_TYPES((Call{"add", {ty(I32, {4}), ty(I32, {4})}}), "i32[4]");
  EXPECT_TYPES((Call{"mul", {ty(I64, {}), ty(I64, {})}}), "i64[]");
  // Task level: add(x[i, :], o[i, :]) -> y[i, :].
  EXPECT_TYPES((Call{"add", {ty(BF16, {H}), ty(BF16, {H})}}), "bf16[H]");
}

TEST_F(OpsTest, AddMulErrors) {
  EXPECT_ERRORS((Call{"add", {ty(BF16, {T, H}), ty(F16, {T, H})}}),
                "[1] operand 1 (b) has dtype f16; expected bf16 to match operand 0 (a)");
  EXPECT_ERRORS((Call{"mul", {ty(U8, {4}), ty(U8, {4})}}),
                "[0] operand 0 (a) must have dtype f32, f16, bf16, i32 or i64; got u8\n"
                "[1] operand 1 (b) must have dtype f32, f16, bf16, i32 or i64; got u8");
  EXPECT_ERRORS((Call{"add", {ty(F32, {T, H}), ty(F32, {H})}}),
                "[1] operand 1 (b) has rank 1; expected rank 2 to match operand 0 (a)");
  EXPECT_ERRORS((Call{"add", {ty(F32, {T, H}), ty(F32, {S, 4096})}}),
                "[1] operand 1 (b) has extent S in dimension 0; expected T to match dimension 0 "
                "of operand 0 (a)\n"
                "[1] operand 1 (b) has extent 4096 in dimension 1; expected H to match "
                "dimension 1 of operand 0 (a)");
  // Independent errors are all reported.
  EXPECT_ERRORS((Call{"add", {ty(F32, {T}), ty(I32, {S})}}),
                "[1] operand 1 (b) has dtype i32; expected f32 to match operand 0 (a)\n"
                "[1] operand 1 (b) has extent S in dimension 0; expected T to match dimension 0 "
                "of operand 0 (a)");
}

TEST_F(OpsTest, SiluMul) {
  EXPECT_TYPES((Call{"silu_mul", {ty(BF16, {T, 5632}), ty(BF16, {T, 5632})}}), "bf16[T, 5632]");
  EXPECT_ERRORS((Call{"silu_mul", {ty(I32, {T}), ty(I32, {T})}}),
                "[0] operand 0 (gate) must have a float dtype (f32, f16 or bf16); got i32\n"
                "[1] operand 1 (up) must have a float dtype (f32, f16 or bf16); got i32");
  EXPECT_ERRORS((Call{"silu_mul", {ty(F32, {T, 8}), ty(BF16, {T, 16})}}),
                "[1] operand 1 (up) has dtype bf16; expected f32 to match operand 0 (gate)\n"
                "[1] operand 1 (up) has extent 16 in dimension 1; expected 8 to match "
                "dimension 1 of operand 0 (gate)");
}

// ---- reductions ---------------------------------------------------------------------------

TEST_F(OpsTest, Reduce) {
  // Task level (the two-stage sum): reduce_sum(a[i * 1024 : min(N, i * 1024 + 1024)]) -> p[i].
  EXPECT_TYPES((Call{"reduce_sum", {ty(F32, {tile()})}}), "f32[]");
  EXPECT_TYPES((Call{"reduce_sum", {ty(BF16, {T, H})}}), "bf16[T]");
  EXPECT_TYPES((Call{"reduce_sum", {ty(BF16, {T, H})}, {{"axis", aInt(0)}}}), "bf16[H]");
  EXPECT_TYPES((Call{"reduce_sum", {ty(BF16, {T, H})}, {{"axis", aInt(-2)}}}), "bf16[H]");
  EXPECT_TYPES((Call{"reduce_max", {ty(I32, {T, S, 8})}, {{"axis", aInt(1)}}}), "i32[T, 8]");
  EXPECT_TYPES((Call{"reduce_max", {ty(F32, {N})}}), "f32[]");
}

TEST_F(OpsTest, ReduceErrors) {
  EXPECT_ERRORS((Call{"reduce_sum", {ty(F32, {})}}),
                "[0] operand 0 (x) must have rank at least 1; got rank 0");
  EXPECT_ERRORS((Call{"reduce_sum", {ty(F32, {T, H})}, {{"axis", aInt(2)}}}),
                "[attr axis] must be in [-2, 2) for operand 0 (x) of rank 2; got 2");
  EXPECT_ERRORS((Call{"reduce_max", {ty(F32, {T, H})}, {{"axis", aInt(-3)}}}),
                "[attr axis] must be in [-2, 2) for operand 0 (x) of rank 2; got -3");
  EXPECT_ERRORS((Call{"reduce_max", {ty(U8, {T})}}),
                "[0] operand 0 (x) must have dtype f32, f16, bf16, i32 or i64; got u8");
}

// ---- norms --------------------------------------------------------------------------------

TEST_F(OpsTest, Rmsnorm) {
  EXPECT_TYPES((Call{"rmsnorm", {ty(BF16, {T, H}), ty(BF16, {2048})}, {{"eps", aFloat(1e-5)}}}),
               "bf16[T, H]");
  // A float weight of another dtype is fine; the result has x's dtype.
  EXPECT_TYPES((Call{"rmsnorm", {ty(F32, {T, H}), ty(BF16, {H})}}), "f32[T, H]");
  // Task level: rmsnorm(x[i, :], ln1) -> h[i, :].
  EXPECT_TYPES((Call{"rmsnorm", {ty(BF16, {H}), ty(BF16, {H})}}), "bf16[H]");
  EXPECT_TYPES((Call{"rmsnorm", {ty(F16, {T, S, 64}), ty(F16, {64})}}), "f16[T, S, 64]");
}

TEST_F(OpsTest, RmsnormErrors) {
  EXPECT_ERRORS((Call{"rmsnorm", {ty(BF16, {T, H}), ty(BF16, {T, H})}}),
                "[1] operand 1 (weight) must have rank 1; got rank 2");
  EXPECT_ERRORS((Call{"rmsnorm", {ty(BF16, {T, H}), ty(BF16, {4096})}}),
                "[1] operand 1 (weight) has extent 4096 in dimension 0; expected H to match "
                "dimension 1 of operand 0 (x)");
  EXPECT_ERRORS((Call{"rmsnorm", {ty(I32, {T, H}), ty(I32, {H, H})}}),
                "[0] operand 0 (x) must have a float dtype (f32, f16 or bf16); got i32\n"
                "[1] operand 1 (weight) must have a float dtype (f32, f16 or bf16); got i32\n"
                "[1] operand 1 (weight) must have rank 1; got rank 2");
  EXPECT_ERRORS((Call{"rmsnorm", {ty(F32, {}), ty(F32, {H})}}),
                "[0] operand 0 (x) must have rank at least 1; got rank 0");
  EXPECT_ERRORS((Call{"rmsnorm", {ty(F32, {T, H}), ty(F32, {H})}, {{"eps", aFloat(-1e-6)}}}),
                "[attr eps] must be a finite number >= 0; got -1e-06");
}

TEST_F(OpsTest, AddRmsnorm) {
  EXPECT_TYPES((Call{"add_rmsnorm", {ty(BF16, {T, H}), ty(BF16, {T, H}), ty(BF16, {H})}, {}, 2}),
               "bf16[T, H], bf16[T, H]");
  EXPECT_TYPES((Call{"add_rmsnorm", {ty(F32, {H}), ty(F32, {H}), ty(BF16, {H})}, {}, 2}),
               "f32[H], f32[H]");
  // A wider residual (an f32 residual stream beside bf16 activations) keeps its dtype.
  EXPECT_TYPES((Call{"add_rmsnorm", {ty(BF16, {T, H}), ty(F32, {T, H}), ty(BF16, {H})}, {}, 2}),
               "bf16[T, H], f32[T, H]");
  EXPECT_ERRORS((Call{"add_rmsnorm", {ty(BF16, {T, H}), ty(I32, {T, H}), ty(BF16, {H})}, {}, 2}),
                "[1] operand 1 (residual) must have a float dtype (f32, f16 or bf16); got i32");
  EXPECT_ERRORS((Call{"add_rmsnorm", {ty(BF16, {T, H}), ty(F32, {T, 1024}), ty(BF16, {1024})},
                      {{"eps", aFloat(1e-5)}}, 2}),
                "[1] operand 1 (residual) has extent 1024 in dimension 1; expected H to match "
                "dimension 1 of operand 0 (x)\n"
                "[2] operand 2 (weight) has extent 1024 in dimension 0; expected H to match "
                "dimension 1 of operand 0 (x)");
  EXPECT_ERRORS((Call{"add_rmsnorm", {ty(F16, {T, H}), ty(F16, {H}), ty(F16, {H})}, {}, 2}),
                "[1] operand 1 (residual) has rank 1; expected rank 2 to match operand 0 (x)");
}

// ---- matmul -------------------------------------------------------------------------------

TEST_F(OpsTest, Matmul) {
  EXPECT_TYPES((Call{"matmul", {ty(BF16, {T, H}), ty(BF16, {H, 3072})}}), "bf16[T, 3072]");
  EXPECT_TYPES((Call{"matmul",
                     {ty(BF16, {T, H}), ty(BF16, {3072, H})},
                     {{"transpose_b", aBool(true)},
                      {"tile_m", aInt(16)},
                      {"tile_n", aInt(64)},
                      {"tile_k", aInt(128)},
                      {"split_k", aInt(4)}}}),
               "bf16[T, 3072]");
  EXPECT_TYPES((Call{"matmul", {ty(F32, {H}), ty(F32, {H, N})}}), "f32[N]");
  // Task level: matmul(a[i*16 : i*16+16, :], w[j*64 : j*64+64, :]) {transpose_b} -> y[..].
  EXPECT_TYPES((Call{"matmul", {ty(BF16, {16, H}), ty(BF16, {64, H})},
                     {{"transpose_b", aBool(true)}}}),
               "bf16[16, 64]");
  EXPECT_TYPES((Call{"matmul", {ty(F16, {T, tile()}), ty(F16, {tile(), 8})}}), "f16[T, 8]");
}

TEST_F(OpsTest, MatmulErrors) {
  EXPECT_ERRORS((Call{"matmul", {ty(BF16, {T, H}), ty(BF16, {3072, H})}}),
                "[1] operand 1 (b) has extent 3072 in dimension 0; expected H to match "
                "dimension 1 of operand 0 (a); did you mean transpose_b = true?");
  EXPECT_ERRORS((Call{"matmul", {ty(BF16, {T, H}), ty(BF16, {H, 3072})},
                      {{"transpose_b", aBool(true)}}}),
                "[1] operand 1 (b) has extent 3072 in dimension 1; expected H to match "
                "dimension 1 of operand 0 (a); did you mean transpose_b = false?");
  EXPECT_ERRORS((Call{"matmul", {ty(BF16, {T, H}), ty(BF16, {1024, 3072})}}),
                "[1] operand 1 (b) has extent 1024 in dimension 0; expected H to match "
                "dimension 1 of operand 0 (a)");
  EXPECT_ERRORS((Call{"matmul", {ty(BF16, {T, H}), ty(F16, {H, 3072})}}),
                "[1] operand 1 (b) has dtype f16; expected bf16 to match operand 0 (a)");
  EXPECT_ERRORS((Call{"matmul", {ty(I32, {T, S, H}), ty(F32, {H})}}),
                "[0] operand 0 (a) must have a float dtype (f32, f16 or bf16); got i32\n"
                "[0] operand 0 (a) must have rank 1 or 2; got rank 3\n"
                "[1] operand 1 (b) must have rank 2; got rank 1");
  EXPECT_ERRORS((Call{"matmul",
                      {ty(BF16, {T, H}), ty(BF16, {H, 3072})},
                      {{"tile_m", aInt(12)},
                       {"tile_n", aInt(512)},
                       {"tile_k", aInt(8)},
                       {"split_k", aInt(0)}}}),
                "[attr tile_m] must be a power of two in [8, 256]; got 12\n"
                "[attr tile_n] must be a multiple of 8 in [8, 256]; got 512\n"
                "[attr tile_k] must be a power of two in [16, 1024]; got 8\n"
                "[attr split_k] must be >= 1; got 0");
  EXPECT_ERRORS((Call{"matmul", {ty(BF16, {T, H}), ty(BF16, {H, 3072})},
                      {{"split_k", aInt(4096)}}}),
                "[attr split_k] must not exceed the reduction extent 2048 (dimension 1 of "
                "operand 0 (a)); got 4096");
}

// ---- rope, kv_append ----------------------------------------------------------------------

TEST_F(OpsTest, Rope) {
  EXPECT_TYPES((Call{"rope",
                     {ty(BF16, {T, 4096}), ty(BF16, {T, 1024}), ty(I32, {T})},
                     {{"head_dim", aInt(128)}, {"theta", aFloat(500000.0)}},
                     2}),
               "bf16[T, 4096], bf16[T, 1024]");
  // Task level: rope(q[t, :], k[t, :], pos[t]) -> qo[t, :], ko[t, :].
  EXPECT_TYPES((Call{"rope",
                     {ty(F32, {4096}), ty(BF16, {1024}), ty(I32, {})},
                     {{"head_dim", aInt(128)},
                      {"scaling", aStr("llama3")},
                      {"scaling_factor", aFloat(8.0)},
                      {"low_freq_factor", aFloat(1.0)},
                      {"high_freq_factor", aFloat(4.0)},
                      {"original_max_position", aInt(8192)}},
                     2}),
               "f32[4096], bf16[1024]");
  // Symbolic head counts are not checked for divisibility.
  EXPECT_TYPES((Call{"rope", {ty(BF16, {T, mul(N, intConst(64))}), ty(BF16, {T, 64}), ty(I32, {T})},
                     {{"head_dim", aInt(64)}}, 2}),
               "bf16[T, " + toString(mul(N, intConst(64))) + "], bf16[T, 64]");
}

TEST_F(OpsTest, RopeErrors) {
  EXPECT_ERRORS((Call{"rope", {ty(BF16, {T, 4096}), ty(BF16, {7, 1024}), ty(I64, {T, 1})},
                      {{"head_dim", aInt(128)}}, 2}),
                "[2] operand 2 (pos) must have dtype i32; got i64\n"
                "[1] operand 1 (k) has extent 7 in dimension 0; expected T to match dimension 0 "
                "of operand 0 (q)\n"
                "[2] operand 2 (pos) has rank 2; expected rank 1 (one position per row of "
                "operand 0 (q))");
  EXPECT_ERRORS((Call{"rope", {ty(BF16, {T, 4096}), ty(BF16, {1024}), ty(I32, {S})},
                      {{"head_dim", aInt(128)}}, 2}),
                "[1] operand 1 (k) has rank 1; expected rank 2 to match operand 0 (q)\n"
                "[2] operand 2 (pos) has extent S in dimension 0; expected T to match "
                "dimension 0 of operand 0 (q)");
  EXPECT_ERRORS((Call{"rope", {ty(BF16, {T, 4096}), ty(BF16, {T, 1024}), ty(I32, {T})},
                      {{"head_dim", aInt(63)}}, 2}),
                "[attr head_dim] must be a positive even number; got 63");
  EXPECT_ERRORS((Call{"rope", {ty(BF16, {T, 4000}), ty(BF16, {T, 1024}), ty(I32, {T})},
                      {{"head_dim", aInt(128)}}, 2}),
                "[0] operand 0 (q) has extent 4000 in dimension 1, which is not a multiple of "
                "head_dim 128");
  EXPECT_ERRORS((Call{"rope", {ty(BF16, {T, 4096}), ty(BF16, {T, 1024}), ty(I32, {T})},
                      {{"head_dim", aInt(128)}, {"theta", aFloat(0)}, {"scaling", aStr("yarn")}},
                      2}),
                "[attr theta] must be a finite number > 0; got 0\n"
                "[attr scaling] must be \"none\" or \"llama3\"; got \"yarn\"");
  EXPECT_ERRORS((Call{"rope", {ty(BF16, {T, 4096}), ty(BF16, {T, 1024}), ty(I32, {T})},
                      {{"head_dim", aInt(128)},
                       {"scaling", aStr("llama3")},
                       {"low_freq_factor", aFloat(4)},
                       {"high_freq_factor", aFloat(1)},
                       {"original_max_position", aInt(0)}},
                      2}),
                "[attr high_freq_factor] must be greater than low_freq_factor (4); got 1\n"
                "[attr original_max_position] must be positive; got 0");
  // Without llama3 scaling its parameters are not used, hence not checked.
  EXPECT_TYPES((Call{"rope", {ty(BF16, {T, 4096}), ty(BF16, {T, 1024}), ty(I32, {T})},
                     {{"head_dim", aInt(128)}, {"low_freq_factor", aFloat(4)},
                      {"high_freq_factor", aFloat(1)}},
                     2}),
               "bf16[T, 4096], bf16[T, 1024]");
}

TEST_F(OpsTest, KvAppend) {
  EXPECT_TYPES((Call{"kv_append",
                     {ty(BF16, {T, 1024}), ty(BF16, {T, 1024}), ty(I32, {T})},
                     {},
                     2,
                     {ty(BF16, {T, S, 1024}), ty(BF16, {T, S, 1024})}}),
               "bf16[T, S, 1024], bf16[T, S, 1024]");
  // Task level: kv_append(k[t, :], v[t, :], pos[t]) -> kc[t, :, :], vc[t, :, :].
  EXPECT_TYPES((Call{"kv_append",
                     {ty(F16, {1024}), ty(F16, {1024}), ty(I32, {})},
                     {},
                     2,
                     {ty(F16, {S, 1024}), ty(F16, {S, 1024})}}),
               "f16[S, 1024], f16[S, 1024]");
}

TEST_F(OpsTest, KvAppendErrors) {
  EXPECT_ERRORS((Call{"kv_append", {ty(BF16, {T, 1024}), ty(BF16, {T, 1024}), ty(I32, {T})}, {},
                      2}),
                "[result 0] kv_append needs a declared destination for result 0 (k_cache) (the "
                "cache length cannot be inferred)\n"
                "[result 1] kv_append needs a declared destination for result 1 (v_cache) (the "
                "cache length cannot be inferred)");
  EXPECT_ERRORS((Call{"kv_append",
                      {ty(BF16, {T, 1024}), ty(BF16, {T, 1024}), ty(I32, {T})},
                      {},
                      2,
                      {ty(F16, {T, S, 512}), ty(BF16, {T, 1024})}}),
                "[result 0] result 0 (k_cache) has dtype f16; expected bf16 to match operand 0 "
                "(k)\n"
                "[result 0] result 0 (k_cache) has extent 512 in dimension 2; expected 1024 to "
                "match dimension 1 of operand 0 (k)\n"
                "[result 1] result 1 (v_cache) has rank 2; expected rank 3 (the dimensions of "
                "operand 1 (v) with the cache length inserted before the last)");
  EXPECT_ERRORS((Call{"kv_append",
                      {ty(BF16, {T, 1024}), ty(F32, {T, 512}), ty(I32, {N})},
                      {},
                      2,
                      {ty(BF16, {N, S, 1024}), std::nullopt}}),
                "[1] operand 1 (v) has dtype f32; expected bf16 to match operand 0 (k)\n"
                "[1] operand 1 (v) has extent 512 in dimension 1; expected 1024 to match "
                "dimension 1 of operand 0 (k)\n"
                "[2] operand 2 (pos) has extent N in dimension 0; expected T to match dimension "
                "0 of operand 0 (k)\n"
                "[result 0] result 0 (k_cache) has extent N in dimension 0; expected T to match "
                "dimension 0 of operand 0 (k)\n"
                "[result 1] kv_append needs a declared destination for result 1 (v_cache) (the "
                "cache length cannot be inferred)");
}

TEST_F(OpsTest, KvAppendPaged) {
  // Pools of N pages of 16 rows shared by the T rows, a page table of 64 entries per row.
  EXPECT_TYPES((Call{"kv_append",
                     {ty(BF16, {T, 1024}), ty(BF16, {T, 1024}), ty(I32, {T}), ty(I32, {T, 64})},
                     {},
                     2,
                     {ty(BF16, {N, 16, 1024}), ty(BF16, {N, 16, 1024})}}),
               "bf16[N, 16, 1024], bf16[N, 16, 1024]");
  // Task level: kv_append(k[t, :], v[t, :], pos[t], pt[t, :]) -> kp, vp (the whole pools).
  EXPECT_TYPES((Call{"kv_append",
                     {ty(F16, {1024}), ty(F16, {1024}), ty(I32, {}), ty(I32, {S})},
                     {},
                     2,
                     {ty(F16, {N, 16, 1024}), ty(F16, {N, 16, 1024})}}),
               "f16[N, 16, 1024], f16[N, 16, 1024]");
}

TEST_F(OpsTest, KvAppendPagedErrors) {
  EXPECT_ERRORS((Call{"kv_append",
                      {ty(BF16, {T, 1024}), ty(BF16, {T, 1024}), ty(I32, {T}), ty(I64, {T})},
                      {},
                      2}),
                "[3] operand 3 (page_table) must have dtype i32; got i64\n"
                "[3] operand 3 (page_table) has rank 1; expected rank 2 (one row of page ids per "
                "row of operand 0 (k))\n"
                "[result 0] kv_append needs a declared destination for result 0 (k_pages) (the "
                "number of pages and the page size cannot be inferred)\n"
                "[result 1] kv_append needs a declared destination for result 1 (v_pages) (the "
                "number of pages and the page size cannot be inferred)");
  EXPECT_ERRORS((Call{"kv_append",
                      {ty(BF16, {T, 1024}), ty(BF16, {T, 1024}), ty(I32, {T}), ty(I32, {N, 64})},
                      {},
                      2,
                      {ty(BF16, {T, 1024}), ty(BF16, {N, 8, 512})}}),
                "[3] operand 3 (page_table) has extent N in dimension 0; expected T to match "
                "dimension 0 of operand 0 (k)\n"
                "[result 0] result 0 (k_pages) has rank 2; expected rank 3 (a page pool [pages, "
                "page size, X])\n"
                "[result 1] result 1 (v_pages) has extent 512 in dimension 2; expected 1024 to "
                "match dimension 1 of operand 1 (v)");
  // The two pools must agree in pages and page size.
  EXPECT_ERRORS((Call{"kv_append",
                      {ty(BF16, {T, 1024}), ty(BF16, {T, 1024}), ty(I32, {T}), ty(I32, {T, 64})},
                      {},
                      2,
                      {ty(BF16, {N, 16, 1024}), ty(BF16, {T, 8, 1024})}}),
                "[result 1] result 1 (v_pages) has extent T in dimension 0; expected N to match "
                "dimension 0 of result 0 (k_pages)\n"
                "[result 1] result 1 (v_pages) has extent 8 in dimension 1; expected 16 to match "
                "dimension 1 of result 0 (k_pages)");
}

// ---- attention ----------------------------------------------------------------------------

TEST_F(OpsTest, AttentionDecode) {
  Call c{"attention_decode",
         {ty(BF16, {T, 4096}), ty(BF16, {T, S, 1024}), ty(BF16, {T, S, 1024}), ty(I32, {T})},
         {{"head_dim", aInt(128)}}};
  EXPECT_TYPES(c, "bf16[T, 4096]");
  c.nout = 2;
  EXPECT_TYPES(c, "bf16[T, 4096], f32[T, 32]");
  c.attrs["scale"] = aFloat(0.125);
  c.attrs["kv_splits"] = aInt(4);
  EXPECT_TYPES(c, "bf16[T, 4096], f32[T, 32]");
  // Task level: one sequence, a slice of the heads (GQA group), f32 query.
  EXPECT_TYPES((Call{"attention_decode",
                     {ty(F32, {512}), ty(BF16, {S, 128}), ty(BF16, {S, 128}), ty(I32, {})},
                     {{"head_dim", aInt(128)}},
                     2}),
               "f32[512], f32[4]");
  // A symbolic number of query heads: lse has last(q) / head_dim of them.
  EXPECT_TYPES((Call{"attention_decode",
                     {ty(BF16, {T, mul(N, intConst(128))}), ty(BF16, {T, S, 128}),
                      ty(BF16, {T, S, 128}), ty(I32, {T})},
                     {{"head_dim", aInt(128)}},
                     2}),
               "bf16[T, N * 128], f32[T, N]");
}

TEST_F(OpsTest, AttentionDecodeErrors) {
  EXPECT_ERRORS((Call{"attention_decode",
                      {ty(BF16, {T, 4096}), ty(BF16, {T, S, 768}), ty(BF16, {T, S, 768}),
                       ty(I32, {T})},
                      {{"head_dim", aInt(128)}}}),
                "[1] operand 1 (k_cache) has 6 heads of head_dim 128 (extent 768 in dimension "
                "2), which does not divide the 32 heads of operand 0 (q)");
  EXPECT_ERRORS((Call{"attention_decode",
                      {ty(BF16, {T, 4096}), ty(BF16, {T, 1024}), ty(F16, {T, S, 1024}),
                       ty(I32, {})},
                      {{"head_dim", aInt(128)}}}),
                "[2] operand 2 (v_cache) has dtype f16; expected bf16 to match operand 1 "
                "(k_cache)\n"
                "[1] operand 1 (k_cache) has rank 2; expected rank 3 (the dimensions of operand "
                "0 (q) with the cache length inserted before the last)\n"
                "[3] operand 3 (lens) has rank 0; expected rank 1 (one length per row of "
                "operand 0 (q))");
  EXPECT_ERRORS((Call{"attention_decode",
                      {ty(BF16, {T, 4096}), ty(BF16, {N, S, 1024}), ty(BF16, {N, N, 1024}),
                       ty(I64, {T})},
                      {{"head_dim", aInt(100)}, {"scale", aFloat(-1)}, {"kv_splits", aInt(-1)}}}),
                "[3] operand 3 (lens) must have dtype i32; got i64\n"
                "[1] operand 1 (k_cache) has extent N in dimension 0; expected T to match "
                "dimension 0 of operand 0 (q)\n"
                "[2] operand 2 (v_cache) has extent N in dimension 1; expected S to match "
                "dimension 1 of operand 1 (k_cache)\n"
                "[0] operand 0 (q) has extent 4096 in dimension 1, which is not a multiple of "
                "head_dim 100\n"
                "[1] operand 1 (k_cache) has extent 1024 in dimension 2, which is not a multiple "
                "of head_dim 100\n"
                "[attr scale] must be a finite number >= 0; got -1\n"
                "[attr kv_splits] must be >= 0; got -1");
  EXPECT_ERRORS((Call{"attention_decode",
                      {ty(I32, {T, 4096}), ty(BF16, {T, S, 1024}), ty(BF16, {T, S, 1024}),
                       ty(I32, {T})},
                      {{"head_dim", aInt(0)}}}),
                "[0] operand 0 (q) must have a float dtype (f32, f16 or bf16); got i32\n"
                "[attr head_dim] must be a positive number; got 0");
}

TEST_F(OpsTest, AttentionDecodePaged) {
  Call c{"attention_decode",
         {ty(BF16, {T, 4096}), ty(BF16, {N, 16, 1024}), ty(BF16, {N, 16, 1024}), ty(I32, {T}),
          ty(I32, {T, 256})},
         {{"head_dim", aInt(128)}},
         2};
  EXPECT_TYPES(c, "bf16[T, 4096], f32[T, 32]");
  // Task level: one request's part, a cache head's columns of the pools, its table slice.
  EXPECT_TYPES((Call{"attention_decode",
                     {ty(F32, {512}), ty(BF16, {N, 16, 128}), ty(BF16, {N, 16, 128}), ty(I32, {}),
                      ty(I32, {S})},
                     {{"head_dim", aInt(128)}},
                     2}),
               "f32[512], f32[4]");
}

TEST_F(OpsTest, AttentionDecodePagedErrors) {
  EXPECT_ERRORS((Call{"attention_decode",
                      {ty(BF16, {T, 4096}), ty(BF16, {N, 16, 768}), ty(BF16, {N, 8, 768}),
                       ty(I32, {T}), ty(F32, {T})},
                      {{"head_dim", aInt(128)}}}),
                "[2] operand 2 (v_pages) has extent 8 in dimension 1; expected 16 to match "
                "dimension 1 of operand 1 (k_pages)\n"
                "[4] operand 4 (page_table) must have dtype i32; got f32\n"
                "[4] operand 4 (page_table) has rank 1; expected rank 2 (one row of page ids per "
                "row of operand 0 (q))\n"
                "[1] operand 1 (k_pages) has 6 heads of head_dim 128 (extent 768 in dimension "
                "2), which does not divide the 32 heads of operand 0 (q)");
  EXPECT_ERRORS((Call{"attention_decode",
                      {ty(BF16, {T, 4096}), ty(BF16, {N, 1024}), ty(BF16, {N, 1024}),
                       ty(I32, {T}), ty(I32, {N, 64})},
                      {{"head_dim", aInt(128)}}}),
                "[1] operand 1 (k_pages) must have rank 3; got rank 2\n"
                "[4] operand 4 (page_table) has extent N in dimension 0; expected T to match "
                "dimension 0 of operand 0 (q)");
}

TEST_F(OpsTest, AttentionMerge) {
  Call c{"attention_merge", {ty(F32, {4, T, 4096}), ty(F32, {4, T, 32})},
         {{"head_dim", aInt(128)}}};
  EXPECT_TYPES(c, "f32[T, 4096]");
  c.nout = 2;
  EXPECT_TYPES(c, "f32[T, 4096], f32[T, 32]");
  // Task level: one row, all parts.
  EXPECT_TYPES((Call{"attention_merge", {ty(BF16, {N, 4096}), ty(F32, {N, 32})},
                     {{"head_dim", aInt(128)}}}),
               "bf16[4096]");
}

TEST_F(OpsTest, AttentionMergeErrors) {
  EXPECT_ERRORS((Call{"attention_merge", {ty(F32, {4, T, 4096}), ty(F32, {4, T, 16})},
                      {{"head_dim", aInt(128)}}}),
                "[1] operand 1 (lse_parts) has extent 16 in dimension 2; expected 32 (dimension "
                "2 of operand 0 (o_parts) divided by head_dim 128)");
  EXPECT_ERRORS((Call{"attention_merge", {ty(F32, {4, T, 4096}), ty(BF16, {2, T, 32})},
                      {{"head_dim", aInt(128)}}}),
                "[1] operand 1 (lse_parts) must have dtype f32; got bf16\n"
                "[1] operand 1 (lse_parts) has extent 2 in dimension 0; expected 4 to match "
                "dimension 0 of operand 0 (o_parts)");
  EXPECT_ERRORS((Call{"attention_merge", {ty(F32, {4096}), ty(F32, {32})},
                      {{"head_dim", aInt(128)}}}),
                "[0] operand 0 (o_parts) must have rank at least 2; got rank 1");
  EXPECT_ERRORS((Call{"attention_merge", {ty(F32, {4, T, 4096}), ty(F32, {4, 32})},
                      {{"head_dim", aInt(128)}}}),
                "[1] operand 1 (lse_parts) has rank 2; expected rank 3 to match operand 0 "
                "(o_parts)");
}

// ---- embedding, argmax ----------------------------------------------------------------------

TEST_F(OpsTest, Embedding) {
  EXPECT_TYPES((Call{"embedding", {ty(I32, {T}), ty(BF16, {128256, H})}}), "bf16[T, H]");
  // Task level: embedding(ids[t], table) -> x[t, :].
  EXPECT_TYPES((Call{"embedding", {ty(I32, {}), ty(F32, {128256, H})}}), "f32[H]");
  EXPECT_ERRORS((Call{"embedding", {ty(I64, {T}), ty(BF16, {H})}}),
                "[0] operand 0 (ids) must have dtype i32; got i64\n"
                "[1] operand 1 (table) must have rank 2; got rank 1");
}

TEST_F(OpsTest, Argmax) {
  EXPECT_TYPES((Call{"argmax", {ty(BF16, {T, 128256})}}), "i32[T]");
  EXPECT_TYPES((Call{"argmax", {ty(F32, {tile()})}}), "i32[]");
  EXPECT_TYPES((Call{"argmax", {ty(I64, {T, S, 4})}}), "i32[T, S]");
  EXPECT_ERRORS((Call{"argmax", {ty(U8, {})}}),
                "[0] operand 0 (x) must have dtype f32, f16, bf16, i32 or i64; got u8\n"
                "[0] operand 0 (x) must have rank at least 1; got rank 0");
}

// ---- MoE ----------------------------------------------------------------------------------

TEST_F(OpsTest, TopkSoftmax) {
  EXPECT_TYPES((Call{"topk_softmax", {ty(BF16, {T, 64})}, {{"k", aInt(8)}}, 2}),
               "f32[T, 8], i32[T, 8]");
  EXPECT_TYPES((Call{"topk_softmax", {ty(F32, {E})}, {{"k", aInt(2)}, {"renormalize", aBool(false)}},
                     2}),
               "f32[2], i32[2]");
  EXPECT_ERRORS((Call{"topk_softmax", {ty(BF16, {T, 64})}, {{"k", aInt(65)}}, 2}),
                "[attr k] must not exceed the extent 64 of dimension 1 of operand 0 (logits); "
                "got 65");
  EXPECT_ERRORS((Call{"topk_softmax", {ty(I32, {T, E})}, {{"k", aInt(0)}}, 2}),
                "[0] operand 0 (logits) must have a float dtype (f32, f16 or bf16); got i32\n"
                "[attr k] must be positive; got 0");
  EXPECT_ERRORS((Call{"topk_softmax", {ty(F32, {})}, {{"k", aInt(1)}}, 2}),
                "[0] operand 0 (logits) must have rank at least 1; got rank 0");
}

TEST_F(OpsTest, MoeAlign) {
  Expr nb = add(cdiv(mul(T, intConst(8)), intConst(16)), intConst(64));
  EXPECT_TYPES((Call{"moe_align", {ty(I32, {T, 8})},
                     {{"num_experts", aInt(64)}, {"block", aInt(16)}}, 3}),
               "i32[" + toString(mul(nb, intConst(16))) + "], i32[" + toString(nb) + "], i32[1]");
  // A context that keeps the written expressions keeps named consts in the shapes.
  Expr nbE = add(cdiv(mul(T, intConst(8)), intConst(16)), E);
  Result r = run(Call{"moe_align", {ty(I32, {T, 8})}, {{"num_experts", aExpr(E)},
                      {"block", aInt(16)}}, 3, {}, /*keep_int_exprs=*/true});
  EXPECT_TRUE(r.ok) << r.errs();
  EXPECT_EQ(r.types(),
            "i32[" + toString(mul(nbE, intConst(16))) + "], i32[" + toString(nbE) + "], i32[1]");
  EXPECT_NE(r.types().find("E"), std::string::npos) << r.types();
}

TEST_F(OpsTest, MoeAlignErrors) {
  EXPECT_ERRORS((Call{"moe_align", {ty(F32, {T})}, {{"num_experts", aInt(0)}, {"block", aInt(12)}},
                      3}),
                "[0] operand 0 (ids) must have dtype i32; got f32\n"
                "[0] operand 0 (ids) must have rank 2; got rank 1\n"
                "[attr num_experts] must be positive; got 0\n"
                "[attr block] must be a power of two; got 12");
}

TEST_F(OpsTest, GroupedMatmul) {
  Expr nb = add(cdiv(mul(T, intConst(8)), intConst(16)), intConst(64));
  Expr p = mul(nb, intConst(16));
  Call c{"grouped_matmul",
         {ty(BF16, {T, H}), ty(BF16, {64, 2816, H}), ty(I32, {p}), ty(I32, {nb}), ty(I32, {1})},
         {{"top_k", aInt(8)}, {"block", aInt(16)}, {"act", aStr("silu_mul")}}};
  EXPECT_TYPES(c, "bf16[" + toString(mul(T, intConst(8))) + ", 1408]");
  c.attrs.erase("act");
  EXPECT_TYPES(c, "bf16[" + toString(mul(T, intConst(8))) + ", 2816]");
  // Task level: one block of sorted ids, its expert as a point, num_blocks[0].
  EXPECT_TYPES((Call{"grouped_matmul",
                     {ty(BF16, {mul(T, intConst(8)), 1408}), ty(BF16, {E, 64, 1408}),
                      ty(I32, {16}), ty(I32, {}), ty(I32, {})},
                     {{"block", aInt(16)}}}),
               "bf16[" + toString(mul(T, intConst(8))) + ", 64]");
  // Six operands: gate rows in w, up rows in w_up (matching column tiles of a fused weight):
  // the result has w's row count, not half of it.
  EXPECT_TYPES((Call{"grouped_matmul",
                     {ty(BF16, {T, H}), ty(BF16, {E, 16, H}), ty(I32, {16}), ty(I32, {}), ty(I32, {}),
                      ty(BF16, {E, 16, H})},
                     {{"top_k", aInt(8)}, {"block", aInt(16)}, {"act", aStr("silu_mul")}}}),
               "bf16[" + toString(mul(T, intConst(8))) + ", 16]");
}

TEST_F(OpsTest, GroupedMatmulUpOperandErrors) {
  EXPECT_ERRORS((Call{"grouped_matmul",
                      {ty(BF16, {T, H}), ty(BF16, {E, 16, H}), ty(I32, {16}), ty(I32, {}), ty(I32, {}),
                       ty(BF16, {E, 16, H})},
                      {{"block", aInt(16)}}}),
                "[5] operand 5 (w_up) is only allowed with act = \"silu_mul\" (it holds the up rows)");
  EXPECT_ERRORS((Call{"grouped_matmul",
                      {ty(BF16, {T, H}), ty(BF16, {E, 16, H}), ty(I32, {16}), ty(I32, {}), ty(I32, {}),
                       ty(F16, {E, 32, H})},
                      {{"block", aInt(16)}, {"act", aStr("silu_mul")}}}),
                "[5] operand 5 (w_up) has dtype f16; expected bf16 to match operand 1 (w)");
  EXPECT_ERRORS((Call{"grouped_matmul",
                      {ty(BF16, {T, H}), ty(BF16, {E, 16, H}), ty(I32, {16}), ty(I32, {}), ty(I32, {}),
                       ty(BF16, {E, 32, H})},
                      {{"block", aInt(16)}, {"act", aStr("silu_mul")}}}),
                "[5] operand 5 (w_up) has extent 32 in dimension 1; expected 16 to match dimension 1 of "
                "operand 1 (w)");
}

TEST_F(OpsTest, GroupedMatmulErrors) {
  EXPECT_ERRORS((Call{"grouped_matmul",
                      {ty(BF16, {T, H}), ty(F16, {64, 11, 1024}), ty(I32, {100}),
                       ty(I32, {4, 4}), ty(I32, {2})},
                      {{"block", aInt(16)}, {"act", aStr("silu_mul")}}}),
                "[1] operand 1 (w) has dtype f16; expected bf16 to match operand 0 (x)\n"
                "[1] operand 1 (w) has extent 1024 in dimension 2; expected H to match "
                "dimension 1 of operand 0 (x)\n"
                "[3] operand 3 (block_expert) must have rank 0 or 1; got rank 2\n"
                "[4] operand 4 (num_blocks) has extent 2 in dimension 0; expected 1\n"
                "[2] operand 2 (sorted_ids) has extent 100 in dimension 0, which is not a "
                "multiple of block 16\n"
                "[1] operand 1 (w) has extent 11 in dimension 1, which is odd; act = "
                "\"silu_mul\" needs an even extent (gate and up halves)");
  EXPECT_ERRORS((Call{"grouped_matmul",
                      {ty(BF16, {T}), ty(BF16, {64, H}), ty(F32, {16, 1}), ty(I32, {4}),
                       ty(I32, {1})},
                      {{"block", aInt(0)}, {"act", aStr("gelu")}, {"top_k", aInt(0)}}}),
                "[0] operand 0 (x) must have rank 2; got rank 1\n"
                "[1] operand 1 (w) must have rank 3; got rank 2\n"
                "[2] operand 2 (sorted_ids) must have dtype i32; got f32\n"
                "[2] operand 2 (sorted_ids) must have rank 1; got rank 2\n"
                "[attr top_k] must be positive; got 0\n"
                "[attr act] must be \"none\" or \"silu_mul\"; got \"gelu\"\n"
                "[attr block] must be a power of two; got 0");
}

TEST_F(OpsTest, MoeCombine) {
  EXPECT_TYPES((Call{"moe_combine", {ty(BF16, {mul(T, intConst(8)), H}), ty(F32, {T, 8})}}),
               "bf16[T, H]");
  // Task level: moe_combine(y[t*8 : t*8+8, :], w[t:t+1, :]) -> out[t:t+1, :].
  EXPECT_TYPES((Call{"moe_combine", {ty(F32, {8, H}), ty(F32, {1, 8})}}), "f32[1, H]");
  EXPECT_ERRORS((Call{"moe_combine", {ty(BF16, {mul(T, intConst(4)), H}), ty(BF16, {T, 8})}}),
                "[1] operand 1 (weights) must have dtype f32; got bf16\n"
                "[0] operand 0 (y) has extent " + toString(mul(T, intConst(4))) +
                    " in dimension 0; expected " + toString(mul(T, intConst(8))) +
                    " (dimension 0 times dimension 1 of operand 1 (weights))");
  EXPECT_ERRORS((Call{"moe_combine", {ty(BF16, {H}), ty(F32, {T, 8, 1})}}),
                "[0] operand 0 (y) must have rank 2; got rank 1\n"
                "[1] operand 1 (weights) must have rank 2; got rank 3");
}

}  // namespace
}  // namespace etc::ir
