// libFuzzer target: the .safetensors reader (etc-run --weights). Any input may be rejected with
// a sentence; none may crash or read out of bounds. Every accepted tensor holds exactly the bytes
// its dtype and shape need.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <stdexcept>

#include "safetensors.h"
#include "tests/fuzz/fuzz_require.h"

namespace {

void require(bool ok, const char* property) { etc::fuzz::require(ok, "fuzz_safetensors", property); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::map<std::string, etc::interp::HostTensor> tensors;
  try {
    tensors = etc::tools::parseSafetensors(std::span<const uint8_t>(data, size));
  } catch (const std::runtime_error& e) {
    require(e.what()[0] != '\0', "rejected without a reason");
    return 0;
  }
  size_t total = 0;
  for (const auto& [name, t] : tensors) {
    uint64_t bytes = static_cast<uint64_t>(etc::ir::dtypeBytes(t.dtype));
    for (int64_t x : t.shape) {
      require(x >= 0, "accepted a negative extent");
      bytes *= static_cast<uint64_t>(x);
    }
    require(bytes == t.bytes.size(), "the data size does not match dtype and shape");
    total += t.bytes.size();
  }
  // Tensors do not overlap, so together they fit in the file.
  require(total <= size, "the tensors hold more bytes than the file");
  return 0;
}
