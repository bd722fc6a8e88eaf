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

// Whether e has a sym leaf (a load's indices included).
bool hasSym(const Expr& e) {
  bool found = false;
  forEachLeaf(e, [&](const ExprNode& n) { found = found || n.kind == ExprKind::Sym; });
  return found;
}

// `e` with the data replaced so that the result bounds e from above where sign > 0 and from
// below where sign < 0, at every sym value: a Bounded node by its bound where e grows with it,
// a term of only loads and constants (an indicator such as min(max(T + 1 - load(..), 0), 1),
// which shrinks as the load grows) by the end of its interval on that side. Null where neither
// applies (a Bounded node on the lower side, a product of two data terms, a data divisor, a
// factor of either sign).
Expr replaceBounded(const Expr& e, const RangeEnv& env, int sign) {
  if (!hasLoad(e)) return e;
  if (!hasSym(e) && !hasCoord(e)) {
    const Interval b = bounds(e, env);
    if (sign > 0 && !b.upperUnbounded()) return intConst(b.hi);
    if (sign < 0 && !b.lowerUnbounded()) return intConst(b.lo);
  }
  // The sign a term's growth gives the product or quotient: the other factor's, or null.
  auto signOf = [&](const Expr& other) {
    const Interval b = bounds(other, env);
    return b.lo >= 0 ? sign : b.hi <= 0 ? -sign : 0;
  };
  switch (e->kind) {
    case ExprKind::Bounded: return sign > 0 && !hasLoad(e->ops[1]) ? e->ops[1] : nullptr;
    case ExprKind::Add:
    case ExprKind::Min:
    case ExprKind::Max:
    case ExprKind::Mul:
    case ExprKind::Div:
    case ExprKind::CDiv: {
      const bool quotient = e->kind == ExprKind::Div || e->kind == ExprKind::CDiv;
      if (quotient && hasLoad(e->ops[1])) return nullptr;
      std::vector<Expr> ops;
      for (size_t i = 0; i < e->ops.size(); ++i) {
        const Expr& op = e->ops[i];
        int op_sign = sign;
        if (e->kind == ExprKind::Mul && hasLoad(op)) {
          Expr others = intConst(1);
          for (size_t j = 0; j < e->ops.size(); ++j)
            if (j != i) {
              if (hasLoad(e->ops[j])) return nullptr;
              others = mul(others, e->ops[j]);
            }
          op_sign = signOf(others);
        } else if (quotient && i == 0) {
          // floor and ceiling of x / y grow with x for y > 0 and shrink with it for y < 0.
          const Interval y = bounds(e->ops[1], env);
          op_sign = y.lo > 0 ? sign : y.hi < 0 ? -sign : 0;
        }
        if (op_sign == 0) return nullptr;
        Expr r = replaceBounded(op, env, op_sign);
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
  if (Expr r = replaceBounded(e, env, 1)) return r;
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
