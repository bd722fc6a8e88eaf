// Glue between the Bison parser, the lexer and the AST context (internal to grammar/).
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <utility>

#include "compiler/support/diagnostics.h"
#include "grammar/ast.h"
#include "grammar/lexer.h"

namespace etc::grammar {

// Recycling storage for partial results that are too large to travel through Bison's variant
// (every variant push zero-fills and moves the whole buffer). get() hands out a default
// object; take() moves it out and recycles the slot. Slots of symbols that error recovery
// discards are simply never recycled (the pool owns them).
template <class T>
class Pool {
 public:
  T* get() {
    if (free_.empty()) return &store_.emplace_back();
    T* p = free_.back();
    free_.pop_back();
    return p;
  }
  T take(T* p) {
    T value = std::move(*p);
    *p = T{};
    free_.push_back(p);
    return value;
  }

 private:
  std::deque<T> store_;
  std::vector<T*> free_;
};

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

  ast::SliceEntry* slice(const SourceRange& range, bool is_range, ast::Expr* lo, ast::Expr* hi) {
    ast::SliceEntry* e = slices.get();
    e->is_range = is_range;
    e->lo = lo;
    e->hi = hi;
    e->range = range;
    return e;
  }
  ast::OpCall* opcall(std::string_view callee, const SourceRange& callee_range,
                      std::vector<ast::TensorRef> args, bool has_attr_block,
                      std::vector<ast::Attr> attrs, const SourceRange& range) {
    ast::OpCall* c = calls.get();
    c->callee = ast::Ident{callee, callee_range};
    c->args = std::move(args);
    c->attrs = std::move(attrs);
    c->has_attr_block = has_attr_block;
    c->range = range;
    return c;
  }

  Pool<ast::TensorRef> refs;
  Pool<ast::SliceEntry> slices;
  Pool<ast::OpCall> calls;
  Pool<ast::Attr> attrs;

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
