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

}  // namespace etc
