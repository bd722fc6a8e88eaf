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
    ir::Kernel mega{"etc_" + graph.name + "_mega", g, true, {}};
    for (const ir::GraphStmt& st : graph.body)
      if (const auto* r = std::get_if<ir::RunStmt>(&st)) mega.tasks.push_back(r->task);
    if (graph.unfused_kernels)
      for (uint32_t t : mega.tasks)
        m->kernels.push_back({"etc_" + graph.name + "_" + m->tasks[t].name, g, false, {t}});
    const size_t unfused = graph.unfused_kernels ? mega.tasks.size() : 0;
    m->kernels.insert(m->kernels.end() - static_cast<long>(unfused), std::move(mega));
  }
  return m;
}

}  // namespace etc
