// The C API and the C++ wrapper on this machine, which has no GPU: everything up to loading
// on a device, and the "no CUDA driver" path.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "etc/runtime.h"
#include "etc/runtime.hpp"
#include "runtime/src/fatbin_seal.h"
#include "runtime/src/cuda_driver.h"
#include "runtime/src/rt_error.h"
#include "compiler/backend/fatbin_writer.h"
#include "runtime_fixtures.h"

namespace {

using etc::rt::testing::makeFatbin;
using etc::rt::testing::sampleDescriptor;

struct Opened {
  etc_module m = nullptr;
  ~Opened() { etc_module_destroy(m); }
};

std::vector<uint8_t> sampleFatbin() { return makeFatbin(sampleDescriptor().dump()); }

TEST(RuntimeApi, OpensAFatbinAndListsTheDescriptor) {
  std::vector<uint8_t> fb = sampleFatbin();
  Opened o;
  ASSERT_EQ(etc_module_open_memory(fb.data(), fb.size(), &o.m), ETC_STATUS_OK) << etc_last_error_message();
  EXPECT_STREQ(etc_last_error_message(), "");
  EXPECT_STREQ(etc_module_name(o.m), "sample");
  EXPECT_STREQ(etc_module_fatbin_targets(o.m), "sm_90a, sm_80, compute_90");
  ASSERT_EQ(etc_module_num_archs(o.m), 3u);
  EXPECT_STREQ(etc_module_arch(o.m, 2), "compute_90");
  EXPECT_STREQ(etc_module_ir(o.m), "module @sample\n");
  size_t n = 0;
  const char* json = etc_module_descriptor_json(o.m, &n);
  EXPECT_EQ(std::string(json, n), sampleDescriptor().dump());

  ASSERT_EQ(etc_module_num_syms(o.m), 2u);
  etc_sym_info s;
  ASSERT_EQ(etc_module_sym_info(o.m, 0, &s), ETC_STATUS_OK);
  EXPECT_STREQ(s.name, "B");
  EXPECT_EQ(s.hi, 128);
  EXPECT_EQ(etc_module_sym_info(o.m, 2, &s), ETC_STATUS_INVALID_ARGUMENT);
  EXPECT_STREQ(etc_last_error_message(), "sym index 2 is out of range");

  etc_tensor_info t;
  ASSERT_EQ(etc_module_tensor_info(o.m, 2, &t), ETC_STATUS_OK);
  EXPECT_STREQ(t.name, "t");
  EXPECT_EQ(t.role, ETC_ROLE_TEMP);
  EXPECT_EQ(t.rank, 2);
  EXPECT_STREQ(t.shape_text[1], "cdiv(N, 16)");
  size_t idx = 0;
  ASSERT_EQ(etc_module_find_tensor(o.m, "y", &idx), ETC_STATUS_OK);
  EXPECT_EQ(idx, 3u);

  etc_event_info e;
  ASSERT_EQ(etc_module_event_info(o.m, 0, &e), ETC_STATUS_OK);
  EXPECT_STREQ(e.name, "done");
  EXPECT_STREQ(e.shape_text[0], "cdiv(B, 16)");
  EXPECT_EQ(e.max_elements, 16);
  EXPECT_EQ(etc_module_event_words(o.m), 20);

  ASSERT_EQ(etc_module_num_graphs(o.m), 1u);
  EXPECT_STREQ(etc_module_graph_name(o.m, 0), "main");
  ASSERT_EQ(etc_module_graph_num_kernels(o.m, 0), 3u);
  const char* kname = nullptr;
  const char* task = "x";
  int threads = 0;
  ASSERT_EQ(etc_module_graph_kernel(o.m, 0, 0, &kname, &threads, &task), ETC_STATUS_OK);
  EXPECT_STREQ(kname, "etc_main_mega");
  EXPECT_EQ(task, nullptr);
  ASSERT_EQ(etc_module_graph_kernel(o.m, 0, 2, &kname, &threads, &task), ETC_STATUS_OK);
  EXPECT_STREQ(kname, "etc_main_final");
  EXPECT_STREQ(task, "final");
  EXPECT_EQ(threads, 128);
  EXPECT_EQ(etc_module_graph_num_megakernels(o.m, 0), 1u);
  const char* sym = "x";
  int64_t lo = -1, hi = -1;
  ASSERT_EQ(etc_module_graph_kernel_range(o.m, 0, 0, &sym, &lo, &hi), ETC_STATUS_OK);
  EXPECT_EQ(sym, nullptr);
  EXPECT_EQ(etc_module_graph_kernel_range(o.m, 0, 3, &sym, &lo, &hi), ETC_STATUS_INVALID_ARGUMENT);
}

// etcc --specialize: a graph's megakernels of sym ranges come first, each with its range.
TEST(RuntimeApi, ListsMegakernelsOfSymRanges) {
  nlohmann::json j = sampleDescriptor();
  j["graphs"][0]["mega"] = nlohmann::json::array(
      {{{"kernel", "etc_main_mega_B1_31"}, {"threads", 256}, {"when", {{"sym", 0}, {"lo", 1}, {"hi", 31}}}},
       {{"kernel", "etc_main_mega_B32_128"}, {"threads", 256}, {"when", {{"sym", 0}, {"lo", 32}, {"hi", 128}}}}});
  std::vector<uint8_t> fb = makeFatbin(j.dump());
  Opened o;
  ASSERT_EQ(etc_module_open_memory(fb.data(), fb.size(), &o.m), ETC_STATUS_OK) << etc_last_error_message();
  ASSERT_EQ(etc_module_graph_num_kernels(o.m, 0), 4u);
  ASSERT_EQ(etc_module_graph_num_megakernels(o.m, 0), 2u);
  const char* kname = nullptr;
  const char* task = "x";
  const char* sym = nullptr;
  int threads = 0;
  int64_t lo = 0, hi = 0;
  ASSERT_EQ(etc_module_graph_kernel(o.m, 0, 1, &kname, &threads, &task), ETC_STATUS_OK);
  EXPECT_STREQ(kname, "etc_main_mega_B32_128");
  EXPECT_EQ(task, nullptr);
  ASSERT_EQ(etc_module_graph_kernel_range(o.m, 0, 1, &sym, &lo, &hi), ETC_STATUS_OK);
  EXPECT_STREQ(sym, "B");
  EXPECT_EQ(lo, 32);
  EXPECT_EQ(hi, 128);
  ASSERT_EQ(etc_module_graph_kernel(o.m, 0, 2, &kname, &threads, &task), ETC_STATUS_OK);
  EXPECT_STREQ(kname, "etc_main_stage1");
  ASSERT_EQ(etc_module_graph_kernel_range(o.m, 0, 2, &sym, &lo, &hi), ETC_STATUS_OK);
  EXPECT_EQ(sym, nullptr);
}

// etcc --megakernel-only: "unfused": null. The graph lists its megakernel alone, and an unfused
// launch is refused by name before the device is asked (a megakernel launch gets that far).
TEST(RuntimeApi, AMegakernelOnlyFatbinRefusesUnfusedLaunches) {
  std::vector<uint8_t> full = sampleFatbin();
  Opened with;
  ASSERT_EQ(etc_module_open_memory(full.data(), full.size(), &with.m), ETC_STATUS_OK);
  EXPECT_EQ(etc_module_graph_has_unfused(with.m, 0), 1);
  EXPECT_EQ(etc_module_graph_has_unfused(with.m, 1), 0);
  EXPECT_EQ(etc_module_graph_has_unfused(nullptr, 0), 0);
  const etc_launch_options unfused{ETC_MODE_UNFUSED, 0, 0};
  EXPECT_EQ(etc_module_launch(with.m, nullptr, nullptr, &unfused), ETC_STATUS_NOT_LOADED);

  nlohmann::json j = sampleDescriptor();
  j["graphs"][0]["unfused"] = nullptr;
  std::vector<uint8_t> fb = makeFatbin(j.dump());
  Opened o;
  ASSERT_EQ(etc_module_open_memory(fb.data(), fb.size(), &o.m), ETC_STATUS_OK) << etc_last_error_message();
  EXPECT_EQ(etc_module_graph_has_unfused(o.m, 0), 0);
  ASSERT_EQ(etc_module_graph_num_kernels(o.m, 0), 1u);
  const std::string refused =
      "graph @main has no unfused kernels (its fatbin was compiled with etcc --megakernel-only): launch it with "
      "ETC_MODE_MEGA, or compile it without that option";
  for (etc_mode mode : {ETC_MODE_UNFUSED, ETC_MODE_UNFUSED_GRAPH}) {
    const etc_launch_options lo{mode, 0, 0};
    EXPECT_EQ(etc_module_launch(o.m, "main", nullptr, &lo), ETC_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(etc_last_error_message(), refused);
    double t = 0;
    EXPECT_EQ(etc_module_benchmark(o.m, nullptr, nullptr, &lo, 1, 1, &t), ETC_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(etc_last_error_message(), refused);
  }
  EXPECT_EQ(etc_module_launch(o.m, nullptr, nullptr, nullptr), ETC_STATUS_NOT_LOADED);
  // A mode that is neither is the device's to refuse as unknown, not this check's.
  const etc_launch_options unknown{static_cast<etc_mode>(3), 0, 0};  // within the enum's range (UBSan)
  EXPECT_EQ(etc_module_launch(o.m, nullptr, nullptr, &unknown), ETC_STATUS_NOT_LOADED);
  // Anything else in "unfused" is still a damaged descriptor.
  j["graphs"][0]["unfused"] = 3;
  std::vector<uint8_t> bad = makeFatbin(j.dump());
  etc_module m = nullptr;
  EXPECT_EQ(etc_module_open_memory(bad.data(), bad.size(), &m), ETC_STATUS_BAD_DESCRIPTOR);
  EXPECT_EQ(m, nullptr);
}

TEST(RuntimeApi, SymsShapesBindingsAndWorkspace) {
  std::vector<uint8_t> fb = sampleFatbin();
  Opened o;
  ASSERT_EQ(etc_module_open_memory(fb.data(), fb.size(), &o.m), ETC_STATUS_OK);
  EXPECT_EQ(etc_module_set_sym(o.m, "B", 200), ETC_STATUS_BAD_SYM);
  EXPECT_STREQ(etc_last_error_message(), "sym B = 200 is outside its range [1, 128]");
  int64_t v = 0;
  EXPECT_EQ(etc_module_get_sym(o.m, "B", &v), ETC_STATUS_BAD_SYM);
  EXPECT_EQ(etc_module_workspace_bytes(o.m, reinterpret_cast<uint64_t*>(&v)), ETC_STATUS_BAD_SYM);
  EXPECT_STREQ(etc_last_error_message(), "sym B is not set (the shape of tensor x needs it)");
  ASSERT_EQ(etc_module_set_sym(o.m, "B", 4), ETC_STATUS_OK);
  ASSERT_EQ(etc_module_set_sym(o.m, "N", 100), ETC_STATUS_OK);
  int rank = 0;
  int64_t shape[ETC_MAX_SHAPE_RANK];
  ASSERT_EQ(etc_module_tensor_shape(o.m, "t", &rank, shape), ETC_STATUS_OK);
  EXPECT_EQ(rank, 2);
  EXPECT_EQ(shape[1], 7);
  uint64_t bytes = 0;
  ASSERT_EQ(etc_module_workspace_bytes(o.m, &bytes), ETC_STATUS_OK);
  EXPECT_EQ(bytes, 768u);
  int64_t xs[] = {4, 64};
  EXPECT_EQ(etc_module_bind(o.m, "x", 0x1000, ETC_DTYPE_F16, 2, xs), ETC_STATUS_BAD_BINDING);
  EXPECT_STREQ(etc_last_error_message(), "tensor x is bf16, the buffer bound to it is f16");
  EXPECT_EQ(etc_module_bind(o.m, "x", 0x1000, ETC_DTYPE_BF16, 2, xs), ETC_STATUS_OK);
  EXPECT_EQ(etc_module_bind(o.m, "x", 0x1000, ETC_DTYPE_BF16, 5, xs), ETC_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(etc_module_unbind(o.m, "x"), ETC_STATUS_OK);
  EXPECT_EQ(etc_module_unbind(o.m, "nope"), ETC_STATUS_NOT_FOUND);
  EXPECT_STREQ(etc_last_error_message(), "no tensor named 'nope'");
  EXPECT_EQ(etc_module_unbind(o.m, nullptr), ETC_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(etc_module_unbind(nullptr, "x"), ETC_STATUS_INVALID_ARGUMENT);
}

TEST(RuntimeApi, DeviceCallsBeforeLoadingSaySo) {
  std::vector<uint8_t> fb = sampleFatbin();
  Opened o;
  ASSERT_EQ(etc_module_open_memory(fb.data(), fb.size(), &o.m), ETC_STATUS_OK);
  EXPECT_EQ(etc_module_launch(o.m, nullptr, nullptr, nullptr), ETC_STATUS_NOT_LOADED);
  EXPECT_STREQ(etc_last_error_message(), "the module is not loaded on a device (call etc_module_load_device first)");
  etc_devptr p;
  EXPECT_EQ(etc_module_mem_alloc(o.m, 16, &p), ETC_STATUS_NOT_LOADED);
  EXPECT_EQ(etc_module_launch(nullptr, nullptr, nullptr, nullptr), ETC_STATUS_INVALID_ARGUMENT);
  EXPECT_STREQ(etc_last_error_message(), "the module is null");
}

TEST(RuntimeApi, RejectsTruncatedAndForeignFatbins) {
  std::vector<uint8_t> fb = sampleFatbin();
  etc_module m = nullptr;
  EXPECT_EQ(etc_module_open_memory(fb.data(), fb.size() / 2, &m), ETC_STATUS_BAD_FATBIN);
  EXPECT_EQ(m, nullptr);
  EXPECT_TRUE(std::string(etc_last_error_message()).starts_with("not a valid fatbin: ")) << etc_last_error_message();
  const char junk[] = "\x7f" "ELF not a fatbin at all, just bytes";
  EXPECT_EQ(etc_module_open_memory(junk, sizeof junk, &m), ETC_STATUS_BAD_FATBIN);
  std::vector<uint8_t> fb2 = etc::rt::testing::makeFatbin("{}");
  EXPECT_EQ(etc_module_open_memory(fb2.data(), fb2.size(), &m), ETC_STATUS_BAD_DESCRIPTOR);
  EXPECT_STREQ(etc_last_error_message(), "descriptor: the descriptor has no \"format\"");
  EXPECT_EQ(etc_module_open_file("/nonexistent/m.fatbin", &m), ETC_STATUS_IO);
  EXPECT_STREQ(etc_last_error_message(), "cannot open /nonexistent/m.fatbin: No such file or directory");
}

TEST(RuntimeApi, FatbinWithoutDescriptorIsForeign) {
  using etc::backend::FatbinEntry;
  std::vector<uint8_t> elf = etc::rt::testing::makeElf("xyz", "other_symbol");
  std::vector<uint8_t> fb = etc::backend::writeFatbin({{etc::backend::Target{etc::backend::Target::Kind::Cubin, 80, false}, elf}});
  etc_module m = nullptr;
  EXPECT_EQ(etc_module_open_memory(fb.data(), fb.size(), &m), ETC_STATUS_BAD_FATBIN);
  EXPECT_TRUE(std::string(etc_last_error_message()).starts_with("the fatbin's sm_80 cubin has no module descriptor (was it made by etcc?): "))
      << etc_last_error_message();
}

TEST(RuntimeApi, OpenFileNamesTheFile) {
  std::string path = ::testing::TempDir() + "/runtime_api_truncated.fatbin";
  std::vector<uint8_t> fb = sampleFatbin();
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(fb.data()), 20);
  etc_module m = nullptr;
  EXPECT_EQ(etc_module_open_file(path.c_str(), &m), ETC_STATUS_BAD_FATBIN);
  EXPECT_TRUE(std::string(etc_last_error_message()).starts_with(path + ": not a valid fatbin: ")) << etc_last_error_message();
  std::remove(path.c_str());
}

// A whole file is read, in blocks, from a file of several blocks (and a size the blocks do not
// divide), and a folder is an I/O error that names it.
TEST(RuntimeApi, OpenFileReadsWholeFilesAndRefusesFolders) {
  std::string path = ::testing::TempDir() + "/runtime_api_large.fatbin";
  nlohmann::json desc = etc::rt::testing::sampleDescriptor();
  desc["comment"] = std::string(200007, 'x');  // a key the runtime does not read: 3 blocks and more
  std::vector<uint8_t> big = etc::rt::testing::makeFatbin(desc.dump());
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(big.data()), std::streamsize(big.size()));
  etc_module m = nullptr;
  ASSERT_EQ(etc_module_open_file(path.c_str(), &m), ETC_STATUS_OK) << etc_last_error_message();
  EXPECT_STREQ(etc_module_name(m), "sample");
  etc_module_destroy(m);
  // The same bytes sealed: the seal covers every byte read, so a short read would be refused.
  etc::rt::sealFatbin(big);
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(big.data()), std::streamsize(big.size()));
  ASSERT_EQ(etc_module_open_file(path.c_str(), &m), ETC_STATUS_OK) << etc_last_error_message();
  etc_module_destroy(m);
  std::remove(path.c_str());
  const std::string dir = ::testing::TempDir();
  EXPECT_EQ(etc_module_open_file(dir.c_str(), &m), ETC_STATUS_IO);
  EXPECT_EQ(etc_last_error_message(), "cannot read " + dir);
}

TEST(RuntimeApi, MissingDriverIsReportedClearly) {
  try {
    etc::rt::openCudaDriver("libetc-no-such-driver.so.1");
    ADD_FAILURE();
  } catch (const etc::rt::Error& e) {
    EXPECT_EQ(e.status(), ETC_STATUS_NO_DRIVER);
    EXPECT_STREQ(e.what(), "no CUDA driver (libetc-no-such-driver.so.1 not found)");
  }
}

TEST(RuntimeApi, LoadWithoutDriverOnThisMachine) {
  if (void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    dlclose(h);
    GTEST_SKIP() << "a CUDA driver is installed here";
  }
  std::vector<uint8_t> fb = sampleFatbin();
  Opened o;
  ASSERT_EQ(etc_module_open_memory(fb.data(), fb.size(), &o.m), ETC_STATUS_OK);
  EXPECT_EQ(etc_module_load_device(o.m, 0), ETC_STATUS_NO_DRIVER);
  EXPECT_STREQ(etc_last_error_message(), "no CUDA driver (libcuda.so.1 not found)");
}

TEST(RuntimeApi, CppWrapperThrowsWithStatus) {
  std::vector<uint8_t> fb = sampleFatbin();
  etc::Module m = etc::Module::openMemory(fb.data(), fb.size());
  EXPECT_EQ(m.name(), "sample");
  EXPECT_EQ(m.syms().size(), 2u);
  EXPECT_EQ(m.tensors()[3].role, ETC_ROLE_OUTPUT);
  EXPECT_EQ(m.graphs(), std::vector<std::string>{"main"});
  m.setSym("B", 3);
  EXPECT_EQ(m.sym("B"), 3);
  EXPECT_EQ(m.tensorShape("y"), (std::vector<int64_t>{3, 32}));
  try {
    m.setSym("N", 0);
    ADD_FAILURE();
  } catch (const etc::RuntimeError& e) {
    EXPECT_EQ(e.status(), ETC_STATUS_BAD_SYM);
    EXPECT_STREQ(e.what(), "sym N = 0 is outside its range [1, 1000000]");
  }
  m.bind("y", 0x1000, ETC_DTYPE_F32, {3, 32});
  m.unbind("y");
  try {
    m.unbind("nope");
    ADD_FAILURE();
  } catch (const etc::RuntimeError& e) {
    EXPECT_EQ(e.status(), ETC_STATUS_NOT_FOUND);
  }
  etc::Module moved = std::move(m);
  EXPECT_EQ(moved.name(), "sample");
  EXPECT_STREQ(etc_status_name(ETC_STATUS_NO_DRIVER), "ETC_STATUS_NO_DRIVER");
}

}  // namespace
