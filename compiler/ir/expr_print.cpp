// Printing in the .etir expression syntax with minimal parentheses.
//
// Precedence, loosest first: `<=`, then `+ -`, then `* / %` (left-associative), then unary
// minus, then atoms (literals, names, calls). The printer never relies on how tightly the
// parser binds unary minus against `/` and `%`: a leading minus is only printed where either
// reading gives the same value, and parenthesized elsewhere.
#include <charconv>

#include "compiler/ir/expr.h"
#include "compiler/ir/expr_internal.h"

namespace etc::ir {

using namespace expr_detail;

namespace {

enum Prec : int { kPrecLe = 0, kPrecAdd = 1, kPrecMul = 2, kPrecUnary = 3, kPrecAtom = 4 };

// The literal int64 minimum has no positive counterpart to negate.
constexpr const char* kMinText = "-9223372036854775807 - 1";

class Printer {
 public:
  std::string out;

  void print(const ExprNode& e, int ctx) {
    bool parens = precOf(e) < ctx;
    if (parens) out += '(';
    printBare(e);
    if (parens) out += ')';
  }

 private:
  static int precOf(const ExprNode& e) {
    switch (e.kind) {
      case ExprKind::Int:
        if (e.value == kMin) return kPrecAdd;
        return e.value < 0 ? kPrecUnary : kPrecAtom;
      case ExprKind::Bounded: return kPrecLe;
      case ExprKind::Add: return kPrecAdd;
      case ExprKind::Mul:
      case ExprKind::Div:
      case ExprKind::Mod: return kPrecMul;
      default: return kPrecAtom;
    }
  }

  // Whether e prints with a leading `-` (at the precedence it has).
  static bool startsWithMinus(const ExprNode& e) {
    switch (e.kind) {
      case ExprKind::Int: return e.value < 0;
      case ExprKind::Mul: return decomposeTermNode(e).coef < 0;
      case ExprKind::Add: {
        for (const Expr& op : e.ops) {
          if (termCoef(*op) > 0) return false;
        }
        return true;
      }
      default: return false;
    }
  }

  static Term decomposeTermNode(const ExprNode& e) {
    if (e.kind == ExprKind::Mul && e.ops.back()->kind == ExprKind::Int) {
      return {e.ops.data(), uint32_t(e.ops.size() - 1), e.ops.back()->value, nullptr};
    }
    return {e.ops.data(), uint32_t(e.ops.size()), 1, nullptr};
  }

  static int64_t termCoef(const ExprNode& t) {
    if (t.kind == ExprKind::Int) return t.value;
    if (t.kind == ExprKind::Mul) return decomposeTermNode(t).coef;
    return 1;
  }

  void printInt(int64_t v) {
    if (v == kMin) {
      out += kMinText;
      return;
    }
    char buf[24];
    auto res = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, res.ptr);
  }

  void printList(const std::vector<Expr>& ops) {
    for (size_t i = 0; i < ops.size(); ++i) {
      if (i) out += ", ";
      print(*ops[i], kPrecAdd);
    }
  }

  void printCall(const char* fn, const ExprNode& e) {
    out += fn;
    out += '(';
    printList(e.ops);
    out += ')';
  }

  // The operand left of `*`, `/`, `%`: a leading minus is parenthesized so that `(-x) / 2`
  // cannot be read as `-(x / 2)`.
  void printLeftOperand(const ExprNode& e) {
    if (startsWithMinus(e) && precOf(e) >= kPrecMul) {
      out += '(';
      printBare(e);
      out += ')';
      return;
    }
    print(e, kPrecMul);
  }

  // factors[0] * ... * factors[n-1] * |coef|. After a unary minus the first factor must be
  // an atom: `-(x / 4) * 3`, not `-x / 4 * 3`.
  void printMagnitude(const Term& t, bool after_unary_minus) {
    for (uint32_t i = 0; i < t.nfactors; ++i) {
      if (i) out += " * ";
      const ExprNode& f = *t.factors[i];
      if (i > 0 || (after_unary_minus && precOf(f) < kPrecAtom)) {
        print(f, kPrecAtom);
      } else {
        printLeftOperand(f);
      }
    }
    int64_t c = t.coef < 0 ? -t.coef : t.coef;  // callers print kMin coefficients signed
    if (t.nfactors == 0) {
      printInt(c);
    } else if (c != 1) {
      out += " * ";
      printInt(c);
    }
  }

  // A term with its sign: `x * 4`, `-x * 4` (first) or ` - x * 4` (later).
  void printSignedTerm(const ExprNode& term, bool first) {
    Term t = term.kind == ExprKind::Int ? Term{nullptr, 0, term.value, nullptr}
             : term.kind == ExprKind::Mul ? decomposeTermNode(term)
                                          : Term{nullptr, 0, 1, nullptr};
    if (term.kind != ExprKind::Int && term.kind != ExprKind::Mul) {
      if (!first) out += " + ";
      print(term, kPrecMul);  // the term is a single factor
      return;
    }
    if (t.coef == kMin) {  // no positive magnitude: print it as an added negative literal
      if (!first) out += " + ";
      for (uint32_t i = 0; i < t.nfactors; ++i) {
        if (i == 0) {
          printLeftOperand(*t.factors[i]);
        } else {
          print(*t.factors[i], kPrecAtom);
        }
        out += " * ";
      }
      if (t.nfactors == 0) {
        out += kMinText;
      } else {
        out += '(';
        out += kMinText;
        out += ')';
      }
      return;
    }
    bool negative = t.coef < 0;
    if (!first) {
      out += negative ? " - " : " + ";
      printMagnitude(t, false);
    } else if (negative && t.nfactors > 0 && isMinMax(t.factors[0]->kind)) {
      // `-max(a, b) * c` would re-parse with the minus absorbed into the max (as
      // min(-a, -b)): negate the whole product instead.
      out += "-(";
      printMagnitude(t, false);
      out += ')';
    } else {
      if (negative) out += '-';
      printMagnitude(t, negative);
    }
  }

  // Sums print in canonical order with two adjustments: min/max terms first (so that the
  // sum re-parses without the min/max absorbing the terms before it), and a positive term
  // first when the order would start with a negative one (`N - i * 1024`).
  void printSum(const ExprNode& e) {
    SmallVec<const ExprNode*, 16> order;
    for (const Expr& op : e.ops) {
      if (isMinMax(op->kind)) order.push_back(op.get());
    }
    for (const Expr& op : e.ops) {
      if (!isMinMax(op->kind)) order.push_back(op.get());
    }
    if (termCoef(*order[0]) < 0) {
      for (size_t i = 1; i < order.size(); ++i) {
        if (termCoef(*order[i]) > 0) {
          const ExprNode* p = order[i];
          for (size_t j = i; j > 0; --j) order[j] = order[j - 1];
          order[0] = p;
          break;
        }
      }
    }
    for (size_t i = 0; i < order.size(); ++i) printSignedTerm(*order[i], i == 0);
  }

  void printBinary(const ExprNode& e, const char* op) {
    printLeftOperand(*e.ops[0]);
    out += op;
    print(*e.ops[1], kPrecAtom);
  }

  void printBare(const ExprNode& e) {
    switch (e.kind) {
      case ExprKind::Int: printInt(e.value); return;
      case ExprKind::Sym:
      case ExprKind::Const:
      case ExprKind::Coord: out += e.name; return;
      case ExprKind::Load:
        out += "load(";
        out += e.name;
        if (!e.ops.empty()) {
          out += '[';
          printList(e.ops);
          out += ']';
        }
        out += ')';
        return;
      case ExprKind::Bounded:
        print(*e.ops[0], kPrecAdd);
        out += " <= ";
        print(*e.ops[1], kPrecAdd);
        return;
      case ExprKind::Add: printSum(e); return;
      case ExprKind::Mul: printSignedTerm(e, true); return;
      case ExprKind::Div: printBinary(e, " / "); return;
      case ExprKind::Mod: printBinary(e, " % "); return;
      case ExprKind::CDiv: printCall("cdiv", e); return;
      case ExprKind::Min: printCall("min", e); return;
      case ExprKind::Max: printCall("max", e); return;
    }
  }
};

}  // namespace

std::string toString(const Expr& e) {
  Printer p;
  p.print(*e, kPrecLe);
  return std::move(p.out);
}

}  // namespace etc::ir
