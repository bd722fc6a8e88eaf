// libFuzzer target: parse -> verify -> every pass -> CUDA emission, under option sets chosen by
// the input's hash (schedules, the opt-in folds, --specialize and the emitter's forms). Any
// module may be rejected, but none may crash, hang or trip a sanitizer; a rejection has an error
// diagnostic; and the task-level module that comes out (etcc --emit tasks) compiles again to
// itself, as etcc promises for it. NVRTC is not run: it is slow, and emitted code that does not
// compile is the samples' tests' business.
#include <cstdint>
#include <cstdio>
#include <string>

#include "compiler/backend/compile_module.h"
#include "compiler/ir/printer.h"
#include "compiler/passes/pipeline.h"
#include "tests/fuzz/fuzz_module.h"
#include "tests/fuzz/fuzz_require.h"

namespace {

using etc::fuzz::parseModule;
using etc::fuzz::require;

constexpr const char* kTarget = "fuzz_pipeline";

// FNV-1a: the same options for the same input on every platform (the corpus replays in CI).
uint32_t hashOf(const std::string& s) {
  uint32_t h = 2166136261u;
  for (unsigned char c : s) h = (h ^ c) * 16777619u;
  return h;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string input(reinterpret_cast<const char*>(data), size);
  if (etc::fuzz::mentionsInclude(input)) return 0;
  etc::SourceManager sources;
  etc::DiagnosticEngine diags(sources);
  auto m = parseModule(input, sources, diags);
  if (!m) return 0;  // the front end's properties are fuzz_frontend's

  const uint32_t h = hashOf(input);
  etc::PipelineOptions po;
  switch (h & 3u) {
    case 1: po.schedule = etc::ir::Schedule::Static; break;
    case 2: po.schedule = etc::ir::Schedule::Dynamic; break;
    default: break;  // what the source says
  }
  po.fold_into_attention = h & (1u << 2);
  po.fold_attention_merge = h & (1u << 3);
  po.fold_norms_below = h & (1u << 4) ? 3 : 0;
  po.reuse_temps = h & (1u << 5);
  po.merge_tasks = !(h & (1u << 6));
  po.gated_matmul = !(h & (1u << 7));
  po.matmul_plan_by_range = !(h & (1u << 8));
  po.unsplit_below = h & (1u << 15) ? 3 : 0;
  // etcc --specialize SYM=C: a kernel per half of the first sym's range.
  if ((h & (1u << 14)) && !m->syms.empty() && m->syms[0].hi - m->syms[0].lo >= 2)
    po.specialize = etc::SymCuts{m->syms[0].name, {m->syms[0].lo + (m->syms[0].hi - m->syms[0].lo) / 2}};
  auto tasks = etc::runPipeline(std::move(m), po, diags);
  if (!tasks) {
    require(diags.hasErrors(), kTarget, "a pass rejected a verified module without an error");
    for (const etc::Diagnostic& d : diags.collected()) (void)diags.render(d);
    return 0;
  }
  require(!diags.hasErrors(), kTarget, "the pipeline reported an error but returned a module");

  // etcc --emit tasks: the module after the passes is itself a module etcc accepts, and compiles
  // to the same task-level module (its printed kernel list is comments, which the parse drops).
  const std::string printed = etc::ir::printModule(*tasks);
  etc::SourceManager sources2;
  etc::DiagnosticEngine diags2(sources2);
  auto again = parseModule(printed, sources2, diags2);
  if (again) again = etc::runPipeline(std::move(again), po, diags2);
  if (!again) {
    std::fprintf(stderr, "the task-level module does not compile:\n%s\n", printed.c_str());
    for (const etc::Diagnostic& d : diags2.collected()) std::fprintf(stderr, "%s", diags2.render(d).c_str());
  }
  require(again != nullptr, kTarget, "the task-level module (--emit tasks) does not compile");
  const std::string reprinted = etc::ir::printModule(*again);
  if (reprinted != printed)
    std::fprintf(stderr, "--- the task-level module\n%s\n--- compiled again\n%s\n", printed.c_str(), reprinted.c_str());
  require(reprinted == printed, kTarget, "the task-level module compiles to another task-level module");

  etc::backend::EmitOptions eo;
  eo.weight_prefetch = !(h & (1u << 9))  ? etc::backend::WeightPrefetch::AfterChain  // the default
                       : (h & (1u << 16)) ? etc::backend::WeightPrefetch::Off
                                          : etc::backend::WeightPrefetch::All;
  eo.parallel_waits = h & (1u << 10);
  eo.share_task_code = !(h & (1u << 11));
  eo.derived_syms = !(h & (1u << 12));
  eo.run_by_last_notifier = h & (1u << 17);
  std::string cuda;
  const bool emitted =
      etc::backend::generateCuda(*tasks, etc::backend::defaultTargets(), cuda, diags, h & (1u << 13), eo);
  require(emitted ? !diags.hasErrors() && !cuda.empty() : diags.hasErrors(), kTarget,
          emitted ? "CUDA emission reported an error or wrote nothing" : "CUDA emission failed without an error");
  for (const etc::Diagnostic& d : diags.collected()) (void)diags.render(d);
  return 0;
}
