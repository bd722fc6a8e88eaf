// CUDA C++ for a scheduled task-level module: one device function per task (coordinates from
// the task's number, slices as strided views, waits, the op calls, notifies), the megakernel of
// each graph (static schedule), one unfused kernel per task grid, the parameter struct of
// etc/abi.h and the embedded descriptor. See docs/backend.md.
#pragma once

#include <functional>
#include <string>
#include <vector>
#include <string_view>

#include "compiler/ir/ir.h"
#include "compiler/support/diagnostics.h"

namespace etc::backend {

struct ProfileLayout;

// Which static-schedule matmul tasks load their first weight tiles before their waits.
enum class WeightPrefetch {
  Off,         // none (--no-weight-prefetch)
  All,         // every matmul of params after a wait (--weight-prefetch)
  AfterChain,  // only those whose waits are on tasks that run no matmul (the default)
};

// What etcc's options change in the CUDA (docs/backend.md).
struct EmitOptions {
  WeightPrefetch weight_prefetch = WeightPrefetch::AfterChain;
  bool parallel_waits = false;       // a static task's consecutive waits checked as one group
  bool run_by_last_notifier = false; // chained tasks (chained_tasks.h), run by their last notifier's CTA
  bool share_task_code = true;       // one function per distinct task code ("Shared task code")
  bool derived_syms = true;          // sym-only divisions, mins and maxes once per binding ("Derived syms")
  std::vector<std::string> defines;  // NAME=VALUE before the device headers (--device-define)
};

// The descriptor to embed, given the derived syms that the code reads (in EtcParams.derived)
// and the tensors whose TMA maps it passes to matmuls (tmaTensors: the descriptor's "tmaps").
using DescriptorFn =
    std::function<std::string(const std::vector<ir::Expr>& derived, const std::vector<uint32_t>& tmaps)>;

// Returns false after reporting (e.g. an op that has no device kernel). With `profile`, every
// task run of a megakernel writes a timeline record (etc/device/profile.cuh); without, the
// code has no trace of profiling.
bool emitCuda(const ir::Module& m, const DescriptorFn& descriptor, std::string& out, DiagnosticEngine& diags,
              const ProfileLayout* profile = nullptr, const EmitOptions& options = {});

}  // namespace etc::backend
