// fold-norms: below a cut of the batch, a decode layer's row norm (rmsnorm, or the split-K sum
// and add_rmsnorm of the residual stream, merge-tasks' one-row grid [B]) moves into the matmul
// grids that read what it normalizes (the next q, k and v projections; the gated MLP). Each
// matmul task first runs the norm over every row, then multiplies: the layer's chain loses two
// hops (down -> norm -> q/k/v becomes down -> q/k/v, and o -> norm -> gate/up becomes o ->
// gate/up), and every task gathers the parts of all rows itself (64 KiB at B = 1 for
// Llama-3.2-1B), which is why the fold is for the smallest batches only. tools/bench_chain.cu
// measured a hop pair as 1.15 us shorter on an H200 this way (docs/benchmarks.md, session 61).
//
// The grids run side by side: the norm's grid and its readers as they were where B >= the cut,
// a folded copy of each reader where B < it (extents times 0 or 1, as lower-ops' plan by range;
// the specialize step leaves the empty side out of a range's megakernel). A reader that has no
// task from the cut on (lower-ops planned it below the same cut: etcc --unsplit-below) folds in
// place instead.
//
// Every reader task of the folded copies computes the same values and writes the same bits, so
// no write can change what another task reads; but two grids that write one tensor would be
// ordered by infer-events (the k projection after the q one), so each folded grid writes copies
// of its own (`<tensor>_<grid>`), and only the first of them writes the residual that later
// tasks read (a reader with no task below the cut, the other side of a plan by range, is left
// as it is). The in-place residual (`add_rmsnorm(x, res, w) -> h, res`) becomes a new tensor at each
// folded norm (`res_<h>`): tasks of the first grid would otherwise add to what another task of
// it already added to. Tasks after the norm read the new one.
//
// Taken when the norm's grid is a candidate of merge-tasks (calls only, run once) over [S] for
// a sym S, its calls end with one rmsnorm or add_rmsnorm (no head_dim) and index every operand
// at the row `i` or by no coordinate, the normalized tensor is a temp of S rows that only the
// norm writes and only its readers read, each reader a single matmul reading it as a over every
// row, with at most kFoldReaderTasks tasks; its calls read at most kFoldNormElements values a
// task below the cut; the residual written in place is a temp of this graph; and no task between
// the norm and its last reader touches what the norm reads or writes.
//
// Runs only with etcc --fold-norms-below N (N the cut; above S's range: every batch).
#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "compiler/ir/expr.h"
#include "compiler/ir/op_check.h"
#include "compiler/passes/access_pattern.h"
#include "compiler/passes/lowered_grids.h"
#include "compiler/passes/module_rebuild.h"
#include "compiler/passes/passes.h"
#include "compiler/passes/tiling.h"

namespace etc {

namespace {

using namespace ir;

// At most this many values read a folded task (the norm's operands over every row), at every
// sym value below the cut: 22.5 Ki at B = 1 for Llama-3.2-1B's down projection parts (8 parts
// of 2048), its residual and the norm's weight; B = 2 fits, 3 does not.
constexpr int64_t kFoldNormElements = 48 * 1024;
// At most this many tasks a reader grid (each gathers all of the above): a layer's projections
// (64, 16, 16 and 128 tasks for Llama-3.2-1B), not an LM head's thousand.
constexpr int64_t kFoldReaderTasks = 512;

class NormFolder {
 public:
  explicit NormFolder(Module& m) : m_(m), dropped_(m.tasks.size(), false), runs_(runCounts(m)) {}

  ModulePtr run(ModulePtr self) {
    bool changed = false;
    for (uint32_t g = 0; g < m_.graphs.size(); ++g) {
      if (m_.graphs[g].fold_norms_below <= 0) continue;
      for (uint32_t n : runOrder(m_, g)) changed |= foldOne(g, n);
    }
    return changed ? moduleWithout(m_, {}, dropped_) : std::move(self);
  }

 private:
  bool candidate(uint32_t t) const {
    return t < dropped_.size() && !dropped_[t] && t < runs_.size() && rewritableGrid(m_, t, runs_[t]);
  }

  static const CallStmt& callAt(const Task& t, size_t k) { return std::get<CallStmt>(t.body[k]); }

  // N's slice s over every row instead of row i (nothing if a dimension uses i otherwise).
  std::optional<Slice> everyRow(const Slice& s, const Expr& rows) const {
    std::vector<SliceDim> dims = explicitDims(m_, s);
    const Tensor& t = m_.tensors[s.target];
    bool row = false;
    for (size_t k = 0; k < dims.size(); ++k) {
      SliceDim& d = dims[k];
      if (isTaskRow(d, rows, t.shape[k])) {
        if (row) return std::nullopt;
        row = true;
        if (equal(inlineConsts(t.shape[k]), inlineConsts(rows))) {
          d = wholeDim(t.shape[k]);
        } else {
          d = SliceDim{};
          d.is_range = true;
          d.lo = intConst(0);
          d.hi = rows;
        }
      } else if (hasCoord(d.lo) || (d.is_range && hasCoord(d.hi))) {
        return std::nullopt;
      }
    }
    if (!row) return s;
    Slice out = s;
    out.has_subscript = true;
    out.dims = std::move(dims);
    return out;
  }

  // The product of the extents' upper bounds over `env`, saturated (an unbounded extent's is).
  static int64_t product(const std::vector<Expr>& extents, const RangeEnv& env) {
    int64_t n = 1;
    for (const Expr& e : extents) {
      const int64_t hi = std::max<int64_t>(0, bounds(inlineConsts(e), env).hi);
      if (__builtin_mul_overflow(n, hi, &n)) return std::numeric_limits<int64_t>::max();
    }
    return n;
  }

  // The values a slice covers, at most, over `env`.
  int64_t elements(const Slice& s, const RangeEnv& env) const { return product(sliceType(m_, s).shape, env); }

  int64_t tasksOf(const Task& t, const RangeEnv& env) const { return product(t.grid, env); }

  // A reader: one matmul reading `h` as a over every row, and nothing else of what N touches.
  bool isReader(uint32_t c, uint32_t h, const std::set<uint32_t>& touched, const RangeEnv& below) const {
    if (!candidate(c) || m_.tasks[c].body.size() != 1) return false;
    const Task& ct = m_.tasks[c];
    const CallStmt& mm = callAt(ct, 0);
    if (mm.call.op != "matmul" || mm.call.args.empty() || mm.call.args[0].target != h) return false;
    const std::vector<SliceDim> dims = explicitDims(m_, mm.call.args[0]);
    if (dims.empty() || !wholeRange(dims[0], m_.tensors[h].shape[0])) return false;
    for (const SliceAccess& a : taskAccesses(ct))
      if (a.slice != &mm.call.args[0] && touched.count(a.slice->target)) return false;
    return tasksOf(ct, below) <= kFoldReaderTasks;
  }

  uint32_t newTemp(const Tensor& like, const std::string& base) {
    Tensor t;
    t.name = tiling::freshValueName(m_, base);
    t.dtype = like.dtype;
    t.shape = like.shape;
    t.role = Role::Temp;
    t.range = like.range;
    const uint32_t id = m_.addTensor(std::move(t));
    tiling::declareBeforeTasks(m_);
    return id;
  }

  // Moves the task just added (the order's last) to after task `after`: a folded grid follows
  // its reader in a dump.
  void declareAfterTask(uint32_t after) {
    auto& order = m_.order;
    auto at = std::find_if(order.begin(), order.end() - 1, [&](const Module::DeclRef& r) {
      return r.kind == Module::DeclKind::Task && r.index == after;
    });
    if (at == order.end() - 1) return;
    const Module::DeclRef last = order.back();
    order.pop_back();
    order.insert(at + 1, last);
  }

  static void retarget(Task& t, uint32_t from, uint32_t to) {
    for (TaskStmt& st : t.body)
      if (auto* c = std::get_if<CallStmt>(&st)) {
        for (Slice& s : c->call.args)
          if (s.target == from) s.target = to;
        for (Slice& s : c->dests)
          if (s.target == from) s.target = to;
      }
  }

  bool foldOne(uint32_t g, uint32_t n) {
    if (!candidate(n) || m_.tasks[n].grid.size() != 1) return false;
    const Expr rows = m_.tasks[n].grid[0];
    if (rows->kind != ExprKind::Sym) return false;
    const uint32_t sym = rows->id;
    const Sym& s = m_.syms[sym];
    const int64_t cut = m_.graphs[g].fold_norms_below;
    if (cut <= s.lo) return false;
    const bool everywhere = cut > s.hi;
    const RangeEnv below = m_.symRangesWith(sym, s.lo, std::min(s.hi, cut - 1));

    // The norm: calls ending with one rmsnorm or add_rmsnorm over rows, every operand at row i.
    const Task& nt = m_.tasks[n];
    const CallStmt& norm = callAt(nt, nt.body.size() - 1);
    const bool add_norm = norm.call.op == "add_rmsnorm";
    if ((norm.call.op != "rmsnorm" && !add_norm) || tiling::attrInt(norm.call, "head_dim") > 0) return false;
    const uint32_t h = norm.dests[0].target;
    std::vector<CallStmt> calls;
    std::set<uint32_t> touched, written;
    int64_t gathered = 0;
    for (size_t k = 0; k < nt.body.size(); ++k) {
      CallStmt c = callAt(nt, k);
      if (k + 1 < nt.body.size() && (c.call.op == "rmsnorm" || c.call.op == "add_rmsnorm")) return false;
      for (Slice& a : c.call.args) {
        std::optional<Slice> e = everyRow(a, rows);
        if (!e) return false;
        a = *e;
        gathered = std::min(gathered, kFoldNormElements + 1) + std::min(elements(a, below), kFoldNormElements + 1);
        touched.insert(a.target);
      }
      for (Slice& d : c.dests) {
        std::optional<Slice> e = everyRow(d, rows);
        if (!e) return false;
        d = *e;
        touched.insert(d.target);
        written.insert(d.target);
      }
      calls.push_back(std::move(c));
    }
    if (gathered > kFoldNormElements) return false;
    const Tensor& ht = m_.tensors[h];
    if (ht.role != Role::Temp || ht.shape.empty() || !equal(inlineConsts(ht.shape[0]), inlineConsts(rows)))
      return false;
    // The residual written in place: a temp that only this graph's tasks touch.
    std::optional<uint32_t> res;
    if (add_norm && norm.dests.size() == 2 && norm.dests[1].target == norm.call.args[1].target) {
      res = norm.dests[1].target;
      if (m_.tensors[*res].role != Role::Temp) return false;
    }
    for (uint32_t w : written)
      if (w != h && w != res && m_.tensors[w].role != Role::Temp) return false;

    // Readers after N; between N and the last of them nothing else touches N's tensors.
    const std::vector<uint32_t> order = runOrder(m_, g);
    const auto npos = std::find(order.begin(), order.end(), n);
    std::vector<uint32_t> readers;
    std::vector<uint32_t> others;  // tasks after N, in order, that are not readers
    for (auto it = npos + 1; it != order.end(); ++it) {
      if (dropped_[*it]) continue;
      const std::set<uint32_t> r = touchedTensors(m_.tasks[*it], false), w = touchedTensors(m_.tasks[*it], true);
      if (r.count(h) || w.count(h)) {
        if (!isReader(*it, h, touched, below)) return false;
        readers.push_back(*it);
      } else {
        others.push_back(*it);
      }
    }
    // A grid with no task below the cut (the other side of a plan by range) reads h as it was;
    // some grid must fold, as the norm's own grid runs no task below the cut any more.
    auto folds = [&](uint32_t c) { return everywhere || tasksOf(m_.tasks[c], below) > 0; };
    // A reader with no task from the cut on (a grid that lower-ops planned below the same cut,
    // etcc --unsplit-below) folds in place: its copy above the cut would have no task at any B.
    auto onlyBelow = [&](uint32_t c) {
      return everywhere || tasksOf(m_.tasks[c], m_.symRangesWith(sym, cut, s.hi)) == 0;
    };
    if (std::none_of(readers.begin(), readers.end(), folds)) return false;
    const auto last = std::find(order.begin(), order.end(), readers.back());
    for (auto it = npos + 1; it != last; ++it) {
      if (std::find(readers.begin(), readers.end(), *it) != readers.end()) continue;
      for (const SliceAccess& a : taskAccesses(m_.tasks[*it]))
        if (touched.count(a.slice->target)) return false;
    }
    // N's temps (but the residual) are touched by no task outside N and its readers; the
    // residual by none outside this graph.
    std::set<uint32_t> in_graph(order.begin(), order.end());
    for (uint32_t u = 0; u < m_.tasks.size(); ++u) {
      if (u == n || dropped_[u]) continue;
      const bool reader = std::find(readers.begin(), readers.end(), u) != readers.end();
      for (const SliceAccess& a : taskAccesses(m_.tasks[u])) {
        if (res && a.slice->target == *res && !in_graph.count(u)) return false;
        if ((!res || a.slice->target != *res) && written.count(a.slice->target) && !reader) return false;
      }
    }

    // The residual becomes a new tensor from N on.
    if (res) {
      // Named after the residual as the source wrote it: res_h_1, not res_h2_0_h_1.
      auto root = roots_.find(*res);
      const std::string base = root != roots_.end() ? root->second : m_.tensors[*res].name;
      const uint32_t next = newTemp(m_.tensors[*res], base + "_" + m_.tensors[h].name);
      roots_[next] = base;
      for (uint32_t u : others) retarget(m_.tasks[u], *res, next);
      std::get<CallStmt>(m_.tasks[n].body.back()).dests[1].target = next;
      calls.back().dests[1].target = next;
      written.erase(*res);
      written.insert(next);
      res = next;
    }

    const Expr s_ref = symRef(sym, s.name);
    const Expr below_cut = min(max(sub(intConst(cut), s_ref), intConst(0)), intConst(1));
    const Expr from_cut = min(max(sub(s_ref, intConst(cut - 1)), intConst(0)), intConst(1));
    bool res_written = false;
    for (uint32_t c : readers) {
      if (!folds(c)) continue;
      Task folded = m_.tasks[c];
      // The grid's own copies of N's results (the first folded grid writes the residual).
      std::vector<CallStmt> body = calls;
      for (uint32_t w : written) {
        if (res && w == *res && !std::exchange(res_written, true)) continue;
        const uint32_t copy = newTemp(m_.tensors[w], m_.tensors[w].name + "_" + m_.tasks[c].name);
        for (CallStmt& k : body) {
          for (Slice& a : k.call.args)
            if (a.target == w) a.target = copy;
          for (Slice& d : k.dests)
            if (d.target == w) d.target = copy;
        }
        if (w == h) std::get<CallStmt>(folded.body[0]).call.args[0].target = copy;
      }
      for (CallStmt& k : body) k.range = k.call.range = folded.range;
      folded.body.insert(folded.body.begin(), body.begin(), body.end());
      if (onlyBelow(c)) {
        m_.tasks[c] = std::move(folded);
        continue;
      }
      folded.name = tiling::freshTaskName(m_, m_.tasks[c].name + "_folded");
      folded.grid[0] = mul(folded.grid[0], below_cut);
      m_.tasks[c].grid[0] = mul(m_.tasks[c].grid[0], from_cut);
      const uint32_t id = m_.addTask(std::move(folded));
      declareAfterTask(c);
      dropped_.push_back(false);
      runs_.push_back(1);
      auto& gb = m_.graphs[g].body;
      auto at = std::find_if(gb.begin(), gb.end(), [&](const GraphStmt& st) {
        const auto* run = std::get_if<RunStmt>(&st);
        return run && run->task == c;
      });
      RunStmt run = std::get<RunStmt>(*at);
      run.task = id;
      gb.insert(at + 1, run);
    }
    if (everywhere) {
      dropped_[n] = true;
      dropRuns(m_, g, n);
    } else {
      m_.tasks[n].grid[0] = mul(m_.tasks[n].grid[0], from_cut);
    }
    return true;
  }

  Module& m_;
  std::vector<bool> dropped_;
  std::vector<int> runs_;
  std::map<uint32_t, std::string> roots_;  // a residual fold-norms made: the source's name for it
};

}  // namespace

ModulePtr foldNorms(ModulePtr m, DiagnosticEngine& diags) {
  (void)diags;
  Module& ref = *m;
  return NormFolder(ref).run(std::move(m));
}

}  // namespace etc
