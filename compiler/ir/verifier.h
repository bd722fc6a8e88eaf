// The verifier: every property of a module that must hold after parsing and after every pass.
// Facts over symbolic sizes are proved for all sym values in their ranges where the prover can;
// a counterexample found at a sample point is an error that names the point; what is neither
// proved nor refuted (e.g. it depends on data) is left to the reference interpreter and the
// GPU debug mode.
#pragma once

#include "compiler/ir/ir.h"
#include "compiler/support/diagnostics.h"

namespace etc::ir {

// Returns true if the module is well-formed; reports every problem found otherwise.
bool verifyModule(const Module& m, DiagnosticEngine& diags);

}  // namespace etc::ir
