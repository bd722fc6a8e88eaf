// The lowering pipeline: one straight list of passes, each Module -> Module in its own file,
// the verifier after every one, and a dump after any of them on request.
#pragma once

#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/ir.h"
#include "compiler/support/diagnostics.h"

namespace etc {

struct Pass {
  std::string_view name;
  std::string_view summary;
  std::function<std::unique_ptr<ir::Module>(std::unique_ptr<ir::Module>, DiagnosticEngine&)> run;
};

// The passes, in order. "parse" (the front end: parse, resolve, verify) is not in this list
// but can be dumped after like a pass.
const std::vector<Pass>& pipeline();

// Names accepted by --print-after: "parse" and every pass.
std::vector<std::string_view> dumpPointNames();

// etcc --specialize SYM=C1,C2,...: each graph's megakernel becomes one per range of the sym
// between the cuts ([lo, C1 - 1], [C1, C2 - 1], ..., [Cn, hi]).
struct SymCuts {
  std::string sym;
  std::vector<int64_t> cuts;
};

struct PipelineOptions {
  bool print_after_all = false;
  std::set<std::string, std::less<>> print_after;
  std::ostream* dump = nullptr;  // where dumps go
  bool verbose = false;          // timings of every step, and the schedule choices, on `dump`
  // --schedule=static|dynamic: every graph gets it, whatever its source says (auto: no override).
  std::optional<ir::Schedule> schedule;
  bool verify_schedule = true;  // false: skip the verify-schedule pass (etcc --no-verify-schedule)
  bool merge_tasks = true;      // false: skip the merge-tasks pass (etcc --no-merge-tasks)
  bool fold_into_attention = false;  // true: run fold-into-attention (etcc --fold-attention)
  bool fold_attention_merge = false;  // true: run fold-attention-merge (etcc --fold-attention-merge)
  int64_t fold_norms_below = 0;  // > 0: run fold-norms below this value of a norm's rows sym (etcc --fold-norms-below)
  int64_t unsplit_below = 0;  // > 0: below this value of the rows sym, projections without split-K parts (etcc --unsplit-below)
  bool reuse_temps = false;     // true: run reuse-temps (etcc --reuse-temps)
  bool gated_matmul = true;     // false: skip the fuse-gated-matmul pass (etcc --no-gated-matmul)
  bool matmul_plan_by_range = true;  // false: etcc --no-matmul-plan-by-range; off under fold_attention_merge
  int64_t norm_rows = 1;        // rows a task of a row norm (etcc --norm-rows)
  bool unfused_kernels = true;  // false: etcc --megakernel-only (fuse makes no unfused kernels)
  std::optional<SymCuts> specialize;  // runs the specialize step after the passes
};

// Dumps after "parse" if asked, then runs every pass with the verifier after each. Returns
// null after reporting errors.
std::unique_ptr<ir::Module> runPipeline(std::unique_ptr<ir::Module> m, const PipelineOptions& opts,
                                        DiagnosticEngine& diags);

void dumpModule(const ir::Module& m, std::string_view after, std::ostream& out);

}  // namespace etc
