#include "compiler/passes/module_rebuild.h"

namespace etc {

using namespace ir;

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

bool dropped(const std::vector<bool>& flags, uint32_t i) { return i < flags.size() && flags[i]; }

}  // namespace

std::unique_ptr<Module> moduleWithout(Module& m, const std::vector<bool>& drop_events,
                                      const std::vector<bool>& drop_tasks, const std::vector<bool>& drop_tensors,
                                      const std::vector<uint32_t>& tensor_into) {
  std::vector<uint32_t> event_at(m.events.size(), 0), task_at(m.tasks.size(), 0), tensor_at(m.tensors.size(), 0);
  bool tensors_move = false;  // some tensor is dropped: tensor references need renumbering
  for (uint32_t t = 0, next = 0; t < m.tensors.size(); ++t) {
    tensors_move = tensors_move || dropped(drop_tensors, t);
    if (!dropped(drop_tensors, t)) tensor_at[t] = next++;
  }
  for (uint32_t t = 0; t < tensor_into.size(); ++t)
    if (dropped(drop_tensors, t) && tensor_into[t] != t) tensor_at[t] = tensor_at[tensor_into[t]];
  const TensorRenumber re(tensor_at);
  auto out = std::make_unique<Module>();
  out->name = m.name;
  out->range = m.range;
  for (Sym& s : m.syms) out->addSym(std::move(s));
  for (Const& c : m.consts) out->addConst(std::move(c));
  for (uint32_t t = 0; t < m.tensors.size(); ++t) {
    if (dropped(drop_tensors, t)) continue;
    if (tensors_move) re.exprs(m.tensors[t].shape);
    out->addTensor(std::move(m.tensors[t]));
  }
  for (uint32_t e = 0; e < m.events.size(); ++e) {
    if (dropped(drop_events, e)) continue;
    if (tensors_move) {
      re.exprs(m.events[e].shape);
      m.events[e].init = re.expr(m.events[e].init);
    }
    event_at[e] = out->addEvent(std::move(m.events[e]));
  }
  for (uint32_t t = 0; t < m.tasks.size(); ++t) {
    if (dropped(drop_tasks, t)) continue;
    if (tensors_move) re.exprs(m.tasks[t].grid);
    for (TaskStmt& st : m.tasks[t].body) {
      if (auto* w = std::get_if<WaitStmt>(&st)) {
        w->event.target = event_at[w->event.target];
        if (tensors_move) re.slice(w->event, false);
      }
      if (auto* n = std::get_if<NotifyStmt>(&st)) {
        n->event.target = event_at[n->event.target];
        if (tensors_move) re.slice(n->event, false);
      }
      if (auto* c = std::get_if<CallStmt>(&st); c && tensors_move) {
        re.call(c->call);
        for (Slice& d : c->dests) re.slice(d, true);
      }
    }
    task_at[t] = out->addTask(std::move(m.tasks[t]));
  }
  for (Graph& g : m.graphs) {
    for (GraphStmt& st : g.body) {
      if (auto* r = std::get_if<RunStmt>(&st)) r->task = task_at[r->task];
      if (auto* a = std::get_if<AssignStmt>(&st); a && tensors_move) {
        for (uint32_t& r : a->results) r = tensor_at[r];
        re.call(a->call);
      }
    }
    out->addGraph(std::move(g));
  }
  out->kernels = std::move(m.kernels);
  for (Kernel& k : out->kernels)
    for (uint32_t& t : k.tasks) t = task_at[t];
  out->order.clear();
  for (Module::DeclRef ref : m.order) {
    const std::vector<bool>* drop = nullptr;
    const std::vector<uint32_t>* at = nullptr;
    if (ref.kind == Module::DeclKind::Event) drop = &drop_events, at = &event_at;
    if (ref.kind == Module::DeclKind::Task) drop = &drop_tasks, at = &task_at;
    if (ref.kind == Module::DeclKind::Tensor) drop = &drop_tensors, at = &tensor_at;
    if (drop) {
      if (dropped(*drop, ref.index)) continue;
      ref.index = (*at)[ref.index];
    }
    out->order.push_back(ref);
  }
  return out;
}

}  // namespace etc
