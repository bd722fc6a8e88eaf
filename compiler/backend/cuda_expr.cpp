#include "compiler/backend/cuda_expr.h"

#include <fmt/format.h>

#include <set>

#include "compiler/backend/derived_syms.h"

#include "compiler/ir/expr_internal.h"

namespace etc::backend {

using namespace ir;

namespace {

std::string nary(const Module& m, const Expr& e, const CudaNames& names, std::string_view fn) {
  std::string out = cudaExpr(m, e->ops[0], names);
  for (size_t i = 1; i < e->ops.size(); ++i)
    out = fmt::format("etc::dev::{}({}, {})", fn, out, cudaExpr(m, e->ops[i], names));
  return out;
}

std::string joined(const Module& m, const Expr& e, const CudaNames& names, std::string_view op) {
  std::string out = "(";
  for (size_t i = 0; i < e->ops.size(); ++i) out += std::string(i ? op : "") + cudaExpr(m, e->ops[i], names);
  return out + ")";
}

// `e` with each Bounded node replaced by its bound, or null where a replaced value does not
// only increase the result (a subtracted or divided-by term, a negative factor).
Expr replaceBounded(const Expr& e, const RangeEnv& env) {
  if (!hasLoad(e)) return e;
  switch (e->kind) {
    case ExprKind::Bounded: return hasLoad(e->ops[1]) ? nullptr : e->ops[1];
    case ExprKind::Add:
    case ExprKind::Min:
    case ExprKind::Max:
    case ExprKind::Mul:
    case ExprKind::Div:
    case ExprKind::CDiv: {
      std::vector<Expr> ops;
      for (size_t i = 0; i < e->ops.size(); ++i) {
        const Expr& op = e->ops[i];
        bool divisor = (e->kind == ExprKind::Div || e->kind == ExprKind::CDiv) && i == 1;
        if (hasLoad(op) && divisor) return nullptr;
        if (e->kind == ExprKind::Mul && hasLoad(op))
          for (const Expr& other : e->ops)  // a product grows with one factor only if the others are >= 0
            if (other != op && (hasLoad(other) || bounds(other, env).lo < 0)) return nullptr;
        Expr r = replaceBounded(op, env);
        if (!r) return nullptr;
        ops.push_back(std::move(r));
      }
      return ir::expr_detail::rebuild(*e, std::move(ops));
    }
    default: return nullptr;
  }
}

}  // namespace

Expr dataBound(const Module& m, const Expr& e) {
  if (!hasLoad(e)) return e;
  RangeEnv env = m.symRanges();
  if (Expr r = replaceBounded(e, env)) return r;
  return intConst(bounds(e, env).hi);
}

std::string cudaExpr(const Module& m, const Expr& e, const CudaNames& names) {
  if (names.derived)
    if (std::optional<size_t> k = names.derived->intern(e)) return fmt::format("etc_d{}", *k);
  switch (e->kind) {
    case ExprKind::Int:
      return e->value == INT64_MIN ? "(-9223372036854775807LL - 1)" : fmt::format("{}LL", e->value);
    case ExprKind::Const: return fmt::format("{}LL", e->value);
    // A local copy of p.sym[id] (symLocals): a value, which the asm of a wait or notify (a
    // "memory" clobber) does not make the compiler load again, so that index math over syms,
    // cdiv(16, B) say, is done once a function rather than once a statement.
    case ExprKind::Sym: return fmt::format("etc_s{}", e->id);
    case ExprKind::Coord: return names.coord(e->id);
    case ExprKind::Load: {
      // Row-major index into the i32 tensor, from its (symbolic) shape.
      const Tensor& t = m.tensors[e->id];
      std::string index = "0LL";
      for (size_t d = 0; d < e->ops.size(); ++d) {
        std::string extent = d < t.shape.size() ? cudaExpr(m, t.shape[d], names) : "1LL";
        index = fmt::format("({} * {} + {})", index, extent, cudaExpr(m, e->ops[d], names));
      }
      return fmt::format("(long long)(((const volatile int*)p.tensor[{}])[{}])", e->id, index);
    }
    case ExprKind::Bounded: return cudaExpr(m, e->ops[0], names);
    case ExprKind::Add: return joined(m, e, names, " + ");
    case ExprKind::Mul: return joined(m, e, names, " * ");
    case ExprKind::Div:
    case ExprKind::Mod:
    case ExprKind::CDiv: {
      // A divisor known only at run time (a sym, a coordinate) takes the helpers that divide in
      // 32 bits where the operands fit; a constant one keeps the 64-bit helpers, whose division
      // the compiler turns into a multiplication (and a second path would only add code).
      const bool runtime = !isConstant(e->ops[1]);
      const char* fn = e->kind == ExprKind::Div ? "floordiv" : e->kind == ExprKind::Mod ? "floormod" : "cdiv";
      return fmt::format("etc::dev::{}{}({}, {})", fn, runtime ? "_rt" : "", cudaExpr(m, e->ops[0], names),
                         cudaExpr(m, e->ops[1], names));
    }
    case ExprKind::Min: return nary(m, e, names, "imin");
    case ExprKind::Max: return nary(m, e, names, "imax");
  }
  return "0LL";
}

std::string cudaType(DType t) {
  switch (t) {
    case DType::F32: return "float";
    case DType::F16: return "__half";
    case DType::BF16: return "__nv_bfloat16";
    case DType::I32: return "int";
    case DType::I64: return "long long";
    case DType::U8: return "unsigned char";
  }
  return "void";
}

std::string symLocals(const Module& m, std::string_view indent) {
  std::string out;
  for (size_t k = 0; k < m.syms.size(); ++k)
    out += fmt::format("{}[[maybe_unused]] const long long etc_s{} = p.sym[{}];\n", indent, k, k);
  return out + fmt::format("{}{}\n", indent, kDerivedLocalsMark);
}

bool resolveDerivedLocals(std::string& code) {
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  // The etc_d<k> in code[from, to).
  auto uses = [&](size_t from, size_t to) {
    std::set<long> ks;
    for (size_t at = code.find("etc_d", from); at < to; at = code.find("etc_d", at + 1)) {
      size_t j = at + 5;
      if ((at > 0 && word(code[at - 1])) || j >= code.size() || !std::isdigit(static_cast<unsigned char>(code[j]))) continue;
      long k = 0;
      for (; j < code.size() && std::isdigit(static_cast<unsigned char>(code[j])); ++j) k = k * 10 + (code[j] - '0');
      if (j < code.size() && word(code[j])) continue;
      ks.insert(k);
    }
    return ks;
  };
  std::vector<size_t> marks;
  for (size_t at = code.find(kDerivedLocalsMark); at != std::string::npos; at = code.find(kDerivedLocalsMark, at + 1))
    marks.push_back(at);
  if (!uses(0, marks.empty() ? code.size() : marks.front()).empty()) return false;
  std::string out;
  size_t copied = 0;
  for (size_t i = 0; i < marks.size(); ++i) {
    const size_t line = code.rfind('\n', marks[i]) + 1;  // the mark's indent
    const std::string indent = code.substr(line, marks[i] - line);
    out.append(code, copied, line - copied);
    std::string decls;
    for (long k : uses(marks[i], i + 1 < marks.size() ? marks[i + 1] : code.size()))
      decls += fmt::format("{}[[maybe_unused]] const long long etc_d{} = p.derived[{}];\n", indent, k, k);
    out += decls;
    copied = marks[i] + kDerivedLocalsMark.size() + 1;  // the mark and its newline
  }
  out.append(code, copied, std::string::npos);
  code = std::move(out);
  return true;
}

}  // namespace etc::backend
