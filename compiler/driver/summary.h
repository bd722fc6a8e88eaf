// A one-screen summary of a verified module: syms, tensors, events, tasks and graphs.
#pragma once

#include <string>

#include "compiler/ir/ir.h"

namespace etc {

std::string summarizeModule(const ir::Module& m);

// "512 B", "4.0 KiB", "32.0 MiB", ...
std::string formatBytes(int64_t bytes);

}  // namespace etc
