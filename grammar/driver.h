// Glue between the Bison parser, the lexer and the AST context (internal to grammar/).
#pragma once

#include <cstdint>
#include <deque>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compiler/support/diagnostics.h"
#include "grammar/ast.h"
#include "grammar/lexer.h"

namespace etc::grammar {

// Recycling storage for partial results. Every semantic value that travels through Bison's
// variant is 8 bytes and trivially copyable (const char*, int64_t, pointers): the variant moves and
// destroys values without real work. Objects and lists under construction live here.
//
// Pool<T>::get() hands out a default T; take() moves it out and recycles the slot.
// ListPool<T>::get() hands out an empty scratch vector that keeps its capacity; take() copies
// (moves) the elements into an exactly-sized vector for the AST and recycles the scratch one;
// take(nullptr) is an empty list (optional lists are null when absent).
// Slots of symbols that error recovery discards are never recycled (the pool still owns them).
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

template <class T>
class ListPool {
 public:
  std::vector<T>* get() {
    if (free_.empty()) return &store_.emplace_back();
    std::vector<T>* v = free_.back();
    free_.pop_back();
    return v;
  }
  std::vector<T>* get(T first) {
    std::vector<T>* v = get();
    v->push_back(std::move(first));
    return v;
  }
  std::vector<T> take(std::vector<T>* v) {
    if (!v) return {};
    std::vector<T> out(std::make_move_iterator(v->begin()), std::make_move_iterator(v->end()));
    v->clear();
    free_.push_back(v);
    return out;
  }

 private:
  std::deque<std::vector<T>> store_;
  std::vector<std::vector<T>*> free_;
};

class Driver {
 public:
  Driver(uint32_t file, const SourceManager& sources, ast::Context& ctx, DiagnosticEngine& diags);

  Lexer& lexer() { return lexer_; }

  // The parser's yylex. `errstatus` is Bison's error status: nonzero while recovering from a
  // syntax error (the lexer's nesting guard then restarts its count instead of reporting), 3
  // while no token has been shifted since the error. In that state the parser is discarding
  // tokens until one can start a declaration or statement; an identifier that is not the
  // first token on its line is almost never the start of a statement (it is the middle of
  // the broken one), so it is handed over as an invalid token, which the parser discards.
  // Statements that share a line (`run @a  run @b`) start with keywords and are unaffected.
  Parser::symbol_type lex(int errstatus) {
    Parser::symbol_type t = lexer_.next(errstatus != 0);
    noteToken(t.kind(), t.location);
    if (errstatus == 3 && t.kind() == Parser::symbol_kind::S_IDENT && !lexer_.firstOnLine())
      return Parser::make_YYUNDEF(t.location);
    return t;
  }
  // Whether the token starting at `first` is the first on its line (recovery points).
  bool startsLine(const char* first) const { return lexer_.startsLine(first); }
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
  // The text of a token from its first character and its (single-line) range.
  static std::string_view text(const char* first, const SourceRange& range) {
    return std::string_view(first, range.end.col - range.begin.col + 1);
  }
  // AT_NAME without its '@', STRING without its quotes (raw, escapes not processed).
  static std::string_view atName(const char* first, const SourceRange& range) {
    return text(first, range).substr(1);
  }
  static std::string_view stringText(const char* first, const SourceRange& range) {
    std::string_view t = text(first, range);
    return t.substr(1, t.size() - 2);
  }
  // The value of a FLOAT token's text (the lexer has validated it).
  static double floatValue(std::string_view text);

  // A name token (identifier or keyword) as an Ident.
  static ast::Ident ident(const char* first, const SourceRange& range) {
    return ast::Ident{text(first, range), range};
  }
  static ast::Ident atIdent(const char* first, const SourceRange& range) {
    return ast::Ident{atName(first, range), range};
  }
  // Sets e->depth = 1 + child_depth. Returns false (after reporting "expression nested too
  // deeply" once and stopping the lexer) when it exceeds ast::kMaxExprDepth; the action then
  // aborts the parse.
  bool setDepth(ast::Expr* e, uint32_t child_depth);
  static uint32_t depthOf(const ast::Expr* e) { return e ? e->depth : 0; }
  static uint32_t depthOf(const ast::TensorRef& ref);
  ast::Expr* binary(ast::BinaryOp op, ast::Expr* lhs, ast::Expr* rhs, const SourceRange& range);

  // Appends to `list` (a new list when null) and returns it.
  std::vector<ast::SliceEntry>* addSlice(std::vector<ast::SliceEntry>* list,
                                         const SourceRange& range, bool is_range, ast::Expr* lo,
                                         ast::Expr* hi) {
    if (!list) list = sliceLists.get();
    ast::SliceEntry& e = list->emplace_back();
    e.is_range = is_range;
    e.lo = lo;
    e.hi = hi;
    e.range = range;
    return list;
  }
  std::vector<ast::TensorRef>* addRef(std::vector<ast::TensorRef>* list, const char* name,
                                      const SourceRange& name_range,
                                      std::vector<ast::SliceEntry>* entries,
                                      const SourceRange& range) {
    if (!list) list = refLists.get();
    ast::TensorRef& r = list->emplace_back();
    r.name = ident(name, name_range);
    if (entries) {
      r.has_subscript = true;
      r.entries = sliceLists.take(entries);
    }
    r.range = range;
    return list;
  }
  // `attrs` null: no attribute block.
  ast::OpCall* opcall(const char* callee, const SourceRange& callee_range,
                      std::vector<ast::TensorRef>* args, std::vector<ast::Attr>* attrs,
                      const SourceRange& range) {
    ast::OpCall* c = calls.get();
    c->callee = ident(callee, callee_range);
    c->args = refLists.take(args);
    c->has_attr_block = attrs != nullptr;
    c->attrs = attrLists.take(attrs);
    c->range = range;
    return c;
  }

  Pool<ast::TensorRef> refs;
  Pool<ast::OpCall> calls;
  Pool<ast::Attr> attrs;
  ListPool<ast::Expr*> exprLists;
  ListPool<ast::SliceEntry> sliceLists;
  ListPool<ast::TensorRef> refLists;
  ListPool<ast::Attr> attrLists;
  ListPool<ast::Ident> identLists;
  ListPool<ast::Stmt*> stmtLists;

  ast::Decl* tensorDecl(const SourceRange& range, const char* name, const SourceRange& name_range,
                        const char* dtype, const SourceRange& dtype_range,
                        std::vector<ast::Expr*>* shape, const SourceRange& shape_range,
                        const char* role, const SourceRange& role_range) {
    auto* d = make<ast::TensorDecl>(range);
    d->name = ident(name, name_range);
    d->dtype = ident(dtype, dtype_range);
    d->shape = exprLists.take(shape);
    d->shape_range = shape_range;
    d->role = ident(role, role_range);
    return d;
  }

  // Attributes: `name`, `name = expr`, `name = [-]float`, `name = "string"`.
  ast::Attr* attrFlag(const char* name, const SourceRange& name_range) {
    ast::Attr* a = attrs.get();
    a->name = ident(name, name_range);
    a->kind = ast::AttrKind::Flag;
    a->range = name_range;
    a->value_range = name_range;
    return a;
  }
  ast::Attr* attrExpr(const char* name, const SourceRange& name_range, ast::Expr* value,
                      const SourceRange& value_range, const SourceRange& range) {
    ast::Attr* a = attrs.get();
    a->name = ident(name, name_range);
    a->kind = ast::AttrKind::Expr;
    a->expr = value;
    a->range = range;
    a->value_range = value_range;
    return a;
  }
  // `minus`: the '-' before the number, or null. ftext is the literal as written, from the
  // '-' to the end of the number.
  ast::Attr* attrFloat(const char* name, const SourceRange& name_range, const char* minus,
                       const char* number, const SourceRange& number_range,
                       const SourceRange& value_range, const SourceRange& range) {
    ast::Attr* a = attrs.get();
    a->name = ident(name, name_range);
    a->kind = ast::AttrKind::Float;
    std::string_view num = text(number, number_range);
    a->fvalue = minus ? -floatValue(num) : floatValue(num);
    a->ftext = minus ? std::string_view(minus, static_cast<size_t>(num.data() + num.size() - minus))
                     : num;
    a->range = range;
    a->value_range = value_range;
    return a;
  }
  ast::Attr* attrString(const char* name, const SourceRange& name_range, const char* str,
                        const SourceRange& value_range, const SourceRange& range) {
    ast::Attr* a = attrs.get();
    a->name = ident(name, name_range);
    a->kind = ast::AttrKind::String;
    a->svalue = unescapeString(stringText(str, value_range));
    a->range = range;
    a->value_range = value_range;
    return a;
  }

  ast::TensorRef* ref(const char* name, const SourceRange& name_range,
                      std::vector<ast::SliceEntry>* entries, const SourceRange& range) {
    ast::TensorRef* r = refs.get();
    r->name = ident(name, name_range);
    if (entries) {
      r->has_subscript = true;
      r->entries = sliceLists.take(entries);
    }
    r->range = range;
    return r;
  }
  ast::Expr* nameExpr(const char* name, const SourceRange& range) {
    auto* e = make<ast::NameExpr>(range);
    e->name = ident(name, range);
    return e;
  }
  // These return null (after reporting) when the expression nests too deeply.
  ast::Expr* callExpr(const char* callee, const SourceRange& callee_range,
                      std::vector<ast::Expr*>* args, const SourceRange& range);
  ast::Expr* indexExpr(const char* name, const SourceRange& name_range,
                       std::vector<ast::SliceEntry>* entries, const SourceRange& range);

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
  // What the syntax error messages need to know about where lines end: the last two tokens
  // handed to the parser (the last one is the lookahead when an error is reported), and the
  // first two tokens of the last line that followed a line ending in ','.
  struct Seen {
    Parser::symbol_kind_type kind = Parser::symbol_kind::S_YYEMPTY;
    SourceRange range;
  };
  struct LineAfterComma {
    uint32_t line = 0;  // 0: the current line does not follow a ','
    SourceLoc comma;
    Parser::symbol_kind_type first, second;
  };
  void noteToken(Parser::symbol_kind_type kind, const SourceRange& range) {
    if (range.begin.line > last_.range.end.line) {
      after_comma_.line = 0;
      if (last_.kind == Parser::symbol_kind::S_COMMA)
        after_comma_ = {range.begin.line, last_.range.begin, kind, Parser::symbol_kind::S_YYEMPTY};
    } else if (after_comma_.line && after_comma_.second == Parser::symbol_kind::S_YYEMPTY) {
      after_comma_.second = kind;
    }
    before_ = last_;
    last_ = Seen{kind, range};
  }
  Seen before_, last_;
  LineAfterComma after_comma_;

  ast::Context& ctx_;
  ast::File* file_;
  Lexer lexer_;
};

}  // namespace etc::grammar
