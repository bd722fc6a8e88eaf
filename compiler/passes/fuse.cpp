// fuse: every graph becomes one persistent megakernel that runs all of its task grids and
// synchronises them through their events, plus, for comparison and debugging, one kernel per
// task grid (the unfused form: launched one after the other, stream order replacing events),
// unless etcc --megakernel-only leaves those out (a smaller fatbin, compiled in less time).
#include "compiler/passes/passes.h"

namespace etc {

ModulePtr fuse(ModulePtr m, DiagnosticEngine& diags) {
  m->kernels.clear();
  for (uint32_t g = 0; g < m->graphs.size(); ++g) {
    const ir::Graph& graph = m->graphs[g];
    std::vector<uint32_t> tasks;
    for (const ir::GraphStmt& st : graph.body)
      if (const auto* r = std::get_if<ir::RunStmt>(&st)) tasks.push_back(r->task);
    m->kernels.push_back({"etc_" + graph.name + "_mega", g, true, tasks});
    if (graph.unfused_kernels)
      for (uint32_t t : tasks) m->kernels.push_back({"etc_" + graph.name + "_" + m->tasks[t].name, g, false, {t}});
  }
  return m;
}

}  // namespace etc
