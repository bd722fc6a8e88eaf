// fuse-gated-matmul: a gated MLP's gate and up projections and their silu_mul,
//
//   g = matmul(x, w_gate) {transpose_b}
//   u = matmul(x, w_up) {transpose_b}
//   y = silu_mul(g, u)
//
// become one gated matmul, y = matmul(x, w_gate, w_up) {transpose_b, act = "silu_mul"}, before
// lower-ops (also where one matmul of a merged weight feeds the silu_mul two column ranges of
// its result: the gated matmul then takes the two row ranges of the weight). One task grid
// instead of three: a decode step's chain loses the silu_mul grid and its event hop, and each
// task streams both weights through one pipeline. The gated form
// rounds each product to y's dtype before silu_mul, so the result is what the three ops give.
//
// Taken only where nothing else can tell: g and u are temps of y's dtype that the silu_mul
// alone reads (whole as its two operands, or as two column ranges of one width of a merged
// result) and their matmuls alone write (whole, with no tile attributes of their own), the two
// matmuls read the same x the same way and weights of one shape, and nothing between the first
// matmul and the silu_mul writes x or the weights (or runs a task grid), and y is none of them. g
// and u then leave the module.
#include <optional>
#include <set>
#include <utility>

#include "compiler/ir/printer.h"
#include "compiler/passes/module_rebuild.h"
#include "compiler/passes/passes.h"
#include "compiler/passes/tiling.h"

namespace etc {

namespace {

using namespace ir;

class GatedMatmulFuser {
 public:
  explicit GatedMatmulFuser(Module& m) : m_(m), reads_(m.tensors.size(), 0), writes_(m.tensors.size(), 0) {
    countReferences();
  }

  // True when some triple was fused; dropped() then flags the tensors that left.
  bool run() {
    bool changed = false;
    for (Graph& g : m_.graphs)
      for (size_t s = 0; s < g.body.size(); ++s)
        if (fuseAt(g, s)) changed = true;
    for (Graph& g : m_.graphs) {
      std::vector<GraphStmt> kept;
      for (size_t s = 0; s < g.body.size(); ++s)
        if (!removed(g, s)) kept.push_back(std::move(g.body[s]));
      g.body = std::move(kept);
    }
    return changed;
  }

  const std::vector<bool>& dropped() const { return drop_; }

 private:
  // Every reference to each tensor: operands and loads in expressions read; destinations and
  // assignment results write.
  void countReferences() {
    auto loads = [&](const Expr& e) {
      if (e && hasLoad(e))
        forEachLeaf(e, [&](const ExprNode& leaf) {
          if (leaf.kind == ExprKind::Load) ++reads_[leaf.id];
        });
    };
    auto slice = [&](const Slice& s) {
      for (const SliceDim& d : s.dims) {
        loads(d.lo);
        loads(d.hi);
      }
    };
    auto call = [&](const OpCall& c) {
      for (const Slice& s : c.args) {
        ++reads_[s.target];
        slice(s);
      }
      for (const Attr& a : c.attrs)
        if (a.value.type == AttrType::Int) loads(a.value.i);
    };
    for (const Tensor& t : m_.tensors)
      for (const Expr& e : t.shape) loads(e);
    for (const Event& e : m_.events) {
      for (const Expr& x : e.shape) loads(x);
      loads(e.init);
    }
    for (const Task& t : m_.tasks) {
      for (const Expr& e : t.grid) loads(e);
      for (const TaskStmt& st : t.body) {
        if (const auto* w = std::get_if<WaitStmt>(&st)) slice(w->event);
        if (const auto* n = std::get_if<NotifyStmt>(&st)) slice(n->event);
        if (const auto* c = std::get_if<CallStmt>(&st)) {
          call(c->call);
          for (const Slice& d : c->dests) {
            ++writes_[d.target];
            slice(d);
          }
        }
      }
    }
    for (const Graph& g : m_.graphs)
      for (const GraphStmt& st : g.body)
        if (const auto* a = std::get_if<AssignStmt>(&st)) {
          call(a->call);
          for (uint32_t r : a->results) ++writes_[r];
        }
    drop_.assign(m_.tensors.size(), false);
  }

  static bool whole(const Slice& s) { return !s.has_subscript; }

  // The statement before `at` in g that assigns tensor t, if it is a plain two-operand matmul.
  std::optional<size_t> producer(const Graph& g, size_t at, uint32_t t) const {
    for (size_t s = at; s-- > 0;) {
      const auto* a = std::get_if<AssignStmt>(&g.body[s]);
      if (!a || a->results.size() != 1 || a->results[0] != t) continue;
      const OpCall& c = a->call;
      if (c.op != "matmul" || c.args.size() != 2) return std::nullopt;
      for (const char* attr : {"act", "tile_m", "tile_n", "tile_k", "split_k"})
        if (c.findAttr(attr)) return std::nullopt;
      return s;
    }
    return std::nullopt;
  }

  // Some statement in [from, to) writes one of the tensors, or runs a task grid (which may).
  bool writesAny(const Graph& g, size_t from, size_t to, const std::vector<uint32_t>& tensors) const {
    for (size_t s = from; s < to; ++s) {
      const auto* a = std::get_if<AssignStmt>(&g.body[s]);
      if (!a) return true;
      for (uint32_t r : a->results)
        for (uint32_t t : tensors)
          if (r == t) return true;
    }
    return false;
  }

  // The column range [lo, hi) that a silu_mul operand takes of a matmul result whose other
  // dimensions it covers whole (the merged-weight form); nullopt otherwise.
  std::optional<std::pair<Expr, Expr>> columns(const Slice& s) const {
    const Tensor& t = m_.tensors[s.target];
    if (!s.has_subscript || s.dims.size() != t.shape.size()) return std::nullopt;
    for (size_t d = 0; d < s.dims.size(); ++d) {
      const SliceDim& sd = s.dims[d];
      if (!sd.is_range) return std::nullopt;
      if (d + 1 < s.dims.size() && (!(asInt(sd.lo) == 0) || !equal(inlineConsts(sd.hi), inlineConsts(t.shape[d]))))
        return std::nullopt;
    }
    return std::make_pair(s.dims.back().lo, s.dims.back().hi);
  }

  // Rows [lo, hi) of the product's columns in weight w (dim 0 of [N, K] with transpose_b, else
  // dim 1 of [K, N]).
  Slice weightColumns(uint32_t w, bool tb, const Expr& lo, const Expr& hi) const {
    std::vector<tiling::DimRange> dims(2);
    for (int d = 0; d < 2; ++d) {
      dims[d].lo = intConst(0);
      dims[d].hi = m_.tensors[w].shape[d];
    }
    dims[tb ? 0 : 1].lo = lo;
    dims[tb ? 0 : 1].hi = hi;
    return tiling::makeSlice(m_, w, dims);
  }

  // Two forms: separate gate and up matmuls into temps g and u, each read whole by the
  // silu_mul; or one matmul of a merged weight into a temp that the silu_mul reads as two
  // column ranges of one width (PyTorch's gate_up_proj).
  bool fuseAt(Graph& g, size_t s) {
    auto* act = std::get_if<AssignStmt>(&g.body[s]);
    if (!act || act->call.op != "silu_mul" || act->results.size() != 1 || act->call.args.size() != 2) return false;
    const Slice &gs = act->call.args[0], &us = act->call.args[1];
    const uint32_t gt = gs.target, ut = us.target, yt = act->results[0];
    const bool merged = gt == ut;
    const int reads = merged ? 2 : 1;
    for (uint32_t t : {gt, ut})
      if (m_.tensors[t].role != Role::Temp || reads_[t] != reads || writes_[t] != 1) return false;
    const DType dt = m_.tensors[yt].dtype;
    if (m_.tensors[gt].dtype != dt || m_.tensors[ut].dtype != dt) return false;
    std::optional<size_t> pg = producer(g, s, gt), pu = producer(g, s, ut);
    if (!pg || !pu) return false;
    const OpCall& cg = std::get<AssignStmt>(g.body[*pg]).call;
    const OpCall& cu = std::get<AssignStmt>(g.body[*pu]).call;
    const bool tb = tiling::attrBool(cg, "transpose_b");
    if (tb != tiling::attrBool(cu, "transpose_b") || !whole(cg.args[1]) || !whole(cu.args[1])) return false;
    if (m_.tensors[cg.args[1].target].shape.size() != 2) return false;

    Slice b = cg.args[1], b_up = cu.args[1];
    if (merged) {
      auto gc = columns(gs), uc = columns(us);
      if (!gc || !uc) return false;
      const RangeEnv env = m_.symRanges();
      if (!equal(simplify(inlineConsts(sub(gc->second, gc->first)), env),
                 simplify(inlineConsts(sub(uc->second, uc->first)), env)))
        return false;
      b = weightColumns(cg.args[1].target, tb, gc->first, gc->second);
      b_up = weightColumns(cg.args[1].target, tb, uc->first, uc->second);
    } else {
      if (!whole(gs) || !whole(us)) return false;
      if (printSlice(m_, cg.args[0], false) != printSlice(m_, cu.args[0], false)) return false;
      const Tensor &wg = m_.tensors[cg.args[1].target], &wu = m_.tensors[cu.args[1].target];
      if (wg.dtype != wu.dtype || wg.shape.size() != wu.shape.size()) return false;
      for (size_t d = 0; d < wg.shape.size(); ++d)
        if (!equal(inlineConsts(wg.shape[d]), inlineConsts(wu.shape[d]))) return false;
    }
    const std::vector<uint32_t> inputs{cg.args[0].target, cg.args[1].target, cu.args[1].target};
    // One grid must not read what it writes (its tasks would race): y in place of x or a weight
    // is left as three ops, whose grids infer-events orders.
    for (uint32_t t : inputs)
      if (t == yt) return false;
    // The fused matmul reads x and the weights where the silu_mul was.
    if (writesAny(g, std::min(*pg, *pu) + 1, s, inputs)) return false;

    OpCall fused = cg;
    fused.args = {cg.args[0], b, b_up};
    Attr a;
    a.name = "act";
    a.value.type = AttrType::String;
    a.value.text = "silu_mul";
    a.range = act->call.range;
    fused.attrs.push_back(std::move(a));
    fused.range = act->call.range;
    for (Slice& arg : fused.args) arg.range = act->call.range;
    act->call = std::move(fused);
    removed_.insert({&g, *pg});
    removed_.insert({&g, *pu});
    drop_[gt] = drop_[ut] = true;
    return true;
  }

  bool removed(const Graph& g, size_t s) const { return removed_.count({&g, s}) != 0; }

  Module& m_;
  std::vector<int> reads_, writes_;
  std::vector<bool> drop_;
  std::set<std::pair<const Graph*, size_t>> removed_;  // the fused matmuls' statements
};

}  // namespace

ModulePtr fuseGatedMatmul(ModulePtr m, DiagnosticEngine&) {
  GatedMatmulFuser f(*m);
  if (!f.run()) return m;
  return moduleWithout(*m, {}, {}, f.dropped());
}

}  // namespace etc
