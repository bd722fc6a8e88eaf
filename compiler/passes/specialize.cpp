// specialize (etcc --specialize SYM=C1,C2,...): every megakernel becomes one per range of the
// sym between the cuts, each running the scheduled order of the grids that can have a task
// somewhere in its range; the runtime launches the one whose range holds the bound value.
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

// The module's sym ranges with sym `id` held in [lo, hi].
RangeEnv narrowed(const Module& m, uint32_t id, int64_t lo, int64_t hi) {
  RangeEnv env = m.symRanges();
  env.sym = [base = env.sym, id, lo, hi](uint32_t s) -> std::optional<Interval> {
    if (s == id) return Interval{lo, hi};
    return base(s);
  };
  return env;
}

bool emptyOver(const Task& t, const RangeEnv& env) {
  for (const Expr& g : t.grid)
    if (bounds(g, env).hi <= 0) return true;
  return false;
}

}  // namespace

ModulePtr specializeMegakernels(ModulePtr m, const SymCuts& cuts, DiagnosticEngine& diags) {
  const std::optional<uint32_t> found = m->findSym(cuts.sym);
  if (!found) {
    std::string names;
    for (const Sym& s : m->syms) names += (names.empty() ? "" : ", ") + s.name;
    diags.error({}, fmt::format("--specialize: module @{} has no sym '{}' (its syms: {})", m->name, cuts.sym,
                                names.empty() ? "none" : names));
    return nullptr;
  }
  const uint32_t id = *found;
  const Sym& sym = m->syms[id];
  std::vector<std::pair<int64_t, int64_t>> ranges;
  int64_t lo = sym.lo;
  for (int64_t c : cuts.cuts) {
    if (c <= lo || c > sym.hi) {
      diags.error({}, fmt::format("--specialize: cut {} of sym '{}' is not in ({}, {}]: the cuts must increase and "
                                  "stay within the sym's range [{}, {}]",
                                  c, sym.name, lo, sym.hi, sym.lo, sym.hi));
      return nullptr;
    }
    ranges.emplace_back(lo, c - 1);
    lo = c;
  }
  ranges.emplace_back(lo, sym.hi);
  std::vector<Kernel> kernels;
  for (Kernel& k : m->kernels) {
    if (!k.mega || ranges.size() < 2) {
      kernels.push_back(std::move(k));
      continue;
    }
    for (const auto& [rlo, rhi] : ranges) {
      const RangeEnv env = narrowed(*m, id, rlo, rhi);
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
