#include "compiler/backend/toolchain.h"

#include <nvJitLink.h>
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

std::string Target::virtualArch() const {
  return "compute_" + std::to_string(sm) + (arch_specific ? "a" : "");
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

// ---- NVRTC: CUDA C++ -> PTX (or a cubin) ------------------------------------------------------

namespace {

struct NvrtcProgramDeleter {
  void operator()(nvrtcProgram p) const { nvrtcDestroyProgram(&p); }
};
using NvrtcProgramPtr = std::unique_ptr<std::remove_pointer_t<nvrtcProgram>, NvrtcProgramDeleter>;

struct NvJitLinkDeleter {
  void operator()(nvJitLinkHandle h) const { nvJitLinkDestroy(&h); }
};
using NvJitLinkPtr = std::unique_ptr<std::remove_pointer_t<nvJitLinkHandle>, NvJitLinkDeleter>;

bool hasOption(const std::vector<std::string>& options, std::string_view a, std::string_view b) {
  for (const std::string& o : options)
    if (o == a || o == b) return true;
  return false;
}

std::string nvrtcLog(nvrtcProgram p) {
  size_t size = 0;
  if (nvrtcGetProgramLogSize(p, &size) != NVRTC_SUCCESS || size <= 1) return {};
  std::string log(size, '\0');
  if (nvrtcGetProgramLog(p, log.data()) != NVRTC_SUCCESS) return {};
  log.resize(size - 1);  // the size counts the terminating NUL
  return log;
}

// Compiles for `arch`: PTX for a virtual architecture (compute_XY), a cubin for a real one (sm_XY,
// NVRTC's ptxas on the whole program, its -v report in the log). `image` gets the bytes (PTX
// without its NUL).
bool nvrtcCompile(std::string_view source, std::string_view file_name, const std::string& arch, bool cubin,
                  const std::vector<std::string>& extra_options, std::vector<uint8_t>& image, std::string& log) {
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
    log = std::string("NVRTC could not create the program: ") + nvrtcGetErrorString(r);
    return false;
  }
  NvrtcProgramPtr program(raw);

  std::vector<std::string> options = {"-std=c++17", "-default-device", "-arch=" + arch};
  if (cubin) options.push_back("--ptxas-options=-v");
  for (const std::string& dir : toolkit.include_dirs) options.push_back("-I" + dir);
  options.insert(options.end(), extra_options.begin(), extra_options.end());
  std::vector<const char*> argv;
  for (const std::string& o : options) argv.push_back(o.c_str());

  r = nvrtcCompileProgram(raw, int(argv.size()), argv.data());
  log = nvrtcLog(raw);
  if (r != NVRTC_SUCCESS) {
    if (log.empty()) log = std::string("NVRTC failed: ") + nvrtcGetErrorString(r) + "\n";
    // The likeliest cause of a failed #include <cuda_bf16.h>: say so next to NVRTC's words.
    if (!toolkit.error.empty()) log += "note: " + toolkit.error + "\n";
    return false;
  }
  const char* what = cubin ? "cubin" : "PTX";
  size_t size = 0;
  r = cubin ? nvrtcGetCUBINSize(raw, &size) : nvrtcGetPTXSize(raw, &size);
  if (r != NVRTC_SUCCESS || size == 0) {
    log += std::string("NVRTC compiled the program but returned no ") + what + "\n";
    return false;
  }
  image.resize(size);
  r = cubin ? nvrtcGetCUBIN(raw, reinterpret_cast<char*>(image.data()))
            : nvrtcGetPTX(raw, reinterpret_cast<char*>(image.data()));
  if (r != NVRTC_SUCCESS) {
    log += std::string("NVRTC compiled the program but could not hand out its ") + what + "\n";
    image.clear();
    return false;
  }
  if (!cubin)
    while (!image.empty() && image.back() == 0) image.pop_back();
  return true;
}

// ---- nvJitLink: PTX -> cubin ------------------------------------------------------------------

std::string jitLinkLog(nvJitLinkHandle h, bool errors) {
  size_t size = 0;
  nvJitLinkResult r = errors ? nvJitLinkGetErrorLogSize(h, &size) : nvJitLinkGetInfoLogSize(h, &size);
  if (r != NVJITLINK_SUCCESS || size <= 1) return {};
  std::string log(size, '\0');
  r = errors ? nvJitLinkGetErrorLog(h, log.data()) : nvJitLinkGetInfoLog(h, log.data());
  if (r != NVJITLINK_SUCCESS) return {};
  log.resize(size - 1);
  return log;
}

bool linkToCubin(const std::vector<uint8_t>& ptx, std::string_view file_name, const Target& t,
                 bool lineinfo, std::vector<uint8_t>& cubin, std::string& log) {
  // -verbose: ptxas's per-kernel report (registers, stack frame, spills) in the info log, which
  // the resource report reads the spills from (the cubin does not record them).
  std::vector<std::string> options = {"-arch=" + t.name(), "-verbose"};
  if (lineinfo) options.push_back("-lineinfo");
  std::vector<const char*> argv;
  for (const std::string& o : options) argv.push_back(o.c_str());

  nvJitLinkHandle raw = nullptr;
  nvJitLinkResult r = nvJitLinkCreate(&raw, uint32_t(argv.size()), argv.data());
  if (r != NVJITLINK_SUCCESS) {
    log += "nvJitLink could not start a link for " + t.name() + " (error " + std::to_string(r) + ")\n";
    return false;
  }
  NvJitLinkPtr link(raw);
  const std::string input_name = std::string(file_name) + ".ptx";
  r = nvJitLinkAddData(raw, NVJITLINK_INPUT_PTX, ptx.data(), ptx.size(), input_name.c_str());
  if (r == NVJITLINK_SUCCESS) r = nvJitLinkComplete(raw);
  const std::string errors = jitLinkLog(raw, true), info = jitLinkLog(raw, false);
  log += info;
  if (r != NVJITLINK_SUCCESS) {
    log += errors.empty() ? "nvJitLink failed for " + t.name() + " (error " + std::to_string(r) + ")\n"
                          : errors;
    return false;
  }
  size_t size = 0;
  if (nvJitLinkGetLinkedCubinSize(raw, &size) != NVJITLINK_SUCCESS || size == 0) {
    log += "nvJitLink linked " + t.name() + " but returned no cubin\n";
    return false;
  }
  cubin.resize(size);
  if (nvJitLinkGetLinkedCubin(raw, cubin.data()) != NVJITLINK_SUCCESS) {
    log += "nvJitLink linked " + t.name() + " but could not hand out the cubin\n";
    return false;
  }
  return true;
}

}  // namespace

CompileResult compileCuda(std::string_view source, std::string_view file_name, const Target& t,
                          const std::vector<std::string>& extra_options, bool whole_program) {
  CompileResult result;
  if (t.kind == Target::Kind::Cubin && whole_program) {
    result.ok = nvrtcCompile(source, file_name, t.name(), true, extra_options, result.image, result.log);
    return result;
  }
  std::vector<uint8_t> ptx;
  if (!nvrtcCompile(source, file_name, t.virtualArch(), false, extra_options, ptx, result.log)) return result;
  if (t.kind == Target::Kind::Ptx) {
    result.image = std::move(ptx);
    result.ok = true;
    return result;
  }
  const bool lineinfo = hasOption(extra_options, "-lineinfo", "--generate-line-info");
  result.ok = linkToCubin(ptx, file_name, t, lineinfo, result.image, result.log);
  return result;
}

}  // namespace etc::backend
