// From a scheduled module to the bytes etcc writes: CUDA source (with the descriptor), then
// PTX and cubins for every target (compiled in parallel), then the fatbin.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compiler/backend/emit_cuda.h"
#include "compiler/backend/fatbin_writer.h"
#include "compiler/backend/toolchain.h"
#include "compiler/ir/ir.h"
#include "compiler/support/diagnostics.h"

namespace etc::backend {

// The CUDA translation unit for the module, with its descriptor (listing `targets`) embedded.
// profile (etcc --profile): the megakernels record a timeline (docs/runtime.md, "Traces").
bool generateCuda(const ir::Module& m, const std::vector<Target>& targets, std::string& cuda, DiagnosticEngine& diags,
                  bool profile = false, const EmitOptions& options = {});

// Compiles `cuda` for every target; on failure reports each failing target with its log. On
// success `logs`, when given, receives each image's NVRTC / nvJitLink log (ptxas's verbose
// report for cubins), parallel to `images`. whole_program: cubins from NVRTC (compileCuda).
// worker: each target compiles in a process of that toolchain worker (compileCudaInWorker;
// etcc passes nvrtcWorkerPath()), else in a thread of this process.
bool compileTargets(const std::string& cuda, const std::string& file_name, const std::vector<Target>& targets,
                    std::vector<FatbinEntry>& images, DiagnosticEngine& diags, std::vector<std::string>* logs = nullptr,
                    bool whole_program = false, const std::optional<std::string>& worker = std::nullopt);

}  // namespace etc::backend
