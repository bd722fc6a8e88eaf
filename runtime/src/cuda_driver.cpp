#include "cuda_driver.h"

#include <dlfcn.h>

#include <mutex>
#include <string_view>

#include "rt_error.h"

namespace etc::rt {
namespace {

using GetProcV2 = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
using GetProcV1 = CUresult (*)(const char*, void**, int, cuuint64_t);

// The name as the driver knows it: the X-macro sees cuda.h's macro-expanded names
// (cuMemAlloc_v2, ...), cuGetProcAddress wants the base name.
std::string baseName(std::string_view n) {
  // cuda.h's cuGraphInstantiate is cuGraphInstantiateWithFlags (graph, exec, flags); the driver's
  // "cuGraphInstantiate" is the older (exec, graph, errorNode, log, size) form, and calling it
  // with three arguments crashed inside libcuda on an H100. Ask for the declared one by name.
  for (std::string_view suffix : {"_v2", "_v3"})
    if (n.ends_with(suffix)) n.remove_suffix(suffix.size());
  return std::string(n);
}

}  // namespace

CudaDriver openCudaDriver(const char* library) {
  CudaDriver cu;
  cu.handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (!cu.handle) fail(ETC_STATUS_NO_DRIVER, std::string("no CUDA driver (") + library + " not found)");
  GetProcV2 get2 = reinterpret_cast<GetProcV2>(dlsym(cu.handle, "cuGetProcAddress_v2"));
  GetProcV1 get1 = reinterpret_cast<GetProcV1>(dlsym(cu.handle, "cuGetProcAddress"));
  if (!get2 && !get1)
    fail(ETC_STATUS_NO_DRIVER, std::string("no CUDA driver (") + library + " has no cuGetProcAddress: the driver is older than CUDA 11.3)");
  auto resolve = [&](const char* expanded, void** slot) {
    std::string name = baseName(expanded);
    // cuGetProcAddress returns the newest variant at the version asked for, which need not be
    // the one cuda.h declares under that name: at 13000, "cuCtxSynchronize" is the variant
    // that takes a CUcontext, while cuda.h's cuCtxSynchronize takes none (calling it without
    // the argument failed with CUDA_ERROR_CONTEXT_IS_DESTROYED on an H100). So ask for the
    // variant the declaration matches.
    int version = name == "cuCtxSynchronize" ? 12000 : CUDA_VERSION;
    CUresult r = get2 ? get2(name.c_str(), slot, version, CU_GET_PROC_ADDRESS_DEFAULT, nullptr)
                      : get1(name.c_str(), slot, version, CU_GET_PROC_ADDRESS_DEFAULT);
    if (r != CUDA_SUCCESS || !*slot)
      fail(ETC_STATUS_NO_DRIVER, "the CUDA driver in " + std::string(library) + " lacks " + name + " (too old?)");
  };
#define ETC_CU_FN_STR2(x) #x
#define ETC_CU_FN_STR(x) ETC_CU_FN_STR2(x)
#define ETC_CU_FN(name) resolve(ETC_CU_FN_STR(name), reinterpret_cast<void**>(&cu.name));
#include "cuda_driver_fns.inc"
#undef ETC_CU_FN
  return cu;
}

void check(const CudaDriver& cu, CUresult r, const char* call) {
  if (r == CUDA_SUCCESS) return;
  const char* name = nullptr;
  const char* text = nullptr;
  if (cu.cuGetErrorName) cu.cuGetErrorName(r, &name);
  if (cu.cuGetErrorString) cu.cuGetErrorString(r, &text);
  std::string msg = std::string(call) + " failed: " + (name ? name : "CUresult " + std::to_string(static_cast<int>(r)));
  if (text) msg += std::string(" (") + text + ")";
  fail(ETC_STATUS_CUDA, msg);
}

const CudaDriver& cudaDriver() {
  // Opened once; a failure is remembered, so every later call reports the same reason cheaply.
  static std::once_flag once;
  static CudaDriver driver;
  static etc_status status = ETC_STATUS_OK;
  static std::string message;
  std::call_once(once, [] {
    try {
      driver = openCudaDriver("libcuda.so.1");
      CUresult r = driver.cuInit(0);
      if (r == CUDA_ERROR_NO_DEVICE) fail(ETC_STATUS_NO_DEVICE, "no CUDA device");
      check(driver, r, "cuInit");
      int count = 0;
      check(driver, driver.cuDeviceGetCount(&count), "cuDeviceGetCount");
      if (count == 0) fail(ETC_STATUS_NO_DEVICE, "no CUDA device");
    } catch (const Error& e) {
      status = e.status();
      message = e.what();
    }
  });
  if (status != ETC_STATUS_OK) fail(status, message);
  return driver;
}

}  // namespace etc::rt
