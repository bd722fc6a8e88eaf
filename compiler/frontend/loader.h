// Reads the main file and, recursively, the files it includes: textual inclusion, each file
// at most once (a second include of the same file is skipped; an include of a file that is
// still being read is a cycle and an error).
#pragma once

#include <string>
#include <vector>

#include "compiler/support/diagnostics.h"
#include "grammar/ast.h"

namespace etc {

struct LoadedSource {
  uint32_t main_file = 0;
  // Every declaration of the main file with each `include` replaced by the included file's
  // declarations, in textual order. Include declarations themselves are dropped.
  std::vector<const ast::Decl*> decls;
};

struct LoadOptions {
  std::vector<std::string> include_dirs;  // searched after the including file's directory
};

// Returns false if the main file cannot be read; other problems are reported to diags and
// the declarations that could be read are still returned.
bool loadFile(const std::string& path, const LoadOptions& opts, SourceManager& sources, ast::Context& ctx,
              DiagnosticEngine& diags, LoadedSource* out);
// The same for a file already added to `sources` (tests, fuzzing, stdin).
void loadBuffer(uint32_t file_id, const LoadOptions& opts, SourceManager& sources, ast::Context& ctx,
                DiagnosticEngine& diags, LoadedSource* out);

}  // namespace etc
