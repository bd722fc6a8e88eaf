// The device headers (runtime/include/etc/device/*.cuh and etc/abi.h), compiled into etcc so
// that NVRTC gets them in memory: the generated CUDA compiles with no etc files on disk.
#pragma once

#include <string_view>
#include <vector>

namespace etc {

struct EmbeddedHeader {
  std::string_view name;  // include path, e.g. "etc/device/etc.cuh"
  std::string_view text;
};

const std::vector<EmbeddedHeader>& embeddedHeaders();

}  // namespace etc
