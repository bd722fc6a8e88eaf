// specialize (a graph's `specialize SYM = C1, C2, ...`, or etcc --specialize SYM=C1,C2,... for
// every graph): the graph's megakernel becomes one per range of the sym between the cuts, each
// running the scheduled order of the grids that can have a task somewhere in its range; the
// runtime launches the one whose range holds the bound value.
//
// A grid whose extents are zero over a range has no task there, so leaving it out changes
// nothing that the kernel computes: its notifies add nothing, and its waiters' counts were
// proved (verify-schedule) to equal what the notifiers add at every sym value. What a kernel of
// a narrower range gains is what the empty grids cost: their code in the dispatch, the shared
// memory and stack that only they need (the largest over the kernel's tasks), and the task
// functions only they call. The workspace layout (events, temps) is the module's, shared by all.
#include <fmt/format.h>

#include "compiler/passes/passes.h"
#include "compiler/passes/pipeline.h"

namespace etc {

using namespace ir;

namespace {

bool emptyOver(const Task& t, const RangeEnv& env) {
  for (const Expr& g : t.grid)
    if (bounds(g, env).hi <= 0) return true;
  return false;
}

}  // namespace

ModulePtr specializeMegakernels(ModulePtr m, const SymCuts* cli, DiagnosticEngine& diags) {
  // etcc --specialize: one sym and cuts for every graph, over what the graphs wrote.
  std::optional<uint32_t> cli_sym;
  std::vector<std::pair<int64_t, int64_t>> cli_ranges;
  if (cli) {
    cli_sym = m->findSym(cli->sym);
    if (!cli_sym) {
      std::string names;
      for (const Sym& s : m->syms) names += (names.empty() ? "" : ", ") + s.name;
      diags.error({}, fmt::format("--specialize: module @{} has no sym '{}' (its syms: {})", m->name, cli->sym,
                                  names.empty() ? "none" : names));
      return nullptr;
    }
    std::string why;
    auto r = symCutRanges(m->syms[*cli_sym], cli->cuts, why);
    if (!r) {
      diags.error({}, "--specialize: " + why);
      return nullptr;
    }
    cli_ranges = std::move(*r);
  }
  std::vector<Kernel> kernels;
  for (Kernel& k : m->kernels) {
    const Graph& g = m->graphs[k.graph];
    uint32_t id = 0;
    std::vector<std::pair<int64_t, int64_t>> ranges;
    if (k.mega && cli) {
      id = *cli_sym;
      ranges = cli_ranges;
    } else if (k.mega && g.specialize_sym >= 0) {
      // The builder checked the graph's cuts against the sym.
      id = static_cast<uint32_t>(g.specialize_sym);
      std::string why;
      ranges = symCutRanges(m->syms[id], g.specialize_cuts, why).value_or(ranges);
    }
    if (ranges.size() < 2) {
      kernels.push_back(std::move(k));
      continue;
    }
    const Sym& sym = m->syms[id];
    for (const auto& [rlo, rhi] : ranges) {
      const RangeEnv env = m->symRangesWith(id, rlo, rhi);
      Kernel v{fmt::format("{}_{}{}_{}", k.name, sym.name, rlo, rhi), k.graph, true, {}, static_cast<int32_t>(id), rlo, rhi};
      for (uint32_t t : k.tasks)
        if (!emptyOver(m->tasks[t], env)) v.tasks.push_back(t);
      kernels.push_back(std::move(v));
    }
  }
  m->kernels = std::move(kernels);
  return m;
}

}  // namespace etc
