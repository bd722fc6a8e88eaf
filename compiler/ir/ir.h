// The IR of one module: what the front end builds from the AST, what every pass takes and
// returns, what the verifier checks and the printer prints. Names are resolved: references
// are indices into the module's tables. Every node keeps its source location.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "compiler/ir/dtype.h"
#include "compiler/ir/expr.h"
#include "compiler/support/name_index.h"
#include "compiler/support/source.h"

namespace etc::ir {

enum class Role : uint8_t { Input, Output, Param, Temp };
std::string_view roleName(Role r);
std::optional<Role> parseRole(std::string_view name);

enum class Schedule : uint8_t { Auto, Static, Dynamic };
std::string_view scheduleName(Schedule s);
std::optional<Schedule> parseSchedule(std::string_view name);

// Passes decide some properties (which grids are empty, whether spans tile a tensor) by trying
// every value of a sym whose range is at most this long: a batch's, not a sequence length's.
constexpr int64_t kMaxTriedSymValues = 4096;

struct Sym {
  std::string name;
  int64_t lo = 0, hi = 0;
  // Whether its values are few enough to try each (kMaxTriedSymValues).
  bool triable() const { return hi - lo < kMaxTriedSymValues; }
  Expr lo_expr, hi_expr;  // as written (may name consts); lo/hi are their values
  SourceRange range;
  SourceRange name_range, lo_range, hi_range;  // for diagnostics; may be invalid
};

struct Const {
  std::string name;
  Expr value_expr;  // as written
  int64_t value = 0;
  SourceRange range;
  SourceRange name_range;  // for diagnostics; may be invalid
};

struct Tensor {
  std::string name;
  DType dtype = DType::F32;
  std::vector<Expr> shape;  // rank 0: a scalar
  Role role = Role::Temp;
  // Made by the front end for an op-level result that has no declaration (`h = rmsnorm(...)`):
  // its dtype and shape are inferred, and it is printed as the assignment, not as a decl.
  bool implicit = false;
  SourceRange range;
  // For diagnostics; may be invalid, and shape_ranges may be empty (implicit tensors).
  SourceRange name_range;
  std::vector<SourceRange> shape_ranges;
};

struct Event {
  std::string name;
  std::vector<Expr> shape;
  std::vector<std::string> init_coords;  // names of the coordinates `init (i, j) -> ...` binds
  Expr init;                             // may use Coord leaves with ids 0..init_coords.size()-1
  // Made by infer-events in this compilation (not written in the source): eliminate-events
  // may join such events (its rule 4). Not printed: a printed module's events are its own.
  bool inferred = false;
  SourceRange range;
  // For diagnostics; may be invalid, and shape_ranges may be empty.
  SourceRange name_range, init_range;
  std::vector<SourceRange> shape_ranges;
};

// One entry of a subscript. A point index drops the dimension (numpy semantics).
struct SliceDim {
  bool is_range = false;
  Expr lo;  // always set (0 when written as `:hi` or `:`)
  Expr hi;  // set for ranges (the dimension's extent when written as `lo:` or `:`)
  bool lo_written = true;  // false for `:hi` and `:` (printer keeps the user's short form)
  bool hi_written = true;  // false for `lo:` and `:`
  SourceRange range;
  SourceRange lo_range, hi_range;  // of the expressions as written (invalid when not written)
};

// A tensor or event reference with an optional subscript. An empty `dims` with
// has_subscript == false is the whole tensor.
struct Slice {
  uint32_t target = 0;  // tensor index (op operands) or event index (wait/notify)
  bool has_subscript = false;
  std::vector<SliceDim> dims;
  SourceRange range;
};

enum class AttrType : uint8_t { Bool, Int, Float, String, DType };

struct AttrValue {
  AttrType type = AttrType::Bool;
  bool b = false;
  Expr i;  // AttrType::Int
  double f = 0;
  std::string text;  // String: the string; Float: the literal as written (re-printed as is)
  DType dtype = DType::F32;
};

struct Attr {
  std::string name;
  AttrValue value;
  SourceRange range;
};

struct OpCall {
  std::string op;  // a name in the op registry (compiler/ir/ops.h)
  std::vector<Slice> args;
  std::vector<Attr> attrs;  // as written, in the order written
  SourceRange range;
  const Attr* findAttr(std::string_view name) const;
};

// Task-level statements.
struct WaitStmt {
  Slice event;
  SourceRange range;
};
struct NotifyStmt {
  Slice event;
  SourceRange range;
};
struct CallStmt {
  OpCall call;
  std::vector<Slice> dests;
  SourceRange range;
};
using TaskStmt = std::variant<WaitStmt, NotifyStmt, CallStmt>;

struct Task {
  std::string name;
  std::vector<Expr> grid;            // extents (may be data-dependent: Bounded loads)
  std::vector<std::string> coords;   // Coord leaf id k is coords[k]
  std::vector<TaskStmt> body;
  SourceRange range;
  // For diagnostics; may be invalid, and grid_ranges may be empty.
  SourceRange name_range;
  std::vector<SourceRange> grid_ranges;
};

// Whether an extent of t's grid reads data (a load): such a grid's size is known only once its
// producers have written, so the passes, the backend and the interpreter order it by its data.
bool gridReadsData(const Task& t);

// Op-level statements.
struct AssignStmt {
  std::vector<uint32_t> results;  // tensor indices (declared or implicit)
  OpCall call;
  SourceRange range;
};
struct RunStmt {
  uint32_t task = 0;
  SourceRange range;
};
using GraphStmt = std::variant<AssignStmt, RunStmt>;

struct Graph {
  std::string name;
  Schedule schedule = Schedule::Auto;
  bool schedule_written = false;
  std::string schedule_reason;  // why select-schedule chose it (for etcc -v)
  // `specialize SYM = C1, C2, ...`: a megakernel per range of sym `specialize_sym` between the
  // cuts (as etcc --specialize, which overrides it); -1: none written.
  int32_t specialize_sym = -1;
  std::vector<int64_t> specialize_cuts;
  std::vector<Expr> specialize_cut_exprs;  // as written (consts by name), for the printer
  // PipelineOptions::matmul_plan_by_range (not in the source; on unless etcc
  // --no-matmul-plan-by-range): lower-ops gives a lone split-K matmul other tiles below the
  // first cut (lower_ops.cpp, planMatmulGroup).
  bool matmul_plan_by_range = false;
  // PipelineOptions::norm_rows (not in the source; etcc --norm-rows): the rows of each task of a
  // row norm (rmsnorm without head_dim, add_rmsnorm), 1 by default (lower_ops.cpp, lowerRowwise).
  int64_t norm_rows = 1;
  // PipelineOptions::fold_norms_below (not in the source): fold-norms folds a row norm into its
  // matmul readers where the norm's rows sym is below this (0: never).
  int64_t fold_norms_below = 0;
  // PipelineOptions::unsplit_below (not in the source): below this value of a matmul's rows sym,
  // lower-ops gives its split-K projections narrow tiles over all of K (0: never).
  int64_t unsplit_below = 0;
  // Not in the source: lower-ops lets a launch choose split-KV attention or one part a row by
  // its longest row (attention_decode's short_kv); off where etcc --fold-attention or
  // --fold-attention-merge asks for a fold of the split form, which its data-dependent grids
  // do not take.
  bool attention_by_length = false;
  // Not in the source: false under etcc --megakernel-only, where fuse makes the megakernel only,
  // not the unfused kernels (one a task grid) that the runtime's unfused modes launch.
  bool unfused_kernels = true;
  std::vector<GraphStmt> body;
  SourceRange range;
  SourceRange name_range;  // for diagnostics; may be invalid
};

// A GPU kernel that the back end emits: made by the `fuse` pass, ordered by the schedule pass.
// Not part of the .etir syntax (the printer shows kernels as comments; the passes re-derive
// them from the graphs).
struct Kernel {
  std::string name;  // the CUDA symbol, e.g. etc_main_mega
  uint32_t graph = 0;
  bool mega = false;            // every task grid of the graph, with its events; else one grid
  std::vector<uint32_t> tasks;  // in schedule order
  // A megakernel for one range of a sym (etcc --specialize): it runs where sym `when_sym` is in
  // [when_lo, when_hi] and leaves out the grids that have no tasks there; -1: every value.
  int32_t when_sym = -1;
  int64_t when_lo = 0, when_hi = 0;
};

// The ranges [lo, C1 - 1], [C1, C2 - 1], ..., [Cn, hi] of sym `s` cut at `cuts` (a graph's
// `specialize`, etcc --specialize); nullopt, with `why` set and `*bad` the index of the first cut
// out of order or range, where the cuts do not increase within (lo, hi].
std::optional<std::vector<std::pair<int64_t, int64_t>>> symCutRanges(const Sym& s, const std::vector<int64_t>& cuts,
                                                                   std::string& why, size_t* bad = nullptr);

struct Module {
  std::string name;
  SourceRange range;
  std::vector<Sym> syms;
  std::vector<Const> consts;
  std::vector<Tensor> tensors;
  std::vector<Event> events;
  std::vector<Task> tasks;
  std::vector<Graph> graphs;
  std::vector<Kernel> kernels;

  // The order in which declarations were written, so the printer keeps it.
  enum class DeclKind : uint8_t { Sym, Const, Tensor, Event, Task, Graph };
  struct DeclRef {
    DeclKind kind;
    uint32_t index;
  };
  std::vector<DeclRef> order;

  // Room for this many declarations of each kind: a builder that knows the counts spares the
  // reallocations of large tables (the front end on a module with 100k tensors).
  void reserve(size_t syms, size_t consts, size_t tensors, size_t events, size_t tasks, size_t graphs);

  // Appending through these keeps the name index and the declaration order in step.
  uint32_t addSym(Sym s);
  uint32_t addConst(Const c);
  uint32_t addTensor(Tensor t);  // implicit tensors are indexed but not put in `order`
  uint32_t addEvent(Event e);
  uint32_t addTask(Task t);
  uint32_t addGraph(Graph g);

  // Syms, consts, tensors and events share one namespace; tasks and graphs (`@names`)
  // have one each.
  std::optional<DeclRef> findValue(std::string_view name) const;
  std::optional<uint32_t> findTensor(std::string_view name) const;
  std::optional<uint32_t> findEvent(std::string_view name) const;
  std::optional<uint32_t> findSym(std::string_view name) const;
  std::optional<uint32_t> findTask(std::string_view name) const;
  std::optional<uint32_t> findGraph(std::string_view name) const;

  // Ranges of the syms, for ir::bounds / ir::simplify.
  RangeEnv symRanges() const;
  // The same with sym `sym` held in [lo, hi] (a megakernel of one range of it).
  RangeEnv symRangesWith(uint32_t sym, int64_t lo, int64_t hi) const;
  // The sym ranges plus, for coordinate k, [0, upper bound of grid[k] - 1]: the values the
  // coordinates of a task over `grid` (or of an event's init over its shape) take.
  RangeEnv gridRanges(std::vector<Expr> grid) const;
  // The same over the sym ranges `syms`.
  RangeEnv gridRanges(std::vector<Expr> grid, const RangeEnv& syms) const;

 private:
  template <class T, class Index>
  uint32_t append(std::vector<T>& table, T item, DeclKind kind, Index& index, bool in_order);

  NameIndex<DeclRef> values_;
  NameIndex<uint32_t> tasks_, graphs_;
};

// Whether waiting on `event` orders the data that task t's grid extents read: a task that
// notifies it writes a tensor the extents load. A task past its grid's data extent needs only
// these waits before it reads the extent (it then skips its other waits and its ops).
bool waitOrdersGridData(const Module& m, const Task& t, uint32_t event);
// Whether task p writes a tensor that task t's grid extents load.
bool writesGridData(const Task& p, const Task& t);

}  // namespace etc::ir
