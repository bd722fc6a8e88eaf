// The device toolchain: CUDA C++ -> PTX or cubin with NVRTC, one target at a time. Every call
// owns its NVRTC program, so etcc may compile several targets at once from different threads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace etc::backend {

struct Target {
  enum class Kind { Cubin, Ptx };
  Kind kind = Kind::Cubin;
  int sm = 0;                  // 90 for sm_90a / compute_90
  bool arch_specific = false;  // the 'a' suffix: code that runs on exactly this architecture

  // "sm_90a", "sm_80", "compute_90".
  std::string name() const;
  // Accepts sm_XY, sm_XYa, compute_XY and compute_XYa (XY: two or three digits, >= 10).
  static std::optional<Target> parse(std::string_view text);

  bool operator==(const Target&) const = default;
};

// sm_90a cubin, sm_80 cubin, compute_90 PTX (the PTX keeps newer GPUs working).
std::vector<Target> defaultTargets();

struct CompileResult {
  bool ok = false;
  std::string log;             // NVRTC's log (with ptxas's verbose report for a cubin); on failure, the reason
  std::vector<uint8_t> image;  // an ELF cubin, or the PTX text (no trailing NUL)
};

// Compiles one CUDA translation unit for one target. `file_name` names the source in
// diagnostics. The etc device headers come from etc::embeddedHeaders(); the toolkit's own
// headers (cuda_bf16.h, mma.h, ...), which NVRTC 13 does not carry built in, come from the
// toolkit found by findCudaToolkit(). `extra_options` go to NVRTC after the defaults
// (-std=c++17 -default-device -arch=<the target's name>, and --ptxas-options=-v for a cubin).
CompileResult compileCuda(std::string_view source, std::string_view file_name, const Target& t,
                          const std::vector<std::string>& extra_options = {});

// The CUDA toolkit whose headers NVRTC needs. The root is $CUDA_HOME if set, else $CUDA_PATH
// if set, else /usr/local/cuda: an explicitly named toolkit is never silently replaced by
// another one.
struct CudaToolkit {
  std::string root;
  std::vector<std::string> include_dirs;  // root/include, plus root/include/cccl when present
  std::string error;                      // set (and include_dirs empty) when unusable
};
CudaToolkit findCudaToolkit();
// The same lookup for a given root, so that tests need not touch the environment.
CudaToolkit cudaToolkitAt(const std::string& root);

}  // namespace etc::backend
