// eliminate-events on random task-level programs: grids over tiled, fixed and non-affine
// slices of a few tensors (and now and then a hand-written event) get their events from
// infer-events; then eliminate-events runs and
//  - the module still verifies, and verify-schedule still accepts its notify totals;
//  - the reference interpreter computes the same tensors before and after;
//  - every pair of tiles of different grids whose accesses conflict (read-after-write,
//    write-after-read, write-after-write on overlapping elements, in the graph's run order) is
//    still ordered: the later call is reachable from the earlier one in the tile-level
//    happens-before graph (program order inside a tile, notify -> wait on a shared element),
//    computed here independently of the pass at every sym value.
// Deterministic seeds; the totals at the end make sure the rules actually fired.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <array>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "compiler/frontend/frontend.h"
#include "compiler/interp/interpreter.h"
#include "compiler/ir/verifier.h"
#include "compiler/passes/passes.h"

namespace etc {
namespace {

using namespace ir;

constexpr int kCols = 8;

// ---- random programs ------------------------------------------------------------------------

// How a task's slices move with its coordinates. A slice is `name[rows(off), cols]`: every
// slice of a task has the same shape, but tiled rows may start `off` rows further on (0 or one
// tile), so one task reads a neighbour's tile of what another wrote.
struct Pattern {
  std::string grid, coords, cols;
  int tile = 0;          // tiled rows: the tile; 0: `fixed` rows
  bool clamped = false;  // tiled rows clamped at R (then never shifted)
  std::string fixed;
  std::string rows(int off) const {
    if (tile == 0) return fixed;
    if (clamped) return fmt::format("i * {0} : min(R, i * {0} + {0})", tile);
    return fmt::format("i * {0} + {1} : i * {0} + {2}", tile, off * tile, off * tile + tile);
  }
};

std::string generate(std::mt19937& rng, int64_t r_lo, int64_t r_hi, bool* partial) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
  int tensors = 2 + pick(2);
  std::ostringstream out;
  // R + 16 rows: a tile of up to 8 rows shifted by one tile stays inside.
  out << "module @random\n\nsym R in [" << r_lo << ", " << r_hi << "]\n\n";
  out << "tensor t0 : f32[R + 16, " << kCols << "] input\n";
  for (int t = 1; t < tensors; ++t) out << "tensor t" << t << " : f32[R + 16, " << kCols << "] output\n";
  int tasks = 3 + pick(4);
  std::vector<Pattern> patterns;
  std::vector<std::string> sizes;  // grid sizes, for hand-written counts
  for (int k = 0; k < tasks; ++k) {
    Pattern p;
    int kind = pick(8);
    p.coords = "i";
    if (kind < 4) {  // row tiles, all columns or a fixed column range
      p.tile = std::array{1, 2, 2, 3, 4, 8}[pick(6)];  // 8: one tile where R <= 8 (grids of extent 1)
      p.clamped = pick(3) == 0;
      p.grid = fmt::format("cdiv(R, {})", p.tile);
      p.cols = pick(2) ? ":" : "2 : 6";
      sizes.push_back(p.grid);
    } else if (kind < 6) {  // row and column tiles
      p.tile = std::array{1, 2, 4, 8}[pick(4)];
      p.clamped = pick(3) == 0;
      int cs = std::array{2, 4, 8}[pick(3)];
      p.grid = fmt::format("cdiv(R, {}), {}", p.tile, kCols / cs);
      p.coords = "i, j";
      p.cols = fmt::format("j * {0} : j * {0} + {0}", cs);
      sizes.push_back(fmt::format("cdiv(R, {}) * {}", p.tile, kCols / cs));
    } else if (kind == 6) {  // a fixed slice, the same for every task
      int g = 1 + pick(2);
      p.grid = std::to_string(g);
      // R - 1 is a row only where R >= 1.
      p.fixed = std::array<std::string, 3>{"0 : R", "0 : 1", r_lo >= 1 ? "R - 1 : R" : "0 : 2"}[pick(3)];
      p.cols = pick(2) ? ":" : "0 : 4";
      sizes.push_back(p.grid);
    } else {  // one element per task, not a tiling pattern
      p.grid = "R";
      p.fixed = "i";
      p.cols = fmt::format("i % {}", kCols);
      sizes.push_back("R");
    }
    patterns.push_back(p);
  }
  // Hand-written events: producer k notifies, a later consumer waits (infer-events leaves the
  // pair as written). Either one counter for the whole producer grid or, between row-tiled
  // grids, one element per producer tile (`hand[i]`, the consumer's tiles being no smaller).
  // Now and then a notify comes before the calls or a wait after them: such an event orders
  // less than it seems to, and paths through it must not be taken for more.
  std::map<int, std::vector<std::string>> waits_first, waits_last, notifies_first, notifies_last;
  int hand = pick(2) == 0 ? 1 + pick(3) : 0;
  for (int h = 0; h < hand; ++h) {
    int p = pick(tasks - 1), c = p + 1 + pick(tasks - 1 - p);
    const Pattern &pp = patterns[p], &pc = patterns[c];
    bool per_tile = pp.tile > 0 && pc.tile >= pp.tile && pp.coords == "i" && pc.coords == "i" && pick(2);
    if (per_tile)
      out << "event hand" << h << " : [" << pp.grid << "] init 1\n";
    else
      out << "event hand" << h << " : [1] init " << sizes[p] << "\n";
    std::string elem = fmt::format("hand{}[{}]", h, per_tile ? "i" : "0");
    bool early_notify = pick(5) == 0, late_wait = pick(5) == 0;
    // infer-events takes any hand-written link for a full ordering of the pair: a per-tile or
    // misplaced one leaves conflicting tiles unordered (in the program, not by the pass).
    *partial |= per_tile || early_notify || late_wait;
    (early_notify ? notifies_first : notifies_last)[p].push_back(elem);
    (late_wait ? waits_last : waits_first)[c].push_back(elem);
  }
  out << "\n";
  for (int k = 0; k < tasks; ++k) {
    const Pattern& p = patterns[k];
    out << "task @k" << k << " grid [" << p.grid << "] (" << p.coords << ") {\n";
    for (const std::string& n : notifies_first[k]) out << "  notify " << n << "\n";
    for (const std::string& w : waits_first[k]) out << "  wait " << w << "\n";
    auto slice = [&](int t) { return fmt::format("t{}[{}, {}]", t, p.rows(pick(2)), p.cols); };
    int dst = 1 + pick(tensors - 1);
    if (pick(2))
      out << "  copy(" << slice(pick(tensors)) << ") -> " << slice(dst) << "\n";
    else
      out << "  add(" << slice(pick(tensors)) << ", " << slice(pick(tensors)) << ") -> " << slice(dst) << "\n";
    if (pick(4) == 0) out << "  mul(" << slice(pick(tensors)) << ", " << slice(dst) << ") -> " << slice(1 + pick(tensors - 1)) << "\n";
    for (const std::string& w : waits_last[k]) out << "  wait " << w << "\n";
    for (const std::string& n : notifies_last[k]) out << "  notify " << n << "\n";
    out << "}\n\n";
  }
  out << "graph @main {\n";
  for (int k = 0; k < tasks; ++k) out << "  run @k" << k << "\n";
  out << "}\n";
  return out.str();
}

// ---- tile-level happens-before at one sym value ------------------------------------------

using Box = std::vector<std::pair<int64_t, int64_t>>;  // [lo, hi) per dimension

bool overlap(const Box& a, const Box& b) {
  for (size_t d = 0; d < a.size(); ++d)
    if (std::max(a[d].first, b[d].first) >= std::min(a[d].second, b[d].second)) return false;
  return true;
}

Box evalSlice(const Slice& s, const std::vector<Expr>& shape, const Bindings& b) {
  Box box;
  for (size_t d = 0; d < shape.size(); ++d) {
    int64_t extent = evaluate(shape[d], b).value;
    if (!s.has_subscript || d >= s.dims.size()) {
      box.push_back({0, extent});
      continue;
    }
    const SliceDim& sd = s.dims[d];
    int64_t lo = evaluate(sd.lo, b).value;
    box.push_back({lo, sd.is_range ? evaluate(sd.hi, b).value : lo + 1});
  }
  return box;
}

struct Node {
  uint32_t grid;     // position in run order
  int kind;          // 0 call, 1 wait, 2 notify
  uint32_t target;   // event (wait, notify)
  Box box;           // event elements
  std::vector<std::pair<uint32_t, Box>> reads, writes;  // tensor elements (calls)
};

// The calls of every tile in a fixed order (grids in run order, tiles row-major, calls in
// body order: the same list before and after the pass), which of them happen before which,
// and which pairs of different grids conflict (earlier grid first).
struct CallOrder {
  std::vector<std::string> names;                // "@task" of each call
  std::vector<std::vector<bool>> before;         // before[a][b]: call a happens before call b
  std::vector<std::pair<uint32_t, uint32_t>> conflicts;
};

CallOrder callOrder(const Module& m, int64_t r) {
  Bindings sb;
  sb.sym = [r](uint32_t) -> std::optional<int64_t> { return r; };
  std::vector<Node> nodes;
  std::vector<std::vector<uint32_t>> succ;
  std::vector<uint32_t> order;
  for (const GraphStmt& st : m.graphs[0].body) order.push_back(std::get<RunStmt>(st).task);
  for (uint32_t pos = 0; pos < order.size(); ++pos) {
    const Task& t = m.tasks[order[pos]];
    std::vector<int64_t> grid;
    int64_t n = 1;
    for (const Expr& e : t.grid) {
      grid.push_back(evaluate(e, sb).value);
      n *= grid.back();
    }
    for (int64_t lin = 0; lin < n; ++lin) {
      std::vector<int64_t> c(grid.size());
      for (size_t d = grid.size(), k = static_cast<size_t>(lin); d-- > 0;) {
        c[d] = static_cast<int64_t>(k) % grid[d];
        k /= static_cast<size_t>(grid[d]);
      }
      Bindings b = sb;
      b.coord = [c](uint32_t id) -> std::optional<int64_t> { return c[id]; };
      for (size_t i = 0; i < t.body.size(); ++i) {
        Node nd;
        nd.grid = pos;
        if (const auto* w = std::get_if<WaitStmt>(&t.body[i])) {
          nd.kind = 1;
          nd.target = w->event.target;
          nd.box = evalSlice(w->event, m.events[w->event.target].shape, b);
        } else if (const auto* ns = std::get_if<NotifyStmt>(&t.body[i])) {
          nd.kind = 2;
          nd.target = ns->event.target;
          nd.box = evalSlice(ns->event, m.events[ns->event.target].shape, b);
        } else {
          const auto& call = std::get<CallStmt>(t.body[i]);
          nd.kind = 0;
          for (const Slice& s : call.call.args) nd.reads.push_back({s.target, evalSlice(s, m.tensors[s.target].shape, b)});
          for (const Slice& s : call.dests) nd.writes.push_back({s.target, evalSlice(s, m.tensors[s.target].shape, b)});
        }
        nodes.push_back(std::move(nd));
        succ.emplace_back();
        if (i > 0) succ[nodes.size() - 2].push_back(static_cast<uint32_t>(nodes.size() - 1));  // program order
      }
    }
  }
  // A wait returns after every notify of an element it covers (the counts are balanced).
  for (uint32_t a = 0; a < nodes.size(); ++a)
    for (uint32_t b = 0; b < nodes.size(); ++b)
      if (nodes[a].kind == 2 && nodes[b].kind == 1 && nodes[a].target == nodes[b].target &&
          overlap(nodes[a].box, nodes[b].box)) {
        EXPECT_LT(nodes[a].grid, nodes[b].grid) << "a wait on a later or the same grid";
        succ[a].push_back(b);
      }
  // Nodes are in a topological order (edges go to later grids or later in a tile), so the
  // descendants are collected backwards.
  size_t words = (nodes.size() + 63) / 64;
  std::vector<std::vector<uint64_t>> reach(nodes.size(), std::vector<uint64_t>(words, 0));
  for (size_t a = nodes.size(); a-- > 0;)
    for (uint32_t b : succ[a]) {
      reach[a][b / 64] |= uint64_t{1} << (b % 64);
      for (size_t w = 0; w < words; ++w) reach[a][w] |= reach[b][w];
    }
  auto conflict = [](const Node& x, const Node& y) {
    auto any = [](const auto& p, const auto& q) {
      for (const auto& [t1, b1] : p)
        for (const auto& [t2, b2] : q)
          if (t1 == t2 && overlap(b1, b2)) return true;
      return false;
    };
    return any(x.writes, y.reads) || any(x.writes, y.writes) || any(x.reads, y.writes);
  };
  CallOrder out;
  std::vector<uint32_t> calls;
  for (uint32_t a = 0; a < nodes.size(); ++a)
    if (nodes[a].kind == 0) {
      calls.push_back(a);
      out.names.push_back("@" + m.tasks[order[nodes[a].grid]].name);
    }
  out.before.assign(calls.size(), std::vector<bool>(calls.size(), false));
  for (uint32_t x = 0; x < calls.size(); ++x)
    for (uint32_t y = 0; y < calls.size(); ++y) {
      uint32_t a = calls[x], b = calls[y];
      out.before[x][y] = reach[a][b / 64] >> (b % 64) & 1;
      if (nodes[a].grid < nodes[b].grid && conflict(nodes[a], nodes[b])) out.conflicts.push_back({x, y});
    }
  return out;
}

// ---- the test -----------------------------------------------------------------------------

struct Counts {
  size_t waits = 0, notifies = 0, events = 0;
};

Counts count(const Module& m) {
  Counts c;
  c.events = m.events.size();
  for (const Task& t : m.tasks)
    for (const TaskStmt& st : t.body) {
      c.waits += std::holds_alternative<WaitStmt>(st);
      c.notifies += std::holds_alternative<NotifyStmt>(st);
    }
  return c;
}

std::string render(const SourceManager& sources, DiagnosticEngine& diags) {
  std::string out;
  for (const Diagnostic& d : diags.collected()) out += diags.render(d);
  return out;
}

TEST(EliminateEvents, RandomProgramsKeepEveryOrdering) {
  Counts before_total, after_total;
  int programs = 0, changed = 0;
  for (uint32_t seed = 1; seed <= 400; ++seed) {
    std::mt19937 rng(seed);
    int64_t r_hi = 1 + static_cast<int64_t>(rng() % 12);
    // A quarter of the programs have R from 0: their cdiv(R, t) and R grids may be empty, and
    // so may the events indexed by them (coarsened only when every notify covers them whole).
    const int64_t r_lo = seed % 4 == 0 ? 0 : 1;
    bool partial = false;
    std::string text = generate(rng, r_lo, r_hi, &partial);
    SCOPED_TRACE(fmt::format("seed {}:\n{}", seed, text));
    SourceManager sources;
    DiagnosticEngine diags(sources);
    diags.setCollect(true);
    uint32_t id = sources.addBuffer("random.etir", text);
    ModulePtr m = parseAndVerifyBuffer(id, LoadOptions{}, sources, diags);
    ASSERT_TRUE(m) << render(sources, diags);
    m = inferEvents(std::move(m), diags);
    ASSERT_TRUE(m && !diags.hasErrors()) << render(sources, diags);
    auto before = std::make_unique<Module>(*m);
    ModulePtr after = eliminateEvents(std::move(m), diags);
    ASSERT_TRUE(after && !diags.hasErrors()) << render(sources, diags);
    ASSERT_TRUE(verifyModule(*after, diags)) << render(sources, diags);
    // verify-schedule checks notify totals against the counts (and cycles); it consumes its
    // module, so it gets a copy.
    ASSERT_TRUE(verifySchedule(std::make_unique<Module>(*after), diags)) << render(sources, diags);
    ++programs;
    Counts cb = count(*before), ca = count(*after);
    before_total.waits += cb.waits, before_total.notifies += cb.notifies, before_total.events += cb.events;
    after_total.waits += ca.waits, after_total.notifies += ca.notifies, after_total.events += ca.events;
    EXPECT_LE(ca.waits, cb.waits);
    EXPECT_LE(ca.events, cb.events);
    changed += ca.waits != cb.waits || ca.events != cb.events || ca.notifies != cb.notifies;

    for (int64_t r : {r_lo, int64_t{1}, (r_hi + 1) / 2, r_hi}) {
      // Every ordering between calls survives, so every conflicting pair that was ordered
      // still is (and infer-events ordered them all, unless a hand-written event orders only part of a pair).
      CallOrder ob = callOrder(*before, r), oa = callOrder(*after, r);
      ASSERT_EQ(ob.names, oa.names);
      for (const auto& [x, y] : ob.conflicts) {
        if (!partial) {
          ASSERT_TRUE(ob.before[x][y]) << ob.names[x] << " -> " << ob.names[y] << " before the pass, R = " << r;
        }
        if (ob.before[x][y]) {
          ASSERT_TRUE(oa.before[x][y]) << "conflicting calls of " << ob.names[x] << " and " << ob.names[y]
                                       << " no longer ordered, R = " << r;
        }
      }
      for (size_t x = 0; x < ob.names.size(); ++x)
        for (size_t y = 0; y < ob.names.size(); ++y)
          ASSERT_EQ(ob.before[x][y], oa.before[x][y]) << ob.names[x] << " -> " << ob.names[y] << ", R = " << r;
      // The interpreter checks every wait and notify, and computes the same tensors.
      interp::TensorMap in;
      std::vector<double> x(static_cast<size_t>((r + 16) * kCols));
      for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>(i % 7) - 3.0;
      in["t0"] = interp::makeTensor(DType::F32, {r + 16, kCols}, x);
      interp::TensorMap t_before = in, t_after = in;
      interp::RunResult rb = interp::run(*before, "main", {{"R", r}}, t_before);
      interp::RunResult ra = interp::run(*after, "main", {{"R", r}}, t_after);
      ASSERT_TRUE(rb.ok) << rb.error;
      ASSERT_TRUE(ra.ok) << ra.error;
      ASSERT_EQ(t_before.size(), t_after.size());
      for (const auto& [name, t] : t_before) {
        ASSERT_TRUE(t_after.count(name)) << name;
        EXPECT_EQ(t.bytes, t_after.at(name).bytes) << name;
      }
    }
  }
  // The rules fire on a good share of the programs (a pass that did nothing would pass the
  // checks above).
  EXPECT_EQ(programs, 400);
  EXPECT_GT(changed, programs / 5) << "programs changed by the pass";
  EXPECT_LT(after_total.waits, before_total.waits);
  EXPECT_LT(after_total.events, before_total.events);
  EXPECT_LT(after_total.notifies, before_total.notifies);
  std::printf("eliminate-events over %d programs: %d changed; waits %zu -> %zu, notifies %zu -> %zu, events %zu -> %zu\n",
              programs, changed, before_total.waits, after_total.waits, before_total.notifies, after_total.notifies,
              before_total.events, after_total.events);
}

}  // namespace
}  // namespace etc
