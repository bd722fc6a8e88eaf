#include "compiler/backend/toolchain.h"

#include <nvrtc.h>

#include <cstdlib>
#include <filesystem>
#include <memory>

#include "compiler/backend/embedded_headers.h"

namespace etc::backend {

// ---- targets ----------------------------------------------------------------------------------

std::string Target::name() const {
  return std::string(kind == Kind::Cubin ? "sm_" : "compute_") + std::to_string(sm) +
         (arch_specific ? "a" : "");
}

std::optional<Target> Target::parse(std::string_view text) {
  Target t;
  if (text.starts_with("sm_")) {
    t.kind = Kind::Cubin;
    text.remove_prefix(3);
  } else if (text.starts_with("compute_")) {
    t.kind = Kind::Ptx;
    text.remove_prefix(8);
  } else {
    return std::nullopt;
  }
  if (text.ends_with('a')) {
    t.arch_specific = true;
    text.remove_suffix(1);
  }
  // Two or three digits, no leading zero: sm_80, sm_90, sm_100, sm_120.
  if (text.size() < 2 || text.size() > 3 || text[0] == '0') return std::nullopt;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    t.sm = t.sm * 10 + (c - '0');
  }
  return t;
}

std::vector<Target> defaultTargets() {
  return {{Target::Kind::Cubin, 90, true}, {Target::Kind::Cubin, 80, false},
          {Target::Kind::Ptx, 90, false}};
}

// ---- the toolkit's headers --------------------------------------------------------------------

CudaToolkit cudaToolkitAt(const std::string& root) {
  namespace fs = std::filesystem;
  CudaToolkit tk;
  tk.root = root;
  std::error_code ec;
  const fs::path include = fs::path(root) / "include";
  // NVRTC 13 has none of these built in; the device headers and generated code use them.
  for (const char* header : {"cuda_fp16.h", "cuda_bf16.h", "mma.h", "cuda_pipeline.h"}) {
    if (!fs::is_regular_file(include / header, ec)) {
      tk.error = "the CUDA toolkit headers were not found: " + (include / header).string() +
                 " does not exist (NVRTC 13 has no built-in " + header +
                 "); set CUDA_HOME to the CUDA toolkit root";
      return tk;
    }
  }
  tk.include_dirs.push_back(include.string());
  // CUDA 13 keeps libcu++ (cuda/std/...), which cuda_fp16.h and friends may include, apart.
  if (fs::is_directory(include / "cccl", ec)) tk.include_dirs.push_back((include / "cccl").string());
  return tk;
}

CudaToolkit findCudaToolkit() {
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
    const char* value = std::getenv(var);
    if (value && *value) {
      CudaToolkit tk = cudaToolkitAt(value);
      if (!tk.error.empty()) tk.error += std::string(" (the root came from $") + var + ")";
      return tk;
    }
  }
  return cudaToolkitAt("/usr/local/cuda");
}

// ---- NVRTC: CUDA C++ -> PTX or cubin ----------------------------------------------------------

namespace {

struct NvrtcProgramDeleter {
  void operator()(nvrtcProgram p) const { nvrtcDestroyProgram(&p); }
};
using NvrtcProgramPtr = std::unique_ptr<std::remove_pointer_t<nvrtcProgram>, NvrtcProgramDeleter>;

std::string nvrtcLog(nvrtcProgram p) {
  size_t size = 0;
  if (nvrtcGetProgramLogSize(p, &size) != NVRTC_SUCCESS || size <= 1) return {};
  std::string log(size, '\0');
  if (nvrtcGetProgramLog(p, log.data()) != NVRTC_SUCCESS) return {};
  log.resize(size - 1);  // the size counts the terminating NUL
  return log;
}

}  // namespace

// A cubin comes from NVRTC itself (-arch=sm_XY), which runs ptxas on the whole program. Through
// nvJitLink (PTX in, as before session 58) ptxas compiled the PTX as a relocatable object, where
// every call is an extern call, and serialized each wgmma product of a kernel that makes any
// (ptxas info C7509; the megakernels' calls of attention and the other tasks): on the full
// Llama-3.2-1B, 192 of 192 HGMMA alone in their groups, against 24 groups of 8 from NVRTC.
// --ptxas-options=-v puts ptxas's per-kernel report (registers, stack frame, spills) in the
// program's log, which the resource report reads the spills from (the cubin does not record them).
CompileResult compileCuda(std::string_view source, std::string_view file_name, const Target& t,
                          const std::vector<std::string>& extra_options) {
  CompileResult result;
  const CudaToolkit toolkit = findCudaToolkit();

  std::vector<const char*> header_texts, header_names;
  std::vector<std::string> owned;  // NUL-terminated copies: NVRTC takes C strings
  const auto& headers = embeddedHeaders();
  owned.reserve(2 * headers.size() + 3);
  for (const EmbeddedHeader& h : headers) {
    owned.emplace_back(h.text);
    header_texts.push_back(owned.back().c_str());
    owned.emplace_back(h.name);
    header_names.push_back(owned.back().c_str());
  }
  const std::string src(source), name(file_name);

  nvrtcProgram raw = nullptr;
  nvrtcResult r = nvrtcCreateProgram(&raw, src.c_str(), name.c_str(), int(header_texts.size()),
                                     header_texts.data(), header_names.data());
  if (r != NVRTC_SUCCESS) {
    result.log = std::string("NVRTC could not create the program: ") + nvrtcGetErrorString(r);
    return result;
  }
  NvrtcProgramPtr program(raw);

  const bool cubin = t.kind == Target::Kind::Cubin;
  std::vector<std::string> options = {"-std=c++17", "-default-device", "-arch=" + t.name()};
  if (cubin) options.push_back("--ptxas-options=-v");
  for (const std::string& dir : toolkit.include_dirs) options.push_back("-I" + dir);
  options.insert(options.end(), extra_options.begin(), extra_options.end());
  std::vector<const char*> argv;
  for (const std::string& o : options) argv.push_back(o.c_str());

  r = nvrtcCompileProgram(raw, int(argv.size()), argv.data());
  result.log = nvrtcLog(raw);
  if (r != NVRTC_SUCCESS) {
    if (result.log.empty()) result.log = std::string("NVRTC failed: ") + nvrtcGetErrorString(r) + "\n";
    // The likeliest cause of a failed #include <cuda_bf16.h>: say so next to NVRTC's words.
    if (!toolkit.error.empty()) result.log += "note: " + toolkit.error + "\n";
    return result;
  }
  size_t size = 0;
  r = cubin ? nvrtcGetCUBINSize(raw, &size) : nvrtcGetPTXSize(raw, &size);
  if (r != NVRTC_SUCCESS || size == 0) {
    result.log += std::string("NVRTC compiled the program but returned no ") + (cubin ? "cubin" : "PTX") + "\n";
    return result;
  }
  result.image.resize(size);
  r = cubin ? nvrtcGetCUBIN(raw, reinterpret_cast<char*>(result.image.data()))
            : nvrtcGetPTX(raw, reinterpret_cast<char*>(result.image.data()));
  if (r != NVRTC_SUCCESS) {
    result.log += std::string("NVRTC compiled the program but could not hand out its ") + (cubin ? "cubin" : "PTX") + "\n";
    result.image.clear();
    return result;
  }
  if (!cubin)
    while (!result.image.empty() && result.image.back() == 0) result.image.pop_back();
  result.ok = true;
  return result;
}

}  // namespace etc::backend
