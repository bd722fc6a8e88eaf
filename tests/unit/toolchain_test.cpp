// The toolchain driver (compiler/backend/toolchain.*: NVRTC + nvJitLink) and the ELF symbol
// lookup that reads the descriptor back out of a cubin (runtime/src/elf_symbols.*).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <future>
#include <optional>
#include <string>
#include <vector>

#include "compiler/backend/toolchain.h"
#include "runtime/src/elf_symbols.h"

namespace etc::backend {
namespace {

using Bytes = std::vector<uint8_t>;

const char* kKernel =
    "extern \"C\" __global__ void twice(float* x) {\n"
    "  x[threadIdx.x] *= 2.0f;\n"
    "}\n";

bool isCudaElf(const Bytes& b) {
  // ELF magic, 64-bit, little-endian, OS ABI 0x41 (CUDA), e_machine 190 (EM_CUDA).
  return b.size() > 64 && std::memcmp(b.data(), "\x7f" "ELF", 4) == 0 && b[4] == 2 && b[5] == 1 &&
         b[7] == 0x41 && (b[18] | b[19] << 8) == 190;
}

std::string text(const Bytes& b) { return std::string(b.begin(), b.end()); }

// ---- targets ------------------------------------------------------------------------------------

TEST(Target, ParsesTheFourSpellings) {
  struct Case {
    const char* text;
    Target::Kind kind;
    int sm;
    bool a;
  };
  for (const Case& c : {Case{"sm_90a", Target::Kind::Cubin, 90, true}, Case{"sm_80", Target::Kind::Cubin, 80, false},
                        Case{"compute_90", Target::Kind::Ptx, 90, false},
                        Case{"compute_100a", Target::Kind::Ptx, 100, true},
                        Case{"sm_120", Target::Kind::Cubin, 120, false}}) {
    SCOPED_TRACE(c.text);
    const std::optional<Target> t = Target::parse(c.text);
    ASSERT_TRUE(t.has_value());
    EXPECT_EQ(t->kind, c.kind);
    EXPECT_EQ(t->sm, c.sm);
    EXPECT_EQ(t->arch_specific, c.a);
    EXPECT_EQ(t->name(), c.text);
  }
}

TEST(Target, RejectsOtherSpellings) {
  for (const char* bad : {"", "sm_", "sm_9", "sm_1000", "sm_09", "sm_90b", "sm_90aa", "SM_90", "sm90",
                          "compute_", "compute_x0", "lto_90", "sm_90 ", " sm_90", "sm_-9", "sm_a"}) {
    EXPECT_FALSE(Target::parse(bad).has_value()) << "'" << bad << "'";
  }
}

TEST(Target, DefaultsAndVirtualArch) {
  std::vector<std::string> names;
  for (const Target& t : defaultTargets()) names.push_back(t.name());
  EXPECT_EQ(names, (std::vector<std::string>{"sm_90a", "sm_80", "compute_90"}));
  EXPECT_EQ(Target::parse("sm_90a")->virtualArch(), "compute_90a");
  EXPECT_EQ(Target::parse("compute_90")->virtualArch(), "compute_90");
}

// ---- compiling ----------------------------------------------------------------------------------

TEST(CompileCuda, EveryDefaultTargetCompiles) {
  for (const Target& t : defaultTargets()) {
    SCOPED_TRACE(t.name());
    const CompileResult r = compileCuda(kKernel, "twice.cu", t);
    ASSERT_TRUE(r.ok) << r.log;
    if (t.kind == Target::Kind::Cubin) {
      EXPECT_TRUE(isCudaElf(r.image));
    } else {
      const std::string ptx = text(r.image);
      EXPECT_NE(ptx.find("\n.target sm_90\n"), std::string::npos) << ptx;
      EXPECT_NE(ptx.find(".entry twice("), std::string::npos) << ptx;
      EXPECT_EQ(ptx.find('\0'), std::string::npos);
    }
  }
}

// --whole-program: NVRTC makes the cubin (ptxas's verbose report in its log, which the resource
// report reads); a PTX target is the same either way.
TEST(CompileCuda, WholeProgramCubinsComeFromNvrtcWithPtxasReport) {
  for (const Target& t : defaultTargets()) {
    SCOPED_TRACE(t.name());
    const CompileResult whole = compileCuda(kKernel, "twice.cu", t, {}, true);
    ASSERT_TRUE(whole.ok) << whole.log;
    if (t.kind == Target::Kind::Cubin) {
      EXPECT_TRUE(isCudaElf(whole.image));
      EXPECT_NE(whole.log.find("Compiling entry function 'twice' for '" + t.name() + "'"), std::string::npos)
          << whole.log;
      EXPECT_NE(whole.log.find("Used "), std::string::npos) << whole.log;
    } else {
      EXPECT_EQ(whole.image, compileCuda(kKernel, "twice.cu", t).image);
    }
  }
}

TEST(CompileCuda, ArchSpecificPtxNamesTheArchSpecificTarget) {
  const CompileResult r = compileCuda(kKernel, "twice.cu", *Target::parse("compute_90a"));
  ASSERT_TRUE(r.ok) << r.log;
  EXPECT_NE(text(r.image).find("\n.target sm_90a\n"), std::string::npos);
}

TEST(CompileCuda, SyntaxErrorGivesTheLogWithTheLine) {
  const char* broken =
      "extern \"C\" __global__ void twice(float* x) {\n"
      "  x[threadIdx.x] *= 2.0f;\n"
      "  int y = ;\n"
      "}\n";
  const CompileResult r = compileCuda(broken, "broken.cu", defaultTargets()[0]);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.image.empty());
  EXPECT_NE(r.log.find("broken.cu(3): error"), std::string::npos) << r.log;
}

TEST(CompileCuda, DescriptorSurvivesIntoTheCubin) {
  // Nothing references etc_descriptor: NVRTC and nvJitLink must keep it anyway.
  const char* source =
      "extern \"C\" __device__ const unsigned char etc_descriptor[] = {'{', '\"', 'a', '\"', ':', '1', '}'};\n"
      "extern \"C\" __device__ const unsigned long long etc_descriptor_size = sizeof(etc_descriptor);\n"
      "extern \"C\" __global__ void twice(float* x) { x[threadIdx.x] *= 2.0f; }\n";
  const CompileResult r = compileCuda(source, "desc.cu", *Target::parse("sm_90a"));
  ASSERT_TRUE(r.ok) << r.log;
  std::span<const uint8_t> bytes;
  std::string error;
  ASSERT_TRUE(rt::findElfSymbol(r.image, "etc_descriptor", bytes, error)) << error;
  EXPECT_EQ(std::string(bytes.begin(), bytes.end()), "{\"a\":1}");
  ASSERT_TRUE(rt::findElfSymbol(r.image, "etc_descriptor_size", bytes, error)) << error;
  ASSERT_EQ(bytes.size(), 8u);
  EXPECT_EQ(bytes[0], 7);
}

TEST(CompileCuda, EmbeddedAndToolkitHeadersResolve) {
  const char* source =
      "#include \"etc/abi.h\"\n"
      "#include <cuda_bf16.h>\n"
      "static_assert(ETC_ABI_VERSION >= 1, \"abi.h came through\");\n"
      "static_assert(sizeof(EtcError) == 72, \"the error record layout\");\n"
      "extern \"C\" __global__ void k(__nv_bfloat16* x, EtcError* e) {\n"
      "  x[threadIdx.x] = __float2bfloat16(1.0f); e->code = ETC_ERR_NONE;\n"
      "}\n";
  const CompileResult r = compileCuda(source, "abi.cu", *Target::parse("sm_80"));
  EXPECT_TRUE(r.ok) << r.log;
}

TEST(CompileCuda, ParallelCompilesMatchSequentialOnes) {
  const std::vector<Target> targets = defaultTargets();
  std::vector<std::future<CompileResult>> jobs;
  for (const Target& t : targets)
    jobs.push_back(std::async(std::launch::async, [t] { return compileCuda(kKernel, "twice.cu", t); }));
  for (size_t i = 0; i < targets.size(); ++i) {
    SCOPED_TRACE(targets[i].name());
    const CompileResult parallel = jobs[i].get();
    const CompileResult sequential = compileCuda(kKernel, "twice.cu", targets[i]);
    ASSERT_TRUE(parallel.ok) << parallel.log;
    ASSERT_TRUE(sequential.ok) << sequential.log;
    EXPECT_EQ(parallel.image, sequential.image);
  }
}

TEST(CudaToolkit, MissingHeadersAreNamed) {
  const CudaToolkit tk = cudaToolkitAt("/nonexistent/cuda");
  EXPECT_TRUE(tk.include_dirs.empty());
  EXPECT_EQ(tk.error,
            "the CUDA toolkit headers were not found: /nonexistent/cuda/include/cuda_fp16.h does not "
            "exist (NVRTC 13 has no built-in cuda_fp16.h); set CUDA_HOME to the CUDA toolkit root");
}

TEST(CudaToolkit, ExplicitRootIsNotReplacedAndFailuresSaySo) {
  const char* saved = std::getenv("CUDA_HOME");
  const std::string saved_value = saved ? saved : "";
  ::setenv("CUDA_HOME", "/nonexistent/cuda", 1);
  const CudaToolkit tk = findCudaToolkit();
  const CompileResult r = compileCuda("#include <cuda_bf16.h>\n", "bf16.cu", *Target::parse("compute_90"));
  if (saved) ::setenv("CUDA_HOME", saved_value.c_str(), 1); else ::unsetenv("CUDA_HOME");

  EXPECT_EQ(tk.root, "/nonexistent/cuda");
  EXPECT_NE(tk.error.find("(the root came from $CUDA_HOME)"), std::string::npos) << tk.error;
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.log.find("cuda_bf16.h"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("note: the CUDA toolkit headers were not found"), std::string::npos) << r.log;
}

// ---- ELF symbols on a hand-made file ------------------------------------------------------------

// A minimal ELF64: [header][.data 8 bytes][.strtab][.symtab: null + etc_descriptor][4 section
// headers: null, .data, .strtab, .symtab]. etc_descriptor = bytes 2..4 of .data.
struct TinyElf {
  Bytes b;
  size_t data_off = 64, strtab_off = 72, symtab_off = 0, shdr_off = 0;
  size_t sym1() const { return symtab_off + 24; }
  size_t shdr(int i) const { return shdr_off + size_t(i) * 64; }

  void put(size_t at, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) b[at + size_t(i)] = uint8_t(v >> (8 * i));
  }

  TinyElf() {
    const std::string strtab = std::string("\0etc_descriptor\0", 16);
    symtab_off = strtab_off + 16;
    shdr_off = symtab_off + 48;
    b.assign(shdr_off + 4 * 64, 0);
    const uint8_t ident[8] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0x41};
    std::memcpy(b.data(), ident, 8);
    put(16, 2, 2);           // ET_EXEC
    put(18, 190, 2);         // EM_CUDA
    put(40, shdr_off, 8);    // e_shoff
    put(52, 64, 2);          // e_ehsize
    put(58, 64, 2);          // e_shentsize
    put(60, 4, 2);           // e_shnum
    for (int i = 0; i < 8; ++i) b[data_off + size_t(i)] = uint8_t('A' + i);
    std::memcpy(b.data() + strtab_off, strtab.data(), strtab.size());
    put(sym1() + 0, 1, 4);   // st_name
    put(sym1() + 6, 1, 2);   // st_shndx: .data
    put(sym1() + 8, 2, 8);   // st_value
    put(sym1() + 16, 3, 8);  // st_size
    section(1, 1, data_off, 8, 0, 0);
    section(2, 3, strtab_off, 16, 0, 0);
    section(3, 2, symtab_off, 48, 2, 24);
  }
  void section(int i, uint32_t type, uint64_t off, uint64_t size, uint32_t link, uint64_t entsize) {
    put(shdr(i) + 4, type, 4);
    put(shdr(i) + 24, off, 8);
    put(shdr(i) + 32, size, 8);
    put(shdr(i) + 40, link, 4);
    put(shdr(i) + 56, entsize, 8);
  }
};

std::string symbolError(const Bytes& elf, std::string_view name = "etc_descriptor") {
  std::span<const uint8_t> out;
  std::string error;
  EXPECT_FALSE(rt::findElfSymbol(elf, name, out, error));
  return error;
}

TEST(ElfSymbols, FindsTheSymbolBytes) {
  const TinyElf elf;
  std::span<const uint8_t> out;
  std::string error;
  ASSERT_TRUE(rt::findElfSymbol(elf.b, "etc_descriptor", out, error)) << error;
  EXPECT_EQ(std::string(out.begin(), out.end()), "CDE");
  EXPECT_EQ(symbolError(elf.b, "etc_descriptor_size"), "the ELF file has no symbol named 'etc_descriptor_size'");
}

TEST(ElfSymbols, RejectsFilesThatAreNotElf64) {
  TinyElf elf;
  EXPECT_EQ(symbolError(Bytes(elf.b.begin(), elf.b.begin() + 40)),
            "the ELF file is truncated: 40 bytes, its header alone has 64");
  EXPECT_EQ(symbolError(Bytes{'P', 'K', 3, 4}), "not an ELF file: it does not start with the ELF magic number");
  elf.b[4] = 1;
  EXPECT_EQ(symbolError(elf.b), "the ELF file is not 64-bit little-endian (class 1, data encoding 1)");
}

TEST(ElfSymbols, RejectsTablesPastTheEnd) {
  TinyElf elf;
  const size_t size = elf.b.size();
  elf.put(40, 1u << 20, 8);
  EXPECT_EQ(symbolError(elf.b), "the ELF section header table at offset 1048576 lies past the end of the " +
                                    std::to_string(size) + "-byte file");
  elf = TinyElf();
  elf.put(60, 5, 2);
  EXPECT_EQ(symbolError(elf.b), "the ELF section header table (5 entries at offset " + std::to_string(elf.shdr_off) +
                                    ") runs past the end of the " + std::to_string(size) + "-byte file");
  elf = TinyElf();
  elf.put(elf.shdr(3) + 24, size - 40, 8);
  EXPECT_EQ(symbolError(elf.b), "ELF section 3 (48 bytes at offset " + std::to_string(size - 40) +
                                    ") runs past the end of the " + std::to_string(size) + "-byte file");
  elf = TinyElf();
  elf.put(elf.shdr(3) + 40, 9, 4);
  EXPECT_EQ(symbolError(elf.b), "the ELF symbol table (section 3) names string table section 9, which does not exist");
  elf = TinyElf();
  elf.put(elf.shdr(3) + 56, 16, 8);
  EXPECT_EQ(symbolError(elf.b), "the ELF symbol table (section 3) gives an entry size of 16 bytes, less than the 24 of a symbol");
  elf = TinyElf();
  elf.put(58, 32, 2);
  EXPECT_EQ(symbolError(elf.b), "the ELF file gives a section header size of 32 bytes, less than the 64 of a section header");
}

TEST(ElfSymbols, RejectsSymbolsWithoutBytes) {
  TinyElf elf;
  elf.put(elf.sym1() + 16, 100, 8);
  EXPECT_EQ(symbolError(elf.b), "ELF symbol 'etc_descriptor' (100 bytes at 2) lies outside its section 1 of 8 bytes");
  elf = TinyElf();
  elf.put(elf.shdr(1) + 4, 8, 4);  // SHT_NOBITS
  EXPECT_EQ(symbolError(elf.b), "ELF symbol 'etc_descriptor': ELF section 1 (8 bytes at offset 64) has no bytes "
                                "in the file (like .bss)");
  elf = TinyElf();
  elf.put(elf.sym1() + 6, 0, 2);
  EXPECT_EQ(symbolError(elf.b), "ELF symbol 'etc_descriptor' is undefined (section index 0)");
  elf = TinyElf();
  elf.put(elf.sym1() + 6, 0xfff1, 2);  // SHN_ABS
  EXPECT_EQ(symbolError(elf.b), "ELF symbol 'etc_descriptor' is not in a section (section index 65521)");
  elf = TinyElf();
  elf.put(elf.sym1() + 6, 7, 2);
  EXPECT_EQ(symbolError(elf.b), "ELF symbol 'etc_descriptor' names section 7, which does not exist");
  elf = TinyElf();
  elf.put(elf.sym1(), 1000, 4);  // a name offset outside the string table matches nothing
  EXPECT_EQ(symbolError(elf.b), "the ELF file has no symbol named 'etc_descriptor'");
  elf = TinyElf();
  elf.put(elf.shdr(3) + 4, 1, 4);  // no symbol table left
  EXPECT_EQ(symbolError(elf.b), "the ELF file has no symbol table");
}

TEST(ElfSymbols, SurvivesEveryTruncation) {
  // Cutting the file anywhere must give an error, never a read out of bounds (ASan checks).
  const TinyElf elf;
  for (size_t n = 0; n < elf.b.size(); ++n) {
    std::span<const uint8_t> out;
    std::string error;
    EXPECT_FALSE(rt::findElfSymbol(std::span<const uint8_t>(elf.b.data(), n), "etc_descriptor", out, error)) << n;
    EXPECT_FALSE(error.empty());
  }
}

}  // namespace
}  // namespace etc::backend
