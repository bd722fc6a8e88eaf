// Glue between the Bison parser, the lexer and the AST context (internal to grammar/).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "compiler/support/diagnostics.h"
#include "grammar/ast.h"
#include "grammar/lexer.h"

namespace etc::grammar {

class Driver {
 public:
  Driver(uint32_t file, const SourceManager& sources, ast::Context& ctx, DiagnosticEngine& diags);

  Lexer& lexer() { return lexer_; }
  bool stopped() const { return lexer_.stopped(); }
  void error(SourceLoc loc, std::string message, std::vector<Note> notes = {}) {
    lexer_.error(loc, std::move(message), std::move(notes));
  }

  // ---- node construction (used by the grammar's actions) --------------------------------
  template <class T, class... Args>
  T* make(const SourceRange& range, Args&&... args) {
    T* node = ctx_.make<T>(std::forward<Args>(args)...);
    node->range = range;
    return node;
  }
  static ast::Ident ident(std::string_view name, const SourceRange& range) {
    return ast::Ident{name, range};
  }
  // Sets e->depth = 1 + child_depth. Returns false (after reporting "expression nested too
  // deeply" once and stopping the lexer) when it exceeds ast::kMaxExprDepth; the action then
  // aborts the parse.
  bool setDepth(ast::Expr* e, uint32_t child_depth);
  static uint32_t depthOf(const ast::Expr* e) { return e ? e->depth : 0; }
  static uint32_t depthOf(const ast::TensorRef& ref);
  ast::Expr* binary(ast::BinaryOp op, ast::Expr* lhs, ast::Expr* rhs, const SourceRange& range);

  ast::File* file() { return file_; }
  void addDecl(ast::Decl* d) {
    if (d) file_->decls.push_back(d);
  }

  // ---- diagnostics --------------------------------------------------------------------
  void syntaxError(const Parser::context& ctx);
  // A body (`what` = "task" or "graph") not closed before the lookahead `found`.
  void missingBrace(const Parser::symbol_type& found, std::string_view what,
                    std::string_view name, const SourceRange& lbrace);

 private:
  ast::Context& ctx_;
  ast::File* file_;
  Lexer lexer_;
};

}  // namespace etc::grammar
