// The fatbin writer (compiler/backend/fatbin_writer.*) against the toolkit's `fatbinary`, and
// the runtime's reader (runtime/src/fatbin_reader.*) on good and damaged containers.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "compiler/backend/fatbin_writer.h"
#include "compiler/backend/toolchain.h"
#include "runtime/src/elf_symbols.h"
#include "runtime/src/fatbin_reader.h"

namespace etc::backend {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

const Target kSm90a{Target::Kind::Cubin, 90, true};
const Target kSm80{Target::Kind::Cubin, 80, false};
const Target kCompute90{Target::Kind::Ptx, 90, false};
const Target kCompute90a{Target::Kind::Ptx, 90, true};

Bytes bytesOf(std::string_view s) { return Bytes(s.begin(), s.end()); }

// A stand-in cubin for tests that only exercise the container: the writer reads the ELF magic
// and the ABI version byte, nothing else.
Bytes fakeElf(size_t size, uint8_t abi_version = 8) {
  Bytes b(size, 0xAB);
  const uint8_t ident[9] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0x41, abi_version};
  std::copy(ident, ident + 9, b.begin());
  return b;
}

std::vector<rt::FatbinImage> parseOk(const Bytes& fatbin) {
  std::vector<rt::FatbinImage> images;
  std::string error;
  EXPECT_TRUE(rt::parseFatbin(fatbin, images, error)) << error;
  return images;
}

std::string parseError(const Bytes& fatbin) {
  std::vector<rt::FatbinImage> images;
  std::string error;
  EXPECT_FALSE(rt::parseFatbin(fatbin, images, error));
  return error;
}

void put(Bytes& b, size_t at, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) b[at + size_t(i)] = uint8_t(v >> (8 * i));
}

// ---- the toolkit's fatbinary --------------------------------------------------------------------

std::string fatbinaryTool() {
  for (const std::string& root : {findCudaToolkit().root, std::string("/usr/local/cuda")}) {
    const fs::path tool = fs::path(root) / "bin" / "fatbinary";
    if (fs::is_regular_file(tool)) return tool.string();
  }
  return {};
}

class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    path_ = fs::temp_directory_path() /
            ("etc_fatbin_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void writeFile(const fs::path& p, const Bytes& b) {
  std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}

Bytes readFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The same entries through `fatbinary -64 --image3=...`; empty when the tool fails.
Bytes runFatbinary(const std::vector<FatbinEntry>& entries, const std::string& extra = "--compress=false") {
  TempDir dir;
  std::string cmd = "'" + fatbinaryTool() + "' -64 " + extra + " --create='" +
                    (dir.path() / "out.fatbin").string() + "'";
  for (size_t i = 0; i < entries.size(); ++i) {
    const Target& t = entries[i].target;
    const fs::path file = dir.path() / ("image" + std::to_string(i));
    writeFile(file, entries[i].image);
    cmd += std::string(" --image3=kind=") + (t.kind == Target::Kind::Ptx ? "ptx" : "elf") +
           ",sm=" + std::to_string(t.sm) + (t.arch_specific ? "a" : "") + ",file=" + file.string();
  }
  if (std::system((cmd + " > '" + (dir.path() / "log").string() + "' 2>&1").c_str()) != 0) {
    ADD_FAILURE() << "fatbinary failed: " << cmd;
    return {};
  }
  return readFile(dir.path() / "out.fatbin");
}

#define REQUIRE_FATBINARY()                                                             \
  do {                                                                                  \
    if (fatbinaryTool().empty()) GTEST_SKIP() << "the toolkit's fatbinary was not found"; \
  } while (0)

// Real images from NVRTC/nvJitLink, compiled once for the whole suite.
const std::vector<FatbinEntry>& realEntries() {
  static const std::vector<FatbinEntry> entries = [] {
    const char* source =
        "extern \"C\" __device__ const unsigned char etc_descriptor[] = {'{', '}'};\n"
        "extern \"C\" __global__ void twice(float* x) { x[threadIdx.x] *= 2.0f; }\n";
    std::vector<std::future<CompileResult>> jobs;
    for (const Target& t : {kSm90a, kSm80, kCompute90})
      jobs.push_back(std::async(std::launch::async, [=] { return compileCuda(source, "twice.cu", t); }));
    std::vector<FatbinEntry> out;
    for (const Target& t : {kSm90a, kSm80, kCompute90}) {
      CompileResult r = jobs[out.size()].get();
      if (!r.ok) throw std::runtime_error("compiling for " + t.name() + " failed:\n" + r.log);
      out.push_back({t, std::move(r.image)});
    }
    return out;
  }();
  return entries;
}

void expectSameImages(const std::vector<rt::FatbinImage>& a, const std::vector<rt::FatbinImage>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE("image " + std::to_string(i));
    EXPECT_EQ(a[i].is_ptx, b[i].is_ptx);
    EXPECT_EQ(a[i].sm, b[i].sm);
    EXPECT_EQ(a[i].arch_specific, b[i].arch_specific);
    EXPECT_EQ(a[i].compressed, b[i].compressed);
    EXPECT_EQ(a[i].archName(), b[i].archName());
    EXPECT_TRUE(std::equal(a[i].data.begin(), a[i].data.end(), b[i].data.begin(), b[i].data.end()));
  }
}

// ---- writer vs fatbinary ------------------------------------------------------------------------

TEST(FatbinWriter, MatchesFatbinaryByteForByteOnCompiledImages) {
  REQUIRE_FATBINARY();
  const Bytes mine = writeFatbin(realEntries());
  const Bytes theirs = runFatbinary(realEntries());
  const auto a = parseOk(mine), b = parseOk(theirs);
  expectSameImages(a, b);
  EXPECT_EQ(mine, theirs);
}

TEST(FatbinWriter, MatchesFatbinaryOnArchSpecificPtxAndOddSizes) {
  REQUIRE_FATBINARY();
  // A cubin whose size is not a multiple of 8 (padding), and 'a' PTX (the arch-specific flag).
  Bytes cubin = realEntries()[1].image;
  cubin.insert(cubin.end(), {1, 2, 3});
  const std::vector<FatbinEntry> entries = {
      {kSm80, cubin}, {kCompute90a, bytesOf(".version 8.7\n.target sm_90a\n.address_size 64\n")}};
  EXPECT_EQ(writeFatbin(entries), runFatbinary(entries));
}

TEST(FatbinWriter, MatchesFatbinaryOnAwkwardPtxText) {
  REQUIRE_FATBINARY();
  const char* text =
      "  // header comment\n"
      ".version 9.0\n"
      ".target sm_90  \t \n"
      "/* block\n comment */ .address_size 64 // trailing\n"
      ".file 1 \"/a  b//c.cu\" \"q\\\"  /*x*/\"\n"
      "   x  /* in */ y\t\t\n"
      "\r\n"
      "\v z \f w\n"
      "a/b / c\n"
      "end  ";
  const std::vector<FatbinEntry> entries = {{kCompute90, bytesOf(text)}};
  EXPECT_EQ(writeFatbin(entries), runFatbinary(entries));
}

TEST(FatbinWriter, ReaderSeesFatbinaryCompressionFlag) {
  REQUIRE_FATBINARY();
  // fatbinary compresses PTX by default; the reader reports it and hands out the raw payload.
  const auto images = parseOk(runFatbinary({realEntries()[2]}, ""));
  ASSERT_EQ(images.size(), 1u);
  EXPECT_TRUE(images[0].is_ptx);
  EXPECT_TRUE(images[0].compressed);
  EXPECT_LT(images[0].data.size(), compactPtx(std::string_view(
                                        reinterpret_cast<const char*>(realEntries()[2].image.data()),
                                        realEntries()[2].image.size())).size());
}

TEST(FatbinWriter, DescriptorReadsBackThroughFatbinAndElf) {
  // The `etc-run --info` path: fatbin -> first cubin -> ELF symbol table -> etc_descriptor.
  const Bytes fatbin = writeFatbin(realEntries());
  const auto images = parseOk(fatbin);
  ASSERT_FALSE(images.empty());
  ASSERT_FALSE(images[0].is_ptx);
  std::span<const uint8_t> descriptor;
  std::string error;
  ASSERT_TRUE(rt::findElfSymbol(images[0].data, "etc_descriptor", descriptor, error)) << error;
  EXPECT_EQ(std::string(descriptor.begin(), descriptor.end()), "{}");
}

// ---- writer on its own --------------------------------------------------------------------------

TEST(FatbinWriter, RoundTripsThroughTheReader) {
  const Bytes elf = fakeElf(100);
  const std::vector<FatbinEntry> entries = {
      {kSm90a, elf}, {kCompute90, bytesOf("// c\n.version 9.0\n\t.target  sm_90\n")}};
  const Bytes fatbin = writeFatbin(entries);
  const auto images = parseOk(fatbin);
  ASSERT_EQ(images.size(), 2u);
  EXPECT_FALSE(images[0].is_ptx);
  EXPECT_EQ(images[0].sm, 90);
  EXPECT_TRUE(images[0].arch_specific);
  EXPECT_FALSE(images[0].compressed);
  EXPECT_EQ(images[0].archName(), "sm_90a");
  ASSERT_EQ(images[0].data.size(), 104u);  // padded to 8
  EXPECT_TRUE(std::equal(elf.begin(), elf.end(), images[0].data.begin()));
  EXPECT_EQ(images[0].data[100], 0);
  EXPECT_TRUE(images[1].is_ptx);
  EXPECT_EQ(images[1].archName(), "compute_90");
  EXPECT_EQ(std::string(images[1].data.begin(), images[1].data.end()), "\n.version 9.0\n.target sm_90\n");
}

TEST(FatbinWriter, HeaderFields) {
  const Bytes fatbin = writeFatbin({{kSm80, fakeElf(64, 7)}, {kCompute90a, bytesOf(".version 8.5\n")}});
  auto u16 = [&](size_t at) { return unsigned(fatbin[at] | fatbin[at + 1] << 8); };
  auto u32 = [&](size_t at) { return u16(at) | u16(at + 2) << 16; };
  EXPECT_EQ(u32(0), 0xBA55ED50u);
  EXPECT_EQ(u16(4), 1u);
  EXPECT_EQ(u16(6), 16u);
  EXPECT_EQ(u32(8), fatbin.size() - 16);
  // ELF entry at 16: kind 2, header 64, payload 64, version [1,7] from EI_ABIVERSION, sm 80.
  EXPECT_EQ(u16(16), 2u);
  EXPECT_EQ(u32(20), 64u);
  EXPECT_EQ(u32(24), 64u);
  EXPECT_EQ(u16(16 + 24), 7u);
  EXPECT_EQ(u16(16 + 26), 1u);
  EXPECT_EQ(u32(16 + 28), 80u);
  EXPECT_EQ(u32(16 + 40), 0x11u);
  // PTX entry at 16 + 64 + 64: kind 1, header 80, ISA 8.5, sm 90, arch-specific flag.
  const size_t p = 16 + 64 + 64;
  EXPECT_EQ(u16(p), 1u);
  EXPECT_EQ(u32(p + 4), 80u);
  EXPECT_EQ(u32(p + 8), 16u);  // ".version 8.5\n" + NUL = 14, padded
  EXPECT_EQ(u16(p + 24), 5u);
  EXPECT_EQ(u16(p + 26), 8u);
  EXPECT_EQ(u32(p + 28), 90u);
  EXPECT_EQ(u32(p + 40), 0x100011u);
  EXPECT_EQ(u32(p + 64), 72u);
  EXPECT_EQ(fatbin.size(), p + 80 + 16);
}

TEST(FatbinWriter, RejectsImagesThatAreNotWhatTheTargetSays) {
  try {
    writeFatbin({{kSm90a, fakeElf(64)}, {kSm80, bytesOf(".version 9.0\n")}});
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "fatbin entry 1 (sm_80) is not an ELF cubin");
  }
  try {
    writeFatbin({{kCompute90, bytesOf(".target sm_90\n")}});
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "fatbin entry 0 (compute_90) is not PTX: it has no \".version X.Y\" directive");
  }
}

TEST(CompactPtx, SqueezesBlanksAndDropsComments) {
  EXPECT_EQ(compactPtx("{\n\tld.param.u64 \t%rd1, [p];\n"), "{\nld.param.u64 %rd1, [p];\n");
  EXPECT_EQ(compactPtx("// c1\n\t// c2\n.version 9.0\n"), "\n\n.version 9.0\n");
  EXPECT_EQ(compactPtx("x  /* in */ y\t\t\n"), "x  y\t\n");                 // a comment splits a run
  EXPECT_EQ(compactPtx("/* a\nb */ .x // t\n"), " .x \n");                  // its newline goes too
  EXPECT_EQ(compactPtx("  .version 9.0\n"), " .version 9.0\n");             // one blank kept at the start
  EXPECT_EQ(compactPtx(".f \"a  //b /*c*/ \\\"  d\"  e"), ".f \"a  //b /*c*/ \\\"  d\" e");
  EXPECT_EQ(compactPtx("\v y \r z"), "\vy \rz");                           // only spaces and tabs go
  EXPECT_EQ(compactPtx("x /* unterminated\n y"), "x ");
  EXPECT_EQ(compactPtx(std::string_view("a\0b", 3)), "a");                  // a C string
}

// ---- reader errors ------------------------------------------------------------------------------

Bytes smallFatbin() { return writeFatbin({{kSm80, fakeElf(40)}, {kCompute90, bytesOf(".version 9.0\n")}}); }

TEST(FatbinReader, RejectsShortInput) {
  EXPECT_EQ(parseError({}), "the file is too short to be a fatbin: 0 bytes, a fatbin header has 16");
  Bytes b = smallFatbin();
  b.resize(10);
  EXPECT_EQ(parseError(b), "the file is too short to be a fatbin: 10 bytes, a fatbin header has 16");
}

TEST(FatbinReader, RejectsForeignFiles) {
  EXPECT_EQ(parseError(fakeElf(64)),
            "not a CUDA fatbin: the magic number at offset 0 is 0x464c457f, a fatbin starts with 0xba55ed50");
}

TEST(FatbinReader, RejectsTruncatedContainer) {
  Bytes b = smallFatbin();
  const size_t full = b.size();
  b.pop_back();
  EXPECT_EQ(parseError(b), "the fatbin at offset 0 is truncated: its header announces " +
                               std::to_string(full - 16) + " bytes of entries but only " +
                               std::to_string(full - 17) + " follow");
}

TEST(FatbinReader, RejectsSizesThatRunPastTheEnd) {
  Bytes b = smallFatbin();
  // ELF entry at 16, 64-byte header, 40-byte payload; PTX entry at 120.
  put(b, 16 + 8, 1000, 8);
  EXPECT_EQ(parseError(b), "fatbin entry 0 at offset 16 announces a payload of 1000 bytes but only " +
                               std::to_string(b.size() - 80) + " remain in the container");
  b = smallFatbin();
  put(b, 120 + 4, 4096, 4);
  EXPECT_EQ(parseError(b), "fatbin entry 1 at offset 120 gives a header size of 4096 bytes but only " +
                               std::to_string(b.size() - 120) + " remain in the container");
  b = smallFatbin();
  put(b, 8, 104 + 30, 8);  // the container ends 30 bytes into the second entry's header
  b.resize(16 + 104 + 30);
  EXPECT_EQ(parseError(b), "fatbin entry 1 at offset 120 is truncated: an entry header has 64 bytes but "
                           "only 30 remain in the container");
}

TEST(FatbinReader, RejectsMalformedEntries) {
  Bytes b = smallFatbin();
  put(b, 16, 7, 2);
  EXPECT_EQ(parseError(b), "fatbin entry 0 at offset 16 has unknown kind 7 (1 is PTX, 2 is ELF)");
  b = smallFatbin();
  put(b, 16 + 4, 12, 4);
  EXPECT_EQ(parseError(b), "fatbin entry 0 at offset 16 gives a header size of 12 bytes, less than the 64 "
                           "of an entry header");
  b = smallFatbin();
  put(b, 16 + 40, 0x8011, 8);  // compressed, with a compressed size beyond the payload
  put(b, 16 + 16, 41, 4);
  EXPECT_EQ(parseError(b), "fatbin entry 0 at offset 16 gives a compressed size of 41 bytes, more than its "
                           "payload of 40");
  b = smallFatbin();
  put(b, 4, 2, 2);
  EXPECT_EQ(parseError(b), "unsupported fatbin version 2 at offset 0 (this reader knows version 1)");
  b = smallFatbin();
  put(b, 6, 8, 2);
  EXPECT_EQ(parseError(b), "the fatbin header at offset 0 gives a header size of 8 bytes; it must be at "
                           "least 16 and within the " + std::to_string(b.size()) +
                           " bytes of the file that remain");
}

TEST(FatbinReader, EmptyContainerHoldsNoImages) {
  EXPECT_EQ(parseError(writeFatbin({})), "the fatbin holds no images");
}

TEST(FatbinReader, ReadsContainersBackToBack) {
  Bytes b = smallFatbin();
  const Bytes second = writeFatbin({{kSm90a, fakeElf(16)}});
  b.insert(b.end(), second.begin(), second.end());
  const auto images = parseOk(b);
  ASSERT_EQ(images.size(), 3u);
  EXPECT_EQ(images[2].archName(), "sm_90a");
  b.insert(b.end(), {1, 2, 3});
  EXPECT_EQ(parseError(b), "the data after the fatbin container at offset " + std::to_string(b.size() - 3) +
                               " is too short for another container: 3 bytes, a fatbin header has 16");
}

TEST(FatbinReader, SurvivesEveryTruncationAndByteFlip) {
  // Damaged input gives an error or a consistent image list, never a read out of bounds.
  const Bytes good = smallFatbin();
  for (size_t n = 0; n < good.size(); ++n) {
    std::vector<rt::FatbinImage> images;
    std::string error;
    EXPECT_FALSE(rt::parseFatbin(std::span<const uint8_t>(good.data(), n), images, error)) << n;
    EXPECT_FALSE(error.empty()) << n;
  }
  for (size_t at = 0; at < good.size(); ++at) {
    Bytes b = good;
    b[at] ^= 0xFF;
    std::vector<rt::FatbinImage> images;
    std::string error;
    if (!rt::parseFatbin(b, images, error)) continue;
    for (const rt::FatbinImage& im : images) {
      EXPECT_TRUE(im.data.data() >= b.data() && im.data.data() + im.data.size() <= b.data() + b.size());
    }
  }
}

}  // namespace
}  // namespace etc::backend
