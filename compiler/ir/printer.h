// Canonical .etir text of a module. Re-parsing it gives the same IR, so printing is a fixed
// point: print(parse(print(parse(x)))) == print(parse(x)).
#pragma once

#include <string>

#include "compiler/ir/ir.h"

namespace etc::ir {

std::string printModule(const Module& m);

// Pieces, for diagnostics and other printers.
std::string printSlice(const Module& m, const Slice& s, bool is_event);
std::string printOpCall(const Module& m, const OpCall& c);

}  // namespace etc::ir
