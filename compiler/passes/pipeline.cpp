#include "compiler/passes/pipeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <ostream>
#include <string>

#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#include "compiler/passes/passes.h"

namespace etc {

const std::vector<Pass>& pipeline() {
  static const std::vector<Pass> passes = {
      {"fuse-gated-matmul", "gate and up matmuls and their silu_mul become one gated matmul", fuseGatedMatmul},
      {"lower-ops", "op-level assignments become task grids", lowerOps},
      {"merge-tasks", "a split-K sum moves into its one reader; same-grid neighbours merge tile for tile", mergeTasks},
      {"fold-attention-merge", "a split-KV attention's merge runs inside the matmul tasks that read its result",
       foldAttentionMerge},
      {"fold-into-attention", "the per-row q/k/v sums, rope and kv_append run inside the attention tasks that read them",
       foldIntoAttention},
      {"fold-norms", "below a cut of the batch, a row norm runs inside the matmul tasks that read its result",
       foldNorms},
      {"reuse-temps", "temps whose lives do not overlap in run order share one tensor", reuseTemps},
      {"infer-events", "event tensors from the slices task grids write and read", inferEvents},
      {"eliminate-events", "drop implied waits, merge duplicate events, coarsen many-to-all ones", eliminateEvents},
      {"fuse", "one megakernel per graph, and one kernel per task grid", fuse},
      {"select-schedule", "static or dynamic for each graph whose schedule is auto, from a cost model", selectSchedule},
      {"schedule", "task grids in topological order (the megakernel's task numbering)", scheduleStatic},
      {"verify-schedule", "no cycles, waits on earlier tasks only, notify totals = initial counts", verifySchedule},
  };
  return passes;
}

std::vector<std::string_view> dumpPointNames() {
  std::vector<std::string_view> names{"parse"};
  for (const Pass& p : pipeline()) names.push_back(p.name);
  names.push_back("specialize");
  return names;
}

namespace {

// The warning for an opt-in fold pass that found nothing to fold (nothing for the others).
std::optional<std::string> foldNotTaken(std::string_view pass, const PipelineOptions& opts) {
  if (pass == "fold-into-attention")
    return std::string(
        "--fold-attention: nothing folded (no per-row grid of q/k/v sums, rope and kv_append whose every reader "
        "is an attention grid covering its rows and heads)");
  if (pass == "fold-attention-merge")
    return std::string(
        "--fold-attention-merge: nothing folded (no split-KV merge grid whose one reader is a matmul reading "
        "whole heads of every row, within 16 Ki merged values a task)");
  if (pass == "fold-norms")
    return fmt::format(
        "--fold-norms-below {}: nothing folded (no row norm grid below that batch whose readers are matmuls "
        "reading every row, within 48 Ki values a task)",
        opts.fold_norms_below);
  return std::nullopt;
}

}  // namespace

void dumpModule(const ir::Module& m, std::string_view after, std::ostream& out) {
  out << fmt::format("// ----- IR after {} ----- //\n", after) << ir::printModule(m) << '\n';
}

std::unique_ptr<ir::Module> runPipeline(std::unique_ptr<ir::Module> m, const PipelineOptions& opts,
                                        DiagnosticEngine& diags) {
  auto wants = [&](std::string_view name) { return opts.print_after_all || opts.print_after.count(name); };
  if (opts.dump && wants("parse")) dumpModule(*m, "parse", *opts.dump);
  if (opts.schedule)
    for (ir::Graph& g : m->graphs) {
      g.schedule = *opts.schedule;
      g.schedule_written = true;
      g.schedule_reason = "--schedule";
    }
  // The merge folds into the o projection of one plan (fold_attention_merge.cpp): asking for the
  // fold turns the plan by range off rather than leaving the merge where it was.
  for (ir::Graph& g : m->graphs) {
    g.matmul_plan_by_range = opts.matmul_plan_by_range && !opts.fold_attention_merge;
    g.fold_norms_below = opts.fold_norms_below;
    g.unsplit_below = opts.unsplit_below;
    g.norm_rows = opts.norm_rows;
    g.attention_by_length = !opts.fold_attention_merge;
    g.unfused_kernels = opts.unfused_kernels;
  }
  for (const Pass& p : pipeline()) {
    const bool skipped = (!opts.verify_schedule && p.name == "verify-schedule") ||
                         (!opts.merge_tasks && p.name == "merge-tasks") ||
                         (!opts.fold_into_attention && p.name == "fold-into-attention") ||
                         (!opts.fold_attention_merge && p.name == "fold-attention-merge") ||
                         (opts.fold_norms_below <= 0 && p.name == "fold-norms") ||
                         (!opts.reuse_temps && p.name == "reuse-temps") ||
                         (!opts.gated_matmul && p.name == "fuse-gated-matmul");
    if (skipped) {
      // A dump asked for after a pass that does not run says so, rather than printing nothing.
      if (opts.dump && wants(p.name)) dumpModule(*m, std::string(p.name) + " (skipped)", *opts.dump);
      continue;
    }
    auto start = std::chrono::steady_clock::now();
    const ir::Module* before = m.get();
    m = p.run(std::move(m), diags);
    if (!m || diags.hasErrors()) return nullptr;
    // A fold asked for that changes nothing returns its input: say so, since the fatbin is then
    // the default's (--fold-attention folded nothing in the samples for 20 sessions unseen).
    if (m.get() == before)
      if (std::optional<std::string> why = foldNotTaken(p.name, opts)) diags.warning({}, *why);
    // The front end already reported the module's warnings; after a pass only errors matter
    // (they are compiler bugs), so verify into a collecting engine and forward the errors.
    DiagnosticEngine quiet(diags.sources());
    quiet.setCollect(true);
    bool verified = ir::verifyModule(*m, quiet);
    for (const Diagnostic& d : quiet.collected())
      if (d.severity == Severity::Error) diags.report(d);
    if (!verified) {
      diags.error({}, fmt::format("the module does not verify after pass '{}' (a compiler bug)", p.name));
      return nullptr;
    }
    if (opts.verbose && opts.dump)
      *opts.dump << fmt::format(
          "etcc: {}: {:.3f} ms\n", p.name,
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    if (opts.dump && wants(p.name)) dumpModule(*m, p.name, *opts.dump);
  }
  const bool written =
      std::any_of(m->graphs.begin(), m->graphs.end(), [](const ir::Graph& g) { return g.specialize_sym >= 0; });
  if (opts.specialize || written) {
    m = specializeMegakernels(std::move(m), opts.specialize ? &*opts.specialize : nullptr, diags);
    if (!m || diags.hasErrors()) return nullptr;
    if (opts.dump && wants("specialize")) dumpModule(*m, "specialize", *opts.dump);
  } else if (opts.dump && wants("specialize")) {
    dumpModule(*m, "specialize (skipped)", *opts.dump);
  }
  if (opts.verbose && opts.dump)
    for (const ir::Graph& g : m->graphs)
      *opts.dump << fmt::format("etcc: graph @{}: schedule {} ({})\n", g.name, ir::scheduleName(g.schedule),
                                g.schedule_reason);
  return m;
}

}  // namespace etc
