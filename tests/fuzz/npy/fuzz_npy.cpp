// libFuzzer target: the .npy reader (etc-run --in / --param). Any input may be rejected with a
// sentence; none may crash or read out of bounds. What is accepted holds exactly the bytes its
// dtype and shape need, and writing it out and reading it back gives the same tensor.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <stdexcept>

#include "npy.h"
#include "tests/fuzz/fuzz_require.h"

namespace {

void require(bool ok, const char* property) { etc::fuzz::require(ok, "fuzz_npy", property); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  etc::tools::HostTensor t;
  try {
    t = etc::tools::parseNpy(std::span<const uint8_t>(data, size));
  } catch (const std::runtime_error& e) {
    require(e.what()[0] != '\0', "rejected without a reason");
    return 0;
  }
  uint64_t bytes = static_cast<uint64_t>(etc::ir::dtypeBytes(t.dtype));
  for (int64_t x : t.shape) {
    require(x >= 0, "accepted a negative extent");
    bytes *= static_cast<uint64_t>(x);  // cannot wrap: the reader checked it against the file
  }
  require(bytes == t.bytes.size(), "the data size does not match dtype and shape");
  const std::vector<uint8_t> again = etc::tools::encodeNpy(t);
  const etc::tools::HostTensor u = etc::tools::parseNpy(again);
  require(u.dtype == t.dtype && u.shape == t.shape && u.bytes == t.bytes, "write and read back differ");
  return 0;
}
