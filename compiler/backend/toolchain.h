// The device toolchain: CUDA C++ -> PTX with NVRTC, PTX -> cubin with nvJitLink (or CUDA C++ ->
// cubin with NVRTC: whole_program), one target at a time. Every call owns its NVRTC program and
// nvJitLink handle, so etcc may compile several targets at once from different threads.
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
  // The virtual architecture NVRTC compiles for: "compute_90a" for sm_90a and compute_90a.
  std::string virtualArch() const;
  // Accepts sm_XY, sm_XYa, compute_XY and compute_XYa (XY: two or three digits, >= 10).
  static std::optional<Target> parse(std::string_view text);

  bool operator==(const Target&) const = default;
};

// sm_90a cubin, sm_80 cubin, compute_90 PTX (the PTX keeps newer GPUs working).
std::vector<Target> defaultTargets();

struct CompileResult {
  bool ok = false;
  std::string log;             // NVRTC's and nvJitLink's logs (ptxas -v for a cubin); on failure, the reason
  std::vector<uint8_t> image;  // an ELF cubin, or the PTX text (no trailing NUL)
};

// Compiles one CUDA translation unit for one target. `file_name` names the source in
// diagnostics. The etc device headers come from etc::embeddedHeaders(); the toolkit's own
// headers (cuda_bf16.h, mma.h, ...), which NVRTC 13 does not carry built in, come from the
// toolkit found by findCudaToolkit(). `extra_options` go to NVRTC after the defaults
// (-std=c++17 -default-device -arch=compute_XY[a]); "-lineinfo" is also passed to nvJitLink.
//
// whole_program (etcc --whole-program): a cubin from NVRTC itself (-arch=sm_XY[a]), whose ptxas
// sees the whole program, rather than from nvJitLink, whose ptxas compiles the PTX as relocatable
// code. There a kernel's calls are extern calls, and ptxas serializes every wgmma product of a
// kernel that makes any (info C7509; a megakernel calls its attention and row tasks): the full
// Llama-3.2-1B's megakernel has 192 HGMMA in 192 groups from nvJitLink and in 24 groups of 8
// whole. Yet whole it was slower on an H200 below B = 128 (session 58: Llama-3.2-1B B = 1 +5.6%,
// B = 16 +8.9%, B = 128 +2.3%; Qwen3-0.6B +5.7%, +3.8%, -4.8%), its megakernel's code twice as
// large (ptxas copies each called function into every kernel that calls it: the full Llama's
// fatbin 7.4 -> 35.8 MB, its load 15 -> 47 ms) and its compile about twice as long.
CompileResult compileCuda(std::string_view source, std::string_view file_name, const Target& t,
                          const std::vector<std::string>& extra_options = {}, bool whole_program = false);

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
