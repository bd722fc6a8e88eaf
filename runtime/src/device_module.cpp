#include "device_module.h"
#include "tensor_maps.h"

#include <algorithm>

#include "error_record.h"
#include "params.h"
#include "rt_error.h"

namespace etc::rt {
namespace {

constexpr unsigned kDefaultSmemLimit = 48 * 1024;  // above it a kernel must opt in
constexpr size_t kMaxCapturedGraphs = 64;          // unfused-graph cache; cleared when full

// Makes the module's context current for the scope and restores the caller's afterwards.
class ScopedContext {
 public:
  ScopedContext(const CudaDriver& cu, CUcontext ctx) : cu_(cu) { check(cu_, cu_.cuCtxPushCurrent(ctx), "cuCtxPushCurrent"); }
  ~ScopedContext() {
    CUcontext popped;
    cu_.cuCtxPopCurrent(&popped);
  }

 private:
  const CudaDriver& cu_;
};

}  // namespace

DeviceModule::DeviceModule(const Descriptor& d, std::span<const uint8_t> fatbin, const std::vector<CodeTarget>& targets,
                           int device)
    : d_(d), cu_(cudaDriver()) {
  int count = 0;
  check(cu_, cu_.cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (device < 0 || device >= count)
    fail(ETC_STATUS_NO_DEVICE, "no CUDA device " + std::to_string(device) + " (there are " + std::to_string(count) + ")");
  check(cu_, cu_.cuDeviceGet(&dev_, device), "cuDeviceGet");
  char name[256] = {};
  check(cu_, cu_.cuDeviceGetName(name, sizeof name, dev_), "cuDeviceGetName");
  device_name_ = name;
  check(cu_, cu_.cuDeviceGetAttribute(&major_, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev_), "cuDeviceGetAttribute");
  check(cu_, cu_.cuDeviceGetAttribute(&minor_, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev_), "cuDeviceGetAttribute");
  check(cu_, cu_.cuDeviceGetAttribute(&sms_, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev_), "cuDeviceGetAttribute");
  requireCodeFor(targets, major_, minor_);
  int coop = 0;
  check(cu_, cu_.cuDeviceGetAttribute(&coop, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, dev_), "cuDeviceGetAttribute");
  if (!coop) fail(ETC_STATUS_NO_DEVICE, device_name_ + " does not support cooperative launches, which the megakernel needs");
  limits_ = deviceLimits();

  check(cu_, cu_.cuDevicePrimaryCtxRetain(&ctx_, dev_), "cuDevicePrimaryCtxRetain");
  try {
    ScopedContext scope(cu_, ctx_);
    check(cu_, cu_.cuModuleLoadData(&mod_, fatbin.data()), "cuModuleLoadData");
    check(cu_, cu_.cuStreamCreate(&capture_stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    for (const GraphDesc& g : d_.graphs) {
      GraphKernels gk;
      for (const KernelDesc& k : g.megas) gk.megas.push_back(loadMega(k));
      gk.ctas = gk.megas.front().ctas;
      graphs_.push_back(std::move(gk));
    }
  } catch (...) {
    if (capture_stream_) cu_.cuStreamDestroy(capture_stream_);
    if (mod_) cu_.cuModuleUnload(mod_);
    cu_.cuDevicePrimaryCtxRelease(dev_);
    throw;
  }
}

DeviceModule::~DeviceModule() {
  // Errors are ignored: a destructor cannot report them, and a sticky context error would
  // make every call here fail anyway.
  CUcontext popped;
  if (cu_.cuCtxPushCurrent(ctx_) == CUDA_SUCCESS) {
    cu_.cuCtxSynchronize();
    releaseCaptured();
    if (ws_) cu_.cuMemFree(ws_);
    if (tmaps_) cu_.cuMemFree(tmaps_);
    if (capture_stream_) cu_.cuStreamDestroy(capture_stream_);
    if (mod_) cu_.cuModuleUnload(mod_);
    cu_.cuCtxPopCurrent(&popped);
  }
  cu_.cuDevicePrimaryCtxRelease(dev_);
}

DeviceLimits DeviceModule::deviceLimits() const {
  auto attribute = [&](CUdevice_attribute a, const char* name) -> int64_t {
    int v = 0;
    check(cu_, cu_.cuDeviceGetAttribute(&v, a, dev_), (std::string("cuDeviceGetAttribute(") + name + ")").c_str());
    return v;
  };
  DeviceLimits d;
  d.name = device_name_ + " (sm_" + std::to_string(major_ * 10 + minor_) + ")";
  d.smem_per_block_optin = attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN");
  d.smem_per_sm = attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR");
  d.reserved_smem_per_block = attribute(CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, "RESERVED_SHARED_MEMORY_PER_BLOCK");
  d.regs_per_sm = attribute(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, "MAX_REGISTERS_PER_MULTIPROCESSOR");
  d.regs_per_thread = 255;  // no attribute: the same on every architecture since Kepler
  d.threads_per_block = attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "MAX_THREADS_PER_BLOCK");
  d.threads_per_sm = attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, "MAX_THREADS_PER_MULTIPROCESSOR");
  d.blocks_per_sm = attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, "MAX_BLOCKS_PER_MULTIPROCESSOR");
  return d;
}

int64_t DeviceModule::funcAttribute(CUfunction fn, CUfunction_attribute a, const char* name) const {
  int v = 0;
  check(cu_, cu_.cuFuncGetAttribute(&v, a, fn), (std::string("cuFuncGetAttribute(") + name + ")").c_str());
  return v;
}

// A megakernel and its CTA count (occupancy * SMs). All of a graph's megakernels are looked up
// at load time, one per sym range with etcc --specialize: looking one up in a launch would read
// its shared-memory size with a synchronous copy, which a stream being captured forbids.
DeviceModule::Kernel DeviceModule::loadMega(const KernelDesc& kd) {
  Kernel k = loadKernel(kd);
  int per_sm = 0;
  check(cu_, cu_.cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k.fn, static_cast<int>(k.threads), k.smem),
        "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  if (per_sm < 1)
    fail(ETC_STATUS_CUDA, "kernel " + kd.name + ": the driver fits not one CTA of " + std::to_string(k.threads) +
                              " threads and " + std::to_string(k.smem) + " bytes of dynamic shared memory on an SM of " +
                              device_name_ + " (etc's own estimate: " + std::to_string(k.ctas_per_sm) +
                              " CTAs, limited by " + k.limiter + "): recompile the module with etcc for this GPU");
  k.ctas = static_cast<unsigned>(per_sm) * static_cast<unsigned>(sms_);
  // A dynamic schedule's queue has room for one END word per CTA, up to max_ctas.
  if (kd.max_ctas > 0 && k.ctas > kd.max_ctas) k.ctas = static_cast<unsigned>(kd.max_ctas);
  return k;
}

// The unfused kernels are looked up on first use. The driver loads a function's code when it is
// first looked up (lazy loading, the default since CUDA 12.2), and a decode model has hundreds
// of unfused kernels that a megakernel run never launches: looking them all up at load time was
// most of the warm-up.
void DeviceModule::loadUnfused(size_t graph) {
  GraphKernels& gk = graphs_[graph];
  if (gk.unfused_loaded) return;
  std::vector<Kernel> kernels;
  for (const KernelDesc& k : d_.graphs[graph].unfused) kernels.push_back(loadKernel(k));
  gk.unfused = std::move(kernels);
  gk.unfused_loaded = true;
}

DeviceModule::Kernel DeviceModule::loadKernel(const KernelDesc& k) {
  Kernel out;
  check(cu_, cu_.cuModuleGetFunction(&out.fn, mod_, k.name.c_str()), ("cuModuleGetFunction(" + k.name + ")").c_str());
  out.threads = static_cast<unsigned>(k.threads);
  // The kernel's dynamic shared memory, read once from its `<kernel>_smem` device global.
  const std::string global = k.name + "_smem";
  CUdeviceptr p = 0;
  size_t bytes = 0;
  check(cu_, cu_.cuModuleGetGlobal(&p, &bytes, mod_, global.c_str()), ("cuModuleGetGlobal(" + global + ")").c_str());
  if (bytes != sizeof(unsigned)) fail(ETC_STATUS_BAD_FATBIN, global + " is " + std::to_string(bytes) + " bytes, expected 4");
  check(cu_, cu_.cuMemcpyDtoH(&out.smem, p, sizeof(unsigned)), ("cuMemcpyDtoH(" + global + ")").c_str());
  // Registers, shared memory and threads against the device, before the driver is asked to
  // launch: its own error (CUDA_ERROR_INVALID_VALUE) would not say which limit or what to do.
  KernelUsage use;
  use.kernel = k.name;
  use.threads = k.threads;
  use.dynamic_smem = out.smem;
  use.registers = funcAttribute(out.fn, CU_FUNC_ATTRIBUTE_NUM_REGS, "NUM_REGS");
  use.static_smem = funcAttribute(out.fn, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, "SHARED_SIZE_BYTES");
  use.local_bytes = funcAttribute(out.fn, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, "LOCAL_SIZE_BYTES");
  use.max_threads = funcAttribute(out.fn, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "MAX_THREADS_PER_BLOCK");
  const KernelFit fit = requireFit(limits_, use);
  out.ctas_per_sm = fit.ctas_per_sm;
  out.limiter = fit.limiter;
  // Above 48 KiB in all (static + dynamic) a kernel must opt in to its dynamic share.
  if (use.static_smem + use.dynamic_smem > kDefaultSmemLimit) {
    check(cu_, cu_.cuFuncSetAttribute(out.fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(out.smem)),
          ("cuFuncSetAttribute(" + k.name + ", MAX_DYNAMIC_SHARED_SIZE_BYTES)").c_str());
  }
  return out;
}

void DeviceModule::releaseCaptured() {
  for (auto& [key, c] : captured_) {
    if (c.exec) cu_.cuGraphExecDestroy(c.exec);
    if (c.graph) cu_.cuGraphDestroy(c.graph);
  }
  captured_.clear();
}

void DeviceModule::ensureWorkspace(uint64_t bytes) {
  if (bytes <= ws_bytes_) return;
  // The old workspace may still be in use by a launch in flight.
  check(cu_, cu_.cuCtxSynchronize(), "cuCtxSynchronize");
  releaseCaptured();  // they point into the old workspace
  if (ws_) check(cu_, cu_.cuMemFree(ws_), "cuMemFree(workspace)");
  ws_ = 0;
  ws_bytes_ = 0;
  check(cu_, cu_.cuMemAlloc(&ws_, bytes), ("cuMemAlloc(workspace, " + std::to_string(bytes) + " bytes)").c_str());
  ws_bytes_ = bytes;
}

void DeviceModule::enqueue(const GraphKernels& g, const std::vector<unsigned char>& params, CUstream s, int mega) {
  // The error record and the event counters in one memset: they are the workspace's first bytes
  // (layoutWorkspace), and each memset is a node of its own on the stream, before the kernel.
  static_assert(sizeof(EtcError) % 4 == 0);
  const uint64_t cleared = layout_.events_offset + layout_.events_bytes;
  if (layout_.error_offset != 0 || layout_.events_offset < sizeof(EtcError))
    fail(ETC_STATUS_INTERNAL, "the workspace does not start with the error record and the event counters");
  check(cu_, cu_.cuMemsetD32Async(ws_, 0, cleared / 4, s), "cuMemsetD32Async(error record, event counters)");
  void* args[] = {const_cast<unsigned char*>(params.data())};
  if (mega >= 0) {
    const Kernel& k = g.megas[static_cast<size_t>(mega)];
    check(cu_, cu_.cuLaunchCooperativeKernel(k.fn, k.ctas, 1, 1, k.threads, 1, 1, k.smem, s, args),
          "cuLaunchCooperativeKernel");
    return;
  }
  for (const Kernel& k : g.unfused)
    check(cu_, cu_.cuLaunchKernel(k.fn, g.ctas, 1, 1, k.threads, 1, 1, k.smem, s, args, nullptr), "cuLaunchKernel");
}

void DeviceModule::launch(const SymState& st, size_t graph, CUstream stream, const etc_launch_options& opt) {
  const int64_t watchdog = opt.watchdog_ns > 0 ? opt.watchdog_ns : ETC_DEFAULT_WATCHDOG_NS;
  ScopedContext scope(cu_, ctx_);
  PlanKey key{&st, st.version(), watchdog, opt.flags, ws_};
  if (!(launched_ && key == plan_key_)) {
    std::vector<int64_t> syms = st.symValues();
    st.checkBindings();
    WorkspaceLayout layout = layoutWorkspace(d_, st);
    ensureWorkspace(layout.total);
    layout_ = std::move(layout);
    uint64_t tmaps = 0;
    if (major_ >= 9) plan_tmaps_ = encodeTensorMaps(cu_, d_, st);
    if (!plan_tmaps_.empty()) {
      const size_t bytes = plan_tmaps_.size() * sizeof(CUtensorMap);
      if (!tmaps_) check(cu_, cu_.cuMemAlloc(&tmaps_, bytes), "cuMemAlloc(tensor maps)");
      // In stream order before the launch: a stream being captured takes the copy as a node.
      check(cu_, cu_.cuMemcpyHtoDAsync(tmaps_, plan_tmaps_.data(), bytes, stream), "cuMemcpyHtoDAsync(tensor maps)");
      tmaps = tmaps_;
    }
    plan_params_ = launchParams(d_, st, syms, layout_, ws_, watchdog, opt.flags, tmaps);
    plan_megas_.clear();
    for (const GraphDesc& gd : d_.graphs) plan_megas_.push_back(gd.megaFor(syms));
    last_syms_ = std::move(syms);
    key.ws = ws_;  // ensureWorkspace may have moved it
    plan_key_ = key;
  }
  const std::vector<unsigned char>& params = plan_params_;
  if (opt.mode != ETC_MODE_MEGA) loadUnfused(graph);  // before a capture begins
  const GraphKernels& g = graphs_[graph];

  switch (opt.mode) {
    case ETC_MODE_MEGA:
      enqueue(g, params, stream, static_cast<int>(plan_megas_[graph]));
      break;
    case ETC_MODE_UNFUSED:
      enqueue(g, params, stream, -1);
      break;
    case ETC_MODE_UNFUSED_GRAPH: {
      auto key = std::make_pair(graph, params);
      auto it = captured_.find(key);
      if (it == captured_.end()) {
        if (captured_.size() >= kMaxCapturedGraphs) {
          check(cu_, cu_.cuCtxSynchronize(), "cuCtxSynchronize");
          releaseCaptured();
        }
        // Captured on the module's own stream, so the caller's stream is never in capture
        // mode, then replayed on the caller's stream.
        Captured c;
        check(cu_, cu_.cuStreamBeginCapture(capture_stream_, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), "cuStreamBeginCapture");
        try {
          enqueue(g, params, capture_stream_, -1);
        } catch (...) {
          CUgraph discard = nullptr;
          cu_.cuStreamEndCapture(capture_stream_, &discard);
          if (discard) cu_.cuGraphDestroy(discard);
          throw;
        }
        check(cu_, cu_.cuStreamEndCapture(capture_stream_, &c.graph), "cuStreamEndCapture");
        CUresult r = cu_.cuGraphInstantiate(&c.exec, c.graph, 0);
        if (r != CUDA_SUCCESS) {
          cu_.cuGraphDestroy(c.graph);
          check(cu_, r, "cuGraphInstantiate");
        }
        it = captured_.emplace(std::move(key), c).first;
      }
      check(cu_, cu_.cuGraphLaunch(it->second.exec, stream), "cuGraphLaunch");
      break;
    }
    default:
      fail(ETC_STATUS_INVALID_ARGUMENT, "unknown launch mode " + std::to_string(static_cast<int>(opt.mode)));
  }
  launched_ = true;
}

void DeviceModule::checkError(CUstream stream) {
  ScopedContext scope(cu_, ctx_);
  check(cu_, cu_.cuStreamSynchronize(stream), "cuStreamSynchronize");
  if (!launched_) return;
  EtcError rec{};
  check(cu_, cu_.cuMemcpyDtoH(&rec, ws_ + layout_.error_offset, sizeof rec), "cuMemcpyDtoH(error record)");
  if (rec.code != ETC_ERR_NONE) fail(ETC_STATUS_KERNEL, describeError(rec, d_, last_syms_));
}

uint64_t DeviceModule::readProfile(CUstream stream, EtcProfileRecord* out, uint64_t capacity) {
  if (d_.profile.offset < 0) fail(ETC_STATUS_INVALID_ARGUMENT, "the fatbin has no timeline records: compile it with etcc --profile");
  ScopedContext scope(cu_, ctx_);
  check(cu_, cu_.cuStreamSynchronize(stream), "cuStreamSynchronize");
  if (!launched_) return 0;
  const CUdeviceptr area = ws_ + layout_.events_offset + 4 * static_cast<uint64_t>(d_.profile.offset);
  unsigned int written = 0;
  check(cu_, cu_.cuMemcpyDtoH(&written, area, sizeof written), "cuMemcpyDtoH(profile count)");
  uint64_t n = std::min<uint64_t>({written, static_cast<uint64_t>(d_.profile.max_records), capacity});
  if (n > 0) check(cu_, cu_.cuMemcpyDtoH(out, area + 8, n * sizeof(EtcProfileRecord)), "cuMemcpyDtoH(profile records)");
  return written;
}

void DeviceModule::benchmark(const SymState& st, size_t graph, CUstream stream, const etc_launch_options& opt, int warmup,
                             int iters, double* times_us) {
  if (iters < 1 || warmup < 0) fail(ETC_STATUS_INVALID_ARGUMENT, "benchmark: iters must be >= 1 and warmup >= 0");
  for (int i = 0; i < warmup; ++i) launch(st, graph, stream, opt);
  checkError(stream);  // also builds the workspace and, for unfused-graph, the captured graph
  ScopedContext scope(cu_, ctx_);
  std::vector<CUevent> events(static_cast<size_t>(iters) + 1, nullptr);
  auto destroy = [&] {
    for (CUevent e : events)
      if (e) cu_.cuEventDestroy(e);
  };
  try {
    for (CUevent& e : events) check(cu_, cu_.cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate");
    check(cu_, cu_.cuEventRecord(events[0], stream), "cuEventRecord");
    for (int i = 0; i < iters; ++i) {
      launch(st, graph, stream, opt);
      check(cu_, cu_.cuEventRecord(events[i + 1], stream), "cuEventRecord");
    }
    check(cu_, cu_.cuEventSynchronize(events.back()), "cuEventSynchronize");
    for (int i = 0; i < iters; ++i) {
      float ms = 0;
      check(cu_, cu_.cuEventElapsedTime(&ms, events[i], events[i + 1]), "cuEventElapsedTime");
      times_us[i] = 1000.0 * ms;
    }
  } catch (...) {
    destroy();
    throw;
  }
  destroy();
  checkError(stream);
}

CUdeviceptr DeviceModule::alloc(size_t bytes) {
  ScopedContext scope(cu_, ctx_);
  CUdeviceptr p = 0;
  check(cu_, cu_.cuMemAlloc(&p, std::max<size_t>(bytes, 1)), ("cuMemAlloc(" + std::to_string(bytes) + " bytes)").c_str());
  return p;
}

void DeviceModule::memInfo(size_t* free_bytes, size_t* total_bytes) {
  ScopedContext scope(cu_, ctx_);
  check(cu_, cu_.cuMemGetInfo(free_bytes, total_bytes), "cuMemGetInfo");
}

void DeviceModule::free(CUdeviceptr p) {
  ScopedContext scope(cu_, ctx_);
  check(cu_, cu_.cuMemFree(p), "cuMemFree");
}

void DeviceModule::copyToDevice(CUdeviceptr dst, const void* src, size_t bytes) {
  ScopedContext scope(cu_, ctx_);
  check(cu_, cu_.cuMemcpyHtoD(dst, src, bytes), "cuMemcpyHtoD");
}

void DeviceModule::copyToHost(void* dst, CUdeviceptr src, size_t bytes) {
  ScopedContext scope(cu_, ctx_);
  check(cu_, cu_.cuMemcpyDtoH(dst, src, bytes), "cuMemcpyDtoH");
}

CUstream DeviceModule::createStream() {
  ScopedContext scope(cu_, ctx_);
  CUstream s = nullptr;
  check(cu_, cu_.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  return s;
}

void DeviceModule::destroyStream(CUstream s) {
  ScopedContext scope(cu_, ctx_);
  check(cu_, cu_.cuStreamDestroy(s), "cuStreamDestroy");
}

}  // namespace etc::rt
