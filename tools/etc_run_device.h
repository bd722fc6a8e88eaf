// What etc-run's GPU paths share: the module's tensors as host-side specs, and --stress.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "etc/runtime.hpp"
#include "etc_run.h"
#include "etc_run_host.h"

namespace etc::tools {

// The module's tensors with their shapes at the syms set now (temps: no shape).
std::vector<TensorSpec> specsOf(const Module& m);

// --stress: see etc_run_stress.cpp.
int runStress(Module& m, const RunOptions& opt, const std::string& graph, std::map<std::string, int64_t> syms);

}  // namespace etc::tools
