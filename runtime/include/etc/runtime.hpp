// A thin C++ wrapper over the C API of runtime.h: RAII for the module handle, exceptions
// (etc::RuntimeError, carrying the status) instead of status codes, std types at the edges.
// Header-only, so that it adds nothing to the library's ABI.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "etc/runtime.h"

namespace etc {

class RuntimeError : public std::runtime_error {
 public:
  RuntimeError(etc_status status, const std::string& message) : std::runtime_error(message), status_(status) {}
  etc_status status() const { return status_; }

 private:
  etc_status status_;
};

inline void checkStatus(etc_status s) {
  if (s != ETC_STATUS_OK) throw RuntimeError(s, etc_last_error_message());
}

class Module {
 public:
  static Module openFile(const std::string& path) {
    etc_module m = nullptr;
    checkStatus(etc_module_open_file(path.c_str(), &m));
    return Module(m);
  }
  static Module openMemory(const void* data, size_t size) {
    etc_module m = nullptr;
    checkStatus(etc_module_open_memory(data, size, &m));
    return Module(m);
  }

  Module(Module&& o) noexcept : m_(std::exchange(o.m_, nullptr)) {}
  Module& operator=(Module&& o) noexcept {
    if (this != &o) {
      etc_module_destroy(m_);
      m_ = std::exchange(o.m_, nullptr);
    }
    return *this;
  }
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  ~Module() { etc_module_destroy(m_); }

  etc_module handle() const { return m_; }
  std::string name() const { return etc_module_name(m_); }
  std::string ir() const { return etc_module_ir(m_); }
  std::string descriptorJson() const {
    size_t n = 0;
    const char* p = etc_module_descriptor_json(m_, &n);
    return std::string(p, n);
  }
  std::string fatbinTargets() const { return etc_module_fatbin_targets(m_); }
  std::vector<std::string> archs() const {
    std::vector<std::string> out;
    for (size_t i = 0; i < etc_module_num_archs(m_); ++i) out.emplace_back(etc_module_arch(m_, i));
    return out;
  }

  std::vector<etc_sym_info> syms() const {
    std::vector<etc_sym_info> out(etc_module_num_syms(m_));
    for (size_t i = 0; i < out.size(); ++i) checkStatus(etc_module_sym_info(m_, i, &out[i]));
    return out;
  }
  std::vector<etc_tensor_info> tensors() const {
    std::vector<etc_tensor_info> out(etc_module_num_tensors(m_));
    for (size_t i = 0; i < out.size(); ++i) checkStatus(etc_module_tensor_info(m_, i, &out[i]));
    return out;
  }
  std::vector<etc_event_info> events() const {
    std::vector<etc_event_info> out(etc_module_num_events(m_));
    for (size_t i = 0; i < out.size(); ++i) checkStatus(etc_module_event_info(m_, i, &out[i]));
    return out;
  }
  std::vector<std::string> graphs() const {
    std::vector<std::string> out;
    for (size_t i = 0; i < etc_module_num_graphs(m_); ++i) out.emplace_back(etc_module_graph_name(m_, i));
    return out;
  }

  void setSym(const std::string& name, int64_t value) { checkStatus(etc_module_set_sym(m_, name.c_str(), value)); }
  int64_t sym(const std::string& name) const {
    int64_t v = 0;
    checkStatus(etc_module_get_sym(m_, name.c_str(), &v));
    return v;
  }
  std::vector<int64_t> tensorShape(const std::string& name) const {
    int rank = 0;
    int64_t shape[ETC_MAX_SHAPE_RANK] = {};
    checkStatus(etc_module_tensor_shape(m_, name.c_str(), &rank, shape));
    return std::vector<int64_t>(shape, shape + rank);
  }
  uint64_t workspaceBytes() const {
    uint64_t b = 0;
    checkStatus(etc_module_workspace_bytes(m_, &b));
    return b;
  }
  void bind(const std::string& name, etc_devptr ptr, etc_dtype dtype, const std::vector<int64_t>& shape) {
    checkStatus(etc_module_bind(m_, name.c_str(), ptr, dtype, static_cast<int>(shape.size()), shape.data()));
  }

  void unbind(const std::string& name) { checkStatus(etc_module_unbind(m_, name.c_str())); }

  void loadDevice(int device = 0) { checkStatus(etc_module_load_device(m_, device)); }
  // An empty graph name means the module's only graph.
  void launch(const std::string& graph = "", etc_stream stream = nullptr, etc_launch_options options = {ETC_MODE_MEGA, 0, 0}) {
    checkStatus(etc_module_launch(m_, graph.empty() ? nullptr : graph.c_str(), stream, &options));
  }
  void checkError(etc_stream stream = nullptr) { checkStatus(etc_module_check_error(m_, stream)); }
  std::vector<double> benchmark(const std::string& graph, etc_stream stream, etc_launch_options options, int warmup, int iters) {
    std::vector<double> us(static_cast<size_t>(iters > 0 ? iters : 0));
    checkStatus(etc_module_benchmark(m_, graph.empty() ? nullptr : graph.c_str(), stream, &options, warmup, iters, us.data()));
    return us;
  }

 private:
  explicit Module(etc_module m) : m_(m) {}
  etc_module m_ = nullptr;
};

// Device memory in a loaded module's context that frees itself: an error anywhere leaves no
// device memory behind.
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

}  // namespace etc
