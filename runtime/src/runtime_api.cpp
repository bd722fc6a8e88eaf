// The C API: each entry point runs its body through `guarded`, which turns an exception into
// a status code and the thread's last error message. Nothing C++ crosses this boundary.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <new>

#include "descriptor.h"
#include "device_module.h"
#include "etc/runtime.h"
#include "fatbin_contents.h"
#include "fatbin_seal.h"
#include "rt_error.h"
#include "sym_state.h"

struct etc_module_t {
  std::vector<uint8_t> fatbin;
  etc::rt::FatbinContents contents;
  etc::rt::Descriptor desc;
  std::string targets_text;
  std::unique_ptr<etc::rt::SymState> syms;      // refers to desc: the module never moves
  std::unique_ptr<etc::rt::DeviceModule> device;
};

namespace {

using etc::rt::Error;
using etc::rt::fail;

thread_local std::string t_last_error;

template <typename F>
etc_status guarded(F&& body) {
  try {
    body();
    t_last_error.clear();
    return ETC_STATUS_OK;
  } catch (const Error& e) {
    t_last_error = e.what();
    return e.status();
  } catch (const std::bad_alloc&) {
    t_last_error = "out of host memory";
    return ETC_STATUS_INTERNAL;
  } catch (const std::exception& e) {
    t_last_error = std::string("internal error: ") + e.what();
    return ETC_STATUS_INTERNAL;
  }
}

void need(const void* p, const char* what) {
  if (!p) fail(ETC_STATUS_INVALID_ARGUMENT, std::string(what) + " is null");
}

etc::rt::DeviceModule& deviceOf(etc_module m) {
  need(m, "the module");
  if (!m->device) fail(ETC_STATUS_NOT_LOADED, "the module is not loaded on a device (call etc_module_load_device first)");
  return *m->device;
}

size_t graphIndex(etc_module m, const char* graph) {
  if (!graph) {
    if (m->desc.graphs.size() != 1)
      fail(ETC_STATUS_INVALID_ARGUMENT, "the module has " + std::to_string(m->desc.graphs.size()) + " graphs: name one");
    return 0;
  }
  int g = m->desc.findGraph(graph[0] == '@' ? graph + 1 : graph);
  if (g < 0) {
    std::string known;
    for (const auto& gd : m->desc.graphs) known += (known.empty() ? "@" : ", @") + gd.name;
    fail(ETC_STATUS_NOT_FOUND, std::string("no graph named '") + graph + "' (the module's graphs: " + known + ")");
  }
  return static_cast<size_t>(g);
}

etc_launch_options optionsOr(const etc_launch_options* o) {
  return o ? *o : etc_launch_options{ETC_MODE_MEGA, 0, 0};
}

// The graph a launch runs, checked before the device is: a fatbin that etcc --megakernel-only
// made has no unfused kernels, and an unfused launch of it says so, loaded or not.
size_t launchedGraph(etc_module m, const char* graph, const etc_launch_options& o) {
  need(m, "the module");
  const size_t g = graphIndex(m, graph);
  if ((o.mode == ETC_MODE_UNFUSED || o.mode == ETC_MODE_UNFUSED_GRAPH) && !m->desc.graphs[g].has_unfused)
    fail(ETC_STATUS_INVALID_ARGUMENT, "graph @" + m->desc.graphs[g].name +
                                          " has no unfused kernels (its fatbin was compiled with etcc "
                                          "--megakernel-only): launch it with ETC_MODE_MEGA, or compile it without "
                                          "that option");
  return g;
}

void open(std::vector<uint8_t> bytes, etc_module* out) {
  auto m = std::make_unique<etc_module_t>();
  m->fatbin = std::move(bytes);
  // The seal is checked before anything is read, and dropped: the driver gets the container.
  m->fatbin.resize(etc::rt::unsealedSize(m->fatbin));
  m->contents = etc::rt::readFatbinContents(m->fatbin);
  m->desc = etc::rt::parseDescriptor(m->contents.descriptor_json);
  m->targets_text = etc::rt::targetsText(m->contents.targets);
  m->syms = std::make_unique<etc::rt::SymState>(m->desc);
  *out = m.release();
}

}  // namespace

extern "C" {

const char* etc_last_error_message(void) { return t_last_error.c_str(); }

const char* etc_status_name(etc_status s) {
  switch (s) {
#define ETC_NAME(x) case x: return #x;
    ETC_NAME(ETC_STATUS_OK) ETC_NAME(ETC_STATUS_INVALID_ARGUMENT) ETC_NAME(ETC_STATUS_IO)
    ETC_NAME(ETC_STATUS_BAD_FATBIN) ETC_NAME(ETC_STATUS_BAD_DESCRIPTOR) ETC_NAME(ETC_STATUS_NO_DRIVER)
    ETC_NAME(ETC_STATUS_NO_DEVICE) ETC_NAME(ETC_STATUS_NO_CODE_FOR_DEVICE) ETC_NAME(ETC_STATUS_NOT_FOUND)
    ETC_NAME(ETC_STATUS_BAD_SYM) ETC_NAME(ETC_STATUS_BAD_SHAPE) ETC_NAME(ETC_STATUS_BAD_BINDING)
    ETC_NAME(ETC_STATUS_NOT_LOADED) ETC_NAME(ETC_STATUS_CUDA) ETC_NAME(ETC_STATUS_KERNEL) ETC_NAME(ETC_STATUS_INTERNAL)
#undef ETC_NAME
  }
  return "ETC_STATUS_UNKNOWN";
}

etc_status etc_module_open_file(const char* path, etc_module* out) {
  return guarded([&] {
    need(path, "the path");
    need(out, "the output handle");
    *out = nullptr;
    std::ifstream f(path, std::ios::binary);
    if (!f) fail(ETC_STATUS_IO, std::string("cannot open ") + path + ": " + std::strerror(errno));
    // In blocks, straight into the vector: istreambuf_iterator's byte at a time was a fifth of
    // opening a 6 MB module, and inserting each block's chars as bytes (an element-wise
    // conversion, not a memcpy) still 28% of `etc-run --info` on Qwen3-0.6B's fatbin.
    constexpr size_t kBlock = size_t{1} << 16;
    std::vector<uint8_t> bytes;
    std::error_code size_error;
    if (const auto size = std::filesystem::file_size(path, size_error); !size_error) bytes.reserve(size + kBlock);
    size_t have = 0;
    for (;;) {
      bytes.resize(have + kBlock);
      f.read(reinterpret_cast<char*>(bytes.data() + have), static_cast<std::streamsize>(kBlock));
      have += static_cast<size_t>(f.gcount());
      if (!f) break;
    }
    bytes.resize(have);
    if (f.bad()) fail(ETC_STATUS_IO, std::string("cannot read ") + path);
    try {
      open(std::move(bytes), out);
    } catch (const Error& e) {
      fail(e.status(), std::string(path) + ": " + e.what());
    }
  });
}

etc_status etc_module_open_memory(const void* data, size_t size, etc_module* out) {
  return guarded([&] {
    need(data, "the data");
    need(out, "the output handle");
    *out = nullptr;
    const uint8_t* p = static_cast<const uint8_t*>(data);
    open(std::vector<uint8_t>(p, p + size), out);
  });
}

void etc_module_destroy(etc_module m) { delete m; }

const char* etc_module_name(etc_module m) { return m ? m->desc.module.c_str() : ""; }

const char* etc_module_descriptor_json(etc_module m, size_t* size) {
  if (!m) return nullptr;
  if (size) *size = m->desc.text.size();
  return m->desc.text.c_str();
}

const char* etc_module_ir(etc_module m) { return m ? m->desc.ir.c_str() : ""; }
size_t etc_module_num_archs(etc_module m) { return m ? m->desc.archs.size() : 0; }
const char* etc_module_arch(etc_module m, size_t i) { return m && i < m->desc.archs.size() ? m->desc.archs[i].c_str() : nullptr; }
const char* etc_module_fatbin_targets(etc_module m) { return m ? m->targets_text.c_str() : ""; }

size_t etc_module_num_syms(etc_module m) { return m ? m->desc.syms.size() : 0; }

etc_status etc_module_sym_info(etc_module m, size_t i, etc_sym_info* out) {
  return guarded([&] {
    need(m, "the module");
    need(out, "the output");
    if (i >= m->desc.syms.size()) fail(ETC_STATUS_INVALID_ARGUMENT, "sym index " + std::to_string(i) + " is out of range");
    const auto& s = m->desc.syms[i];
    *out = {s.name.c_str(), s.lo, s.hi};
  });
}

size_t etc_module_num_tensors(etc_module m) { return m ? m->desc.tensors.size() : 0; }

etc_status etc_module_tensor_info(etc_module m, size_t i, etc_tensor_info* out) {
  return guarded([&] {
    need(m, "the module");
    need(out, "the output");
    if (i >= m->desc.tensors.size()) fail(ETC_STATUS_INVALID_ARGUMENT, "tensor index " + std::to_string(i) + " is out of range");
    const auto& t = m->desc.tensors[i];
    *out = {};
    out->name = t.name.c_str();
    out->dtype = t.dtype;
    out->role = t.role;
    out->rank = static_cast<int>(t.shape.size());
    for (size_t k = 0; k < t.shape_text.size(); ++k) out->shape_text[k] = t.shape_text[k].c_str();
  });
}

etc_status etc_module_find_tensor(etc_module m, const char* name, size_t* index) {
  return guarded([&] {
    need(m, "the module");
    need(name, "the name");
    need(index, "the output");
    int i = m->desc.findTensor(name);
    if (i < 0) fail(ETC_STATUS_NOT_FOUND, std::string("no tensor named '") + name + "'");
    *index = static_cast<size_t>(i);
  });
}

size_t etc_module_num_events(etc_module m) { return m ? m->desc.events.size() : 0; }

etc_status etc_module_event_info(etc_module m, size_t i, etc_event_info* out) {
  return guarded([&] {
    need(m, "the module");
    need(out, "the output");
    if (i >= m->desc.events.size()) fail(ETC_STATUS_INVALID_ARGUMENT, "event index " + std::to_string(i) + " is out of range");
    const auto& e = m->desc.events[i];
    *out = {};
    out->name = e.name.c_str();
    out->rank = static_cast<int>(e.shape.size());
    for (size_t k = 0; k < e.shape_text.size(); ++k) out->shape_text[k] = e.shape_text[k].c_str();
    out->offset = e.offset;
    out->max_elements = e.max_elements;
  });
}

int64_t etc_module_event_words(etc_module m) { return m ? m->desc.event_words : 0; }
size_t etc_module_num_graphs(etc_module m) { return m ? m->desc.graphs.size() : 0; }
const char* etc_module_graph_name(etc_module m, size_t i) { return m && i < m->desc.graphs.size() ? m->desc.graphs[i].name.c_str() : nullptr; }

size_t etc_module_graph_num_kernels(etc_module m, size_t graph) {
  return m && graph < m->desc.graphs.size() ? m->desc.graphs[graph].megas.size() + m->desc.graphs[graph].unfused.size() : 0;
}

size_t etc_module_graph_num_megakernels(etc_module m, size_t graph) {
  return m && graph < m->desc.graphs.size() ? m->desc.graphs[graph].megas.size() : 0;
}

int etc_module_graph_has_unfused(etc_module m, size_t graph) {
  return m && graph < m->desc.graphs.size() && m->desc.graphs[graph].has_unfused ? 1 : 0;
}

// Kernel k of a graph (its megakernels, then its unfused kernels), or an INVALID_ARGUMENT error.
const etc::rt::KernelDesc& graphKernel(etc_module m, size_t graph, size_t k) {
  need(m, "the module");
  if (graph >= m->desc.graphs.size()) fail(ETC_STATUS_INVALID_ARGUMENT, "graph index " + std::to_string(graph) + " is out of range");
  const auto& g = m->desc.graphs[graph];
  if (k >= g.megas.size() + g.unfused.size())
    fail(ETC_STATUS_INVALID_ARGUMENT, "kernel index " + std::to_string(k) + " is out of range");
  return k < g.megas.size() ? g.megas[k] : g.unfused[k - g.megas.size()];
}

etc_status etc_module_graph_kernel(etc_module m, size_t graph, size_t k, const char** name, int* threads, const char** task) {
  return guarded([&] {
    const etc::rt::KernelDesc& kd = graphKernel(m, graph, k);
    if (name) *name = kd.name.c_str();
    if (threads) *threads = kd.threads;
    if (task) *task = kd.task < 0 ? nullptr : m->desc.tasks[kd.task].name.c_str();
  });
}

etc_status etc_module_graph_kernel_range(etc_module m, size_t graph, size_t k, const char** sym, int64_t* lo, int64_t* hi) {
  return guarded([&] {
    const etc::rt::KernelDesc& kd = graphKernel(m, graph, k);
    const bool ranged = kd.when_sym >= 0;  // unfused kernels have none
    if (sym) *sym = ranged ? m->desc.syms[kd.when_sym].name.c_str() : nullptr;
    if (lo) *lo = ranged ? kd.when_lo : 0;
    if (hi) *hi = ranged ? kd.when_hi : 0;
  });
}

etc_status etc_module_set_sym(etc_module m, const char* name, int64_t value) {
  return guarded([&] {
    need(m, "the module");
    need(name, "the sym name");
    m->syms->setSym(name, value);
  });
}

etc_status etc_module_get_sym(etc_module m, const char* name, int64_t* value) {
  return guarded([&] {
    need(m, "the module");
    need(name, "the sym name");
    need(value, "the output");
    *value = m->syms->sym(name);
  });
}

etc_status etc_module_tensor_shape(etc_module m, const char* name, int* rank, int64_t shape[ETC_MAX_SHAPE_RANK]) {
  return guarded([&] {
    need(m, "the module");
    need(name, "the tensor name");
    need(rank, "the rank output");
    need(shape, "the shape output");
    int i = m->desc.findTensor(name);
    if (i < 0) fail(ETC_STATUS_NOT_FOUND, std::string("no tensor named '") + name + "'");
    std::vector<int64_t> s = m->syms->tensorShape(static_cast<size_t>(i));
    *rank = static_cast<int>(s.size());
    for (size_t k = 0; k < s.size(); ++k) shape[k] = s[k];
  });
}

etc_status etc_module_workspace_bytes(etc_module m, uint64_t* bytes) {
  return guarded([&] {
    need(m, "the module");
    need(bytes, "the output");
    *bytes = etc::rt::layoutWorkspace(m->desc, *m->syms).total;
  });
}

etc_status etc_module_bind(etc_module m, const char* name, etc_devptr ptr, etc_dtype dtype, int rank, const int64_t* shape) {
  return guarded([&] {
    need(m, "the module");
    need(name, "the tensor name");
    if (rank < 0 || rank > ETC_MAX_SHAPE_RANK) fail(ETC_STATUS_INVALID_ARGUMENT, "rank " + std::to_string(rank) + " is outside [0, 4]");
    if (rank > 0) need(shape, "the shape");
    if (static_cast<unsigned>(dtype) > ETC_DTYPE_U8) fail(ETC_STATUS_INVALID_ARGUMENT, "unknown dtype " + std::to_string(static_cast<int>(dtype)));
    m->syms->bind(name, ptr, dtype, std::vector<int64_t>(shape, shape + rank));
  });
}

etc_status etc_module_unbind(etc_module m, const char* name) {
  return guarded([&] {
    need(m, "the module");
    need(name, "the tensor name");
    m->syms->unbind(name);
  });
}

etc_status etc_module_load_device(etc_module m, int device) {
  return guarded([&] {
    need(m, "the module");
    m->device.reset();
    m->device = std::make_unique<etc::rt::DeviceModule>(m->desc, m->fatbin, m->contents.targets, device);
  });
}

etc_status etc_module_device_info(etc_module m, const char** name, int* major, int* minor) {
  return guarded([&] {
    auto& d = deviceOf(m);
    if (name) *name = d.deviceName().c_str();
    if (major) *major = d.major();
    if (minor) *minor = d.minor();
  });
}

etc_status etc_module_launch(etc_module m, const char* graph, etc_stream stream, const etc_launch_options* options) {
  return guarded([&] {
    const etc_launch_options o = optionsOr(options);
    const size_t g = launchedGraph(m, graph, o);
    deviceOf(m).launch(*m->syms, g, static_cast<CUstream>(stream), o);
  });
}

etc_status etc_module_check_error(etc_module m, etc_stream stream) {
  return guarded([&] { deviceOf(m).checkError(static_cast<CUstream>(stream)); });
}

etc_status etc_module_benchmark(etc_module m, const char* graph, etc_stream stream, const etc_launch_options* options,
                                int warmup, int iters, double* times_us) {
  return guarded([&] {
    const etc_launch_options o = optionsOr(options);
    const size_t g = launchedGraph(m, graph, o);
    auto& d = deviceOf(m);
    need(times_us, "times_us");
    d.benchmark(*m->syms, g, static_cast<CUstream>(stream), o, warmup, iters, times_us);
  });
}

int64_t etc_module_profile_capacity(etc_module m) { return m && m->desc.profile.offset >= 0 ? m->desc.profile.max_records : 0; }

etc_status etc_module_read_profile(etc_module m, etc_stream stream, etc_profile_record* out, size_t capacity,
                                   size_t* written) {
  return guarded([&] {
    auto& d = deviceOf(m);
    need(written, "written");
    if (capacity > 0) need(out, "out");
    *written = d.readProfile(static_cast<CUstream>(stream), out, capacity);
  });
}

etc_status etc_module_mem_alloc(etc_module m, size_t bytes, etc_devptr* out) {
  return guarded([&] {
    auto& d = deviceOf(m);
    need(out, "the output");
    *out = d.alloc(bytes);
  });
}

etc_status etc_module_mem_free(etc_module m, etc_devptr ptr) {
  return guarded([&] { deviceOf(m).free(ptr); });
}

etc_status etc_module_mem_info(etc_module m, size_t* free_bytes, size_t* total_bytes) {
  return guarded([&] {
    auto& d = deviceOf(m);
    need(free_bytes, "the free-bytes output");
    need(total_bytes, "the total-bytes output");
    d.memInfo(free_bytes, total_bytes);
  });
}

etc_status etc_module_memcpy_htod(etc_module m, etc_devptr dst, const void* src, size_t bytes) {
  return guarded([&] {
    auto& d = deviceOf(m);
    need(src, "the source");
    d.copyToDevice(dst, src, bytes);
  });
}

etc_status etc_module_memcpy_dtoh(etc_module m, void* dst, etc_devptr src, size_t bytes) {
  return guarded([&] {
    auto& d = deviceOf(m);
    need(dst, "the destination");
    d.copyToHost(dst, src, bytes);
  });
}

etc_status etc_module_stream_create(etc_module m, etc_stream* out) {
  return guarded([&] {
    auto& d = deviceOf(m);
    need(out, "the output");
    *out = d.createStream();
  });
}

etc_status etc_module_stream_destroy(etc_module m, etc_stream s) {
  return guarded([&] { deviceOf(m).destroyStream(static_cast<CUstream>(s)); });
}

}  // extern "C"
