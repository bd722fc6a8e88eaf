// AST -> IR: resolves names, folds consts, converts expressions to canonical symbolic form,
// types attributes by the op registry's specs, and infers the types of op-level results that
// have no declaration. Name errors (undefined, duplicate, wrong kind) are reported here with
// notes at the earlier definitions; everything about values and shapes is the verifier's.
#pragma once

#include <memory>

#include "compiler/frontend/loader.h"
#include "compiler/ir/ir.h"

namespace etc {

// Returns the module; diags.hasErrors() tells whether it is complete and may be verified.
std::unique_ptr<ir::Module> buildModule(const LoadedSource& src, const SourceManager& sources,
                                        DiagnosticEngine& diags);

}  // namespace etc
