// Scheduling, events and slices of the reference interpreter (see interpreter.h for the order
// and the checks). The op references are in ops_*.cpp.
#include "compiler/interp/interpreter.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "compiler/interp/kernels.h"
#include "compiler/interp/view.h"
#include "compiler/ir/ops.h"
#include "compiler/support/splitmix.h"

namespace etc::interp {

namespace {

std::string coordsText(const std::vector<int64_t>& c) { return fmt::format("({})", fmt::join(c, ", ")); }

std::string shapeText(const std::vector<int64_t>& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

std::string plural(int64_t n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

// Row-major strides of a dense shape, in elements.
std::vector<int64_t> denseStrides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int d = static_cast<int>(shape.size()) - 2; d >= 0; --d) s[d] = s[d + 1] * shape[d + 1];
  return s;
}

struct EventState {
  bool used = false;   // referenced by the graph
  bool ready = false;  // counts evaluated (on first touch)
  std::vector<int64_t> shape, strides;
  std::vector<int64_t> init, count;
};

// One tile of a grid, with its place in its body (a suspended tile resumes there).
struct Tile {
  uint32_t grid = 0;  // index among the graph's runs
  uint32_t task = 0;
  std::vector<int64_t> coords;
  size_t pc = 0;
  int64_t blocked_on = -1;  // the event element offset of the last failed wait
  uint32_t blocked_event = 0;
};

enum class Step { Done, Blocked, Failed };

class Interpreter {
 public:
  Interpreter(const ir::Module& m, const std::map<std::string, int64_t>& syms, TensorMap& tensors, Order order,
              uint64_t seed)
      : m_(m), sym_args_(syms), tensors_(tensors), order_(order), random_state_(seed) {
    bind_.sym = [this](uint32_t id) -> std::optional<int64_t> {
      if (id >= sym_values_.size()) return std::nullopt;
      return sym_values_[id];
    };
    bind_.coord = [this](uint32_t id) -> std::optional<int64_t> {
      if (!coords_ || id >= coords_->size()) return std::nullopt;
      return (*coords_)[id];
    };
    bind_.load = [this](uint32_t t, const std::vector<int64_t>& idx) { return loadElement(t, idx); };
  }

  RunResult run(std::string_view graph_name) {
    RunResult r;
    r.ok = runGraph(graph_name);
    r.error = error_;
    return r;
  }

 private:
  bool fail(std::string msg) {
    if (error_.empty()) error_ = std::move(msg);
    return false;
  }

  // ---- setup ---------------------------------------------------------------------------------

  bool bindSyms() {
    for (const auto& [name, value] : sym_args_)
      if (!m_.findSym(name)) return fail(fmt::format("'{}' is not a sym of module @{}", name, m_.name));
    for (const ir::Sym& s : m_.syms) {
      auto it = sym_args_.find(s.name);
      if (it == sym_args_.end())
        return fail(fmt::format("sym '{}' is not given (its range is [{}, {}])", s.name, s.lo, s.hi));
      if (it->second < s.lo || it->second > s.hi)
        return fail(fmt::format("sym '{}' = {} is outside its range [{}, {}]", s.name, it->second, s.lo, s.hi));
      sym_values_.push_back(it->second);
    }
    return true;
  }

  // The tensors and events the graph's tasks reference, loads in their expressions included.
  void collectReferences(const std::vector<uint32_t>& tasks) {
    auto expr = [&](const ir::Expr& e) {
      if (!e) return;
      ir::forEachLeaf(e, [&](const ir::ExprNode& n) {
        if (n.kind == ir::ExprKind::Load) used_tensors_.insert(n.id);
      });
    };
    auto slice = [&](const ir::Slice& s) {
      for (const ir::SliceDim& d : s.dims) {
        expr(d.lo);
        expr(d.hi);
      }
    };
    events_.resize(m_.events.size());
    auto event = [&](const ir::Slice& s) {
      slice(s);
      events_[s.target].used = true;
      expr(m_.events[s.target].init);
    };
    for (uint32_t t : tasks) {
      const ir::Task& task = m_.tasks[t];
      for (const ir::Expr& e : task.grid) expr(e);
      for (const ir::TaskStmt& st : task.body) {
        if (auto* w = std::get_if<ir::WaitStmt>(&st)) event(w->event);
        if (auto* n = std::get_if<ir::NotifyStmt>(&st)) event(n->event);
        if (auto* c = std::get_if<ir::CallStmt>(&st)) {
          for (const ir::Slice& s : c->call.args) {
            used_tensors_.insert(s.target);
            slice(s);
          }
          for (const ir::Slice& s : c->dests) {
            used_tensors_.insert(s.target);
            slice(s);
          }
        }
      }
    }
  }

  bool bindTensors() {
    bound_.assign(m_.tensors.size(), nullptr);
    for (uint32_t id : used_tensors_) {
      const ir::Tensor& decl = m_.tensors[id];
      std::vector<int64_t> shape;
      for (const ir::Expr& e : decl.shape) {
        auto v = eval(e, fmt::format("the shape of '{}'", decl.name));
        if (!v) return false;
        if (*v < 0) return fail(fmt::format("the shape of '{}' has a negative extent {}", decl.name, *v));
        shape.push_back(*v);
      }
      std::string role(ir::roleName(decl.role));
      std::string want = fmt::format("{}{}", ir::dtypeName(decl.dtype), shapeText(shape));
      auto it = tensors_.find(decl.name);
      bool must_exist = decl.role == ir::Role::Input || decl.role == ir::Role::Param;
      bool keep = must_exist || (decl.role == ir::Role::Output && it != tensors_.end());
      if (!keep) {
        tensors_[decl.name] = zeros(decl.dtype, shape);
      } else {
        if (it == tensors_.end()) return fail(fmt::format("{} '{}' is missing (expected {})", role, decl.name, want));
        const HostTensor& t = it->second;
        if (t.dtype != decl.dtype || t.shape != shape)
          return fail(fmt::format("{} '{}' is {}{}; expected {}", role, decl.name, ir::dtypeName(t.dtype),
                                  shapeText(t.shape), want));
        int64_t need = t.numel() * ir::dtypeBytes(t.dtype);
        if (static_cast<int64_t>(t.bytes.size()) != need)
          return fail(fmt::format("{} '{}' holds {} bytes; {} needs {}", role, decl.name, t.bytes.size(), want, need));
      }
      bound_[id] = &tensors_[decl.name];
    }
    return true;
  }

  // ---- expressions ---------------------------------------------------------------------------

  std::optional<int64_t> loadElement(uint32_t t, const std::vector<int64_t>& idx) {
    HostTensor* h = t < bound_.size() ? bound_[t] : nullptr;
    if (!h || h->dtype != ir::DType::I32 || idx.size() != h->shape.size()) {
      load_error_ = fmt::format("load of '{}' is not an element of a bound i32 tensor", m_.tensors[t].name);
      return std::nullopt;
    }
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) {
      if (idx[d] < 0 || idx[d] >= h->shape[d]) {
        load_error_ = fmt::format("load({}{}) is outside '{}' of shape {}", m_.tensors[t].name, shapeText(idx),
                                  m_.tensors[t].name, shapeText(h->shape));
        return std::nullopt;
      }
      off = off * h->shape[d] + idx[d];
    }
    int32_t v;
    std::memcpy(&v, h->bytes.data() + off * 4, 4);
    return v;
  }

  // The first `value <= bound` in e that does not hold, described.
  std::string exceededBound(const ir::Expr& e) {
    std::string out;
    std::function<void(const ir::Expr&)> walk = [&](const ir::Expr& n) {
      if (!out.empty()) return;
      if (n->kind == ir::ExprKind::Bounded) {
        ir::EvalResult v = ir::evaluate(n->ops[0], bind_), b = ir::evaluate(n->ops[1], bind_);
        if (v.ok() && b.ok() && v.value > b.value) {
          out = fmt::format("'{}' is {}, above its stated bound {}", ir::toString(n->ops[0]), v.value, b.value);
          return;
        }
      }
      for (const ir::Expr& op : n->ops) walk(op);
    };
    walk(e);
    return out.empty() ? "a stated bound does not hold" : out;
  }

  // Evaluates e with the current coordinates; on failure reports "<what>: <reason>".
  std::optional<int64_t> eval(const ir::Expr& e, std::string_view what) {
    if (e->kind == ir::ExprKind::Int || e->kind == ir::ExprKind::Const) return e->value;
    ir::EvalResult r = ir::evaluate(e, bind_);
    if (r.ok()) return r.value;
    std::string why;
    switch (r.error) {
      case ir::EvalError::DivByZero: why = "division by zero"; break;
      case ir::EvalError::Overflow: why = "int64 overflow"; break;
      case ir::EvalError::BoundExceeded: why = exceededBound(e); break;
      default: why = load_error_.empty() ? "an unbound name" : load_error_; break;
    }
    fail(fmt::format("{} ('{}'): {}", what, ir::toString(e), why));
    return std::nullopt;
  }

  // ---- slices ---------------------------------------------------------------------------------

  std::string tileText(const Tile& t) const { return fmt::format("task @{} {}", m_.tasks[t.task].name, coordsText(t.coords)); }

  // Applies the subscript of s to v (a whole tensor or event); `name` for messages.
  bool applySubscript(const ir::Slice& s, View& v, const std::string& name, const Tile& tile) {
    int d = 0;
    for (size_t k = 0; k < s.dims.size(); ++k) {
      const ir::SliceDim& sd = s.dims[k];
      if (d >= v.rank())
        return fail(fmt::format("{}: the subscript of '{}' has more entries than dimensions", tileText(tile), name));
      std::string where = fmt::format("{}: subscript {} of '{}'", tileText(tile), k, name);
      auto lo = eval(sd.lo, where);
      if (!lo) return false;
      int64_t extent = v.shape[d];
      if (sd.is_range) {
        auto hi = eval(sd.hi, where);
        if (!hi) return false;
        if (*lo < 0 || *hi < *lo || *hi > extent)
          return fail(fmt::format("{}: slice {}:{} of '{}' is outside dimension {} of extent {}", tileText(tile), *lo,
                                  *hi, name, k, extent));
        v = v.range(d, *lo, *hi);
        ++d;
      } else {
        if (*lo < 0 || *lo >= extent)
          return fail(fmt::format("{}: index {} of '{}' is outside dimension {} of extent {}", tileText(tile), *lo,
                                  name, k, extent));
        v = v.at(d, *lo);
      }
    }
    return true;
  }

  bool tensorView(const ir::Slice& s, const Tile& tile, View& out) {
    out = View::whole(*bound_[s.target]);
    return applySubscript(s, out, m_.tensors[s.target].name, tile);
  }

  // ---- events ---------------------------------------------------------------------------------

  std::string elementText(uint32_t e, int64_t off) const {
    const EventState& ev = events_[e];
    if (ev.shape.empty()) return m_.events[e].name;
    std::vector<int64_t> c;
    for (size_t d = 0; d < ev.shape.size(); ++d) c.push_back(off / ev.strides[d] % ev.shape[d]);
    return fmt::format("{}{}", m_.events[e].name, shapeText(c));
  }

  bool readyEvent(uint32_t e) {
    EventState& ev = events_[e];
    if (ev.ready) return true;
    const ir::Event& decl = m_.events[e];
    for (const ir::Expr& x : decl.shape) {
      auto v = eval(x, fmt::format("the shape of event '{}'", decl.name));
      if (!v) return false;
      ev.shape.push_back(std::max<int64_t>(*v, 0));
    }
    ev.strides = denseStrides(ev.shape);
    int64_t n = 1;
    for (int64_t d : ev.shape) n *= d;
    ev.init.assign(static_cast<size_t>(n), 0);
    // The count binds the element's coordinates, not a tile's.
    const std::vector<int64_t>* saved = coords_;
    std::vector<int64_t> c(ev.shape.size(), 0);
    coords_ = &c;
    bool per_element = ir::hasCoord(decl.init);
    for (int64_t i = 0; i < n; ++i) {
      for (size_t d = 0; d < c.size(); ++d) c[d] = i / ev.strides[d] % ev.shape[d];
      if (i > 0 && !per_element) {
        ev.init[i] = ev.init[0];
        continue;
      }
      auto v = eval(decl.init, fmt::format("the count of {}", elementText(e, i)));
      if (!v) {
        coords_ = saved;
        return false;
      }
      if (*v < 0) {
        coords_ = saved;
        return fail(fmt::format("the count of {} is {}; counts must be non-negative", elementText(e, i), *v));
      }
      ev.init[i] = *v;
    }
    coords_ = saved;
    ev.count = ev.init;
    ev.ready = true;
    return true;
  }

  // The element offsets of an event slice, in row-major order.
  bool eventElements(const ir::Slice& s, const Tile& tile, std::vector<int64_t>& offs) {
    if (!readyEvent(s.target)) return false;
    EventState& ev = events_[s.target];
    // The counters viewed as an i64 tensor: the subscript is applied as to any tensor.
    View v;
    v.dtype = ir::DType::I64;
    v.base = reinterpret_cast<uint8_t*>(ev.count.data());
    v.shape = ev.shape;
    v.strides = ev.strides;
    if (!applySubscript(s, v, m_.events[s.target].name, tile)) return false;
    int64_t origin = (v.base - reinterpret_cast<uint8_t*>(ev.count.data())) / 8;
    offs.clear();
    forEachOffset(v, [&](int64_t o) { offs.push_back(origin + o); });
    return true;
  }

  // ---- tiles ----------------------------------------------------------------------------------

  Step runTile(Tile& tile) {
    const ir::Task& task = m_.tasks[tile.task];
    coords_ = &tile.coords;
    for (; tile.pc < task.body.size(); ++tile.pc) {
      const ir::TaskStmt& st = task.body[tile.pc];
      if (auto* w = std::get_if<ir::WaitStmt>(&st)) {
        if (!eventElements(w->event, tile, offs_)) return Step::Failed;
        const EventState& ev = events_[w->event.target];
        for (int64_t o : offs_) {
          if (ev.count[o] > 0) {
            tile.blocked_event = w->event.target;
            tile.blocked_on = o;
            return Step::Blocked;
          }
        }
      } else if (auto* n = std::get_if<ir::NotifyStmt>(&st)) {
        if (!eventElements(n->event, tile, offs_)) return Step::Failed;
        EventState& ev = events_[n->event.target];
        for (int64_t o : offs_) {
          if (ev.count[o] == 0) {
            fail(fmt::format("{} notifies {}, which is already at 0: more notifies than its initial count {}",
                             tileText(tile), elementText(n->event.target, o), ev.init[o]));
            return Step::Failed;
          }
        }
        for (int64_t o : offs_)
          if (--ev.count[o] == 0) ++zero_transitions_;
      } else if (!runCall(std::get<ir::CallStmt>(st), tile)) {
        return Step::Failed;
      }
    }
    return Step::Done;
  }

  bool runCall(const ir::CallStmt& c, const Tile& tile) {
    const ir::OpInfo* info = ir::findOp(c.call.op);
    OpKernel kernel = findKernel(c.call.op);
    if (!info || !kernel) return fail(fmt::format("{}: op '{}' has no reference", tileText(tile), c.call.op));
    std::vector<View> in(c.call.args.size()), out(c.dests.size());
    for (size_t k = 0; k < in.size(); ++k)
      if (!tensorView(c.call.args[k], tile, in[k])) return false;
    for (size_t k = 0; k < out.size(); ++k)
      if (!tensorView(c.dests[k], tile, out[k])) return false;
    OpArgs args(c.call, *info, std::move(in), std::move(out));
    std::string err = kernel(args);
    if (!err.empty()) return fail(fmt::format("{}: {}: {}", tileText(tile), c.call.op, err));
    return true;
  }

  // Retries the suspended tiles, lowest first, while some counter reached zero in the last
  // pass (a blocked wait can only return after one does).
  bool drain() {
    while (!suspended_.empty() && zero_transitions_ != drained_at_) {
      drained_at_ = zero_transitions_;
      for (auto it = suspended_.begin(); it != suspended_.end();) {
        Step s = runTile(it->second);
        if (s == Step::Failed) return false;
        it = s == Step::Done ? suspended_.erase(it) : std::next(it);
      }
    }
    return true;
  }

  // Calls each(lin, tile) for every tile of grid g (task task_id) in row-major order.
  template <class Each>
  bool forEachTile(uint32_t g, uint32_t task_id, Each each) {
    const ir::Task& task = m_.tasks[task_id];
    coords_ = nullptr;
    std::vector<int64_t> extents;
    int64_t total = 1;
    for (size_t k = 0; k < task.grid.size(); ++k) {
      auto v = eval(task.grid[k], fmt::format("task @{}: grid extent {}", task.name, k));
      if (!v) return false;
      if (*v < 0) return fail(fmt::format("task @{}: grid extent {} is negative ({})", task.name, k, *v));
      extents.push_back(*v);
      total *= *v;
    }
    Tile tile;
    tile.grid = g;
    tile.task = task_id;
    tile.coords.assign(extents.size(), 0);
    for (int64_t lin = 0; lin < total; ++lin) {
      int64_t r = lin;
      for (int d = static_cast<int>(extents.size()) - 1; d >= 0; --d) {
        tile.coords[d] = r % extents[d];
        r /= extents[d];
      }
      tile.pc = 0;
      if (!each(lin, tile)) return false;
    }
    return true;
  }

  bool runGrid(uint32_t g, uint32_t task_id) {
    return forEachTile(g, task_id, [&](int64_t lin, Tile& tile) {
      uint64_t before = zero_transitions_;
      Step s = runTile(tile);
      if (s == Step::Failed) return false;
      if (s == Step::Blocked) suspended_.emplace(std::make_pair(g, lin), tile);
      return zero_transitions_ == before || drain();
    });
  }

  // Order::LatestFirst and Order::Random: every tile of the grids waits in suspended_; the
  // first in the order's preference that can make progress runs until it blocks or ends, and
  // the search goes on down the preference, or starts again from its top once some counter has
  // reached zero (only that can let a tile the search passed run). LatestFirst prefers the
  // highest (grid, tile): a later grid runs as soon as its waits let it, before the earlier
  // grids that nothing orders it after. Random draws a new preference at each start
  // (splitmix64 from the seed, the same on every machine).
  // `tasks`: the graph's runs (task per grid index); `grids`: the indices of those to run.
  bool runByPreference(const std::vector<uint32_t>& tasks, const std::vector<uint32_t>& grids) {
    for (uint32_t g : grids)
      if (!forEachTile(g, tasks[g], [&](int64_t lin, Tile& tile) {
            suspended_.emplace(std::make_pair(g, lin), tile);
            return true;
          }))
        return false;
    std::vector<std::map<std::pair<uint32_t, int64_t>, Tile>::iterator> pref;
    for (bool again = true; again;) {
      again = false;
      pref.clear();
      for (auto it = suspended_.begin(); it != suspended_.end(); ++it) pref.push_back(it);
      if (order_ == Order::LatestFirst) {
        std::reverse(pref.begin(), pref.end());
      } else {
        for (size_t i = pref.size(); i > 1; --i) std::swap(pref[i - 1], pref[splitmix(random_state_) % i]);
      }
      for (auto it : pref) {
        uint64_t before = zero_transitions_;
        Step s = runTile(it->second);
        if (s == Step::Failed) return false;
        if (s == Step::Done) suspended_.erase(it);
        if (zero_transitions_ != before) {
          again = true;
          break;
        }
      }
    }
    return true;
  }

  bool runGraph(std::string_view graph_name) {
    if (!graph_name.empty() && graph_name[0] == '@') graph_name.remove_prefix(1);
    auto gi = m_.findGraph(graph_name);
    if (!gi) return fail(fmt::format("module @{} has no graph '@{}'", m_.name, graph_name));
    const ir::Graph& graph = m_.graphs[*gi];
    std::vector<uint32_t> tasks;
    for (const ir::GraphStmt& st : graph.body) {
      if (auto* a = std::get_if<ir::AssignStmt>(&st)) {
        std::vector<std::string> names;
        for (uint32_t r : a->results) names.push_back(m_.tensors[r].name);
        return fail(fmt::format("graph '@{}' has an op-level statement ('{} = {}(...)'); the interpreter runs "
                                "task-level graphs: lower it first (lower-ops)",
                                graph.name, fmt::join(names, ", "), a->call.op));
      }
      tasks.push_back(std::get<ir::RunStmt>(st).task);
    }
    if (!bindSyms()) return false;
    collectReferences(tasks);
    if (!bindTensors()) return false;
    // A grid whose extent reads data starts after every other grid, once nothing else can
    // progress, so that it reads what its producers wrote whatever the order of the runs.
    for (bool data_pass : {false, true}) {
      std::vector<uint32_t> pass;
      for (uint32_t g = 0; g < tasks.size(); ++g)
        if (ir::gridReadsData(m_.tasks[tasks[g]]) == data_pass) pass.push_back(g);
      if (order_ != Order::RunOrder) {
        if (!runByPreference(tasks, pass)) return false;
        continue;
      }
      for (uint32_t g : pass)
        if (!drain() || !runGrid(g, tasks[g])) return false;
    }
    if (!drain()) return false;
    if (!suspended_.empty()) {
      const Tile& t = suspended_.begin()->second;
      const EventState& ev = events_[t.blocked_event];
      int64_t left = ev.count[t.blocked_on], init = ev.init[t.blocked_on];
      std::string more = suspended_.size() > 1
                             ? fmt::format(" ({} blocked too)", plural(static_cast<int64_t>(suspended_.size()) - 1,
                                                                      "other tile is", "other tiles are"))
                             : "";
      return fail(fmt::format("{} waits forever on {}: {} of {} never {}{}", tileText(t),
                              elementText(t.blocked_event, t.blocked_on), left, plural(init, "notify", "notifies"),
                              left == 1 ? "arrives" : "arrive", more));
    }
    coords_ = nullptr;
    for (uint32_t e = 0; e < events_.size(); ++e) {
      if (!events_[e].used) continue;
      if (!readyEvent(e)) return false;
      const EventState& ev = events_[e];
      for (size_t o = 0; o < ev.count.size(); ++o) {
        if (ev.count[o] == 0) continue;
        return fail(fmt::format("event {} ends at {}: {} of {} never {}", elementText(e, static_cast<int64_t>(o)),
                                ev.count[o], ev.count[o], plural(ev.init[o], "notify", "notifies"), "arrived"));
      }
    }
    return true;
  }

  const ir::Module& m_;
  const std::map<std::string, int64_t>& sym_args_;
  TensorMap& tensors_;
  Order order_;
  uint64_t random_state_;
  ir::Bindings bind_;
  std::vector<int64_t> sym_values_;
  const std::vector<int64_t>* coords_ = nullptr;
  std::string load_error_;
  std::string error_;
  std::set<uint32_t> used_tensors_;
  std::vector<HostTensor*> bound_;
  std::vector<EventState> events_;
  std::map<std::pair<uint32_t, int64_t>, Tile> suspended_;
  uint64_t zero_transitions_ = 0, drained_at_ = 0;
  std::vector<int64_t> offs_;
};

}  // namespace

RunResult run(const ir::Module& m, std::string_view graph, const std::map<std::string, int64_t>& syms,
              TensorMap& tensors, Order order, uint64_t seed) {
  return Interpreter(m, syms, tensors, order, seed).run(graph);
}

}  // namespace etc::interp
