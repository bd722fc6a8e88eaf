// fold-attention-merge: a split-KV attention's merge grid moves into the matmul that reads what
// it writes (a decode layer's o projection). Each matmul task first merges, from the parts, the
// rows and columns of the merged result that it reads, then multiplies: the layer's chain loses
// a hop (attention -> merge -> o projection becomes attention -> o projection), and a matmul
// task waits only for the attention parts of its own heads.
//
// The matmul tasks that read the same columns (an o projection's tasks of one K range) merge the
// same values and write the same bits: redundant work, the rows the merge grid covers times the
// columns times the parts, a few ten thousand values a task at most (kFoldMergeElements), where
// the hop it replaces costs microseconds.
//
// Taken when the merge grid M is a candidate of merge-tasks (calls only, run once) of one
// attention_merge call over a grid (b, g) that writes T[b, g * t : g * t + t] from
// parts[:P, b, g * t : g * t + t] and lse[:P, b, g * t / D : g * t / D + t / D] (D = head_dim,
// t a multiple of D) with g's tiles covering T's columns, so that M writes rows [0, n_b) of T
// whole; T is a temp whose one reader C is a single matmul reading it as a through every row
// and a column range of whole heads; every other writer of T writes rows from n_b on (the
// attention grids of rows without parts); and nothing between M and C writes the parts.
//
// Runs only with etcc --fold-attention-merge. It did not pay (docs/benchmarks.md, session 55;
// H200, Llama-3.2-1B decode): level at B = 1, where the hop was to go, and 2.6 to 7.3% slower
// at B = 4 to 16, where 32 tasks of a K range each merge what the merge grid's tasks shared.
#include <algorithm>
#include <limits>
#include <optional>
#include <set>

#include "compiler/ir/expr.h"
#include "compiler/passes/access_pattern.h"
#include "compiler/passes/lowered_grids.h"
#include "compiler/passes/module_rebuild.h"
#include "compiler/passes/passes.h"
#include "compiler/passes/tiling.h"

namespace etc {

namespace {

using namespace ir;

// At most this many part values merged per matmul task (64 KiB of f32), at any sym value.
constexpr int64_t kFoldMergeElements = 16 * 1024;

class MergeFolder {
 public:
  explicit MergeFolder(Module& m) : m_(m), dropped_(m.tasks.size(), false), runs_(runCounts(m)) {}

  ModulePtr run(ModulePtr self) {
    bool changed = false;
    for (uint32_t g = 0; g < m_.graphs.size(); ++g)
      for (uint32_t p : runOrder(m_, g)) changed |= foldOne(g, p);
    return changed ? moduleWithout(m_, {}, dropped_) : std::move(self);
  }

 private:
  bool candidate(uint32_t t) const { return !dropped_[t] && rewritableGrid(m_, t, runs_[t]); }

  static const CallStmt& onlyCall(const Task& t) { return std::get<CallStmt>(t.body[0]); }

  static bool tiledBy(const DimAccess& a, uint32_t coord, int64_t tile) {
    return a.tiled && a.coord == coord && a.tile == tile && asInt(inlineConsts(a.offset)) == 0;
  }

  // The largest value of e over the sym values: each value in turn where e has one sym of a
  // range short enough (a batch's), else the interval bound.
  int64_t maxOverSyms(const Expr& e) const {
    std::set<uint32_t> syms;
    forEachLeaf(e, [&](const ExprNode& leaf) {
      if (leaf.kind == ExprKind::Sym) syms.insert(leaf.id);
    });
    const RangeEnv all = m_.symRanges();
    const Interval whole = bounds(e, all);
    if (syms.size() != 1) return whole.hi;
    const uint32_t s = *syms.begin();
    if (!m_.syms[s].triable()) return whole.hi;
    int64_t best = std::numeric_limits<int64_t>::min();
    for (int64_t v = m_.syms[s].lo; v <= m_.syms[s].hi; ++v) best = std::max(best, bounds(e, m_.symRangesWith(s, v, v)).hi);
    return best;
  }

  // M's form (see the top): its rows coordinate's extent n_b, or nothing.
  std::optional<Expr> mergeRows(const Task& mt) const {
    if (mt.body.size() != 1 || mt.grid.size() != 2) return std::nullopt;
    const CallStmt& c = onlyCall(mt);
    if (c.call.op != "attention_merge" || c.call.args.size() != 2 || c.dests.size() != 1) return std::nullopt;
    const int64_t d = tiling::attrInt(c.call, "head_dim");
    const Tensor& out = m_.tensors[c.dests[0].target];
    const std::optional<int64_t> width = out.shape.size() == 2 ? asInt(inlineConsts(out.shape[1])) : std::nullopt;
    if (d <= 0 || !width || out.role != Role::Temp) return std::nullopt;
    auto o = matchAccess(m_, c.dests[0]), p = matchAccess(m_, c.call.args[0]), l = matchAccess(m_, c.call.args[1]);
    if (!o || !p || !l || p->size() != 3 || l->size() != 3) return std::nullopt;
    const DimAccess &row = (*o)[0], &cols = (*o)[1];
    if (!row.tiled || row.tile != 1 || asInt(inlineConsts(row.offset)) != 0 || !cols.tiled || cols.coord == row.coord)
      return std::nullopt;
    const int64_t t = cols.tile;
    const std::optional<int64_t> tiles = asInt(inlineConsts(mt.grid[cols.coord]));
    if (t % d != 0 || !tiles || *tiles * t != *width || asInt(inlineConsts(cols.offset)) != 0) return std::nullopt;
    // Every part of the row: a fixed range from 0, the same for the parts and their lse.
    const DimAccess &pp = (*p)[0], &lp = (*l)[0];
    if (pp.tiled || lp.tiled || asInt(pp.lo) != 0 || asInt(lp.lo) != 0 || !equal(pp.hi, lp.hi)) return std::nullopt;
    if (!tiledBy((*p)[1], row.coord, 1) || !tiledBy((*l)[1], row.coord, 1) || !tiledBy((*p)[2], cols.coord, t) ||
        !tiledBy((*l)[2], cols.coord, t / d))
      return std::nullopt;
    return mt.grid[row.coord];
  }

  // Where C reads T: its columns, and the same columns as heads of d (lse's columns), in the
  // form of the columns so that infer-events sees the same tiling in both (a task then waits
  // for its own heads' parts).
  struct ReadCols {
    SliceDim cols, heads;
  };

  // C's one read of T if C is a single matmul reading T as a through every row and a column
  // range of whole heads of head_dim d.
  std::optional<ReadCols> readerCols(uint32_t c, uint32_t tensor, int64_t d) const {
    if (!candidate(c) || m_.tasks[c].body.size() != 1) return std::nullopt;
    const Task& ct = m_.tasks[c];
    const CallStmt& mm = onlyCall(ct);
    if (mm.call.op != "matmul" || mm.call.args.empty() || mm.call.args[0].target != tensor) return std::nullopt;
    for (const SliceAccess& a : taskAccesses(ct))
      if (a.slice->target == tensor && a.slice != &mm.call.args[0]) return std::nullopt;
    const Tensor& t = m_.tensors[tensor];
    const std::vector<SliceDim> dims = explicitDims(m_, mm.call.args[0]);
    if (dims.size() != 2 || !wholeRange(dims[0], t.shape[0]) || !dims[1].is_range) return std::nullopt;
    // Whole heads: fixed bounds that are multiples of d, or tiles of a multiple of d from a
    // multiple of d (clamped at the width, itself a multiple of d).
    auto acc = matchAccess(m_, mm.call.args[0]);
    if (!acc) return std::nullopt;
    const DimAccess& cols = (*acc)[1];
    auto heads = [&](const Expr& e) -> std::optional<int64_t> {
      const std::optional<int64_t> v = asInt(inlineConsts(e));
      return v && *v % d == 0 ? std::optional<int64_t>(*v / d) : std::nullopt;
    };
    ReadCols out{dims[1], dims[1]};
    out.heads.lo_written = out.heads.hi_written = true;
    if (!cols.tiled) {
      const std::optional<int64_t> lo = heads(cols.lo), hi = heads(cols.hi);
      if (!lo || !hi) return std::nullopt;
      out.heads.lo = intConst(*lo);
      out.heads.hi = intConst(*hi);
      return out;
    }
    const std::optional<int64_t> offset = heads(cols.offset);
    if (cols.tile % d != 0 || !offset || !heads(t.shape[1])) return std::nullopt;
    out.heads.lo = add(tiling::tileLo(coordRef(cols.coord, ct.coords[cols.coord]), cols.tile / d), intConst(*offset));
    out.heads.hi = min(floorDiv(t.shape[1], intConst(d)), add(out.heads.lo, intConst(cols.tile / d)));
    return out;
  }

  bool foldOne(uint32_t g, uint32_t mi) {
    if (!candidate(mi)) return false;
    const Task& mt = m_.tasks[mi];
    const std::optional<Expr> rows = mergeRows(mt);
    if (!rows) return false;
    const CallStmt& merge = onlyCall(mt);
    const uint32_t tensor = merge.dests[0].target;
    const uint32_t parts = merge.call.args[0].target, lses = merge.call.args[1].target;
    const int64_t d = tiling::attrInt(merge.call, "head_dim");

    // One reader; every other writer of T writes rows from n_b on.
    std::optional<uint32_t> reader;
    for (uint32_t u = 0; u < m_.tasks.size(); ++u) {
      if (u == mi || dropped_[u]) continue;
      for (const SliceAccess& a : taskAccesses(m_.tasks[u])) {
        if (a.slice->target != tensor) continue;
        if (a.write) {
          auto acc = matchAccess(m_, *a.slice);
          if (!acc) return false;
          const DimAccess& r = (*acc)[0];
          if (tiling::lowerBound(m_, sub(r.tiled ? r.offset : r.lo, *rows)) < 0) return false;
          continue;
        }
        if (reader && *reader != u) return false;
        reader = u;
      }
    }
    if (!reader) return false;
    const std::optional<ReadCols> cols = readerCols(*reader, tensor, d);
    if (!cols) return false;
    for (const SliceAccess& a : taskAccesses(m_.tasks[*reader]))
      if (a.write && (a.slice->target == parts || a.slice->target == lses)) return false;

    // C after M in this graph, nothing in between writing the parts.
    const std::vector<uint32_t> run = runOrder(m_, g);
    const auto mpos = std::find(run.begin(), run.end(), mi), cpos = std::find(mpos, run.end(), *reader);
    if (cpos == run.end()) return false;
    for (auto it = mpos + 1; it != cpos; ++it) {
      const std::set<uint32_t> w = touchedTensors(m_.tasks[*it], true);
      if (w.count(parts) || w.count(lses)) return false;
    }

    // The merge of C's columns over M's rows: parts[:P, 0 : n_b, cols], lse[:P, 0 : n_b, cols / D].
    const SliceDim part_range = explicitDims(m_, merge.call.args[0])[0];
    const Expr width = sub(cols->cols.hi, cols->cols.lo);
    if (maxOverSyms(mul(mul(*rows, part_range.hi), width)) > kFoldMergeElements) return false;
    Task& ct = m_.tasks[*reader];
    SliceDim row_range;
    row_range.is_range = true;
    row_range.lo = intConst(0);
    row_range.hi = *rows;
    row_range.lo_written = row_range.hi_written = true;
    CallStmt call = merge;
    auto slice = [&](Slice s, std::vector<SliceDim> dims) {
      s.has_subscript = true;
      s.dims = std::move(dims);
      s.range = ct.range;
      return s;
    };
    call.call.args[0] = slice(merge.call.args[0], {part_range, row_range, cols->cols});
    call.call.args[1] = slice(merge.call.args[1], {explicitDims(m_, merge.call.args[1])[0], row_range, cols->heads});
    call.dests[0] = slice(merge.dests[0], {row_range, cols->cols});
    call.range = call.call.range = ct.range;
    ct.body.insert(ct.body.begin(), std::move(call));
    dropped_[mi] = true;
    dropRuns(m_, g, mi);
    return true;
  }

  Module& m_;
  std::vector<bool> dropped_;
  std::vector<int> runs_;
};

}  // namespace

ModulePtr foldAttentionMerge(ModulePtr m, DiagnosticEngine& diags) {
  (void)diags;
  Module& ref = *m;
  return MergeFolder(ref).run(std::move(m));
}

}  // namespace etc
