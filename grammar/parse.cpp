// parseFile and the parser driver: node helpers, depth limit, syntax error messages.
#include "grammar/parse.h"

#include <algorithm>
#include <charconv>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "grammar/driver.h"

namespace etc {
namespace grammar {

Driver::Driver(uint32_t file, const SourceManager& sources, ast::Context& ctx,
               DiagnosticEngine& diags)
    : ctx_(ctx), file_(ctx.make<ast::File>()), lexer_(file, sources.contents(file), diags) {
  file_->file_id = file;
  // About one declaration per 64 bytes is generous for real modules; bounded for huge inputs.
  file_->decls.reserve(std::min<size_t>(sources.contents(file).size() / 64, size_t{1} << 20));
}

uint32_t Driver::depthOf(const ast::TensorRef& ref) {
  uint32_t d = 0;
  for (const auto& e : ref.entries) d = std::max({d, depthOf(e.lo), depthOf(e.hi)});
  return d;
}

bool Driver::setDepth(ast::Expr* e, uint32_t child_depth) {
  e->depth = child_depth + 1;
  if (e->depth <= ast::kMaxExprDepth) return true;
  error(e->range.begin,
        fmt::format("expression nested too deeply (limit {})", ast::kMaxExprDepth));
  lexer_.stop();
  return false;
}

ast::Expr* Driver::binary(ast::BinaryOp op, ast::Expr* lhs, ast::Expr* rhs,
                          const SourceRange& range) {
  auto* e = make<ast::BinaryExpr>(range);
  e->op = op;
  e->lhs = lhs;
  e->rhs = rhs;
  if (!setDepth(e, std::max(lhs->depth, rhs->depth))) return nullptr;
  return e;
}

double Driver::floatValue(std::string_view text) {
  double v = 0;
  std::from_chars(text.data(), text.data() + text.size(), v);
  return v;
}

ast::Expr* Driver::callExpr(const char* callee, const SourceRange& callee_range,
                            std::vector<ast::Expr*>* args, const SourceRange& range) {
  auto* e = make<ast::CallExpr>(range);
  e->callee = ident(callee, callee_range);
  e->args = exprLists.take(args);
  uint32_t d = 0;
  for (const ast::Expr* a : e->args) d = std::max(d, a->depth);
  return setDepth(e, d) ? e : nullptr;
}

ast::Expr* Driver::indexExpr(const char* name, const SourceRange& name_range,
                             std::vector<ast::SliceEntry>* entries, const SourceRange& range) {
  auto* e = make<ast::IndexExpr>(range);
  e->ref.name = ident(name, name_range);
  e->ref.has_subscript = true;
  e->ref.entries = sliceLists.take(entries);
  e->ref.range = range;
  return setDepth(e, depthOf(e->ref)) ? e : nullptr;
}

namespace {

using kind = Parser::symbol_kind;
using Kind = Parser::symbol_kind_type;

constexpr Kind kDeclKeywords[] = {kind::S_KW_MODULE, kind::S_KW_INCLUDE, kind::S_KW_SYM,
                                  kind::S_KW_CONST,  kind::S_KW_TENSOR,  kind::S_KW_EVENT,
                                  kind::S_KW_TASK,   kind::S_KW_GRAPH};
constexpr Kind kOperators[] = {kind::S_PLUS, kind::S_MINUS, kind::S_STAR, kind::S_SLASH,
                               kind::S_PERCENT};
constexpr size_t kMaxExpected = 6;

std::string joinAlternatives(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i != 0) out += (i + 1 == items.size()) ? " or " : ", ";
    out += items[i];
  }
  return out;
}

// The "expected ..." part of a syntax error, or "" when there are too many alternatives.
// Simplifications, so that the list names what the user can write:
//   * where a name is expected, the keywords (which are also names there) are left out;
//   * where '}' is expected, declaration keywords and end of file are left out (they are
//     accepted only to report a missing '}');
//   * all declaration keywords -> "a declaration";
//   * all of + - * / % -> "an operator" (and then '<=', and the '(' and '[' that may follow a
//     name, are left out).
using TokenSet = std::vector<bool>;  // indexed by token kind

TokenSet expectedTokens(const Parser::context& ctx) {
  Kind buf[kind::YYNTOKENS];
  const int n = ctx.expected_tokens(buf, kind::YYNTOKENS);
  TokenSet set(kind::YYNTOKENS, false);
  for (int i = 0; i < n; ++i) set[buf[i]] = true;
  return set;
}

bool isDeclKeyword(Kind k) {
  return std::find(std::begin(kDeclKeywords), std::end(kDeclKeywords), k) != std::end(kDeclKeywords);
}

// Whether the construct being parsed may end where the lookahead stands: the parser would
// also accept a '}', a declaration or the end of the file there.
// (Where every keyword is expected along with an identifier, the keywords are names.)
bool mayEndHere(const TokenSet& expected) {
  if (expected[kind::S_RBRACE] || expected[kind::S_YYEOF]) return true;
  bool keywords_are_names = expected[kind::S_IDENT];
  for (int k = kind::S_KW_MODULE; k <= kind::S_KW_RUN; ++k) keywords_are_names &= bool(expected[k]);
  return !keywords_are_names &&
         std::any_of(std::begin(kDeclKeywords), std::end(kDeclKeywords), [&](Kind k) { return bool(expected[k]); });
}

std::string expectedList(TokenSet set) {
  auto has = [&](Kind k) { return bool(set[k]); };
  auto hasAll = [&](auto&& ks) {
    return std::all_of(std::begin(ks), std::end(ks), [&](Kind k) { return has(k); });
  };

  bool all_keywords = true;
  for (int k = kind::S_KW_MODULE; k <= kind::S_KW_RUN; ++k) all_keywords &= has(Kind(k));
  if (all_keywords && has(kind::S_IDENT)) {
    for (int k = kind::S_KW_MODULE; k <= kind::S_KW_RUN; ++k) set[k] = false;
  }
  if (has(kind::S_RBRACE)) {
    for (Kind k : kDeclKeywords) set[k] = false;
    set[kind::S_YYEOF] = false;
  }
  const bool declaration = hasAll(kDeclKeywords);
  if (declaration) {
    for (Kind k : kDeclKeywords) set[k] = false;
    set[kind::S_YYEOF] = false;
  }
  const bool op = hasAll(kOperators);
  if (op) {
    for (Kind k : kOperators) set[k] = false;
    set[kind::S_LE] = false;
    set[kind::S_LPAREN] = false;
    set[kind::S_LBRACK] = false;
  }

  std::vector<std::string> items;
  if (op) items.push_back("an operator");
  for (int k = 0; k < kind::YYNTOKENS; ++k) {
    if (set[k] && k != kind::S_YYEOF) items.push_back(tokenKindName(Kind(k)));
  }
  if (declaration) items.push_back("a declaration");
  if (has(kind::S_YYEOF)) items.push_back(tokenKindName(kind::S_YYEOF));
  if (items.empty() || items.size() > kMaxExpected) return "";
  return joinAlternatives(items);
}

}  // namespace

void Driver::syntaxError(const Parser::context& ctx) {
  if (stopped()) return;
  const Kind found = ctx.lookahead().kind();
  // `copy(x) -> y,` followed by a statement on the next line: the ',' made the parser read
  // the next line as the rest of the list, and the error comes on that line. The mistake is
  // the trailing ',' when the line looks like the start of a declaration or statement: it
  // begins with a keyword, or with a name followed by '(' or '='. (A list that really goes on
  // to the next line and breaks there is left alone.)
  const LineAfterComma& line = after_comma_;
  if (line.line == ctx.location().begin.line && found != kind::S_YYEOF &&
      (isKeyword(line.first) ||
       (line.first == kind::S_IDENT && (line.second == kind::S_LPAREN || line.second == kind::S_EQUAL)))) {
    error(line.comma, fmt::format("unexpected ',' at the end of the line: the next line begins a new {}",
                                  isDeclKeyword(line.first) ? "declaration" : "statement"));
    return;
  }
  const Seen& before = before_;
  TokenSet expected = expectedTokens(ctx);
  std::string list = expectedList(expected);
  // A line cut short (`sym B in [1, 64` without its ']'): the error is at the end of that
  // line, not at the first token of the next one.
  if (found != kind::S_YYEOF && before.kind != kind::S_YYEMPTY &&
      ctx.location().begin.line > before.range.end.line && !mayEndHere(expected)) {
    SourceLoc eol = before.range.end;
    ++eol.col;
    error(eol, "unexpected end of line" + (list.empty() ? std::string() : ", expected " + list));
    return;
  }
  std::string message = "unexpected " + describeToken(ctx.lookahead());
  if (!list.empty()) message += ", expected " + list;
  error(ctx.location().begin, std::move(message));
}

void Driver::missingBrace(const Parser::symbol_type& found, std::string_view what,
                          std::string_view name, const SourceRange& lbrace) {
  if (stopped()) return;
  error(found.location.begin,
        fmt::format("unexpected {}, expected '}}' at the end of {} '@{}'", describeToken(found),
                    what, name),
        {Note{lbrace.begin, "to match this '{'"}});
}

}  // namespace grammar

ast::File* parseFile(uint32_t file_id, const SourceManager& sources, ast::Context& ctx,
                     DiagnosticEngine& diags) {
  grammar::Driver drv(file_id, sources, ctx, diags);
  grammar::Parser parser(drv);
  parser.parse();
  return drv.file();
}

}  // namespace etc
