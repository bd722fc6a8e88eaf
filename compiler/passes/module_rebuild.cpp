#include "compiler/passes/module_rebuild.h"

namespace etc {

using namespace ir;

std::unique_ptr<Module> moduleWithout(Module& m, const std::vector<bool>& drop_events,
                                      const std::vector<bool>& drop_tasks) {
  auto dropped = [](const std::vector<bool>& flags, uint32_t i) { return i < flags.size() && flags[i]; };
  std::vector<uint32_t> event_at(m.events.size(), 0), task_at(m.tasks.size(), 0);
  auto out = std::make_unique<Module>();
  out->name = m.name;
  out->range = m.range;
  for (Sym& s : m.syms) out->addSym(std::move(s));
  for (Const& c : m.consts) out->addConst(std::move(c));
  for (Tensor& t : m.tensors) out->addTensor(std::move(t));
  for (uint32_t e = 0; e < m.events.size(); ++e)
    if (!dropped(drop_events, e)) event_at[e] = out->addEvent(std::move(m.events[e]));
  for (uint32_t t = 0; t < m.tasks.size(); ++t) {
    if (dropped(drop_tasks, t)) continue;
    for (TaskStmt& st : m.tasks[t].body) {
      if (auto* w = std::get_if<WaitStmt>(&st)) w->event.target = event_at[w->event.target];
      if (auto* n = std::get_if<NotifyStmt>(&st)) n->event.target = event_at[n->event.target];
    }
    task_at[t] = out->addTask(std::move(m.tasks[t]));
  }
  for (Graph& g : m.graphs) {
    for (GraphStmt& st : g.body)
      if (auto* r = std::get_if<RunStmt>(&st)) r->task = task_at[r->task];
    out->addGraph(std::move(g));
  }
  out->kernels = std::move(m.kernels);
  for (Kernel& k : out->kernels)
    for (uint32_t& t : k.tasks) t = task_at[t];
  out->order.clear();
  for (Module::DeclRef ref : m.order) {
    if (ref.kind == Module::DeclKind::Event) {
      if (dropped(drop_events, ref.index)) continue;
      ref.index = event_at[ref.index];
    } else if (ref.kind == Module::DeclKind::Task) {
      if (dropped(drop_tasks, ref.index)) continue;
      ref.index = task_at[ref.index];
    }
    out->order.push_back(ref);
  }
  return out;
}

namespace {

// Tensor references renumbered through `at` (old index -> new index).
class TensorRenumber {
 public:
  explicit TensorRenumber(const std::vector<uint32_t>& at) : at_(at) {}

  Expr expr(const Expr& e) const {
    if (!e || !hasLoad(e)) return e;
    return substitute(e, [this](const ExprNode& leaf) -> Expr {
      if (leaf.kind != ExprKind::Load) return nullptr;
      std::vector<Expr> idx;
      for (const Expr& i : leaf.ops) idx.push_back(expr(i));
      return load(at_[leaf.id], leaf.name, std::move(idx));
    });
  }
  void exprs(std::vector<Expr>& v) const {
    for (Expr& e : v) e = expr(e);
  }
  // A tensor slice (op operands and destinations); event slices only have their indices renumbered.
  void slice(Slice& s, bool tensor) const {
    if (tensor) s.target = at_[s.target];
    for (SliceDim& d : s.dims) {
      d.lo = expr(d.lo);
      d.hi = expr(d.hi);
    }
  }
  void call(OpCall& c) const {
    for (Slice& s : c.args) slice(s, true);
    for (Attr& a : c.attrs)
      if (a.value.type == AttrType::Int) a.value.i = expr(a.value.i);
  }

 private:
  const std::vector<uint32_t>& at_;
};

}  // namespace

std::unique_ptr<Module> moduleWithoutTensors(Module& m, const std::vector<bool>& drop) {
  std::vector<uint32_t> at(m.tensors.size(), 0);
  for (uint32_t t = 0, next = 0; t < m.tensors.size(); ++t)
    if (!(t < drop.size() && drop[t])) at[t] = next++;
  const TensorRenumber re(at);
  auto out = std::make_unique<Module>();
  out->name = m.name;
  out->range = m.range;
  for (Sym& s : m.syms) out->addSym(std::move(s));
  for (Const& c : m.consts) out->addConst(std::move(c));
  for (uint32_t t = 0; t < m.tensors.size(); ++t) {
    if (t < drop.size() && drop[t]) continue;
    re.exprs(m.tensors[t].shape);
    out->addTensor(std::move(m.tensors[t]));
  }
  for (Event& e : m.events) {
    re.exprs(e.shape);
    e.init = re.expr(e.init);
    out->addEvent(std::move(e));
  }
  for (Task& t : m.tasks) {
    re.exprs(t.grid);
    for (TaskStmt& st : t.body) {
      if (auto* w = std::get_if<WaitStmt>(&st)) re.slice(w->event, false);
      if (auto* n = std::get_if<NotifyStmt>(&st)) re.slice(n->event, false);
      if (auto* c = std::get_if<CallStmt>(&st)) {
        re.call(c->call);
        for (Slice& d : c->dests) re.slice(d, true);
      }
    }
    out->addTask(std::move(t));
  }
  for (Graph& g : m.graphs) {
    for (GraphStmt& st : g.body)
      if (auto* a = std::get_if<AssignStmt>(&st)) {
        for (uint32_t& r : a->results) r = at[r];
        re.call(a->call);
      }
    out->addGraph(std::move(g));
  }
  out->kernels = std::move(m.kernels);
  out->order.clear();
  for (Module::DeclRef ref : m.order) {
    if (ref.kind == Module::DeclKind::Tensor) {
      if (ref.index < drop.size() && drop[ref.index]) continue;
      ref.index = at[ref.index];
    }
    out->order.push_back(ref);
  }
  return out;
}

}  // namespace etc
