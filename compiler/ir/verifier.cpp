#include "compiler/ir/verifier.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "compiler/ir/op_check.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/prover.h"

namespace etc::ir {

namespace {

// Tensors and event tensors are sized from the upper bounds of their shapes; more than this
// many bytes cannot be a real buffer, and the runtime's size arithmetic must not overflow.
constexpr int64_t kMaxBufferBytes = int64_t{1} << 48;

std::string ordinal(size_t k) { return std::to_string(k); }

// What a check is about, as messages name it ("tensor 'x'", "the grid of task '@t'"); only
// formatted for a message (these checks run for every declaration).
struct Subject {
  std::string_view kind;
  std::string_view name;
  std::string_view sigil = "";
  std::string str() const { return fmt::format("{} '{}{}'", kind, sigil, name); }
};

class Verifier {
 public:
  Verifier(const Module& m, DiagnosticEngine& diags) : m_(m), diags_(diags), prover_(m) {}

  bool run() {
    size_t before = diags_.errorCount();
    for (const Sym& s : m_.syms) verifySym(s);
    if (diags_.errorCount() != before) return false;  // every range below depends on the syms
    std::set<uint32_t> run_somewhere;
    for (const Graph& g : m_.graphs)
      for (const GraphStmt& st : g.body)
        if (const auto* r = std::get_if<RunStmt>(&st)) run_somewhere.insert(r->task);
    // In the order the declarations were written, so that diagnostics come in source order.
    std::vector<bool> seen_tensor(m_.tensors.size()), seen_event(m_.events.size()), seen_task(m_.tasks.size()),
        seen_graph(m_.graphs.size());
    auto task = [&](uint32_t k) {
      seen_task[k] = true;
      if (!run_somewhere.count(k) && !m_.graphs.empty())
        diags_.warning(nameLoc(m_.tasks[k].name_range, m_.tasks[k].range),
                       fmt::format("task '@{}' is not run by any graph", m_.tasks[k].name));
      verifyTask(m_.tasks[k]);
    };
    for (const Module::DeclRef& d : m_.order) {
      switch (d.kind) {
        case Module::DeclKind::Tensor: seen_tensor[d.index] = true; verifyTensor(m_.tensors[d.index]); break;
        case Module::DeclKind::Event: seen_event[d.index] = true; verifyEvent(m_.events[d.index]); break;
        case Module::DeclKind::Task: task(d.index); break;
        case Module::DeclKind::Graph: seen_graph[d.index] = true; verifyGraph(m_.graphs[d.index]); break;
        default: break;
      }
    }
    // Anything a pass added without recording its place in `order`. Implicit tensors (op-level
    // results) get their shapes from op rules over checked operands: a negative extent there
    // repeats an operand's error, so only their size is checked.
    for (uint32_t k = 0; k < m_.tensors.size(); ++k) {
      const Tensor& t = m_.tensors[k];
      if (seen_tensor[k]) continue;
      if (!t.implicit) {
        verifyTensor(t);
      } else if (diags_.errorCount() == before) {
        checkSize(t.shape, {}, dtypeBytes(t.dtype), nameLoc(t.name_range, t.range), Subject{"tensor", t.name});
      }
    }
    for (uint32_t k = 0; k < m_.events.size(); ++k)
      if (!seen_event[k]) verifyEvent(m_.events[k]);
    for (uint32_t k = 0; k < m_.tasks.size(); ++k)
      if (!seen_task[k]) task(k);
    for (uint32_t k = 0; k < m_.graphs.size(); ++k)
      if (!seen_graph[k]) verifyGraph(m_.graphs[k]);
    return diags_.errorCount() == before;
  }

 private:
  // ---- helpers ------------------------------------------------------------------------

  std::string at(const Fact& f, const std::vector<Expr>& exprs) const {
    std::string where = prover_.describe(f.at, exprs);
    return where.empty() ? std::string() : " at " + where;
  }

  std::optional<int64_t> valueAt(const Expr& e, const Fact& f) const { return prover_.exactValueAt(e, f.at); }
  // ": -1 at N = 1" for a refuted fact about e; just " at N = 1" when e has no value there.
  std::string valued(const Fact& f, const Expr& e) const {
    auto v = valueAt(e, f);
    return v ? fmt::format(": {}{}", *v, at(f, {e})) : at(f, {e});
  }
  // ": 5 >= 4 at N = 4" for a refuted comparison of a and b (`op` names how it fails).
  std::string compared(const Fact& f, const Expr& a, std::string_view op, const Expr& b) const {
    auto va = valueAt(a, f), vb = valueAt(b, f);
    return va && vb ? fmt::format(": {} {} {}{}", *va, op, *vb, at(f, {a, b})) : at(f, {a, b});
  }

  static SourceLoc nameLoc(const SourceRange& name, const SourceRange& decl) {
    return name.valid() ? name.begin : decl.begin;
  }
  // The location of element k of `ranges` (per-dimension ranges), or `fallback`.
  static SourceLoc locOf(const std::vector<SourceRange>& ranges, size_t k, SourceLoc fallback) {
    return k < ranges.size() && ranges[k].valid() ? ranges[k].begin : fallback;
  }
  static SourceLoc locOr(const SourceRange& r, SourceLoc fallback) { return r.valid() ? r.begin : fallback; }

  // Divisors that can be zero (literal zeros were rejected by the front end). Returns false
  // if one was reported: the expression's other checks would only repeat the problem.
  bool checkDivisors(const Expr& e, SourceLoc loc, const Subject& subject) {
    return checkDivisorsWith(e, loc, [&subject] { return subject.str(); });
  }
  // `context()` names where e is written; it is only formatted for a message (this runs for
  // every subscript of every statement).
  template <class Context>
  bool checkDivisorsWith(const Expr& e, SourceLoc loc, const Context& context) {
    if (e->ops.empty()) return true;  // a leaf has no divisor
    bool ok = true;
    std::vector<const ExprNode*> stack{e.get()};
    while (!stack.empty()) {
      const ExprNode* n = stack.back();
      stack.pop_back();
      for (const Expr& op : n->ops) stack.push_back(op.get());
      if (n->kind != ExprKind::Div && n->kind != ExprKind::Mod && n->kind != ExprKind::CDiv) continue;
      const Expr& d = n->ops[1];
      if (hasLoad(d)) continue;
      Fact f = prover_.positive(d);
      if (!f.refuted()) continue;
      auto v = valueAt(d, f);
      diags_.error(loc, fmt::format("divisor '{}' in {} is {}{}; divisors must be positive", toString(d), context(),
                                    v ? std::to_string(*v) : "not positive", at(f, {d})));
      ok = false;
    }
    return ok;
  }

  // Upper bound of a shape's element count times `bytes`, or an error.
  void checkSize(const std::vector<Expr>& shape, const std::vector<SourceRange>& ranges, int bytes, SourceLoc loc,
                 const Subject& what) {
    RangeEnv env = m_.symRanges();
    __int128 total = bytes;
    for (size_t k = 0; k < shape.size(); ++k) {
      const Expr& d = shape[k];
      Interval b = bounds(d, env);
      if (b.upperUnbounded()) {
        diags_.error(locOf(ranges, k, loc),
                     fmt::format("{} has no upper bound on its size (dimension '{}')", what.str(), toString(d)));
        return;
      }
      total *= std::max<int64_t>(0, b.hi);
      if (total > kMaxBufferBytes) {
        diags_.error(loc, fmt::format("{} can take more than 2^48 bytes at the top of the sym ranges", what.str()));
        return;
      }
    }
  }

  // Returns false if a dimension was reported.
  bool checkDims(const std::vector<Expr>& shape, const std::vector<SourceRange>& ranges, SourceLoc loc,
                 const Subject& what) {
    bool ok = true;
    for (size_t k = 0; k < shape.size(); ++k) {
      SourceLoc at_dim = locOf(ranges, k, loc);
      if (!checkDivisors(shape[k], at_dim, what)) {
        ok = false;
        continue;
      }
      Fact f = prover_.nonNegative(shape[k]);
      if (f.refuted()) {
        diags_.error(at_dim, fmt::format("dimension {} of {} ('{}') is negative{}", ordinal(k), what.str(),
                                         toString(shape[k]), valued(f, shape[k])));
        ok = false;
      }
    }
    return ok;
  }

  // A load that no `<=` bounds: the value can be any i32.
  static bool hasUnboundedLoad(const Expr& e) {
    if (e->kind == ExprKind::Bounded) return false;
    if (e->kind == ExprKind::Load) return true;
    for (const Expr& op : e->ops)
      if (hasUnboundedLoad(op)) return true;
    return false;
  }

  // ---- declarations -------------------------------------------------------------------

  void verifySym(const Sym& s) {
    if (s.lo > s.hi) {
      diags_.error(locOr(s.lo_range, s.range.begin), fmt::format("sym '{}' has an empty range [{}, {}]: the lower bound exceeds the "
                                              "upper bound",
                                              s.name, s.lo, s.hi));
    } else if (s.lo < 0) {
      diags_.error(locOr(s.lo_range, s.range.begin), fmt::format("sym '{}' can be negative (range [{}, {}]); syms are sizes and must be "
                                              ">= 0",
                                              s.name, s.lo, s.hi));
    }
  }

  void verifyTensor(const Tensor& t) {
    Subject what{"tensor", t.name};
    SourceLoc at_name = nameLoc(t.name_range, t.range);
    if (checkDims(t.shape, t.shape_ranges, at_name, what))
      checkSize(t.shape, t.shape_ranges, dtypeBytes(t.dtype), at_name, what);
  }

  void verifyEvent(const Event& e) {
    Subject what{"event", e.name};
    SourceLoc at_name = nameLoc(e.name_range, e.range);
    SourceLoc at_init = locOr(e.init_range, e.range.begin);
    if (checkDims(e.shape, e.shape_ranges, at_name, what)) checkSize(e.shape, e.shape_ranges, 4, at_name, what);
    if (hasUnboundedLoad(e.init)) {
      diags_.error(at_init, fmt::format("the count of event '{}' reads data but has no upper bound; state one "
                                              "with `load(...) <= bound`",
                                              e.name));
      return;
    }
    // The init's coordinates range over the event's shape, like a task's over its grid.
    Task over;
    over.grid = e.shape;
    over.coords = e.init_coords;
    prover_.setTask(&over);
    if (checkDivisors(e.init, at_init, what)) {
      Fact f = prover_.nonNegative(e.init);
      if (f.refuted())
        diags_.error(at_init, fmt::format("the count of event '{}' ('{}') is negative{}", e.name,
                                          toString(e.init), valued(f, e.init)));
    }
    prover_.setTask(nullptr);
  }

  // The prover's comparisons build `b - a` before they consult its memo; the shapes of most
  // subscripts (`x[i, :]`, `y[0:N]`) decide them without that.
  Fact lessEqual(const Expr& a, const Expr& b) const {
    if (equal(a, b)) return {Fact::Proved, {}};
    if (auto v = asInt(a); v && *v == 0) return prover_.nonNegative(b);
    return prover_.lessEqual(a, b);
  }
  Fact lessThan(const Expr& a, const Expr& b) const {
    if (auto v = asInt(a); v && *v == 0) return prover_.positive(b);
    return prover_.lessThan(a, b);
  }

  // One subscript against the shape of its target.
  void checkSlice(const Slice& s, const std::vector<Expr>& shape, std::string_view name) {
    for (size_t k = 0; k < s.dims.size() && k < shape.size(); ++k) {
      const SliceDim& d = s.dims[k];
      SourceLoc loc = d.range.begin;
      SourceLoc lo_loc = locOr(d.lo_range, loc), hi_loc = locOr(d.hi_range, loc);
      const Expr& dim = shape[k];
      auto context = [name] { return fmt::format("a subscript of '{}'", name); };
      bool divisors_ok = checkDivisorsWith(d.lo, lo_loc, context);
      if (d.is_range) divisors_ok = checkDivisorsWith(d.hi, hi_loc, context) && divisors_ok;
      if (!divisors_ok) continue;
      if (hasLoad(d.lo) || (d.is_range && hasLoad(d.hi))) continue;  // checked at run time
      if (!d.is_range) {
        if (Fact f = prover_.nonNegative(d.lo); f.refuted()) {
          diags_.error(loc, fmt::format("index '{}' into dimension {} of '{}' is negative{}", toString(d.lo), k,
                                        name, valued(f, d.lo)));
        } else if (Fact g = lessThan(d.lo, dim); g.refuted()) {
          diags_.error(loc, fmt::format("index '{}' is out of bounds for dimension {} of '{}' (extent '{}'){}",
                                        toString(d.lo), k, name, toString(dim), compared(g, d.lo, ">=", dim)));
        }
        continue;
      }
      if (Fact f = prover_.nonNegative(d.lo); f.refuted()) {
        diags_.error(loc, fmt::format("slice start '{}' in dimension {} of '{}' is negative{}", toString(d.lo), k,
                                      name, valued(f, d.lo)));
      } else if (Fact g = lessEqual(d.hi, dim); g.refuted()) {
        diags_.error(hi_loc, fmt::format("slice end '{}' exceeds dimension {} of '{}' (extent '{}'){}",
                                         toString(d.hi), k, name, toString(dim), compared(g, d.hi, ">", dim)));
      } else if (Fact h = lessEqual(d.lo, d.hi); h.refuted()) {
        diags_.error(loc, fmt::format("slice start '{}' exceeds its end '{}' in dimension {} of '{}'{}",
                                      toString(d.lo), toString(d.hi), k, name, compared(h, d.lo, ">", d.hi)));
      }
    }
  }

  void checkWritable(const Slice& s, SourceLoc loc) {
    const Tensor& t = m_.tensors[s.target];
    if (t.role == Role::Input || t.role == Role::Param)
      diags_.error(loc, fmt::format("'{}' is {} {} and cannot be written", t.name, t.role == Role::Input ? "an" : "a",
                                    roleName(t.role)),
                   {{nameLoc(t.name_range, t.range), fmt::format("'{}' is declared here", t.name)}});
  }

  void verifyCall(const OpCall& call, const std::vector<Slice>& dests) {
    size_t before = diags_.errorCount();
    for (const Slice& a : call.args) checkSlice(a, m_.tensors[a.target].shape, m_.tensors[a.target].name);
    for (const Slice& d : dests) checkSlice(d, m_.tensors[d.target].shape, m_.tensors[d.target].name);
    // A slice that was reported has a shape that means nothing: the op's shape rule would only
    // report the same mistake again.
    bool slices_ok = diags_.errorCount() == before;
    std::vector<OperandType> declared;
    declared.reserve(dests.size());
    std::vector<OpResultSlot> slots;
    for (const Slice& d : dests) {
      checkWritable(d, d.range.begin);
      declared.push_back(sliceType(m_, d));
    }
    if (!slices_ok) return;
    // Named as written at the task level (`y[b, 0:128]`: the slice's shape is what is compared).
    for (size_t k = 0; k < dests.size(); ++k)
      slots.push_back(OpResultSlot{&declared[k], {}, dests[k].range, &dests[k]});
    checkOpCall(m_, call, slots, prover_, diags_, nullptr, &op_checks_);
  }

  void verifyTask(const Task& t) {
    Subject what{"the grid of task", t.name, "@"};
    RangeEnv env = m_.symRanges();
    for (size_t k = 0; k < t.grid.size(); ++k) {
      const Expr& g = t.grid[k];
      SourceLoc at_extent = locOf(t.grid_ranges, k, t.range.begin);
      if (hasUnboundedLoad(g)) {
        diags_.error(at_extent, fmt::format("grid extent {} of task '@{}' ('{}') reads data but has no upper "
                                            "bound; state one with `load(...) <= bound`",
                                            k, t.name, toString(g)));
        continue;
      }
      if (!checkDivisors(g, at_extent, what)) continue;
      if (bounds(g, env).upperUnbounded()) {
        diags_.error(at_extent, fmt::format("grid extent {} of task '@{}' ('{}') has no upper bound", k, t.name,
                                            toString(g)));
        continue;
      }
      if (Fact f = prover_.nonNegative(g); f.refuted())
        diags_.error(at_extent, fmt::format("grid extent {} of task '@{}' ('{}') is negative{}", k, t.name,
                                            toString(g), valued(f, g)));
    }
    prover_.setTask(&t);
    for (const TaskStmt& st : t.body) {
      if (const auto* w = std::get_if<WaitStmt>(&st)) {
        checkSlice(w->event, m_.events[w->event.target].shape, m_.events[w->event.target].name);
      } else if (const auto* n = std::get_if<NotifyStmt>(&st)) {
        checkSlice(n->event, m_.events[n->event.target].shape, m_.events[n->event.target].name);
      } else {
        const auto& c = std::get<CallStmt>(st);
        verifyCall(c.call, c.dests);
      }
    }
    prover_.setTask(nullptr);
  }

  void verifyGraph(const Graph& g) {
    // A graph runs a handful of tasks: a table indexed by task would cost O(#tasks) per graph,
    // quadratic in a module with a graph per layer.
    std::vector<std::pair<uint32_t, SourceLoc>> first_run;
    for (const GraphStmt& st : g.body) {
      if (const auto* r = std::get_if<RunStmt>(&st)) {
        auto seen = std::find_if(first_run.begin(), first_run.end(), [&](const auto& p) { return p.first == r->task; });
        if (seen != first_run.end()) {
          diags_.error(r->range.begin,
                       fmt::format("task '@{}' runs more than once in graph '@{}'", m_.tasks[r->task].name, g.name),
                       {{seen->second, "it first runs here"}});
        } else {
          first_run.emplace_back(r->task, r->range.begin);
        }
        continue;
      }
      const auto& a = std::get<AssignStmt>(st);
      std::vector<Slice> dests;
      for (uint32_t id : a.results) {
        Slice s;
        s.target = id;
        s.range = a.range;
        dests.push_back(s);
      }
      verifyCall(a.call, dests);
    }
  }

  const Module& m_;
  DiagnosticEngine& diags_;
  Prover prover_;
  OpCheckMemo op_checks_;  // models repeat the same calls layer after layer
};

}  // namespace

bool verifyModule(const Module& m, DiagnosticEngine& diags) { return Verifier(m, diags).run(); }

}  // namespace etc::ir
