// fuse: every graph becomes one persistent megakernel that runs all of its task grids and
// synchronises them through their events, plus, for comparison and debugging, one kernel per
// task grid (the unfused form: launched one after the other, stream order replacing events).
#include "compiler/passes/passes.h"

namespace etc {

ModulePtr fuse(ModulePtr m, DiagnosticEngine& diags) {
  m->kernels.clear();
  for (uint32_t g = 0; g < m->graphs.size(); ++g) {
    const ir::Graph& graph = m->graphs[g];
    ir::Kernel mega{"etc_" + graph.name + "_mega", g, true, {}};
    for (const ir::GraphStmt& st : graph.body)
      if (const auto* r = std::get_if<ir::RunStmt>(&st)) mega.tasks.push_back(r->task);
    for (uint32_t t : mega.tasks)
      m->kernels.push_back({"etc_" + graph.name + "_" + m->tasks[t].name, g, false, {t}});
    m->kernels.insert(m->kernels.end() - static_cast<long>(mega.tasks.size()), std::move(mega));
  }
  return m;
}

}  // namespace etc
