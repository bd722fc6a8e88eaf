// libFuzzer target: the fatbin container, ELF and descriptor readers, through the runtime's C
// API exactly as etc-run --info uses them, then everything a host does before a GPU is involved
// (sym ranges, tensor shapes, bindings, workspace size). No input may crash, read out of bounds or leave
// an error without a message.
//
// An input that starts with the fatbin magic is the file itself. Any other input is taken as a
// descriptor and wrapped into a well-formed fatbin first, so that the fuzzer reaches the JSON
// checks without having to rebuild container and ELF structure around every mutation.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "etc/runtime.h"
#include "tests/unit/runtime_fixtures.h"
#include "tests/fuzz/fuzz_require.h"

namespace {

void require(bool ok, const char* property) { etc::fuzz::require(ok, "fuzz_fatbin", property); }

// A failed call must say why; a successful one must leave no message.
void checked(etc_status s) {
  const char* msg = etc_last_error_message();
  require(msg != nullptr, "etc_last_error_message returned null");
  require((s == ETC_STATUS_OK) == (msg[0] == '\0'), "status and error message disagree");
}

void exercise(etc_module m) {
  require(etc_module_name(m) != nullptr && etc_module_ir(m) != nullptr, "name or IR is null");
  size_t size = 0;
  require(etc_module_descriptor_json(m, &size) != nullptr, "descriptor is null");
  for (size_t i = 0; i < etc_module_num_archs(m); ++i) require(etc_module_arch(m, i) != nullptr, "arch is null");
  require(etc_module_fatbin_targets(m) != nullptr, "targets are null");
  for (size_t i = 0; i < etc_module_num_events(m); ++i) {
    etc_event_info e;
    checked(etc_module_event_info(m, i, &e));
  }
  for (size_t g = 0; g < etc_module_num_graphs(m); ++g) {
    require(etc_module_graph_name(m, g) != nullptr, "graph name is null");
    for (size_t k = 0; k < etc_module_graph_num_kernels(m, g); ++k) {
      const char* name = nullptr;
      const char* task = nullptr;
      int threads = 0;
      checked(etc_module_graph_kernel(m, g, k, &name, &threads, &task));
    }
  }
  // Every sym at its lower bound, then at its upper bound: shapes and the workspace size must
  // either evaluate or fail with a sentence (overflow, division by zero, negative extent).
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < etc_module_num_syms(m); ++i) {
      etc_sym_info s;
      checked(etc_module_sym_info(m, i, &s));
      checked(etc_module_set_sym(m, s.name, pass == 0 ? s.lo : s.hi));
    }
    for (size_t i = 0; i < etc_module_num_tensors(m); ++i) {
      etc_tensor_info t;
      checked(etc_module_tensor_info(m, i, &t));
      int rank = 0;
      int64_t shape[ETC_MAX_SHAPE_RANK];
      etc_status st = etc_module_tensor_shape(m, t.name, &rank, shape);
      checked(st);
      if (st != ETC_STATUS_OK) continue;
      // A buffer of the tensor's own dtype and shape binds, unless the tensor is a temp; unbinding
      // it succeeds likewise (names are unique, so the name finds this tensor).
      st = etc_module_bind(m, t.name, 0x1000, t.dtype, rank, shape);
      checked(st);
      require((st == ETC_STATUS_OK) == (t.role != ETC_ROLE_TEMP), "a tensor's own shape and dtype did not bind");
      st = etc_module_unbind(m, t.name);
      checked(st);
      require((st == ETC_STATUS_OK) == (t.role != ETC_ROLE_TEMP), "unbind disagrees with bind");
    }
    uint64_t bytes = 0;
    checked(etc_module_workspace_bytes(m, &bytes));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const uint8_t kMagic[4] = {0x50, 0xed, 0x55, 0xba};
  std::vector<uint8_t> fatbin;
  if (size >= 4 && std::memcmp(data, kMagic, 4) == 0)
    fatbin.assign(data, data + size);
  else
    fatbin = etc::rt::testing::makeFatbin(std::string(reinterpret_cast<const char*>(data), size));
  etc_module m = nullptr;
  etc_status s = etc_module_open_memory(fatbin.data(), fatbin.size(), &m);
  checked(s);
  require((s == ETC_STATUS_OK) == (m != nullptr), "status and module handle disagree");
  if (m) exercise(m);
  etc_module_destroy(m);
  return 0;
}
