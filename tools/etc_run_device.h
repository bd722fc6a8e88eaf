// What etc-run's GPU paths share: device buffers that free themselves and the module's tensors
// as host-side specs.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "etc/runtime.hpp"
#include "etc_run.h"
#include "etc_run_host.h"

namespace etc::tools {

// A device buffer that frees itself: an error anywhere leaves no device memory behind.
class DeviceBuffer {
 public:
  DeviceBuffer(etc_module m, size_t bytes) : m_(m) { checkStatus(etc_module_mem_alloc(m, bytes, &p_)); }
  ~DeviceBuffer() { etc_module_mem_free(m_, p_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  etc_devptr get() const { return p_; }

 private:
  etc_module m_;
  etc_devptr p_ = 0;
};

// The module's tensors with their shapes at the syms set now (temps: no shape).
std::vector<TensorSpec> specsOf(const Module& m);

// --stress: see etc_run_stress.cpp.
int runStress(Module& m, const RunOptions& opt, const std::string& graph, std::map<std::string, int64_t> syms);

}  // namespace etc::tools
