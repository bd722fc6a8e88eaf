// The GPU side of a module: the loaded CUmodule in the device's primary context, its kernels
// with their launch shapes, the workspace, and the three launch modes.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "code_target.h"
#include "cuda_driver.h"
#include "etc/abi.h"
#include "descriptor.h"
#include "resource_fit.h"
#include "sym_state.h"
#include "workspace.h"

namespace etc::rt {

class DeviceModule {
 public:
  // Checks the fatbin has code for the device before loading it.
  DeviceModule(const Descriptor& d, std::span<const uint8_t> fatbin, const std::vector<CodeTarget>& targets, int device);
  ~DeviceModule();
  DeviceModule(const DeviceModule&) = delete;
  DeviceModule& operator=(const DeviceModule&) = delete;

  const std::string& deviceName() const { return device_name_; }
  int major() const { return major_; }
  int minor() const { return minor_; }

  void launch(const SymState& st, size_t graph, CUstream stream, const etc_launch_options& opt);
  void checkError(CUstream stream);
  // etcc --profile: synchronises the stream and copies up to `capacity` records of the last
  // launch; returns how many records the kernel wrote (more than max_records means some were dropped).
  uint64_t readProfile(CUstream stream, EtcProfileRecord* out, uint64_t capacity);
  void benchmark(const SymState& st, size_t graph, CUstream stream, const etc_launch_options& opt, int warmup,
                 int iters, double* times_us);

  CUdeviceptr alloc(size_t bytes);
  void memInfo(size_t* free_bytes, size_t* total_bytes);
  void free(CUdeviceptr p);
  void copyToDevice(CUdeviceptr dst, const void* src, size_t bytes);
  void copyToHost(void* dst, CUdeviceptr src, size_t bytes);
  CUstream createStream();
  void destroyStream(CUstream s);

 private:
  struct Kernel {
    CUfunction fn = nullptr;
    unsigned threads = 0;
    unsigned smem = 0;
    int64_t ctas_per_sm = 0;  // etc's estimate (resource_fit), for messages
    std::string limiter;
    unsigned ctas = 0;  // megakernels: the CTAs a launch has (occupancy * SMs, loadMega)
  };
  struct GraphKernels {
    std::vector<Kernel> megas;  // one, or one per sym range (etcc --specialize), at load time
    std::vector<Kernel> unfused;  // loaded by loadUnfused, on the first launch that needs them
    bool unfused_loaded = false;
    unsigned ctas = 0;  // the first megakernel's CTA count, which the unfused kernels use too
  };
  struct Captured {
    CUgraph graph = nullptr;
    CUgraphExec exec = nullptr;
  };

  Kernel loadKernel(const KernelDesc& k);
  void loadUnfused(size_t graph);
  Kernel loadMega(const KernelDesc& k);
  DeviceLimits deviceLimits() const;
  int64_t funcAttribute(CUfunction fn, CUfunction_attribute a, const char* name) const;
  void ensureWorkspace(uint64_t bytes);
  // mega: the index of the megakernel to launch, or -1 for the unfused kernels.
  void enqueue(const GraphKernels& g, const std::vector<unsigned char>& params, CUstream s, int mega);
  void releaseCaptured();

  const Descriptor& d_;
  const CudaDriver& cu_;
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
  CUmodule mod_ = nullptr;
  CUstream capture_stream_ = nullptr;
  std::string device_name_;
  int major_ = 0, minor_ = 0, sms_ = 0;
  DeviceLimits limits_;  // what a CTA may use on this device, checked for every kernel
  std::vector<GraphKernels> graphs_;
  CUdeviceptr ws_ = 0;
  uint64_t ws_bytes_ = 0;
  WorkspaceLayout layout_;
  std::vector<int64_t> last_syms_;  // of the last launch, to name the error record's element
  bool launched_ = false;
  // What the last launch derived from the host state (the bindings checked, every shape, the
  // workspace layout, the parameter block): a decode loop launches with the same syms and
  // bindings step after step, and rebuilding them took longer than the GPU's launch.
  struct PlanKey {
    const SymState* st = nullptr;
    uint64_t version = 0;
    int64_t watchdog = 0;
    unsigned flags = 0;
    CUdeviceptr ws = 0;
    bool operator==(const PlanKey&) const = default;
  };
  PlanKey plan_key_;
  std::vector<unsigned char> plan_params_;
  // The weights' TMA tensor maps of the plan's bindings (tensor_maps.h), and their device copy
  // (EtcParams.tmaps; 0 where there are none or the device has no TMA).
  std::vector<CUtensorMap> plan_tmaps_;
  CUdeviceptr tmaps_ = 0;
  std::vector<size_t> plan_megas_;  // per graph: the megakernel for the plan's syms (megaFor)
  // unfused-graph: one captured graph per parameter block (syms, pointers, watchdog, flags).
  std::map<std::pair<size_t, std::vector<unsigned char>>, Captured> captured_;
};

}  // namespace etc::rt
