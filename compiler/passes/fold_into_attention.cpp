// fold-into-attention: the per-row grid that makes a layer's rotated q and new cache row (the
// split-K sums of q, k and v, the per-head q/k norms, rope and kv_append: merge-tasks' chain)
// moves into the attention grids that read what it writes. Each attention task first runs the
// chain for its own row and its own heads, then attends. A decode layer's chain of dependent
// grids loses one hop (q/k/v matmuls -> row grid -> attention becomes matmuls -> attention),
// and an attention task waits only for the matmul tasks of its heads.
//
// Every op of the chain works per column or per head of D columns (reduce_sum over the parts,
// rmsnorm {head_dim}, rope, kv_append), so the chain restricted to a head group's columns
// computes those columns of the whole chain's results. Attention tasks that share a row and
// heads (the split-KV parts) each compute the same values and write the same bits to the
// rotated q and the cache row: redundant work, a few hundred values a task, where the hop it
// replaces costs microseconds. A part whose positions end before the new one reads no value
// that another part writes.
//
// Taken only when the grid is a candidate of merge-tasks (calls only, run once, grid [rows]),
// its calls are exactly such a chain with one contiguous kv_append, every task reading what it
// writes is an attention grid that reads the rotated q and the two caches at one row and one
// range of whole heads, those grids' tasks cover every row and head once (so the folded chains
// write all that the row grid wrote), and nothing between it and the last of them writes what
// it reads.
#include <algorithm>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "compiler/ir/expr.h"
#include "compiler/passes/access_pattern.h"
#include "compiler/passes/lowered_grids.h"
#include "compiler/passes/module_rebuild.h"
#include "compiler/passes/passes.h"
#include "compiler/passes/tiling.h"

namespace etc {

namespace {

using namespace ir;

// Where an attention task reads the chain's results: row `row` (over its coordinates), the
// columns `qcols` of the rotated q and `kcols` of the caches.
struct Reader {
  uint32_t task;
  Expr row;
  SliceDim qcols, kcols;
};

// A reader's rows of P: [off, off + extent), coordinate-free.
struct Rows {
  Expr off, extent;
};

class Folder {
 public:
  explicit Folder(Module& m) : m_(m), dropped_(m.tasks.size(), false), runs_(runCounts(m)) {}

  ModulePtr run(ModulePtr self) {
    bool changed = false;
    for (uint32_t g = 0; g < m_.graphs.size(); ++g) {
      for (uint32_t p : runOrder(m_, g)) changed |= foldOne(g, p);
    }
    return changed ? moduleWithout(m_, {}, dropped_) : std::move(self);
  }

 private:
  // data_extent: a grid chosen by the data may do too (rewritableGrid).
  bool candidate(uint32_t t, bool data_extent = false) const {
    return !dropped_[t] && rewritableGrid(m_, t, runs_[t], data_extent);
  }

  static const CallStmt& call(const Task& t, size_t k) { return std::get<CallStmt>(t.body[k]); }

  // The chain's calls: sums, per-head norms, one rope, one contiguous kv_append (index).
  std::optional<size_t> chainAppend(const Task& p) const {
    std::optional<size_t> append;
    int ropes = 0;
    for (size_t k = 0; k < p.body.size(); ++k) {
      const CallStmt& c = call(p, k);
      const std::string& op = c.call.op;
      if (op == "kv_append") {
        if (append || c.call.args.size() != 3) return std::nullopt;
        append = k;
      } else if (op == "rope") {
        ++ropes;
      } else if (op == "rmsnorm") {
        if (tiling::attrInt(c.call, "head_dim") <= 0) return std::nullopt;
      } else if (op != "reduce_sum") {
        return std::nullopt;
      }
    }
    return ropes == 1 ? append : std::nullopt;
  }

  // The attention task's reads of the rotated q and the caches, if it is a single
  // attention_decode call that reads them at one row and one column range each.
  std::optional<Reader> reader(uint32_t c, uint32_t qo, uint32_t kc, uint32_t vc) const {
    // Its grid may be chosen by the data (attention's one-part and split grids, by the longest
    // row): the fold adds calls to its tasks and leaves the grid as it is.
    if (!candidate(c, true) || m_.tasks[c].body.size() != 1) return std::nullopt;
    const CallStmt& a = call(m_.tasks[c], 0);
    if (a.call.op != "attention_decode" || a.call.args.size() != 4) return std::nullopt;
    const Slice &q = a.call.args[0], &k = a.call.args[1], &v = a.call.args[2];
    if (q.target != qo || k.target != kc || v.target != vc) return std::nullopt;
    const std::vector<SliceDim> qd = explicitDims(m_, q), kd = explicitDims(m_, k), vd = explicitDims(m_, v);
    if (qd.size() != 2 || kd.size() != 3 || vd.size() != 3 || qd[0].is_range || kd[0].is_range || vd[0].is_range ||
        !qd[1].is_range || !kd[2].is_range || !vd[2].is_range)
      return std::nullopt;
    if (!equal(qd[0].lo, kd[0].lo) || !equal(qd[0].lo, vd[0].lo) || !equal(kd[2].lo, vd[2].lo) ||
        !equal(kd[2].hi, vd[2].hi) || !wholeRange(kd[1], m_.tensors[kc].shape[1]) ||
        !wholeRange(vd[1], m_.tensors[vc].shape[1]))
      return std::nullopt;
    // Nothing else of the chain's results is read or written there.
    for (const SliceAccess& x : taskAccesses(m_.tasks[c]))
      if (x.write && (x.slice->target == qo || x.slice->target == kc || x.slice->target == vc)) return std::nullopt;
    return Reader{c, qd[0].lo, qd[1], kd[2]};
  }

  // P's slice s for a reader: P's row coordinate becomes the reader's row, and a whole last
  // dimension of q's width or k's width the reader's columns; other dimensions (free of P's
  // coordinates) stay. Params (the norms' weights) are kept; anything else fails.
  std::optional<Slice> restrict(const Slice& s, const Reader& r, const Expr& rows, int64_t qw, int64_t kw) const {
    const Tensor& t = m_.tensors[s.target];
    auto toRow = [&](const Expr& e) {
      return substitute(e, [&](const ExprNode& leaf) -> Expr { return leaf.kind == ExprKind::Coord ? r.row : nullptr; });
    };
    Slice out = s;
    if (t.role == Role::Param) {
      for (const SliceDim& d : s.dims)
        if (hasCoord(d.lo) || (d.hi && hasCoord(d.hi))) return std::nullopt;
      return out;
    }
    std::vector<SliceDim> dims = explicitDims(m_, s);
    if (dims.empty()) return std::nullopt;
    bool has_row = false;
    for (size_t d = 0; d < dims.size(); ++d) {
      SliceDim& x = dims[d];
      if (isTaskRow(x, rows, t.shape[d])) {
        if (has_row) return std::nullopt;
        has_row = true;
        x.lo = toRow(x.lo);
        if (x.is_range) x.hi = add(x.lo, intConst(1));
        continue;
      }
      if (hasCoord(x.lo) || (x.hi && hasCoord(x.hi))) return std::nullopt;
      // A leading dimension that is not the row is the same for every row (split-K parts, whose
      // count may follow the batch: etcc --unsplit-below), so it stays as P has it.
      if (d + 1 < dims.size()) continue;
      if (t.shape.size() < 2) {
        if (!wholeRange(x, t.shape[d])) return std::nullopt;
        continue;
      }
      // The last dimension of a rank >= 2 tensor: a fixed range of q's or k's width (a whole
      // row, or q's, k's or v's columns of a fused qkv), of which the reader's columns.
      const std::optional<int64_t> width = asInt(inlineConsts(sub(x.hi, x.lo)));
      const bool is_q = width && width == qw, is_k = width && width == kw;
      if (!x.is_range || (!is_q && !is_k)) return std::nullopt;
      if (is_q && is_k && !(equal(r.qcols.lo, r.kcols.lo) && equal(r.qcols.hi, r.kcols.hi))) return std::nullopt;
      const SliceDim& cols = is_q ? r.qcols : r.kcols;
      const Expr base = x.lo;
      x.lo = add(base, cols.lo);
      x.hi = add(base, cols.hi);
      x.lo_written = x.hi_written = true;
    }
    if (!has_row) return std::nullopt;
    out.has_subscript = true;
    out.dims = std::move(dims);
    return out;
  }

  // Whether the readers' tasks together cover every row of P and every head of a row once
  // each (the split-KV parts of a row and heads aside), so that the folded chains write all
  // that P wrote: each reader's row is one coordinate plus an offset, the readers' row ranges
  // follow one another from 0 to P's extent, and a second coordinate h takes the head groups,
  // q's columns h * Wq : + Wq and k's h * Wk : + Wk over h's whole extent E (E * Wq = q's
  // width, E * Wk = k's), each a whole number of heads of every head_dim of the chain.
  bool covered(const std::vector<Reader>& readers, const Task& p, int64_t qw, int64_t kw) const {
    std::vector<int64_t> head_dims;
    for (const TaskStmt& st : p.body) {
      const int64_t d = tiling::attrInt(std::get<CallStmt>(st).call, "head_dim");
      if (d > 0) head_dims.push_back(d);
    }
    if (head_dims.empty()) return false;
    std::vector<Rows> rows;
    for (const Reader& r : readers) {
      const Task& c = m_.tasks[r.task];
      // The row: a coordinate a, plus coordinate-free terms.
      std::optional<uint32_t> a;
      Expr off = intConst(0);
      const std::vector<Expr> terms = r.row->kind == ExprKind::Add ? r.row->ops : std::vector<Expr>{r.row};
      for (const Expr& t : terms) {
        if (t->kind == ExprKind::Coord && !a) {
          a = t->id;
        } else if (hasCoord(t)) {
          return false;
        } else {
          off = add(off, t);
        }
      }
      if (!a) return false;
      // The head groups: q's and k's columns over one coordinate h (or whole rows).
      const std::optional<int64_t> wq = asInt(inlineConsts(sub(r.qcols.hi, r.qcols.lo))),
                                   wk = asInt(inlineConsts(sub(r.kcols.hi, r.kcols.lo)));
      if (!wq || !wk || *wq <= 0 || *wk <= 0) return false;
      for (int64_t d : head_dims)
        if (*wq % d != 0 || *wk % d != 0) return false;
      // Whole rows at column 0, or head groups over a coordinate (of extent 1 too: a batch's
      // grid of all 8 cache heads a task reads q's g * 2048 : + 2048).
      if (!(*wq == qw && *wk == kw && asInt(r.qcols.lo) == 0 && asInt(r.kcols.lo) == 0)) {
        bool found = false;
        for (uint32_t h = 0; h < c.grid.size() && !found; ++h) {
          if (h == *a) continue;
          const Expr coord = coordRef(h, c.coords[h]);
          const std::optional<int64_t> e = asInt(inlineConsts(c.grid[h]));
          found = e && *e * *wq == qw && *e * *wk == kw && equal(r.qcols.lo, mul(coord, intConst(*wq))) &&
                  equal(r.kcols.lo, mul(coord, intConst(*wk)));
        }
        if (!found) return false;
      }
      rows.push_back({inlineConsts(off), inlineConsts(c.grid[*a])});
    }
    joinChosenByData(rows);
    // The readers' row ranges, one after another from row 0 to P's last.
    const Expr total = inlineConsts(p.grid[0]);
    auto chained = [&] {
      std::vector<bool> used(rows.size(), false);
      Expr at = intConst(0);
      for (size_t n = 0; n < rows.size(); ++n) {
        size_t k = 0;
        while (k < rows.size() && (used[k] || !equal(rows[k].off, at))) ++k;
        if (k == rows.size()) return false;
        used[k] = true;
        at = add(at, rows[k].extent);
      }
      return equal(at, total);
    };
    return chained() || tileRowsAtEverySymValue(rows, total);
  }

  // Two readers that the data chooses between (attention's one-part grid and its split grid, by
  // the longest row) have extents E * [a >= 1] and E * [b >= 1] from the same row with a + b = 1:
  // whatever the data, exactly one of them runs, so together they take E rows there.
  void joinChosenByData(std::vector<Rows>& rows) const {
    for (size_t i = 0; i < rows.size(); ++i)
      for (size_t j = i + 1; j < rows.size(); ++j) {
        if (!equal(rows[i].off, rows[j].off)) continue;
        for (const DataIndicator& a : dataIndicators(rows[i].extent))
          for (const DataIndicator& b : dataIndicators(rows[j].extent))
            if (equal(a.rest, b.rest) && asInt(simplify(add(a.arg, b.arg), m_.symRanges())) == 1) {
              rows[i].extent = a.rest;
              rows.erase(rows.begin() + static_cast<long>(j));
              joinChosenByData(rows);
              return;
            }
      }
  }

  // Whether at every value of the module's one sym the spans [off, off + extent) that are not
  // empty tile [0, total) exactly once. The symbolic chain above cannot see it where readers
  // split the rows by the batch rather than by offset: a decode layer's attention grids of one
  // part a row for B < 32 and of 2, 4 and 8 heads a task above (each empty outside its range
  // of B), all from the same row on. Undecided (false) with more syms or too long a range.
  bool tileRowsAtEverySymValue(const std::vector<Rows>& spans, const Expr& total) const {
    if (m_.syms.size() != 1 || !m_.syms[0].triable()) return false;
    for (int64_t v = m_.syms[0].lo; v <= m_.syms[0].hi; ++v) {
      Bindings b;
      b.sym = [v](uint32_t) -> std::optional<int64_t> { return v; };
      const EvalResult end = evaluate(total, b);
      if (!end.ok()) return false;
      std::vector<std::pair<int64_t, int64_t>> at;  // (offset, extent) of the spans not empty here
      for (const Rows& r : spans) {
        const EvalResult o = evaluate(r.off, b), e = evaluate(r.extent, b);
        if (!o.ok() || !e.ok() || e.value < 0) return false;
        if (e.value > 0) at.emplace_back(o.value, e.value);
      }
      std::sort(at.begin(), at.end());
      int64_t row = 0;
      for (const auto& [o, e] : at) {
        if (o != row) return false;
        row += e;
      }
      if (row != end.value) return false;
    }
    return true;
  }

  bool foldOne(uint32_t g, uint32_t p) {
    if (!candidate(p) || m_.tasks[p].grid.size() != 1) return false;
    const Task& pt = m_.tasks[p];
    const std::optional<size_t> ai = chainAppend(pt);
    if (!ai) return false;
    size_t ri = 0;
    while (call(pt, ri).call.op != "rope") ++ri;
    const CallStmt &append = call(pt, *ai), &rope = call(pt, ri);
    const uint32_t qo = rope.dests[0].target, kc = append.dests[0].target, vc = append.dests[1].target;
    if (m_.tensors[kc].shape.size() != 3 || m_.tensors[qo].shape.size() != 2) return false;
    const std::optional<int64_t> qw = asInt(inlineConsts(m_.tensors[qo].shape[1])),
                                 kw = asInt(inlineConsts(m_.tensors[kc].shape[2]));
    if (!qw || !kw) return false;

    // Every other task that touches what P writes reads it as attention does.
    const std::set<uint32_t> writes = touchedTensors(pt, true), reads = touchedTensors(pt, false);
    std::vector<Reader> readers;
    for (uint32_t u = 0; u < m_.tasks.size(); ++u) {
      if (u == p || dropped_[u]) continue;
      bool meets = false;
      for (const SliceAccess& a : taskAccesses(m_.tasks[u])) meets |= writes.count(a.slice->target) > 0;
      if (!meets) continue;
      std::optional<Reader> r = reader(u, qo, kc, vc);
      if (!r) return false;
      readers.push_back(*r);
    }
    if (readers.empty() || !covered(readers, pt, *qw, *kw)) return false;
    // All in this graph after P, with nothing in between writing what P reads.
    const std::vector<uint32_t> run = runOrder(m_, g);
    const auto at = [&](uint32_t t) { return std::find(run.begin(), run.end(), t) - run.begin(); };
    const long pi = at(p);
    long last = pi;
    for (const Reader& r : readers) {
      const long ci = at(r.task);
      if (ci == static_cast<long>(run.size()) || ci <= pi) return false;
      last = std::max(last, ci);
    }
    for (long k = pi + 1; k <= last; ++k) {
      if (std::any_of(readers.begin(), readers.end(), [&](const Reader& r) { return r.task == run[k]; })) continue;
      for (uint32_t t : touchedTensors(m_.tasks[run[k]], true))
        if (reads.count(t) || writes.count(t)) return false;
    }

    // Build every reader's new body before changing any.
    std::vector<std::vector<TaskStmt>> bodies;
    for (const Reader& r : readers) {
      const Task& ct = m_.tasks[r.task];
      std::vector<TaskStmt> body;
      for (const TaskStmt& st : pt.body) {
        CallStmt c = std::get<CallStmt>(st);
        for (std::vector<Slice>* v : {&c.call.args, &c.dests})
          for (Slice& s : *v) {
            std::optional<Slice> x = restrict(s, r, pt.grid[0], *qw, *kw);
            if (!x) return false;
            s = std::move(*x);
            s.range = ct.range;
          }
        for (const Attr& a : c.call.attrs)
          if (a.value.type == AttrType::Int && hasCoord(a.value.i)) return false;
        c.range = c.call.range = ct.range;
        body.push_back(std::move(c));
      }
      for (const TaskStmt& st : ct.body) body.push_back(st);
      bodies.push_back(std::move(body));
    }
    for (size_t k = 0; k < readers.size(); ++k) m_.tasks[readers[k].task].body = std::move(bodies[k]);
    dropped_[p] = true;
    dropRuns(m_, g, p);
    return true;
  }

  Module& m_;
  std::vector<bool> dropped_;
  std::vector<int> runs_;
};

}  // namespace

ModulePtr foldIntoAttention(ModulePtr m, DiagnosticEngine& diags) {
  (void)diags;
  Module& ref = *m;
  return Folder(ref).run(std::move(m));
}

}  // namespace etc
