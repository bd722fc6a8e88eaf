#include "compiler/frontend/frontend.h"

#include "compiler/frontend/builder.h"
#include "compiler/ir/verifier.h"

namespace etc {

namespace {

std::unique_ptr<ir::Module> buildAndVerify(const LoadedSource& src, const SourceManager& sources,
                                           DiagnosticEngine& diags) {
  // Syntax errors leave holes in the tree; resolving names over it would only add noise.
  if (diags.hasErrors()) return nullptr;
  std::unique_ptr<ir::Module> m = buildModule(src, sources, diags);
  if (diags.hasErrors() || !ir::verifyModule(*m, diags)) return nullptr;
  return m;
}

}  // namespace

std::unique_ptr<ir::Module> parseAndVerifyFile(const std::string& path, const LoadOptions& opts,
                                               SourceManager& sources, DiagnosticEngine& diags) {
  ast::Context ctx;
  LoadedSource src;
  if (!loadFile(path, opts, sources, ctx, diags, &src)) return nullptr;
  return buildAndVerify(src, sources, diags);
}

std::unique_ptr<ir::Module> parseAndVerifyBuffer(uint32_t file_id, const LoadOptions& opts, SourceManager& sources,
                                                 DiagnosticEngine& diags) {
  ast::Context ctx;
  LoadedSource src;
  loadBuffer(file_id, opts, sources, ctx, diags, &src);
  return buildAndVerify(src, sources, diags);
}

}  // namespace etc
