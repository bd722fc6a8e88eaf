// merge-tasks: fewer task grids, so fewer event hops on a chain of dependent grids (a decode
// step is such a chain: every hop costs a notify, a wait and a dispatch, microseconds each,
// while the work of a small grid takes less). Runs on the task grids that lower-ops made,
// before infer-events, so the events of the merged grids are inferred as for any other. Only
// grids without waits or notifies are touched (hand-written synchronisation stays as written),
// and only grids that run once, in one graph. Two rules, each to a fixed point:
//
//  1. A split-K partial sum moves into its reader. A `reduce_sum` grid R whose result T is a
//     temp that exactly one other grid C reads (through one slice, and nothing else touches)
//     goes: C first computes, per task, the slice of T that it reads, from the slice of R's
//     input that holds it. Taken only when that slice is small (kInlineReduceElements at the
//     largest sym values): a reader that covers a whole logits row would serialize what R
//     spread over many tasks. Readers that are matmuls are left alone (the weight prefetch
//     needs the matmul first).
//  2. A grid P merges into a later grid C over the same grid when C depends on P and every
//     access of the two to a tensor that one of them writes has the same tile in both, so task
//     c of the merged grid needs only what task c of P made: C's tasks first run P's calls.
//     No grid between P and C in the graph may touch what P writes or write what P reads.
//     This joins rope with kv_append, and the per-head q/k norms with rope.
//
// A merged task runs its calls one after the other; the back end puts a CTA barrier between
// calls, so the second reads the first's global writes.
#include <algorithm>
#include <limits>
#include <set>
#include <string>

#include "compiler/ir/expr.h"
#include "compiler/passes/access_pattern.h"
#include "compiler/passes/lowered_grids.h"
#include "compiler/passes/module_rebuild.h"
#include "compiler/passes/passes.h"
#include "compiler/passes/tiling.h"

namespace etc {

namespace {

using namespace ir;

// At most this many elements of R's input per task of C (256 KiB of f32 partial sums).
constexpr int64_t kInlineReduceElements = 64 * 1024;

class Merger {
 public:
  explicit Merger(Module& m) : m_(m), dropped_(m.tasks.size(), false) {}

  ModulePtr run(ModulePtr self) {
    runs_ = runCounts(m_);
    for (uint32_t t = 0; t < m_.tasks.size(); ++t) {
      refreshIo(t);
      std::string key;
      for (const Expr& e : m_.tasks[t].grid) key += toString(inlineConsts(e)) + ";";
      grid_key_.push_back(std::move(key));
    }
    bool changed = false;
    for (uint32_t g = 0; g < m_.graphs.size(); ++g) {
      while (inlineOneReduce(g)) changed = true;
      while (mergePass(g)) changed = true;
    }
    return changed ? moduleWithout(m_, {}, dropped_) : std::move(self);
  }

 private:
  using Access = SliceAccess;

  bool candidate(uint32_t t) const { return !dropped_[t] && rewritableGrid(m_, t, runs_[t]); }

  static bool hasOp(const Task& t, std::string_view op) {
    for (const TaskStmt& st : t.body)
      if (std::get<CallStmt>(st).call.op == op) return true;
    return false;
  }

  static std::vector<Access> accesses(const Task& t) { return taskAccesses(t); }

  // The tensors task t reads and writes (kept up to date as calls move between tasks: the
  // pass looks at every pair of a graph's grids, so conflicts are set lookups).
  void refreshIo(uint32_t t) {
    if (reads_.size() <= t) reads_.resize(t + 1), writes_.resize(t + 1);
    reads_[t] = touchedTensors(m_.tasks[t], false);
    writes_[t] = touchedTensors(m_.tasks[t], true);
  }

  static bool meets(const std::set<uint32_t>& a, const std::set<uint32_t>& b) {
    for (uint32_t x : a)
      if (b.count(x)) return true;
    return false;
  }

  // Some tensor that one of the two tasks writes is accessed by the other.
  bool conflict(uint32_t a, uint32_t b) const {
    return meets(writes_[a], reads_[b]) || meets(writes_[a], writes_[b]) || meets(reads_[a], writes_[b]);
  }

  // Tasks in the module (other than `except`) that access tensor t.
  std::vector<uint32_t> users(uint32_t t, uint32_t except) const {
    std::vector<uint32_t> out;
    for (uint32_t k = 0; k < m_.tasks.size(); ++k)
      if (k != except && !dropped_[k] && (reads_[k].count(t) || writes_[k].count(t))) out.push_back(k);
    return out;
  }

  static bool sameDim(const SliceDim& a, const SliceDim& b) {
    if (a.is_range != b.is_range || !equal(a.lo, b.lo)) return false;
    return !a.is_range || equal(a.hi, b.hi);
  }

  // ---- rule 1 -------------------------------------------------------------------------------

  bool inlineOneReduce(uint32_t g) {
    std::vector<uint32_t> run = runOrder(m_, g);
    for (size_t ri = 0; ri < run.size(); ++ri) {
      const uint32_t r = run[ri];
      if (!candidate(r) || m_.tasks[r].body.size() != 1) continue;
      const CallStmt& red = std::get<CallStmt>(m_.tasks[r].body[0]);
      if (red.call.op != "reduce_sum" || red.call.args.size() != 1 || red.dests.size() != 1) continue;
      const uint32_t part = red.call.args[0].target, out = red.dests[0].target;
      if (m_.tensors[out].role != Role::Temp || part == out) continue;
      const int64_t rank = static_cast<int64_t>(m_.tensors[part].shape.size());
      int64_t axis = tiling::attrInt(red.call, "axis");
      if (axis < 0) axis += rank;
      if (axis < 0 || axis >= rank || !reduceIsElementwise(red, axis)) continue;

      std::vector<uint32_t> readers = users(out, r);
      if (readers.size() != 1) continue;
      const uint32_t c = readers[0];
      auto cpos = std::find(run.begin() + ri + 1, run.end(), c);
      if (cpos == run.end() || !candidate(c) || hasOp(m_.tasks[c], "matmul")) continue;
      const Slice* read = soleRead(m_.tasks[c], out);
      if (!read) continue;
      // Nothing from R to C (C included) may write R's input.
      bool clobbered = false;
      for (auto it = run.begin() + ri + 1; it != cpos + 1; ++it)
        clobbered |= writes_[*it].count(part) > 0;
      if (clobbered) continue;

      // C's slice of T, with R's reduced axis put back as R reads it (the whole axis, or the
      // parts of the plan that runs at the syms: lower-ops' matmul plans by range of B).
      std::vector<SliceDim> dims = explicitDims(m_, *read);
      int64_t points_before = 0;
      for (int64_t k = 0; k < axis; ++k) points_before += dims[k].is_range ? 0 : 1;
      dims.insert(dims.begin() + axis, explicitDims(m_, red.call.args[0])[axis]);
      if (elementBound(dims) > kInlineReduceElements) continue;

      CallStmt call = red;
      call.call.args[0].target = part;
      call.call.args[0].has_subscript = true;
      call.call.args[0].dims = dims;
      call.call.attrs.clear();
      call.call.attrs.push_back(tiling::intAttr("axis", axis - points_before));
      call.dests[0] = *read;
      Task& ct = m_.tasks[c];
      for (Slice* s : {&call.call.args[0], &call.dests[0]}) s->range = ct.range;
      call.range = call.call.range = ct.range;
      ct.body.insert(ct.body.begin(), std::move(call));
      refreshIo(c);
      drop(g, r);
      return true;
    }
    return false;
  }

  // Each task of R sums, for every element it writes, the same range of the reduced axis (the
  // whole axis, or one that only the syms decide) of the same element of its input: the input
  // slice is the output slice with that axis put in (ranges only, so positions in the slice are
  // dimensions of the tensors).
  bool reduceIsElementwise(const CallStmt& red, int64_t axis) const {
    std::vector<SliceDim> in = explicitDims(m_, red.call.args[0]), out = explicitDims(m_, red.dests[0]);
    if (in.size() != out.size() + 1) return false;
    for (const SliceDim& d : in)
      if (!d.is_range) return false;
    if (!wholeRange(in[axis], m_.tensors[red.call.args[0].target].shape[axis]) &&
        (ir::hasCoord(in[axis].lo) || ir::hasCoord(in[axis].hi) || hasLoad(in[axis].lo) || hasLoad(in[axis].hi)))
      return false;
    for (size_t k = 0, j = 0; k < in.size(); ++k) {
      if (static_cast<int64_t>(k) == axis) continue;
      if (!sameDim(in[k], out[j++])) return false;
    }
    return true;
  }

  // The one slice through which t reads `tensor`, or null (written, or read more than once).
  static const Slice* soleRead(const Task& t, uint32_t tensor) {
    const Slice* found = nullptr;
    for (const Access& a : accesses(t)) {
      if (a.slice->target != tensor) continue;
      if (a.write || found) return nullptr;
      found = a.slice;
    }
    return found;
  }

  // Elements of a slice at the largest sym and coordinate values (an upper bound).
  int64_t elementBound(const std::vector<SliceDim>& dims) const {
    int64_t n = 1;
    for (const SliceDim& d : dims) {
      if (!d.is_range) continue;
      int64_t e = tiling::upperBound(m_, sub(d.hi, d.lo));
      if (e <= 0) return 0;
      if (n > std::numeric_limits<int64_t>::max() / e) return std::numeric_limits<int64_t>::max();
      n *= e;
    }
    return n;
  }

  // ---- rule 2 -------------------------------------------------------------------------------

  // One pass over the graph's grids in order; a grid merged away leaves its place to the next.
  // The caller repeats passes until one changes nothing (a merge can make room for another).
  bool mergePass(uint32_t g) {
    std::vector<uint32_t> run = runOrder(m_, g);
    bool changed = false;
    for (size_t pi = 0; pi < run.size(); ++pi) {
      const uint32_t p = run[pi];
      if (!candidate(p) || hasOp(m_.tasks[p], "matmul")) continue;
      for (size_t ci = pi + 1; ci < run.size(); ++ci) {
        const uint32_t c = run[ci];
        if (grid_key_[p] == grid_key_[c] && conflict(p, c) && candidate(c) && !hasOp(m_.tasks[c], "matmul") &&
            tileForTile(m_.tasks[p], m_.tasks[c])) {
          bool between = false;
          for (size_t k = pi + 1; k < ci && !between; ++k) between = conflict(p, run[k]);
          if (between) continue;
          merge(g, p, c);
          refreshIo(c);
          run.erase(run.begin() + static_cast<long>(pi));
          --pi;
          changed = true;
          break;
        }
      }
    }
    return changed;
  }

  // Every conflicting pair of accesses covers the same tile in task c of both grids, and the
  // tiles of distinct tasks are disjoint (each coordinate with more than one value tiles some
  // dimension).
  bool tileForTile(const Task& p, const Task& c) const {
    for (const Access& x : accesses(p))
      for (const Access& y : accesses(c)) {
        if (x.slice->target != y.slice->target || (!x.write && !y.write)) continue;
        auto a = matchAccess(m_, *x.slice), b = matchAccess(m_, *y.slice);
        if (!a || !b || a->size() != b->size()) return false;
        std::set<uint32_t> tiled;
        for (size_t d = 0; d < a->size(); ++d) {
          const DimAccess &u = (*a)[d], &v = (*b)[d];
          if (u.tiled != v.tiled) return false;
          if (u.tiled) {
            if (u.coord != v.coord || u.tile != v.tile || !equal(inlineConsts(u.offset), inlineConsts(v.offset)))
              return false;
            tiled.insert(u.coord);
          } else if (!equal(inlineConsts(u.lo), inlineConsts(v.lo)) || !equal(inlineConsts(u.hi), inlineConsts(v.hi))) {
            return false;
          }
        }
        for (uint32_t k = 0; k < p.grid.size(); ++k)
          if (!tiled.count(k) && tiling::upperBound(m_, p.grid[k]) > 1) return false;
      }
    return true;
  }

  // C's tasks run P's calls first; P's coordinates take C's names.
  void merge(uint32_t g, uint32_t p, uint32_t c) {
    Task& ct = m_.tasks[c];
    auto rename = [&](const Expr& e) {
      if (!e) return e;
      return substitute(e, [&](const ExprNode& leaf) -> Expr {
        if (leaf.kind == ExprKind::Coord) return coordRef(leaf.id, ct.coords[leaf.id]);
        return nullptr;
      });
    };
    std::vector<TaskStmt> body;
    for (const TaskStmt& st : m_.tasks[p].body) {
      CallStmt call = std::get<CallStmt>(st);
      for (std::vector<Slice>* v : {&call.call.args, &call.dests})
        for (Slice& s : *v) {
          s.range = ct.range;
          for (SliceDim& d : s.dims) {
            d.lo = rename(d.lo);
            d.hi = rename(d.hi);
          }
        }
      for (Attr& a : call.call.attrs)
        if (a.value.type == AttrType::Int) a.value.i = rename(a.value.i);
      call.range = call.call.range = ct.range;
      body.push_back(std::move(call));
    }
    for (TaskStmt& st : ct.body) body.push_back(std::move(st));
    ct.body = std::move(body);
    drop(g, p);
  }

  // ---- removal ------------------------------------------------------------------------------

  void drop(uint32_t g, uint32_t t) {
    dropped_[t] = true;
    dropRuns(m_, g, t);
  }

  Module& m_;
  std::vector<bool> dropped_;
  std::vector<std::set<uint32_t>> reads_, writes_;  // per task: tensors its calls read / write
  std::vector<std::string> grid_key_;               // per task: its grid, printed (equal grids, equal keys)
  std::vector<int> runs_;  // per task: run statements in all graphs
};

}  // namespace

ModulePtr mergeTasks(ModulePtr m, DiagnosticEngine& diags) {
  Module& ref = *m;
  return Merger(ref).run(std::move(m));
}

}  // namespace etc
