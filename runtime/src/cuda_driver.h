// The CUDA driver API, opened at run time: dlopen("libcuda.so.1") and cuGetProcAddress for each
// entry point, so that nothing links libcuda and the tools run (and explain) without a GPU.
// The prototypes are cuda.h's; entry points are requested at the header's CUDA_VERSION, so the
// driver hands back the variant (_v2, ...) whose prototype the header declares.
#pragma once

#include <cuda.h>

#include <string>

namespace etc::rt {

struct CudaDriver {
#define ETC_CU_FN(name) decltype(&::name) name = nullptr;
#include "cuda_driver_fns.inc"
#undef ETC_CU_FN
  void* handle = nullptr;
};

// The process-wide driver, opened and cuInit'ed on first use. Throws ETC_STATUS_NO_DRIVER
// ("no CUDA driver (libcuda.so.1 not found)") or ETC_STATUS_NO_DEVICE ("no CUDA device").
const CudaDriver& cudaDriver();

// Opens `library` (not cached): the test seam for the no-driver path.
CudaDriver openCudaDriver(const char* library);

// Throws ETC_STATUS_CUDA "cuModuleLoadData failed: CUDA_ERROR_INVALID_IMAGE (device kernel
// image is invalid)" when r is not CUDA_SUCCESS. `call` names the driver call.
void check(const CudaDriver& cu, CUresult r, const char* call);

}  // namespace etc::rt
