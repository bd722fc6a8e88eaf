// schedule: every graph's task grids in one topological order of their event dependencies
// (the written order wherever that is valid), the same order in the graph and in its
// megakernel. That order numbers the tasks: with the static schedule task t runs on CTA
// t mod nCTA (the kernel computes the numbering from the sym values); with the dynamic one
// it names the task in queue words and pending counts.
#include <fmt/format.h>

#include "compiler/passes/passes.h"
#include "compiler/passes/task_graph.h"

namespace etc {

ModulePtr scheduleStatic(ModulePtr m, DiagnosticEngine& diags) {
  for (uint32_t gi = 0; gi < m->graphs.size(); ++gi) {
    ir::Graph& g = m->graphs[gi];
    (void)diags;
    if (g.schedule == ir::Schedule::Auto) g.schedule = ir::Schedule::Static;  // select-schedule did not run
    g.schedule_written = true;
    TaskGraph tg = buildTaskGraph(*m, g);
    std::vector<uint32_t> order = topologicalOrder(tg);
    if (order.empty()) continue;  // a cycle: verify-schedule reports it
    std::vector<ir::GraphStmt> body;
    for (uint32_t pos : order) {
      uint32_t task = tg.grids[pos];
      for (const ir::GraphStmt& st : g.body)
        if (const auto* r = std::get_if<ir::RunStmt>(&st); r && r->task == task) body.push_back(st);
    }
    g.body = std::move(body);
    for (ir::Kernel& k : m->kernels)
      if (k.graph == gi && k.mega) {
        k.tasks.clear();
        for (uint32_t pos : order) k.tasks.push_back(tg.grids[pos]);
      }
  }
  return m;
}

}  // namespace etc
