// The whole front end in one call: read (with includes), parse, resolve names, verify.
#pragma once

#include <memory>
#include <string>

#include "compiler/frontend/loader.h"
#include "compiler/ir/ir.h"

namespace etc {

// Returns the verified module, or null after reporting errors to diags.
std::unique_ptr<ir::Module> parseAndVerifyFile(const std::string& path, const LoadOptions& opts,
                                               SourceManager& sources, DiagnosticEngine& diags);
// The same for text already added to `sources` (stdin, tests, fuzzing, benchmarks).
std::unique_ptr<ir::Module> parseAndVerifyBuffer(uint32_t file_id, const LoadOptions& opts, SourceManager& sources,
                                                 DiagnosticEngine& diags);

}  // namespace etc
