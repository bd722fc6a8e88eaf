// etc-run on hostile files (issue 7, item 2): truncated and bit-flipped fatbins, a descriptor
// from a newer format, malformed .npy and .safetensors inputs. Each must end with one clear
// error line and exit status 1 -- never a crash, a sanitizer report or a hang -- and every
// check that needs no GPU must come before the GPU is needed, so that this test proves them on
// a machine without one (CI). The sanitizer build runs the sanitized etc-run.
//
// ETC_RUN is the etc-run binary, ETC_HOSTILE_FATBIN the mlp sample compiled by etcc
// (tests/CMakeLists.txt): x bf16[B, 2048] input, ln bf16[2048] param, ... y bf16[B, 2048] output.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "npy.h"
#include "runtime/src/fatbin_seal.h"

namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

struct Outcome {
  bool exited = false;  // false: killed by a signal (a crash, an abort from a sanitizer)
  int status = -1;
  std::string output;   // stdout and stderr together
};

class Hostile : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("etc_hostile_" + std::to_string(getpid()));
    fs::create_directories(dir_);
    std::ifstream f(ETC_HOSTILE_FATBIN, std::ios::binary);
    fatbin_ = Bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  void SetUp() override { ASSERT_GT(fatbin_.size(), 1000u) << "no fatbin at " << ETC_HOSTILE_FATBIN; }

  static std::string write(const std::string& name, const Bytes& bytes) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    return path;
  }

  // Runs etc-run with `args` (paths are in the test's directory, so no quoting is needed).
  static Outcome etcRun(const std::string& args) {
    Outcome r;
    const std::string command = std::string(ETC_RUN) + " " + args + " 2>&1";
    FILE* p = popen(command.c_str(), "r");
    if (!p) return r;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
    const int w = pclose(p);
    r.exited = WIFEXITED(w);
    r.status = r.exited ? WEXITSTATUS(w) : -1;
    return r;
  }

  // Exit status 1 with exactly "etc-run: <message>\n".
  static void expectError(const Outcome& r, const std::string& message) {
    EXPECT_TRUE(r.exited) << "etc-run was killed by a signal:\n" << r.output;
    EXPECT_EQ(r.status, 1) << r.output;
    EXPECT_EQ(r.output, "etc-run: " + message + "\n");
  }

  // A run that gets past every host-side check stops at the GPU on a machine without one,
  // and runs on one with a GPU: either way no host-side error.
  static void expectOnlyTheGpuMissing(const Outcome& r) {
    EXPECT_TRUE(r.exited) << r.output;
    if (r.status == 0) return;
    EXPECT_EQ(r.status, 1);
    EXPECT_TRUE(r.output.find("no CUDA driver") != std::string::npos || r.output.find("no CUDA device") != std::string::npos)
        << r.output;
  }

  static Bytes npy(etc::ir::DType dtype, std::vector<int64_t> shape) {
    etc::interp::HostTensor t;
    t.dtype = dtype;
    t.shape = shape;
    int64_t n = etc::ir::dtypeBytes(dtype);
    for (int64_t x : shape) n *= x;
    t.bytes.assign(size_t(n), 0x3c);
    return etc::tools::encodeNpy(t);
  }

  static Bytes safetensors(const std::string& header, size_t data_bytes) {
    Bytes out(8);
    for (int i = 0; i < 8; ++i) out[size_t(i)] = uint8_t(uint64_t(header.size()) >> (8 * i));
    out.insert(out.end(), header.begin(), header.end());
    out.resize(out.size() + data_bytes, 0x3c);
    return out;
  }

  // The fatbin without etcc's seal: what another writer produces, read by structure alone.
  static Bytes unsealed() { return Bytes(fatbin_.begin(), fatbin_.end() - long(etc::rt::kSealBytes)); }

  // Replaces every occurrence of `from` by `to` (same length) and seals the result again: a
  // well-formed file from a writer that means it.
  static Bytes patched(const std::string& from, const std::string& to) {
    EXPECT_EQ(from.size(), to.size());
    Bytes b = unsealed();
    size_t count = 0;
    for (auto it = b.begin(); (it = std::search(it, b.end(), from.begin(), from.end())) != b.end(); ++count)
      it = std::copy(to.begin(), to.end(), it);
    EXPECT_GT(count, 0u) << "'" << from << "' is not in the fatbin";
    etc::rt::sealFatbin(b);
    return b;
  }

  static inline fs::path dir_;
  static inline Bytes fatbin_;
};

TEST_F(Hostile, TheIntactFatbinGetsToTheGpu) {
  const std::string x = write("x_ok.npy", npy(etc::ir::DType::BF16, {1, 2048}));
  expectOnlyTheGpuMissing(etcRun(std::string(ETC_HOSTILE_FATBIN) + " --sym B=1 --in x=" + x));
  const Outcome info = etcRun(std::string(ETC_HOSTILE_FATBIN) + " --info");
  EXPECT_EQ(info.status, 0) << info.output;
  EXPECT_NE(info.output.find("module mlp"), std::string::npos) << info.output;
}

// ---- fatbins -------------------------------------------------------------------------------

TEST_F(Hostile, TruncatedFatbins) {
  const size_t n = fatbin_.size(), container = n - 32;  // etcc's seal is the last 32 bytes
  const std::string announced = std::to_string(container - 16);
  for (size_t keep : {size_t(0), size_t(15), size_t(16), size_t(100), n / 2, container - 1, container + 5, n - 1}) {
    SCOPED_TRACE(keep);
    const std::string path = write("cut_" + std::to_string(keep) + ".fatbin", Bytes(fatbin_.begin(), fatbin_.begin() + keep));
    std::string why;
    if (keep < 16)
      why = "not a valid fatbin: the file is too short to be a fatbin: " + std::to_string(keep) + " bytes, a fatbin header has 16";
    else if (keep < container)
      why = "not a valid fatbin: the fatbin at offset 0 is truncated: its header announces " + announced +
            " bytes of entries but only " + std::to_string(keep - 16) + " follow";
    else
      why = "the fatbin's seal is cut short (" + std::to_string(keep - container) +
            " of its 32 bytes): the file is damaged (a partial copy, or bits changed on disk or on the wire): copy it "
            "again or compile the module again";
    // --info and a run stop at the same place, before any GPU is involved.
    expectError(etcRun(path + " --info"), path + ": " + why);
    expectError(etcRun(path + " --sym B=1"), path + ": " + why);
  }
}

// Without the seal (another writer's fatbin), the readers still name what is wrong.
TEST_F(Hostile, FlippedHeaderBitsOfAnUnsealedFatbinAreNamed) {
  struct Case {
    size_t offset;
    uint8_t mask;
    std::string why;
  };
  const Case cases[] = {
      {0, 0x01, "not a valid fatbin: not a CUDA fatbin: the magic number at offset 0 is 0xba55ed51, a fatbin starts with 0xba55ed50"},
      {4, 0x02, "not a valid fatbin: unsupported fatbin version 3 at offset 0 (this reader knows version 1)"},
      {16, 0x04, "not a valid fatbin: fatbin entry 0 at offset 16 has unknown kind 6 (1 is PTX, 2 is ELF)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.offset);
    Bytes b = unsealed();
    b[c.offset] ^= c.mask;
    const std::string path = write("flip_" + std::to_string(c.offset) + ".fatbin", b);
    expectError(etcRun(path + " --info"), path + ": " + c.why);
  }
  // The first cubin's ELF magic: the descriptor cannot be found.
  Bytes b = unsealed();
  const uint8_t elf[] = {0x7f, 'E', 'L', 'F'};
  auto at = std::search(b.begin(), b.end(), std::begin(elf), std::end(elf));
  ASSERT_NE(at, b.end());
  at[1] ^= 0x20;
  const std::string path = write("flip_elf.fatbin", b);
  expectError(etcRun(path + " --info"),
              path + ": the fatbin's sm_90a cubin has no module descriptor (was it made by etcc?): not an ELF file: it does not "
                     "start with the ELF magic number");
}

// etcc seals every fatbin (runtime/src/fatbin_seal.h): a bit flipped anywhere -- headers,
// tables, descriptor or machine code -- is refused with one line before anything is read.
TEST_F(Hostile, EveryFlippedBitIsRefused) {
  const std::string damaged = ": the file is damaged (a partial copy, or bits changed on disk or on the wire): copy it "
                              "again or compile the module again";
  std::vector<size_t> offsets;
  // Few enough that the sanitizer build (2 s per run of a 1.6 MB fatbin) stays within CI's budget.
  for (size_t i = 0; i < 200; i += 19) offsets.push_back(i);                     // container, entry, ELF header
  for (size_t i = 200; i < fatbin_.size() - 32; i += fatbin_.size() / 12) offsets.push_back(i);  // everywhere
  offsets.push_back(fatbin_.size() - 32 + 8);                                     // the seal's length
  offsets.push_back(fatbin_.size() - 32 + 17);                                    // and digest
  for (size_t i : offsets) {
    Bytes b = fatbin_;
    b[i] ^= uint8_t(1u << (i % 8));
    const std::string path = write("flip.fatbin", b);
    const Outcome r = etcRun(path + " --info");
    const bool length = i == fatbin_.size() - 32 + 8;
    const std::string why = length ? "the fatbin's seal says " + std::to_string((fatbin_.size() - 32) ^ 1) +
                                         " bytes of content, the file has " + std::to_string(fatbin_.size() - 32)
                                   : std::string("the fatbin's checksum does not match its content");
    SCOPED_TRACE(i);
    expectError(r, path + ": " + why + damaged);
  }
}

// Cutting the seal off leaves an unsealed fatbin: still read, as those of other writers are --
// but only when the cut falls exactly at the container's end; anywhere else is a truncation.
TEST_F(Hostile, AFatbinWithoutItsSealIsStillRead) {
  const std::string path = write("unsealed.fatbin", Bytes(fatbin_.begin(), fatbin_.end() - 32));
  const Outcome r = etcRun(path + " --info");
  EXPECT_EQ(r.status, 0) << r.output;
  const std::string cut = write("cut_seal.fatbin", Bytes(fatbin_.begin(), fatbin_.end() - 20));
  EXPECT_EQ(etcRun(cut + " --info").status, 1);
}

TEST_F(Hostile, DescriptorFromANewerFormat) {
  std::string path = write("abi3.fatbin", patched("\"abi\":2,", "\"abi\":3,"));
  expectError(etcRun(path + " --info"),
              path + ": descriptor: abi 3 is not supported (this runtime supports abi 2): the fatbin comes from a newer etcc; "
                     "run it with that release's runtime or compile the module again with the etcc of this runtime");
  path = write("format.fatbin", patched("\"etc.module\"", "\"etc.modul2\""));
  expectError(etcRun(path + " --sym B=1"), path + ": descriptor: format is \"etc.modul2\", expected \"etc.module\"");
  path = write("json.fatbin", patched("{\"abi\":2,", "[\"abi\":2,"));
  expectError(etcRun(path + " --info"), path + ": descriptor: not valid JSON");
}

// ---- .npy inputs (x is bf16[B, 2048]) ----------------------------------------------------------

TEST_F(Hostile, NpyFilesThatDoNotMatchOrAreDamaged) {
  using etc::ir::DType;
  const std::string run = std::string(ETC_HOSTILE_FATBIN) + " --sym B=1 --in x=";
  std::string f = write("f32.npy", npy(DType::F32, {1, 2048}));
  expectError(etcRun(run + f), f + " holds f32 data, tensor x is bf16");
  f = write("shape.npy", npy(DType::BF16, {2, 2048}));
  expectError(etcRun(run + f), f + " has shape [2, 2048], tensor x has shape [B, H] = [1, 2048]");
  f = write("rank.npy", npy(DType::BF16, {2048}));
  expectError(etcRun(run + f), f + " has shape [2048], tensor x has shape [B, H] = [1, 2048]");

  const Bytes good = npy(DType::BF16, {1, 2048});
  const std::string header(good.begin(), good.begin() + 128);
  auto with_header = [&](const std::string& from, const std::string& to) {
    Bytes b = good;
    const size_t at = header.find(from);
    EXPECT_NE(at, std::string::npos);
    std::copy(to.begin(), to.end(), b.begin() + at);
    return b;
  };
  f = write("fortran.npy", with_header("'fortran_order': False", "'fortran_order': True "));
  expectError(etcRun(run + f), f + ": Fortran-order .npy data is not supported (save a C-contiguous array)");
  f = write("big.npy", with_header("'<V2'", "'>f2'"));
  expectError(etcRun(run + f), f + ": big-endian .npy data ('>f2') is not supported");
  f = write("truncated.npy", Bytes(good.begin(), good.end() - 1000));
  expectError(etcRun(run + f), f + ": the .npy data is 3096 bytes, its header says 4096");
  Bytes b = good;
  b[8] = b[9] = 0xff;  // a version 1 header of 65535 bytes
  f = write("header_len.npy", b);
  expectError(etcRun(run + f), f + ": the .npy header runs past the end of the file");
  b = good;
  b[6] = 2;  // version 2: a 4-byte header length, here 0xffff0076
  b[10] = b[11] = 0xff;
  f = write("header_len2.npy", b);
  expectError(etcRun(run + f), f + ": the .npy header runs past the end of the file");
  f = write("text.npy", Bytes{'h', 'e', 'l', 'l', 'o', '\n'});
  expectError(etcRun(run + f), f + ": not a .npy file (no \\x93NUMPY magic)");
  expectError(etcRun(run + (dir_ / "missing.npy").string()), (dir_ / "missing.npy").string() + ": cannot open (No such file or directory)");
  f = write("y.npy", npy(DType::BF16, {1, 2048}));
  expectError(etcRun(std::string(ETC_HOSTILE_FATBIN) + " --sym B=1 --in y=" + f),
              "--in y=" + f + ": tensor y is output, not input");
}

// ---- .safetensors weights (ln is bf16[2048], the first param) ---------------------------------

TEST_F(Hostile, SafetensorsFilesThatLieAboutTheirData) {
  const std::string run = std::string(ETC_HOSTILE_FATBIN) + " --sym B=1 --weights ";
  struct Case {
    const char* name;
    Bytes bytes;
    std::string why;
  };
  Bytes too_long = safetensors("{}", 0);
  too_long[0] = 0x40;  // a header length of 64 in a 10-byte file
  Bytes absurd = safetensors("{}", 0);
  absurd[7] = 0x7f;
  const Case cases[] = {
      {"overlap.safetensors",
       safetensors(R"({"ln": {"dtype": "BF16", "shape": [2048], "data_offsets": [0, 4096]},
                       "w": {"dtype": "BF16", "shape": [2048], "data_offsets": [2048, 6144]}})", 6144),
       "tensors 'ln' (data_offsets [0, 4096]) and 'w' ([2048, 6144]) overlap"},
      {"range.safetensors", safetensors(R"({"ln": {"dtype": "BF16", "shape": [2048], "data_offsets": [0, 4096]}})", 100),
       "tensor 'ln' has data_offsets [0, 4096] outside the 100 data bytes"},
      {"header.safetensors", too_long, "the .safetensors header (64 bytes) runs past the end of the file"},
      {"absurd.safetensors", absurd, "the .safetensors header length 9151314442816847874 is above the 100 MB limit"},
      {"twice.safetensors",
       safetensors(R"({"ln": {"dtype": "BF16", "shape": [2048], "data_offsets": [0, 4096]},
                       "ln": {"dtype": "BF16", "shape": [2048], "data_offsets": [4096, 8192]}})", 8192),
       "the .safetensors header names tensor 'ln' twice"},
      {"f64.safetensors", safetensors(R"({"ln": {"dtype": "F64", "shape": [2048], "data_offsets": [0, 16384]}})", 16384),
       "tensor 'ln' has unsupported dtype F64 (supported: BF16 F16 F32 I32 I64 U8)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string f = write(c.name, c.bytes);
    expectError(etcRun(run + f), f + ": " + c.why);
  }
  // Well formed, but not what the module declares.
  std::string f = write("dtype.safetensors", safetensors(R"({"ln": {"dtype": "F32", "shape": [2048], "data_offsets": [0, 8192]}})", 8192));
  expectError(etcRun(run + f), f + " tensor 'ln' holds f32 data, tensor ln is bf16");
  f = write("shape.safetensors", safetensors(R"({"ln": {"dtype": "BF16", "shape": [1024], "data_offsets": [0, 2048]}})", 2048));
  expectError(etcRun(run + f), f + " tensor 'ln' has shape [1024], tensor ln has shape [H] = [2048]");
  f = write("absent.safetensors", safetensors(R"({"other": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}})", 1));
  expectError(etcRun(run + f), "param ln is in none of the --weights files (and no --param gives it)");
}

}  // namespace
