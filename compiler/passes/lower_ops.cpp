// lower-ops: every op-level assignment `y = op(x, ...)` becomes a task grid that computes one
// tile of the result per task, and the graph runs that grid instead. Tile sizes come from the
// op's attributes where written, otherwise from the shapes' upper bounds (the sym ranges), so
// that one lowering serves every sym value. Results that had no declaration become `temp`
// tensors. Split-K matmuls get a partial-sum tensor and a second grid that reduces it.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <variant>

#include "compiler/ir/op_check.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/ops.h"
#include "compiler/passes/passes.h"
#include "compiler/passes/tiling.h"

namespace etc {

namespace {

using namespace ir;
using tiling::DimRange;

// Elements one task of an element-wise op handles (a few per thread of a 256-thread CTA);
// rows of the innermost dimension are cut into pieces of at most kRowPiece.
constexpr int64_t kTaskElements = 4096;
constexpr int64_t kRowPiece = 1024;
// A matmul's split-K aims at about this many tasks at the smallest sym values, so that a
// decode-sized product (few rows, a large weight) still spreads over every SM: about one wave
// of 132 SMs. Each task has a fixed cost (its first loads' latency, the partial-sum epilogue,
// the notify), so two waves of half-size tasks were slower: Llama-3.2-1B decode on an H100,
// B = 1: 4030 -> 3510 us, B = 16: 7805 -> 6542 us going from 256 to 128 (the gate and up
// products then need no split and no reduce grid).
constexpr int64_t kMatmulTaskTarget = 128;
// grouped_matmul narrows its column tiles until its grid has about this many tasks.
constexpr int64_t kGroupedTaskTarget = 256;
constexpr int64_t kMinSplitKChunk = 256;
// The depth of etcc --unsplit-below's tiles: 16 KiB stages of a 32-row tile (session 67's
// 512-deep 16-row ones need 308 KiB of ring at 128 rows of a).
constexpr int64_t kUnsplitTileK = 256;
// topk_softmax: rows per task (the device kernel gives each of its 8 warps a row).
constexpr int64_t kTopkRows = 8;
// grouped_matmul: the widest column tile, and the narrowest it is cut to for parallelism.
constexpr int64_t kGroupedTileN = 64;
constexpr int64_t kGroupedMinTileN = 16;
// attention_decode's split-KV: about this many tasks share a step's positions (all rows and
// cache heads: one wave on the 132 SMs of an H100), and a part holds at least
// kAttentionMinChunk positions. Llama-3.2-1B on an H100, B = 1 with 512 positions (8 parts of
// 64 on each of 8 cache heads): 2452 us with 256 tasks and parts of 32 (two waves, and twice
// the parts to merge), 2315 with 128 tasks, 2291 with parts of at least 64; B = 16: 3058 ->
// 2903 us (256 -> 128 tasks); B = 64 (one part of 512 per row and cache head): 5223 -> 5024.
// 32 tasks were 2 to 4% faster at 512 positions (fewer empty parts, a merge of at most 4) but
// much slower at 4096: B = 1 2292 -> 2410 us, B = 4 2657 -> 3498 (one part of 4096 a row).
constexpr int64_t kAttentionTasks = 128;
constexpr int64_t kAttentionMinChunk = 64;
// And a row takes at most the parts of kAttentionRowTasks tasks: cdiv(kAttentionRowTasks, Hk),
// 8 with 8 cache heads (both decode samples), which changes B = 1 only: it had 16 (B = 2 has 8
// anyway), and at 512 positions 8 of the 16 were empty (parts of at least 64): tasks that still
// waited for kv_append, wrote o = 0 and were merged. H200, Llama-3.2-1B, etc-run --bench, B = 1:
// 1634.0 -> 1601.3 us at position 511 (two rounds), 1691.9 -> 1678.9 at 4095 (8 parts of 512
// instead of 16 of 256). 64 tasks at every B (8 parts at B = 1, 4 at 2, 2 at 4, one from B = 8)
// gained as much at B = 1 and 4 (position 511), but one part of 4096 positions a row at B = 8 is
// what made 32 tasks slow at 4096 (above). A count of tasks rather than of parts, so that a
// model with fewer cache heads keeps its parallelism at B = 1 (2 heads: 32 parts a row).
constexpr int64_t kAttentionRowTasks = 64;
static_assert(kAttentionRowTasks <= kAttentionTasks, "a row's cap must not exceed the rows' spread");

const char* kCoordNames[] = {"i", "j", "k", "l"};

// The name a task's coordinate gets: `base`, or with '_' appended until no module-level name (a
// tensor, sym or const, which a coordinate may not hide) has it. Otherwise a model with a tensor
// named `k` got tasks of coordinates (i, j, k) whenever a matmul split K in three dimensions, and
// its task-level module (--emit tasks, the pass dumps) did not parse again.
std::string coordName(const Module& m, std::string base) {
  while (m.findValue(base)) base += '_';
  return base;
}

// An op-level operand seen through its subscript: the operand's own (logical) dimensions and
// where they sit in the tensor.
struct OperandMap {
  uint32_t tensor = 0;
  std::vector<DimRange> dims;          // per tensor dim: a point, or the range the operand covers
  std::vector<int> logical_to_tensor;  // logical dim -> tensor dim
  std::vector<Expr> extent;            // per logical dim
};

OperandMap mapOperand(const Module& m, const Slice& s) {
  const Tensor& t = m.tensors[s.target];
  OperandMap op;
  op.tensor = s.target;
  for (size_t k = 0; k < t.shape.size(); ++k) {
    DimRange r;
    if (k < s.dims.size() && !s.dims[k].is_range) {
      r.point = true;
      r.lo = s.dims[k].lo;
    } else {
      r.lo = k < s.dims.size() ? s.dims[k].lo : intConst(0);
      r.hi = k < s.dims.size() ? s.dims[k].hi : t.shape[k];
      op.logical_to_tensor.push_back(static_cast<int>(k));
      op.extent.push_back(sub(r.hi, r.lo));
    }
    op.dims.push_back(std::move(r));
  }
  return op;
}

// A tile of the operand: for each logical dim, nullopt (all of it) or [lo, hi) relative to
// the operand's start in that dimension.
using LogicalTile = std::vector<std::optional<std::pair<Expr, Expr>>>;

Slice tileSlice(const Module& m, const OperandMap& op, const LogicalTile& tile) {
  std::vector<DimRange> dims = op.dims;
  for (size_t l = 0; l < op.logical_to_tensor.size() && l < tile.size(); ++l) {
    if (!tile[l]) continue;
    DimRange& r = dims[op.logical_to_tensor[l]];
    Expr base = r.lo;
    r.lo = add(base, tile[l]->first);
    r.hi = add(base, tile[l]->second);
  }
  return tiling::makeSlice(m, op.tensor, dims);
}

// The grid of a lowered op: one coordinate per tiled logical dimension of the iteration space.
struct TilePlan {
  std::vector<Expr> extent;  // of the iteration space
  std::vector<int64_t> tile;  // 0: not tiled (every task covers the whole dimension)
  std::vector<Expr> grid;
  std::vector<std::string> coords;
  LogicalTile ranges;  // per iteration dim
};

TilePlan planGrid(const Module& m, const std::vector<Expr>& extent, const std::vector<int64_t>& tile) {
  TilePlan p;
  p.extent = extent;
  p.tile = tile;
  for (size_t d = 0; d < extent.size(); ++d) {
    if (tile[d] <= 0 || tiling::upperBound(m, extent[d]) <= tile[d]) {
      p.tile[d] = 0;
      p.ranges.push_back(std::nullopt);
      continue;
    }
    auto id = static_cast<uint32_t>(p.coords.size());
    std::string name = coordName(m, kCoordNames[id]);
    Expr c = coordRef(id, name);
    p.coords.push_back(name);
    p.grid.push_back(cdiv(extent[d], intConst(tile[d])));
    p.ranges.push_back(std::make_pair(tiling::tileLo(c, tile[d]), tiling::tileHi(c, tile[d], extent[d])));
  }
  if (p.grid.empty()) {  // one task does everything
    p.grid.push_back(intConst(1));
    p.coords.push_back(coordName(m, "i"));
  }
  return p;
}

// Tiles for an element-wise iteration space: the innermost dimension in pieces of at most
// kRowPiece, the next one in groups that make about kTaskElements per task, the rest one by one.
std::vector<int64_t> elementwiseTiles(const Module& m, const std::vector<Expr>& extent) {
  std::vector<int64_t> tile(extent.size(), 1);
  if (extent.empty()) return tile;
  size_t last = extent.size() - 1;
  int64_t row = std::min(tiling::upperBound(m, extent[last]), kRowPiece);
  row = std::max<int64_t>(row, 1);
  tile[last] = extent.size() == 1 ? kTaskElements : kRowPiece;
  if (extent.size() >= 2) tile[last - 1] = std::max<int64_t>(1, tiling::pow2Floor(kTaskElements / row));
  return tile;
}

class Lowerer {
 public:
  Lowerer(Module& m, DiagnosticEngine& diags) : m_(m), diags_(diags) {}

  bool run() {
    for (Graph& g : m_.graphs) {
      planMatmulGroups(g);
      std::vector<GraphStmt> body;
      for (GraphStmt& st : g.body) {
        auto* a = std::get_if<AssignStmt>(&st);
        if (!a) {
          body.push_back(std::move(st));
          continue;
        }
        std::vector<uint32_t> tasks;
        graph_ = &g;
        if (!lower(*a, tasks)) return false;
        forgetKvRanges(*a);
        for (uint32_t t : tasks) body.push_back(RunStmt{t, a->range});
      }
      g.body = std::move(body);
    }
    // Op-level results become declared temps, listed before the tasks that use them.
    std::vector<Module::DeclRef> order;
    for (const Module::DeclRef& d : m_.order)
      if (d.kind != Module::DeclKind::Task && d.kind != Module::DeclKind::Graph) order.push_back(d);
    for (uint32_t t = 0; t < m_.tensors.size(); ++t)
      if (m_.tensors[t].implicit) {
        m_.tensors[t].implicit = false;
        order.push_back({Module::DeclKind::Tensor, t});
      }
    for (uint32_t t : new_temps_) order.push_back({Module::DeclKind::Tensor, t});
    for (const Module::DeclRef& d : m_.order)
      if (d.kind == Module::DeclKind::Task) order.push_back(d);
    for (uint32_t t : new_tasks_) order.push_back({Module::DeclKind::Task, t});
    for (const Module::DeclRef& d : m_.order)
      if (d.kind == Module::DeclKind::Graph) order.push_back(d);
    m_.order = std::move(order);
    return true;
  }

 private:
  // Appends a task whose body is one call, not yet in `order` (run() places it).
  uint32_t addTask(const std::string& base, const TilePlan& p, OpCall call, std::vector<Slice> dests,
                   SourceRange range) {
    Task t;
    t.name = tiling::freshTaskName(m_, base);
    t.grid = p.grid;
    t.coords = p.coords;
    t.range = range;
    call.range = range;
    for (Slice& s : call.args) s.range = range;
    for (Slice& s : dests) s.range = range;
    t.body.push_back(CallStmt{std::move(call), std::move(dests), range});
    size_t before = m_.order.size();
    uint32_t id = m_.addTask(std::move(t));
    m_.order.resize(before);  // addTask recorded it at the end; run() rebuilds the order
    new_tasks_.push_back(id);
    return id;
  }

  uint32_t addTemp(const std::string& base, DType dtype, std::vector<Expr> shape, SourceRange range) {
    Tensor t;
    t.name = tiling::freshValueName(m_, base);
    t.dtype = dtype;
    t.shape = std::move(shape);
    t.role = Role::Temp;
    t.range = range;
    size_t before = m_.order.size();
    uint32_t id = m_.addTensor(std::move(t));
    m_.order.resize(before);
    new_temps_.push_back(id);
    return id;
  }

  std::string baseName(const AssignStmt& a) const {
    return a.call.op + "_" + m_.tensors[a.results.front()].name;
  }

  std::vector<OperandMap> resultMaps(const AssignStmt& a) const {
    std::vector<OperandMap> out;
    for (uint32_t r : a.results) {
      Slice whole;
      whole.target = r;
      out.push_back(mapOperand(m_, whole));
    }
    return out;
  }

  bool lower(const AssignStmt& a, std::vector<uint32_t>& tasks) {
    const std::string& op = a.call.op;
    if (op == "copy" || op == "cast" || op == "add" || op == "mul" || op == "silu_mul" || op == "fill")
      return lowerElementwise(a, tasks);
    if (op == "reduce_sum" || op == "reduce_max") return lowerReduce(a, tasks);
    if (op == "rmsnorm" || op == "add_rmsnorm") return lowerRowwise(a, tasks);
    if (op == "matmul") return lowerMatmul(a, tasks);
    if (op == "topk_softmax") return lowerTopkSoftmax(a, tasks);
    if (op == "moe_align" || op == "kv_ranges") return lowerWhole(a, tasks);
    if (op == "grouped_matmul") return lowerGroupedMatmul(a, tasks);
    if (op == "moe_combine") return lowerMoeCombine(a, tasks);
    if (op == "embedding") return lowerEmbedding(a, tasks);
    if (op == "argmax" || op == "rope" || op == "kv_append" || op == "split_lens") return lowerPerRow(a, tasks);
    if (op == "attention_decode") return lowerAttentionDecode(a, tasks);
    if (op == "attention_merge") return lowerAttentionMerge(a, tasks);
    diags_.error(a.range.begin, fmt::format("op '{}' has no task-level lowering yet; write it at the task level "
                                            "(a task grid with explicit slices) instead",
                                            op));
    return false;
  }

  // All operands and results share the iteration space; each task takes the same tile of each.
  bool lowerElementwise(const AssignStmt& a, std::vector<uint32_t>& tasks) {
    std::vector<OperandMap> results = resultMaps(a);
    const std::vector<Expr>& space = results.front().extent;
    TilePlan p = planGrid(m_, space, elementwiseTiles(m_, space));
    OpCall call = a.call;
    for (Slice& s : call.args) s = tileSlice(m_, mapOperand(m_, s), p.ranges);
    std::vector<Slice> dests;
    for (const OperandMap& r : results) dests.push_back(tileSlice(m_, r, p.ranges));
    tasks.push_back(addTask(baseName(a), p, std::move(call), std::move(dests), a.range));
    return true;
  }

  // The reduced axis stays whole; the result's dimensions are tiled like an element-wise op.
  bool lowerReduce(const AssignStmt& a, std::vector<uint32_t>& tasks) {
    OperandMap x = mapOperand(m_, a.call.args[0]);
    auto rank = static_cast<int64_t>(x.extent.size());
    int64_t axis = tiling::attrInt(a.call, "axis");
    if (axis < 0) axis += rank;
    std::vector<OperandMap> results = resultMaps(a);
    std::vector<int64_t> tile = elementwiseTiles(m_, results.front().extent);
    if (axis == rank - 1 && !tile.empty()) {  // whole rows: fewer of them per task
      int64_t row = std::max<int64_t>(1, tiling::upperBound(m_, x.extent[axis]));
      tile.back() = std::max<int64_t>(1, tiling::pow2Floor(std::max<int64_t>(1, kTaskElements / row)));
    }
    TilePlan p = planGrid(m_, results.front().extent, tile);
    LogicalTile xt;
    for (int64_t d = 0, r = 0; d < rank; ++d) xt.push_back(d == axis ? std::nullopt : p.ranges[r++]);
    OpCall call = a.call;
    call.args[0] = tileSlice(m_, x, xt);
    std::vector<Slice> dests{tileSlice(m_, results.front(), p.ranges)};
    tasks.push_back(addTask(baseName(a), p, std::move(call), std::move(dests), a.range));
    return true;
  }

  // rmsnorm-like: the last dimension is whole in every task, one row per task; the weight
  // (the last operand) is read whole.
  bool lowerRowwise(const AssignStmt& a, std::vector<uint32_t>& tasks) {
    std::vector<OperandMap> results = resultMaps(a);
    std::vector<Expr> space = results.front().extent;
    std::vector<int64_t> tile(space.size(), 1);
    if (!tile.empty()) tile.back() = 0;
    // etcc --norm-rows: several rows a task (not the per-head norms, which merge into a grid
    // of one row a task).
    if (space.size() == 2 && graph_->norm_rows > 1 && !a.call.findAttr("head_dim")) tile.front() = graph_->norm_rows;
    TilePlan p = planGrid(m_, space, tile);
    OpCall call = a.call;
    for (size_t i = 0; i + 1 < call.args.size(); ++i) call.args[i] = tileSlice(m_, mapOperand(m_, call.args[i]), p.ranges);
    std::vector<Slice> dests;
    for (const OperandMap& r : results) dests.push_back(tileSlice(m_, r, p.ranges));
    tasks.push_back(addTask(baseName(a), p, std::move(call), std::move(dests), a.range));
    return true;
  }

  // y [M, N] = a [M, K] b (b [K, N], or [N, K] with transpose_b; a vector a has M = 1).
  struct MatmulDims {
    OperandMap am, bm;
    bool tb, vec;
    Expr M, K, N;
  };
  MatmulDims matmulDims(const AssignStmt& a) const {
    MatmulDims d{mapOperand(m_, a.call.args[0]), mapOperand(m_, a.call.args[1]), tiling::attrBool(a.call, "transpose_b"),
                 false, intConst(1), intConst(1), intConst(1)};
    d.vec = d.am.extent.size() == 1;
    if (!d.vec) d.M = d.am.extent[0];
    d.K = d.am.extent.back();
    d.N = d.tb ? d.bm.extent[0] : d.bm.extent[1];
    return d;
  }
  // A gated matmul's columns per task (each task streams twice as many weight rows): 64, as
  // the 128-column gate and up tiles of planMatmulGroup where those make a wave of tasks at the
  // smallest syms, else narrower, down to 16, until about half a wave (a gated product cannot
  // split K). Llama-3.2-1B's 8192 columns: 128 tasks of 64; Qwen3-0.6B's 3072: 96 of 32, as many
  // tasks as its gate and up grids had.
  int64_t gatedTileN(const Expr& M, const Expr& N) const {
    const int64_t m_tiles = std::max<int64_t>(1, tiling::lowerBound(m_, cdiv(M, intConst(defaultTileM(M)))));
    auto tasks = [&](int64_t tn) { return m_tiles * std::max<int64_t>(1, tiling::lowerBound(m_, cdiv(N, intConst(tn)))); };
    if (tasks(64) >= kMatmulTaskTarget) return 64;
    int64_t tn = 32;
    while (tn > 16 && tasks(tn) < kMatmulTaskTarget / 2) tn /= 2;
    return tn;
  }

  // tile_m when the call does not set it: M's upper bound, between 16 and 128.
  int64_t defaultTileM(const Expr& M) const {
    return std::clamp<int64_t>(tiling::pow2Ceil(tiling::upperBound(m_, M)), 16, 128);
  }

  bool lowerMatmul(const AssignStmt& a, std::vector<uint32_t>& tasks) {
    MatmulDims dims = matmulDims(a);
    OperandMap &am = dims.am, &bm = dims.bm;
    OperandMap ym = resultMaps(a).front();
    const bool tb = dims.tb, vec = dims.vec;
    const Expr &M = dims.M, &K = dims.K, &N = dims.N;
    int64_t tm = tiling::attrInt(a.call, "tile_m"), tn = tiling::attrInt(a.call, "tile_n");
    int64_t tk = tiling::attrInt(a.call, "tile_k"), sk = tiling::attrInt(a.call, "split_k");
    if (auto it = mm_tiles_.find(&a); it != mm_tiles_.end()) {
      tn = it->second.tn;
      tk = it->second.tk;
      sk = it->second.sk;
    }
    const bool gated = a.call.args.size() == 3;  // act = "silu_mul": no split K (silu_mul needs whole sums)
    if (tm == 0) tm = defaultTileM(M);
    if (tn == 0) tn = gated ? gatedTileN(M, N) : 64;
    // 128 rather than 64: each stage then reads 256 contiguous bytes of every weight row
    // (H100, mlp B = 1: 102 -> 92 us for the megakernel; 256 was slower at small B). A gated
    // tile streams 2 * tn weight rows, so a 64-column one takes 32 KiB stages (3 in matmul.cuh's
    // wide ring) where 64 deep took 4 of 16 KiB: H200, Llama-3.2-1B decode, etc-run --bench 20,
    // two rounds, B = 1 1512 -> 1464 us (-3.2%), B = 16 -1.9%, B = 128 -0.3% (docs/benchmarks.md,
    // session 47; session 31's -3.7% the other way ran with the weight prefetch before the waits).
    if (tk == 0) tk = 128;
    if (gated) sk = 1;
    int64_t k_hi = tiling::upperBound(m_, K);
    if (sk == 0) {
      int64_t m_tiles = std::max<int64_t>(1, tiling::lowerBound(m_, cdiv(M, intConst(tm))));
      int64_t n_tiles = std::max<int64_t>(1, tiling::lowerBound(m_, cdiv(N, intConst(tn))));
      sk = std::max<int64_t>(1, tiling::pow2Floor(std::max<int64_t>(1, kMatmulTaskTarget / (m_tiles * n_tiles))));
      sk = std::min(sk, std::max<int64_t>(1, k_hi / kMinSplitKChunk));
    }
    // Each part covers a whole number of tile_k steps; with a constant K, no part is empty.
    // Returns the chunk of K a part takes (0: no split), sk_ set to the parts that makes.
    auto kChunk = [&](int64_t& sk_) -> int64_t {
      if (sk_ <= 1) return 0;
      const auto kc = asInt(inlineConsts(K));
      if (!kc) {
        sk_ = 1;  // a symbolic K is not split: parts could be empty
        return 0;
      }
      int64_t c = (*kc + sk_ - 1) / sk_;
      c = (c + tk - 1) / tk * tk;
      sk_ = (*kc + c - 1) / c;
      return c;
    };
    const int64_t chunk = kChunk(sk);
    // The plan below a cut of B (MmTiles::range_*), where there is one and it still splits K.
    const MmTiles* range = nullptr;
    int64_t range_sk = 0, range_chunk = 0;
    if (auto it = mm_tiles_.find(&a); it != mm_tiles_.end() && it->second.range_sym >= 0 && sk > 1) {
      range_sk = it->second.range_sk;
      range_chunk = kChunk(range_sk);
      if (range_sk > 1 || it->second.unsplit()) range = &it->second;
    }

    // The grid of the products with tn_ columns and sk_ parts of chunk_ (its N tiles times `on`,
    // 0 or 1 by the syms, where it runs in a range of them), writing y, or part[s] of `part`.
    auto products = [&](int64_t tn_, int64_t tk_, int64_t sk_, int64_t chunk_, const Expr* on, const std::string& name,
                        std::optional<uint32_t> part) {
      // Iteration space of the product tasks: [M tiles], N tiles, [K parts].
      std::vector<Expr> space;
      std::vector<int64_t> tile;
      if (!vec) {
        space.push_back(M);
        tile.push_back(tm);
      }
      space.push_back(N);
      tile.push_back(tn_);
      TilePlan p = planGrid(m_, space, tile);
      if (on) p.grid.back() = mul(p.grid.back(), *on);
      std::optional<std::pair<Expr, Expr>> mr = vec ? std::nullopt : p.ranges[0];
      std::optional<std::pair<Expr, Expr>> nr = p.ranges.back();
      std::optional<std::pair<Expr, Expr>> kr;
      Expr part_coord;
      if (sk_ > 1) {
        auto id = static_cast<uint32_t>(p.coords.size());
        std::string cname = coordName(m_, kCoordNames[id]);
        part_coord = coordRef(id, cname);
        p.coords.push_back(cname);
        p.grid.push_back(intConst(sk_));
        kr = std::make_pair(tiling::tileLo(part_coord, chunk_), tiling::tileHi(part_coord, chunk_, K));
      }
      OpCall call = a.call;
      call.attrs.clear();
      if (tb) call.attrs.push_back(tiling::boolAttr("transpose_b"));
      if (gated) call.attrs.push_back(*a.call.findAttr("act"));
      call.attrs.push_back(tiling::intAttr("tile_k", tk_));
      LogicalTile at = vec ? LogicalTile{kr} : LogicalTile{mr, kr};
      LogicalTile bt = tb ? LogicalTile{nr, kr} : LogicalTile{kr, nr};
      call.args[0] = tileSlice(m_, am, at);
      call.args[1] = tileSlice(m_, bm, bt);
      if (gated) call.args[2] = tileSlice(m_, mapOperand(m_, a.call.args[2]), bt);
      LogicalTile yt = vec ? LogicalTile{nr} : LogicalTile{mr, nr};
      if (!part) return addTask(name, p, std::move(call), {tileSlice(m_, ym, yt)}, a.range);
      Slice whole_part;
      whole_part.target = *part;
      OperandMap pm = mapOperand(m_, whole_part);
      pm.dims[0].point = true;
      pm.dims[0].lo = sk_ > 1 ? part_coord : intConst(0);  // all of K: the sum's one part
      pm.logical_to_tensor.erase(pm.logical_to_tensor.begin());
      pm.extent.erase(pm.extent.begin());
      return addTask(name, p, std::move(call), {tileSlice(m_, pm, yt)}, a.range);
    };
    if (sk == 1) {
      tasks.push_back(products(tn, tk, 1, 0, nullptr, baseName(a), std::nullopt));
      return true;
    }
    // Split K: part s of the sum goes to partial[s], then a second grid adds the parts up. With a
    // plan below a cut of B, each plan's grid runs on its side of the cut (the other's extent is
    // 0 there, and the specialize step leaves it out of that range's megakernel), and the sum
    // reads the parts of the one that ran.
    std::vector<Expr> pshape{intConst(std::max(sk, range_sk))};
    for (const Expr& e : ym.extent) pshape.push_back(e);
    uint32_t part = addTemp(m_.tensors[ym.tensor].name + "_part", DType::F32, pshape, a.range);
    Expr parts = intConst(sk);
    if (range) {
      const Expr b = symRef(static_cast<uint32_t>(range->range_sym), m_.syms[range->range_sym].name);
      const Expr below = min(max(sub(intConst(range->range_cut), b), intConst(0)), intConst(1));
      const Expr from = min(max(sub(b, intConst(range->range_cut - 1)), intConst(0)), intConst(1));
      tasks.push_back(products(range->range_tn, range->unsplit() ? kUnsplitTileK : tk, range_sk, range_chunk, &below,
                               baseName(a) + (range->unsplit() ? "_unsplit" : "_wide"), part));
      tasks.push_back(products(tn, tk, sk, chunk, &from, baseName(a), part));
      // The fewer parts plus the difference on the side with more: an expression whose bounds
      // are the two counts (a sum of the two products has bounds 0 and their sum, and the
      // fused row forms that take the sum need at least one part and a known most).
      parts = range_sk >= sk ? add(intConst(sk), mul(intConst(range_sk - sk), below))
                             : add(intConst(range_sk), mul(intConst(sk - range_sk), from));
    } else {
      tasks.push_back(products(tn, tk, sk, chunk, nullptr, baseName(a), part));
    }

    Slice whole_part;
    whole_part.target = part;
    TilePlan rp = planGrid(m_, ym.extent, elementwiseTiles(m_, ym.extent));
    LogicalTile pt{range ? std::make_optional(std::make_pair(intConst(0), parts)) : std::nullopt};
    for (const auto& r : rp.ranges) pt.push_back(r);
    OpCall red;
    red.op = "reduce_sum";
    red.args.push_back(tileSlice(m_, mapOperand(m_, whole_part), pt));
    red.attrs.push_back(tiling::intAttr("axis", 0));
    tasks.push_back(
        addTask("reduce_" + m_.tensors[ym.tensor].name, rp, std::move(red), {tileSlice(m_, ym, rp.ranges)}, a.range));
    return true;
  }

  // Tiles of the matmuls that read one input one after another (a layer's q, k and v
  // projections; its gate and up projections), planned together: their grids run at the same
  // time, so they share one task target. Where their 64-column tiles already make two waves of
  // it, the tiles are 128 columns wide (and 64 deep, which keeps four ring stages); otherwise
  // each one's K is split so that every task streams about the same share of the group's
  // weights. Matmuls with tile attributes of their own keep them. H100, Llama-3.2-1B decode
  // megakernel: q/k/v in 128 tasks instead of 256 (split 2/4/4; this rule makes it 96, split
  // 2/2/2), gate/up in 128 instead of 256 and the LM head in 1002 instead of 2004: B = 1 2769
  // -> 2573 us, B = 16 4823 -> 4325 us, B = 64 12080 -> 10758 us.
  void planMatmulGroups(const Graph& g) {
    mm_tiles_.clear();
    std::vector<const AssignStmt*> run;
    auto flush = [&] {
      if (!run.empty()) planMatmulGroup(g, run);
      run.clear();
    };
    for (const GraphStmt& st : g.body) {
      const auto* a = std::get_if<AssignStmt>(&st);
      const bool planned = a && a->call.op == "matmul" && a->call.args.size() == 2 &&
                           !a->call.findAttr("tile_m") && !a->call.findAttr("tile_n") && !a->call.findAttr("tile_k") &&
                           !a->call.findAttr("split_k");
      if (!planned || (!run.empty() && ir::printSlice(m_, run.front()->call.args[0], false) !=
                                            ir::printSlice(m_, a->call.args[0], false)))
        flush();
      if (planned) run.push_back(a);
    }
    flush();
  }

  void planMatmulGroup(const Graph& g, const std::vector<const AssignStmt*>& group) {
    struct Shape {
      int64_t tiles64, k_hi, n_hi;  // tiles64: M tiles x 64-column tiles at the smallest syms
    };
    std::vector<Shape> shapes;
    int64_t tiles64 = 0, elems = 0;
    for (const AssignStmt* a : group) {
      const MatmulDims d = matmulDims(*a);
      const int64_t m_tiles = std::max<int64_t>(1, tiling::lowerBound(m_, cdiv(d.M, intConst(defaultTileM(d.M)))));
      Shape s{m_tiles * std::max<int64_t>(1, tiling::lowerBound(m_, cdiv(d.N, intConst(64)))),
              tiling::upperBound(m_, d.K), tiling::upperBound(m_, d.N)};
      tiles64 += s.tiles64;
      elems += s.n_hi * s.k_hi;
      shapes.push_back(s);
    }
    for (size_t i = 0; i < group.size(); ++i) {
      // Four waves or more of 128-column tiles (an LM head): the tasks stream back to back, most
      // of them after no wait, so they take stages of 32 KiB of weights, 128 deep, which stream
      // faster (matmul.cuh's wide ring). H200, Llama-3.2-1B decode, etc-run --bench 20, against
      // 128 x 64 tiles: B = 1 1656.1 -> 1646.0 us, B = 16 1775.8 -> 1766.7 (docs/benchmarks.md,
      // session 31). The down projection's tiles keep 16 KiB stages: 256 deep (4 stages of 32
      // KiB in a 184 KiB ring) it made B = 1 5.7% slower (session 47, against the gated tiles'
      // 32 KiB stages that lowerMatmul now gives them).
      if (tiles64 >= 8 * kMatmulTaskTarget) {
        mm_tiles_[group[i]] = {128, 128, 1};
        continue;
      }
      if (tiles64 >= 2 * kMatmulTaskTarget) {
        mm_tiles_[group[i]] = {128, 64, 1};
        continue;
      }
      // K parts so that a task holds about elems / target of the group's weights.
      const Shape& s = shapes[i];
      const double share = static_cast<double>(s.n_hi) * static_cast<double>(s.k_hi) * kMatmulTaskTarget /
                           (static_cast<double>(elems) * s.tiles64);
      int64_t sk = tiling::pow2Floor(std::max<int64_t>(1, static_cast<int64_t>(share)));
      sk = std::min(sk, std::max<int64_t>(1, s.k_hi / kMinSplitKChunk));
      mm_tiles_[group[i]] = {64, 128, sk};
      // etcc --matmul-plan-by-range: below the graph's first specialize cut, a lone matmul (a
      // layer's o or down projection) takes 128-column tiles in twice the parts: as many tasks,
      // each streaming as many weight bytes in wider stages. With those tiles at every B the
      // Llama-3.2-1B decode step was 2.6% faster at B = 1, level at 16 and 5.7% slower at 128
      // (H200, docs/benchmarks.md, session 59); the range's own grid keeps the large B as is.
      if (g.matmul_plan_by_range && g.specialize_sym >= 0 && !g.specialize_cuts.empty() && group.size() == 1 &&
          sk >= 2 && s.k_hi / (2 * sk) >= kMinSplitKChunk && s.n_hi > 128) {
        MmTiles& t = mm_tiles_[group[i]];
        t.range_sym = g.specialize_sym;
        t.range_cut = g.specialize_cuts.front();
        t.range_tn = 128;
        t.range_sk = 2 * sk;
      }
    }
    if (g.unsplit_below > 0) planUnsplit(g, group);
  }

  // etcc --unsplit-below N: below N rows of a (a batch sym), each split-K matmul of the group
  // takes tiles of tn weight rows over all of K, tn the group's columns over kMatmulTaskTarget
  // (a multiple of 8: Llama-3.2-1B's q/k/v 24, its o and down 16), 256 deep, in place of any
  // other plan of that range. With no K parts there, the norm that reads a projection gathers
  // one part of a row and fold-norms can move it into the next matmuls cheaply, and the row
  // grid before attention sums nothing (docs/benchmarks.md, session 68).
  void planUnsplit(const Graph& g, const std::vector<const AssignStmt*>& group) {
    std::vector<MatmulDims> dims;
    int64_t columns = 0;
    for (const AssignStmt* a : group) {
      dims.push_back(matmulDims(*a));
      columns += tiling::upperBound(m_, dims.back().N);
    }
    const int64_t tn = std::max<int64_t>(8, columns / kMatmulTaskTarget / 8 * 8);
    for (size_t i = 0; i < group.size(); ++i) {
      MmTiles& t = mm_tiles_[group[i]];
      const Expr m = inlineConsts(dims[i].M);
      if (t.sk < 2 || dims[i].vec || m->kind != ExprKind::Sym || g.unsplit_below <= m_.syms[m->id].lo) continue;
      t.range_sym = static_cast<int32_t>(m->id);
      t.range_cut = g.unsplit_below;
      t.range_tn = tn;
      t.range_sk = 1;
    }
  }

  // ---- decode ops -----------------------------------------------------------------------------

  // y [..., H] tiled like an element-wise op; each task reads the ids of its rows and the
  // table's columns of its tile (all rows: which ones it needs depends on the data).
  bool lowerEmbedding(const AssignStmt& a, std::vector<uint32_t>& tasks) {
    OperandMap ym = resultMaps(a).front();
    TilePlan p = planGrid(m_, ym.extent, elementwiseTiles(m_, ym.extent));
    LogicalTile it(p.ranges.begin(), p.ranges.end() - 1);
    OpCall call = a.call;
    call.args[0] = tileSlice(m_, mapOperand(m_, call.args[0]), it);
    call.args[1] = tileSlice(m_, mapOperand(m_, call.args[1]), {std::nullopt, p.ranges.back()});
    tasks.push_back(addTask(baseName(a), p, std::move(call), {tileSlice(m_, ym, p.ranges)}, a.range));
    return true;
  }

  // One task per row (a point in every leading dimension of the first operand): argmax, rope,
  // kv_append and split_lens. Operands and results are indexed by the row in their leading
  // dimensions and whole in the rest (a kv_append destination: the row's whole cache). A paged
  // kv_append's destinations are the whole page pools: which page a row writes depends on its
  // page table, so every reader of a pool waits for every row.
  bool lowerPerRow(const AssignStmt& a, std::vector<uint32_t>& tasks) {
    const OpCall& c = a.call;
    const bool rows_of_lens = c.op == "split_lens";  // its operand is all leading dimensions
    const bool whole_dests = c.op == "kv_append" && c.args.size() == 4;
    OperandMap x = mapOperand(m_, c.args[0]);
    const size_t lead = rows_of_lens ? x.extent.size() : x.extent.size() - 1;
    TilePlan p;
    std::vector<Expr> idx;
    for (size_t d = 0; d < lead; ++d) {
      auto id = static_cast<uint32_t>(d);
      p.grid.push_back(x.extent[d]);
      p.coords.push_back(coordName(m_, kCoordNames[id]));
      idx.push_back(coordRef(id, p.coords.back()));
    }
    if (p.grid.empty()) {
      p.grid.push_back(intConst(1));
      p.coords.push_back(coordName(m_, "i"));
    }
    OpCall call = c;
    for (Slice& s : call.args) s = pointSlice(mapOperand(m_, s), idx);
    std::vector<Slice> dests;
    for (const OperandMap& r : resultMaps(a)) dests.push_back(whole_dests ? slice(r, {}) : pointSlice(r, idx));
    tasks.push_back(addTask(baseName(a), p, std::move(call), std::move(dests), a.range));
    return true;
  }

  // Split-KV decode attention over q [B, Hq*D] and caches [B, S, Hk*D]: kv_ranges gives each
  // part its first position and count (kept for later layers that use the same lens), the grid
  // [B, Hk, parts] runs one task per (row, cache head, part) on the part's positions with the
  // cache head's group of query heads, writing f32 partials, and a grid [B, Hk] merges them.
  //
  // The work follows the batch and the sequence lengths: the grid has parts(B) =
  // min(splits, cdiv(spread, B)) parts per row, so that about kAttentionTasks tasks share the
  // positions whatever B is, and each row's length is cut into parts(B) equal pieces of at least
  // kAttentionMinChunk positions (kv_ranges computes the same parts(B) from its row count). A
  // part past a row's length has count 0: its task only writes o = 0, lse = -inf. With one
  // part, the tasks write the results directly: a grid [B, Hk] without ranges or merge, which
  // is all there is when the syms never give more than one part, and which runs, with the
  // split grid and the merge empty, at the syms that give one part (both grids are emitted,
  // their row counts B * m and B - B * m with m = min(1, max(0, parts(B) - 1)): a length
  // sym that may be 0 makes parts(B) 0 there).
  //
  // Paged caches (a page table, operand 4) keep the same grids: the tasks read their cache
  // head's columns of the whole page pools and the row's whole page table, from the part's
  // first position on.
  bool lowerAttentionDecode(const AssignStmt& a, std::vector<uint32_t>& tasks) {
    const OpCall& c = a.call;
    OperandMap qm = mapOperand(m_, c.args[0]), km = mapOperand(m_, c.args[1]), vm = mapOperand(m_, c.args[2]);
    OperandMap lm = mapOperand(m_, c.args[3]);
    const bool paged = c.args.size() == 5, ranged = tiling::attrBool(c, "ranged");
    std::optional<OperandMap> ptm;
    if (paged) ptm = mapOperand(m_, c.args[4]);
    std::vector<OperandMap> results = resultMaps(a);
    const int64_t d = tiling::attrInt(c, "head_dim");
    auto q_width = asInt(inlineConsts(qm.extent.back())), c_width = asInt(inlineConsts(km.extent.back()));
    if (qm.extent.size() != 2 || !q_width || !c_width) {
      diags_.error(a.range.begin, "attention_decode at the op level needs q of rank 2 ([rows, Hq * head_dim]) with "
                                  "constant head counts; write other forms at the task level");
      return false;
    }
    std::optional<int64_t> page = paged ? asInt(inlineConsts(km.extent[1])) : std::nullopt;
    if (paged && (!page || *page <= 0)) {
      diags_.error(a.range.begin, "attention_decode over page pools at the op level needs a constant, positive page "
                                  "size (dimension 1 of the pools); write other forms at the task level");
      return false;
    }
    const int64_t hq = *q_width / d, hk = *c_width / d, group = hq / hk;
    const Expr& rows = qm.extent[0];
    // The positions a row can hold: its cache length, or its page table's pages.
    const Expr len = paged ? mul(ptm->extent[1], intConst(*page)) : km.extent[1];
    const int64_t len_hi = std::max<int64_t>(1, tiling::upperBound(m_, len));
    const int64_t rows_hi = std::max<int64_t>(1, tiling::upperBound(m_, rows));
    // Parts per row: kv_splits where written (at every B), else kAttentionRowTasks' share (never
    // more than the kAttentionTasks' share that all rows spread over), as far as the positions
    // fill parts of kAttentionMinChunk. Ranged calls are parts already.
    const int64_t spread = (kAttentionTasks + hk - 1) / hk;
    int64_t splits = tiling::attrInt(c, "kv_splits");
    const bool fixed = splits > 0;
    if (!fixed)
      splits = std::min((kAttentionRowTasks + hk - 1) / hk, (len_hi + kAttentionMinChunk - 1) / kAttentionMinChunk);
    if (ranged) splits = 1;

    const std::string bn = coordName(m_, "b"), gn = coordName(m_, "g"), pn = coordName(m_, "p");
    Expr b = coordRef(0, bn), g = coordRef(1, gn), part = coordRef(2, pn);
    // Cache heads a task of the one-part grid takes (the split grid's tasks take one): the
    // heads_per_task written (the verifier checked that it divides hk), else by the rows
    // (attentionHeadPlans): one grid per count, each empty where its count does not apply.
    const std::vector<HeadsPlan> head_plans = attentionHeadPlans(rows, hk, tiling::attrInt(c, "heads_per_task"));
    // Task g's columns of a row of heads of `width` a cache head, for tasks of n cache heads.
    auto heads = [&](int64_t width, int64_t n = 1) {
      const int64_t w = width * n;
      return std::make_pair(mul(g, intConst(w)), add(mul(g, intConst(w)), intConst(w)));
    };
    TilePlan p;
    p.grid = {rows, intConst(hk)};
    p.coords = {bn, gn};
    OpCall call = c;
    call.attrs.clear();
    call.attrs.push_back(tiling::intAttr("head_dim", d));
    if (const Attr* sc = c.findAttr("scale")) call.attrs.push_back(*sc);
    // The operands of the tasks of row r, of n cache heads each.
    auto row_args = [&](OpCall& op, const Expr& r, int64_t n = 1) {
      op.args[0] = slice(qm, {r, heads(group * d, n)});
      op.args[1] = paged ? slice(km, {All{}, All{}, heads(d, n)}) : slice(km, {r, All{}, heads(d, n)});
      op.args[2] = paged ? slice(vm, {All{}, All{}, heads(d, n)}) : slice(vm, {r, All{}, heads(d, n)});
      if (paged) op.args[4] = slice(*ptm, {r, All{}});
    };
    // The grids of one task per (row, n cache heads) for rows [first_row, first_row + grid_rows),
    // writing the results directly: all the parts that there are when one part holds a row. One
    // grid per plan, its rows zero where its head count does not apply; a grid of several heads
    // a task is named for its count.
    auto add_whole = [&, base_plan = p, base_call = call](const Expr& grid_rows, const Expr& first_row,
                                                         const std::string& name,
                                                         const std::vector<HeadsPlan>& plans) {
      const Expr r = simplify(add(b, first_row), m_.symRanges());
      for (const HeadsPlan& hp : plans) {
        TilePlan wp = base_plan;
        wp.grid[0] = simplify(mul(grid_rows, hp.on), m_.symRanges());
        wp.grid[1] = intConst(hk / hp.n);
        OpCall whole = base_call;
        row_args(whole, r, hp.n);
        if (ranged) whole.attrs.push_back(tiling::boolAttr("ranged"));
        whole.args[3] = ranged ? slice(lm, {r, All{}}) : pointSlice(lm, {r});
        std::vector<Slice> dests{slice(results[0], {r, heads(group * d, hp.n)})};
        if (results.size() > 1) dests.push_back(slice(results[1], {r, heads(group, hp.n)}));
        const std::string grid_name = plans.size() > 1 && hp.n > 1 ? fmt::format("{}_heads{}", name, hp.n) : name;
        tasks.push_back(addTask(grid_name, wp, std::move(whole), std::move(dests), a.range));
      }
    };
    if (splits == 1) {
      add_whole(rows, intConst(0), baseName(a), head_plans);
      return true;
    }
    // kv_splits where written: every row uses all of them at every B.
    const int64_t spread_rows = fixed ? splits * rows_hi : spread;
    // The grid's parts: kv_ranges' parts per row for this many rows, and no more than a full
    // row's positions fill (parts of min_chunk): the parts after those are always empty.
    const Expr parts = simplify(min(min(intConst(splits), cdiv(intConst(spread_rows), max(rows, intConst(1)))),
                                    cdiv(len, intConst(kAttentionMinChunk))),
                                m_.symRanges());
    // Where the syms leave one part a row (a decode step from B = 16 on), the split grid and
    // its merge are empty and the whole grid runs instead: a merge of one part only copies it,
    // and at B = 128 its 1024 tasks were 44 us of a 400 us layer (H100, Llama-3.2-1B).
    const int64_t parts_lo = tiling::lowerBound(m_, parts), parts_hi = tiling::upperBound(m_, parts);
    if (parts_hi <= 1) {
      add_whole(rows, intConst(0), baseName(a), head_plans);
      return true;
    }
    const Expr split_rows =
        parts_lo <= 1
            ? simplify(mul(rows, min(intConst(1), max(intConst(0), sub(parts, intConst(1))))), m_.symRanges())
            : rows;
    // The choice by the data (short_kv, 1024 unless written), where a row can hold more
    // positions than a short one: where a launch's rows all hold at most short_kv positions,
    // the rows that the syms give parts take one part a row instead, with no merge. The split
    // grid and the merge take split_rows * LONG rows and a one-part grid (`_short`) from row 0
    // split_rows * SHORT, LONG = [lmax > short_kv] and SHORT = [lmax <= short_kv] from the
    // longest row (lmax, which a task beside kv_ranges writes). infer-events sees that the merge
    // and that grid, which write the same rows of o, never both run (neverBothRun), so neither
    // waits for the other. The merge's hop cost more than the parts gained at short lengths:
    // Llama-3.2-1B on an H100, every row one part against the parts and merge
    // (docs/benchmarks.md, session 75): B = 1 -3.2% at 512 positions, -1.3% at 1024, +2.3% at
    // 2048, +9.7% at 4096; B = 8 -5.2%, -4.2%, -1.0%, +4.0%.
    const int64_t short_kv = tiling::attrInt(c, "short_kv");
    const bool by_length = graph_->attention_by_length && !fixed && !ranged && short_kv > 0 && len_hi > short_kv;
    // The parts' ranges: one kv_ranges per (lens slice, splits, spread) until lens is written again.
    Slice lens_slice = c.args[3];
    std::string key = fmt::format("{}:{}:{}", lens_slice.target, splits, spread_rows);
    for (const SliceDim& sd : lens_slice.dims)
      key += fmt::format(":{}{}{}", sd.is_range ? "r" : "p", toString(sd.lo), sd.is_range ? "," + toString(sd.hi) : "");
    auto it = kv_ranges_.find(key);
    if (it == kv_ranges_.end()) {
      std::vector<Expr> shape = lm.extent;
      shape.push_back(intConst(splits));
      shape.push_back(intConst(2));
      const uint32_t ranges = addTemp(m_.tensors[lens_slice.target].name + "_ranges", DType::I32, shape, a.range);
      AssignStmt kr;
      kr.call.op = "kv_ranges";
      kr.call.args = {lens_slice};
      kr.call.attrs = {tiling::intAttr("splits", splits), tiling::intAttr("min_chunk", kAttentionMinChunk),
                       tiling::intAttr("spread", spread_rows)};
      kr.results = {ranges};
      kr.range = a.range;
      if (!lowerWhole(kr, tasks)) return false;
      it = kv_ranges_.emplace(key, KvRanges{ranges, std::nullopt}).first;
      kv_ranges_readers_[lens_slice.target].push_back(key);
    }
    const uint32_t ranges = it->second.ranges;
    if (by_length && !it->second.longest) {
      // The longest row, in a task of its own, which merge-tasks joins with kv_ranges'.
      const uint32_t longest = addTemp(m_.tensors[lens_slice.target].name + "_max", DType::I32, {intConst(1)}, a.range);
      OpCall mx;
      mx.op = "reduce_max";
      mx.args = {lens_slice};
      mx.attrs = {tiling::intAttr("axis", 0)};
      tasks.push_back(addTask("reduce_max_" + m_.tensors[longest].name, planGrid(m_, {}, {}), std::move(mx),
                              {pointSlice(wholeMap(longest), {intConst(0)})}, a.range));
      it->second.longest = longest;
    }
    const std::string oname = m_.tensors[results[0].tensor].name;  // a copy: addTemp grows the tensors
    uint32_t o_parts = addTemp(oname + "_parts", DType::F32, {intConst(splits), rows, intConst(hq * d)}, a.range);
    uint32_t lse_parts = addTemp(oname + "_lse_parts", DType::F32, {intConst(splits), rows, intConst(hq)}, a.range);
    OperandMap om = wholeMap(o_parts), lsm = wholeMap(lse_parts), rm = wholeMap(ranges);
    // 1 where the longest row has more than short_kv positions, and its complement.
    Expr long_split = split_rows, short_rows;
    if (by_length) {
      const uint32_t longest = *it->second.longest;
      const Expr lmax = bounded(load(longest, m_.tensors[longest].name, {intConst(0)}), intConst(len_hi));
      long_split = simplify(mul(split_rows, min(intConst(1), max(intConst(0), sub(lmax, intConst(short_kv))))),
                            m_.symRanges());
      short_rows = min(intConst(1), max(intConst(0), sub(intConst(short_kv + 1), lmax)));
      // Before the split grid and its merge, whose tasks a short launch only passes through:
      // a static megakernel deals tasks to CTAs in run order, so the one-part tasks take the
      // first CTAs rather than queue behind those. Rows with parts are fewer than
      // kAttentionTasks / hk, where attentionHeadPlans gives one head a task (or the count
      // written). H100, Llama-3.2-1B at B = 8, 512 positions: 1511.3 us with the grid after
      // the merge against 1444.8 for one part a row alone (docs/benchmarks.md, session 76).
      add_whole(simplify(mul(split_rows, short_rows), m_.symRanges()), intConst(0), baseName(a) + "_short",
                {{std::max<int64_t>(1, tiling::attrInt(c, "heads_per_task")), intConst(1)}});
    }
    row_args(call, b);
    p.grid[0] = long_split;
    p.grid.push_back(parts);
    p.coords.push_back(pn);
    call.attrs.push_back(tiling::boolAttr("ranged"));
    call.args[3] = slice(rm, {b, part, All{}});
    tasks.push_back(addTask(baseName(a), p,
                            std::move(call), {slice(om, {part, b, heads(group * d)}), slice(lsm, {part, b, heads(group)})},
                            a.range));

    TilePlan mp;
    mp.grid = {long_split, intConst(hk)};
    mp.coords = {bn, gn};
    OpCall merge;
    merge.op = "attention_merge";
    std::pair<Expr, Expr> written{intConst(0), parts};  // the parts that the grid has at this B
    merge.args = {slice(om, {written, b, heads(group * d)}), slice(lsm, {written, b, heads(group)})};
    merge.attrs = {tiling::intAttr("head_dim", d)};
    std::vector<Slice> dests{slice(results[0], {b, heads(group * d)})};
    if (results.size() > 1) dests.push_back(slice(results[1], {b, heads(group)}));
    tasks.push_back(addTask("attention_merge_" + oname, mp, std::move(merge), std::move(dests), a.range));
    // After the merge, so that the lens it reads come from the kv_ranges task that merge-tasks
    // joins with lens' producer, not from a grid of its own.
    if (parts_lo <= 1)
      add_whole(simplify(sub(rows, split_rows), m_.symRanges()), split_rows, baseName(a) + "_whole", head_plans);
    return true;
  }

  // How many cache heads the tasks of attention's one-part grid take, and at which rows.
  struct HeadsPlan {
    int64_t n;  // cache heads a task
    Expr on;    // 1 at the sym values where this count applies, else 0
  };
  // `written` (heads_per_task) where positive: that count everywhere (1 by default). With 0,
  // where the rows are a sym, the largest divisor of hk up to hk / cdiv(kAttentionTasks, rows):
  // tasks of several heads while about kAttentionTasks tasks remain (for 8 cache heads: 1 up
  // to 31 rows, 2 from 32, 4 from 64, 8 from 128). A task's fixed cost (its waits, the ring's
  // fill, its notifies) is then paid once for several heads and the grid still fills the GPU:
  // on an H200, Llama-3.2-1B at KV 511 with 1 / 2 / 4 / 8 heads a task took 1768 / 1892 /
  // 2128 / 2660 us at B = 16, 2756 / 2643 / 2552 / 3010 at B = 64 and 4264 / 4016 / 3847 /
  // 3771 at B = 128; with 0, -4.3% at B = 64 and -9.5% at B = 128 but +1.7% at B = 1 and
  // +2.3% at B = 16, where its grids are empty (docs/benchmarks.md, session 32): not the
  // default. The count grows with the rows, so each one holds over one range of them,
  // [lo, hi], and `on` is 1 exactly there.
  std::vector<HeadsPlan> attentionHeadPlans(const Expr& rows, int64_t hk, int64_t written) const {
    if (written > 0) return {{written, intConst(1)}};
    const int64_t lo = std::max<int64_t>(1, tiling::lowerBound(m_, rows)), hi = tiling::upperBound(m_, rows);
    // Other row expressions, and ranges too wide to walk, keep one head a task.
    if (rows->kind != ExprKind::Sym || hi < lo || hi - lo > (int64_t{1} << 20)) return {{1, intConst(1)}};
    auto count = [&](int64_t r) {
      int64_t n = std::max<int64_t>(1, hk / ((kAttentionTasks + r - 1) / r));
      while (hk % n != 0) --n;
      return n;
    };
    std::vector<HeadsPlan> plans;
    for (int64_t r = lo; r <= hi;) {
      const int64_t n = count(r);
      int64_t last = r;
      while (last < hi && count(last + 1) == n) ++last;
      Expr on = intConst(1);
      if (r > lo) on = mul(on, min(intConst(1), max(intConst(0), sub(rows, intConst(r - 1)))));
      if (last < hi) on = mul(on, min(intConst(1), max(intConst(0), sub(intConst(last + 1), rows))));
      plans.push_back({n, simplify(on, m_.symRanges())});
      r = last + 1;
    }
    return plans;
  }

  // attention_merge at the op level: one task per row of the result (all parts, all heads).
  bool lowerAttentionMerge(const AssignStmt& a, std::vector<uint32_t>& tasks) {
    OperandMap om = mapOperand(m_, a.call.args[0]), lm = mapOperand(m_, a.call.args[1]);
    std::vector<OperandMap> results = resultMaps(a);
    TilePlan p;
    std::vector<Entry> parts{All{}}, row;
    for (size_t d = 1; d + 1 < om.extent.size(); ++d) {
      auto id = static_cast<uint32_t>(d - 1);
      p.grid.push_back(om.extent[d]);
      p.coords.push_back(coordName(m_, kCoordNames[id]));
      parts.push_back(coordRef(id, p.coords.back()));
      row.push_back(coordRef(id, p.coords.back()));
    }
    if (p.grid.empty()) {
      p.grid.push_back(intConst(1));
      p.coords.push_back(coordName(m_, "i"));
    }
    OpCall call = a.call;
    call.args[0] = slice(om, parts);
    call.args[1] = slice(lm, parts);
    std::vector<Slice> dests;
    for (const OperandMap& r : results) dests.push_back(slice(r, row));
    tasks.push_back(addTask(baseName(a), p, std::move(call), std::move(dests), a.range));
    return true;
  }

  // A subscript entry per logical dimension: the whole dimension, a point, or a range, all
  // relative to the operand's start.
  struct All {};
  using Entry = std::variant<All, Expr, std::pair<Expr, Expr>>;

  Slice slice(OperandMap op, const std::vector<Entry>& entries) const {
    for (size_t l = 0; l < op.logical_to_tensor.size() && l < entries.size(); ++l) {
      DimRange& r = op.dims[op.logical_to_tensor[l]];
      if (const auto* pt = std::get_if<Expr>(&entries[l])) {
        r.point = true;
        r.lo = add(r.lo, *pt);
      } else if (const auto* rg = std::get_if<std::pair<Expr, Expr>>(&entries[l])) {
        Expr base = r.lo;
        r.lo = add(base, rg->first);
        r.hi = add(base, rg->second);
      }
    }
    return tiling::makeSlice(m_, op.tensor, op.dims);
  }

  OperandMap wholeMap(uint32_t tensor) const {
    Slice whole;
    whole.target = tensor;
    return mapOperand(m_, whole);
  }

  // Forgets the kv_ranges results of a lens tensor that a statement writes.
  void forgetKvRanges(const AssignStmt& a) {
    for (uint32_t r : a.results) {
      auto it = kv_ranges_readers_.find(r);
      if (it == kv_ranges_readers_.end()) continue;
      for (const std::string& key : it->second) kv_ranges_.erase(key);
      kv_ranges_readers_.erase(it);
    }
  }

  // ---- mixture of experts ------------------------------------------------------------------

  // A few whole rows per task (one per warp of the device kernel); the expert axis stays whole.
  bool lowerTopkSoftmax(const AssignStmt& a, std::vector<uint32_t>& tasks) {
    std::vector<OperandMap> results = resultMaps(a);
    const std::vector<Expr>& space = results.front().extent;  // leading dims, then k
    std::vector<int64_t> tile(space.size(), 1);
    tile.back() = 0;
    if (space.size() >= 2) tile[space.size() - 2] = kTopkRows;
    TilePlan p = planGrid(m_, space, tile);
    OpCall call = a.call;
    call.args[0] = tileSlice(m_, mapOperand(m_, call.args[0]), p.ranges);  // k's entry is whole: E stays whole
    std::vector<Slice> dests;
    for (const OperandMap& r : results) dests.push_back(tileSlice(m_, r, p.ranges));
    tasks.push_back(addTask(baseName(a), p, std::move(call), std::move(dests), a.range));
    return true;
  }

  // One task that takes every operand and result whole (moe_align: a global sort).
  bool lowerWhole(const AssignStmt& a, std::vector<uint32_t>& tasks) {
    TilePlan p = planGrid(m_, {}, {});
    OpCall call = a.call;
    std::vector<Slice> dests;
    for (const OperandMap& r : resultMaps(a)) dests.push_back(tileSlice(m_, r, {}));
    tasks.push_back(addTask(baseName(a), p, std::move(call), std::move(dests), a.range));
    return true;
  }

  // out[T, H] rows and columns tiled like an element-wise op; each task reads the K routed
  // rows of y that belong to its rows of out, and those rows of weights.
  bool lowerMoeCombine(const AssignStmt& a, std::vector<uint32_t>& tasks) {
    OperandMap ym = mapOperand(m_, a.call.args[0]), wm = mapOperand(m_, a.call.args[1]);
    OperandMap om = resultMaps(a).front();
    std::vector<int64_t> tile = elementwiseTiles(m_, om.extent);
    TilePlan p = planGrid(m_, om.extent, tile);
    const Expr& k = wm.extent[1];
    LogicalTile yt{std::nullopt, p.ranges[1]}, wt{p.ranges[0], std::nullopt};
    if (p.ranges[0]) {
      Expr lo = mul(p.ranges[0]->first, k);
      yt[0] = std::make_pair(lo, min(ym.extent[0], add(lo, mul(intConst(p.tile[0]), k))));
    }
    OpCall call = a.call;
    call.args[0] = tileSlice(m_, ym, yt);
    call.args[1] = tileSlice(m_, wm, wt);
    tasks.push_back(addTask(baseName(a), p, std::move(call), {tileSlice(m_, om, p.ranges)}, a.range));
    return true;
  }

  // The grid is [load(num_blocks[0]) <= bound, column tiles]: task (b, j) takes block b of the
  // sorted ids and column tile j of the result. Which rows of y a block writes depends on the
  // data, so every task's destination is the column tile over all rows; two tasks never write
  // the same element (each routed row is in exactly one block). With act = "silu_mul", a fused
  // weight [E, 2 N', Kd] is passed as its gate and up tiles (the six-operand form), so that
  // each task reads exactly the weight rows it needs.
  bool lowerGroupedMatmul(const AssignStmt& a, std::vector<uint32_t>& tasks) {
    const OpCall& c = a.call;
    OperandMap xm = mapOperand(m_, c.args[0]), wm = mapOperand(m_, c.args[1]);
    OperandMap sm = mapOperand(m_, c.args[2]), bm = mapOperand(m_, c.args[3]), nm = mapOperand(m_, c.args[4]);
    OperandMap ym = resultMaps(a).front();
    if (sm.extent.size() != 1 || bm.extent.size() != 1) {
      diags_.error(a.range.begin, "grouped_matmul at the op level needs sorted_ids and block_expert of rank 1 "
                                  "(one block per task is chosen by the lowering)");
      return false;
    }
    const Attr* act = c.findAttr("act");
    const bool silu = act && act->value.text == "silu_mul";  // the default is "none"
    const bool split = c.args.size() == 6;
    const int64_t block = tiling::attrInt(c, "block"), top_k = std::max<int64_t>(1, tiling::attrInt(c, "top_k"));
    const Expr& n_out = ym.extent[1];
    const Expr& experts = wm.extent[0];
    // The attributes as written (named consts stay named in the printed bound).
    auto attrExpr = [&](std::string_view name, int64_t v) {
      const Attr* at = c.findAttr(name);
      return at && at->value.type == AttrType::Int && at->value.i ? at->value.i : intConst(v);
    };
    Expr routed = mul(xm.extent[0], attrExpr("top_k", top_k));

    // At most cdiv(R * top_k, block) blocks of whole rows plus one partial block per expert
    // that receives any row (at most min(E, R * top_k) of them), and no more than
    // block_expert holds. At decode sizes this is far below block_expert's extent (T = 1,
    // top-8 of 128: 9 instead of 129), and every task up to the bound is scheduled.
    Expr bound = add(cdiv(routed, attrExpr("block", block)), min(experts, routed));
    bound = simplify(min(bm.extent[0], bound), m_.symRanges());
    std::vector<Expr> nidx;
    for (const DimRange& r : nm.dims) nidx.push_back(r.lo);
    Expr blocks = bounded(load(nm.tensor, m_.tensors[nm.tensor].name, nidx), bound);

    // Column tiles: 64 wide, narrower while the smallest problem would leave SMs idle
    // (decode: top_k blocks of one row each).
    int64_t est_blocks = std::max<int64_t>(1, std::min(tiling::lowerBound(m_, experts), tiling::lowerBound(m_, routed)));
    int64_t n_hi = std::max<int64_t>(1, tiling::upperBound(m_, n_out));
    int64_t tn = kGroupedTileN;
    while (tn > kGroupedMinTileN && est_blocks * ((n_hi + tn - 1) / tn) < kGroupedTaskTarget) tn /= 2;

    TilePlan p;
    p.grid.push_back(blocks);
    p.coords.push_back(coordName(m_, "b"));
    Expr b = coordRef(0, p.coords.back());
    std::optional<std::pair<Expr, Expr>> nr;
    if (n_hi > tn) {
      p.coords.push_back(coordName(m_, "j"));
      Expr j = coordRef(1, p.coords.back());
      p.grid.push_back(cdiv(n_out, intConst(tn)));
      nr = std::make_pair(tiling::tileLo(j, tn), tiling::tileHi(j, tn, n_out));
    }
    OpCall call = c;
    call.args[0] = tileSlice(m_, xm, {});
    if (silu && !split) {
      // Gate rows [lo, hi) and up rows [N' + lo, N' + hi) of the fused weight.
      std::pair<Expr, Expr> g = nr ? *nr : std::make_pair(intConst(0), n_out);
      call.args[1] = tileSlice(m_, wm, {std::nullopt, g, std::nullopt});
      call.args.push_back(
          tileSlice(m_, wm, {std::nullopt, std::make_pair(add(n_out, g.first), add(n_out, g.second)), std::nullopt}));
    } else {
      call.args[1] = tileSlice(m_, wm, {std::nullopt, nr, std::nullopt});
      if (split) call.args[5] = tileSlice(m_, mapOperand(m_, c.args[5]), {std::nullopt, nr, std::nullopt});
    }
    call.args[2] = tileSlice(m_, sm, {std::make_pair(tiling::tileLo(b, block), add(tiling::tileLo(b, block), intConst(block)))});
    call.args[3] = pointSlice(bm, {b});
    call.args[4] = pointSlice(nm, std::vector<Expr>(nm.extent.size(), intConst(0)));
    tasks.push_back(addTask(baseName(a), p, std::move(call), {tileSlice(m_, ym, {std::nullopt, nr})}, a.range));
    return true;
  }

  // The operand at logical index `idx` (one entry per logical dim): a point in every dim.
  Slice pointSlice(OperandMap op, const std::vector<Expr>& idx) const {
    for (size_t l = 0; l < op.logical_to_tensor.size() && l < idx.size(); ++l) {
      DimRange& r = op.dims[op.logical_to_tensor[l]];
      r.point = true;
      r.lo = add(r.lo, idx[l]);
    }
    return tiling::makeSlice(m_, op.tensor, op.dims);
  }

  Module& m_;
  DiagnosticEngine& diags_;
  std::vector<uint32_t> new_temps_, new_tasks_;
  struct MmTiles {
    int64_t tn, tk, sk;
    // Below sym range_sym's value range_cut (>= 0 where planned), tiles of range_tn columns in
    // range_sk K parts, a grid of their own beside the one of tn and sk (from the cut on).
    int32_t range_sym = -1;
    int64_t range_cut = 0, range_tn = 0, range_sk = 0;
    // etcc --unsplit-below's range: tiles over all of K (kUnsplitTileK deep) that write part 0
    // of the parts the other side's sum reads (the plan by range's take twice the parts).
    bool unsplit() const { return range_sym >= 0 && range_sk == 1; }
  };
  std::map<const AssignStmt*, MmTiles> mm_tiles_;  // planMatmulGroups, per graph
  const Graph* graph_ = nullptr;  // the graph being lowered
  struct KvRanges {
    uint32_t ranges;                  // the parts' first positions and counts
    std::optional<uint32_t> longest;  // i32[1]: the longest row, where short_kv asked for it
  };
  std::map<std::string, KvRanges> kv_ranges_;                         // lens slice, splits, spread -> part ranges
  std::map<uint32_t, std::vector<std::string>> kv_ranges_readers_;  // lens tensor -> keys above
};

}  // namespace

ModulePtr lowerOps(ModulePtr m, DiagnosticEngine& diags) {
  Lowerer l(*m, diags);
  if (!l.run()) return nullptr;
  return m;
}

}  // namespace etc
