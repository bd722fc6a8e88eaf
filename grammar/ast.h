// The syntax tree of one .etir file, exactly as written: no name resolution, no folding.
// The grammar's actions build it and nothing else; compiler/frontend turns it into IR.
//
// Nodes live in an ast::Context arena and point at each other with raw pointers, so freeing a
// deeply nested tree never recurses. Identifiers are string_views into the SourceManager's
// buffers, which outlive the tree.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "compiler/support/source.h"

namespace etc::ast {

struct Ident {
  std::string_view name;
  SourceRange range;
};

// ---- integer expressions -------------------------------------------------------------------

struct Expr;

// One entry of a subscript: `e` (point), `lo:hi`, `lo:`, `:hi` or `:` (range).
struct SliceEntry {
  bool is_range = false;
  Expr* lo = nullptr;  // null: from 0 (range) -- never null for a point
  Expr* hi = nullptr;  // null: to the dimension's end (range only)
  SourceRange range;
};

// `name` or `name[entries]`; used for op arguments and destinations, wait/notify targets and
// the argument of load(...).
struct TensorRef {
  Ident name;
  bool has_subscript = false;
  std::vector<SliceEntry> entries;
  SourceRange range;
};

enum class ExprKind { Int, Name, Call, Index, Neg, Binary };
enum class BinaryOp { Add, Sub, Mul, Div, Mod, Le };

struct Expr {
  ExprKind kind;
  SourceRange range;
  uint32_t depth = 1;  // nesting depth, limited by the parser (kMaxExprDepth)
  explicit Expr(ExprKind k) : kind(k) {}
  virtual ~Expr() = default;
};

struct IntExpr : Expr {
  IntExpr() : Expr(ExprKind::Int) {}
  int64_t value = 0;
};

struct NameExpr : Expr {
  NameExpr() : Expr(ExprKind::Name) {}
  Ident name;
};

// cdiv(a, b), min(a, b, ...), max(...), load(t[i]) -- any `ident(args)`; the front end
// decides which callees exist.
struct CallExpr : Expr {
  CallExpr() : Expr(ExprKind::Call) {}
  Ident callee;
  std::vector<Expr*> args;
};

// `t[i, j]` in expression position (only meaningful as the argument of load).
struct IndexExpr : Expr {
  IndexExpr() : Expr(ExprKind::Index) {}
  TensorRef ref;
};

struct NegExpr : Expr {
  NegExpr() : Expr(ExprKind::Neg) {}
  Expr* operand = nullptr;
};

// a + b, a - b, a * b, a / b (floor), a % b, and `a <= b` (an upper bound stated for a
// data-dependent value: the value is a, and a <= b is checked).
struct BinaryExpr : Expr {
  BinaryExpr() : Expr(ExprKind::Binary) {}
  BinaryOp op = BinaryOp::Add;
  Expr* lhs = nullptr;
  Expr* rhs = nullptr;
};

inline constexpr uint32_t kMaxExprDepth = 200;

// ---- attributes ------------------------------------------------------------------------

enum class AttrKind { Flag, Expr, Float, String };

// `{ name = value, flag }`: a bare name is a boolean flag set to true.
struct Attr {
  Ident name;
  AttrKind kind = AttrKind::Flag;
  Expr* expr = nullptr;  // AttrKind::Expr (integers, names such as `true`, `bf16`)
  double fvalue = 0;     // AttrKind::Float
  std::string_view ftext;  // AttrKind::Float: the literal as written (with a leading '-')
  std::string svalue;    // AttrKind::String: unescaped
  SourceRange range;     // the whole `name = value`
  SourceRange value_range;
};

// `op(args) { attrs }`
struct OpCall {
  Ident callee;
  std::vector<TensorRef> args;
  std::vector<Attr> attrs;
  bool has_attr_block = false;
  SourceRange range;
};

// ---- statements ------------------------------------------------------------------------

enum class StmtKind { Wait, Notify, Call, Assign, Run };

struct Stmt {
  StmtKind kind;
  SourceRange range;
  explicit Stmt(StmtKind k) : kind(k) {}
  virtual ~Stmt() = default;
};

// task level: `wait E[i]`, `notify E[a:b, c]`
struct EventStmt : Stmt {
  explicit EventStmt(StmtKind k) : Stmt(k) {}
  TensorRef event;
};

// task level: `op(args) {attrs} -> dest, dest`
struct CallStmt : Stmt {
  CallStmt() : Stmt(StmtKind::Call) {}
  OpCall call;
  std::vector<TensorRef> dests;
};

// op level: `a, b = op(args) {attrs}`
struct AssignStmt : Stmt {
  AssignStmt() : Stmt(StmtKind::Assign) {}
  std::vector<Ident> results;
  OpCall call;
};

// op level: `run @task`
struct RunStmt : Stmt {
  RunStmt() : Stmt(StmtKind::Run) {}
  Ident task;  // name without the '@'
};

// ---- declarations ----------------------------------------------------------------------

enum class DeclKind { Module, Include, Sym, Const, Tensor, Event, Task, Graph };

struct Decl {
  DeclKind kind;
  SourceRange range;
  explicit Decl(DeclKind k) : kind(k) {}
  virtual ~Decl() = default;
};

struct ModuleDecl : Decl {
  ModuleDecl() : Decl(DeclKind::Module) {}
  Ident name;  // without '@'
};

struct IncludeDecl : Decl {
  IncludeDecl() : Decl(DeclKind::Include) {}
  std::string path;  // unescaped
  SourceRange path_range;
};

// sym B in [lo, hi]
struct SymDecl : Decl {
  SymDecl() : Decl(DeclKind::Sym) {}
  Ident name;
  Expr* lo = nullptr;
  Expr* hi = nullptr;
};

// const H = expr
struct ConstDecl : Decl {
  ConstDecl() : Decl(DeclKind::Const) {}
  Ident name;
  Expr* value = nullptr;
};

// tensor x : bf16[B, H] input
struct TensorDecl : Decl {
  TensorDecl() : Decl(DeclKind::Tensor) {}
  Ident name;
  Ident dtype;
  std::vector<Expr*> shape;  // empty: a scalar (`f32[]`)
  SourceRange shape_range;
  Ident role;
};

// event E : [d0, d1] init expr        or        init (i, j) -> expr
struct EventDecl : Decl {
  EventDecl() : Decl(DeclKind::Event) {}
  Ident name;
  std::vector<Expr*> shape;
  SourceRange shape_range;
  bool init_has_coords = false;
  std::vector<Ident> init_coords;
  Expr* init = nullptr;
};

// task @name grid [e0, e1] (i, j) { body }
struct TaskDecl : Decl {
  TaskDecl() : Decl(DeclKind::Task) {}
  Ident name;  // without '@'
  std::vector<Expr*> grid;
  SourceRange grid_range;
  std::vector<Ident> coords;
  std::vector<Stmt*> body;
};

// graph @name [schedule static|dynamic|auto] [specialize SYM = C1, C2, ...] { statements }
struct GraphDecl : Decl {
  GraphDecl() : Decl(DeclKind::Graph) {}
  Ident name;  // without '@'
  bool has_schedule = false;
  Ident schedule;
  bool has_specialize = false;
  Ident specialize_sym;
  std::vector<Expr*> specialize_cuts;
  std::vector<Stmt*> body;
};

struct File {
  uint32_t file_id = 0;
  std::vector<Decl*> decls;
};

// Owns every node of one or more parsed files. Nodes are bump-allocated in 2 MiB blocks (a
// 10 MB module makes millions of nodes: one malloc each cost a sixth of the parse, and
// faulting the memory in 4 KiB pages as much again; the blocks are advised as huge pages on
// Linux) and destroyed, through their virtual destructors, when the Context dies.
class Context {
 public:
  Context() = default;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  ~Context();

  // Arguments are forwarded to T's constructor (EventStmt takes its StmtKind).
  template <class T, class... Args>
  T* make(Args&&... args) {
    static_assert(alignof(T) <= alignof(std::max_align_t));
    T* node = ::new (allocate(sizeof(T))) T(std::forward<Args>(args)...);
    if constexpr (std::is_base_of_v<Expr, T>) {
      push<Expr>(exprs_, node);
    } else if constexpr (std::is_base_of_v<Stmt, T>) {
      push<Stmt>(stmts_, node);
    } else if constexpr (std::is_base_of_v<Decl, T>) {
      push<Decl>(decls_, node);
    } else {
      static_assert(std::is_same_v<T, File>, "unknown AST node type");
      push<File>(files_, node);
    }
    return node;
  }

 private:
  // The nodes to destroy, in chunks that live in the arena too.
  template <class B>
  struct Chunk {
    static constexpr size_t kCapacity = 510;
    Chunk* prev = nullptr;
    size_t count = 0;
    B* nodes[kCapacity];
  };
  template <class B>
  void push(Chunk<B>*& head, B* node) {
    if (!head || head->count == Chunk<B>::kCapacity) {
      auto* chunk = ::new (allocate(sizeof(Chunk<B>))) Chunk<B>;
      chunk->prev = head;
      head = chunk;
    }
    head->nodes[head->count++] = node;
  }
  template <class B>
  static void destroyAll(Chunk<B>* head) {
    for (; head; head = head->prev)
      for (size_t i = 0; i < head->count; ++i) head->nodes[i]->~B();
  }

  void* allocate(size_t size) {
    size = (size + alignof(std::max_align_t) - 1) & ~(alignof(std::max_align_t) - 1);
    if (size > static_cast<size_t>(end_ - next_)) newBlock(size);
    void* p = next_;
    next_ += size;
    return p;
  }
  void newBlock(size_t min_size);  // grammar/ast.cpp

  struct Block {
    void* base;
    size_t size;
  };
  std::vector<Block> blocks_;
  char* next_ = nullptr;
  char* end_ = nullptr;
  Chunk<Expr>* exprs_ = nullptr;
  Chunk<Stmt>* stmts_ = nullptr;
  Chunk<Decl>* decls_ = nullptr;
  Chunk<File>* files_ = nullptr;
};

}  // namespace etc::ast
