// The compile-time resource check (docs/backend.md, "Resource limits"): every kernel of every
// cubin against the published limits of the cubin's architecture, with an error that says what
// to change when one does not fit, and the per-architecture report etcc prints with
// --resource-usage (or -v).
#pragma once

#include <string>
#include <vector>

#include "compiler/backend/fatbin_writer.h"
#include "compiler/ir/ir.h"
#include "compiler/support/diagnostics.h"

namespace etc::backend {

// `images` and `logs` (nvJitLink's info logs, "" where none) are parallel. PTX images are not
// checked here: the driver compiles them for the GPU at hand, where the runtime checks them. The
// report also names the megakernels and task functions whose wgmma products ptxas serialized.
// Returns false after reporting an error for each kernel that cannot run (a warning instead when
// `enforce` is false: etcc --no-check-resources); appends the report to `report` when it is not
// null.
bool checkResources(const ir::Module& m, const std::vector<FatbinEntry>& images, const std::vector<std::string>& logs,
                    DiagnosticEngine& diags, std::string* report, bool enforce = true);

}  // namespace etc::backend
