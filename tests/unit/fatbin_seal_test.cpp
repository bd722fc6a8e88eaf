// The integrity seal etcc appends to fatbins (runtime/src/fatbin_seal.h).
#include <gtest/gtest.h>

#include "etc/runtime.h"
#include "runtime/src/fatbin_seal.h"
#include "runtime/src/rt_error.h"
#include "runtime_fixtures.h"

namespace {

using etc::rt::kSealBytes;
using etc::rt::sealFatbin;
using etc::rt::unsealedSize;

std::string failure(std::span<const uint8_t> b) {
  try {
    unsealedSize(b);
  } catch (const etc::rt::Error& e) {
    EXPECT_EQ(e.status(), ETC_STATUS_BAD_FATBIN);
    return e.what();
  }
  return "(accepted)";
}

TEST(FatbinSeal, SealedContentReadsBackAndUnsealedFilesPassThrough) {
  std::vector<uint8_t> b = etc::rt::testing::makeFatbin(etc::rt::testing::sampleDescriptor().dump());
  const size_t n = b.size();
  EXPECT_EQ(unsealedSize(b), n);  // no seal: read as before
  sealFatbin(b);
  ASSERT_EQ(b.size(), n + kSealBytes);
  EXPECT_EQ(unsealedSize(b), n);
  EXPECT_EQ(std::string(b.begin() + long(n), b.begin() + long(n) + 8), "ETCSEAL2");
  EXPECT_EQ(etc::rt::fnv1a64({}), 1469598103934665603ull);
}

// The digests are a file format: a sealed fatbin written today must check tomorrow (the values
// agree with an independent Python rendering of the two definitions in fatbin_seal.h).
TEST(FatbinSeal, DigestsAreFixed) {
  std::vector<uint8_t> b(45);  // 5 whole words (one lane twice) and 5 bytes after them
  for (size_t i = 0; i < b.size(); ++i) b[i] = uint8_t(i * 37 + 11);
  EXPECT_EQ(etc::rt::sealDigest(b), 0xb3053fbc9a769130ull);
  EXPECT_EQ(etc::rt::sealDigest({}), 0x79984f3d660a864dull);
  EXPECT_EQ(etc::rt::fnv1a64(b), 0x1977967309e2a998ull);
  // Words that trade places between lanes, or bytes between a word and the tail, change it.
  std::vector<uint8_t> c = b;
  std::swap_ranges(c.begin(), c.begin() + 8, c.begin() + 8);
  EXPECT_NE(etc::rt::sealDigest(c), etc::rt::sealDigest(b));
  b.pop_back();
  EXPECT_NE(etc::rt::sealDigest(b), 0xb3053fbc9a769130ull);
}

// A fatbin sealed by an etcc before session 41 ("ETCSEAL1", FNV-1a 64) still opens, and is still
// checked.
TEST(FatbinSeal, VersionOneSealsAreChecked) {
  std::vector<uint8_t> b = etc::rt::testing::makeFatbin(etc::rt::testing::sampleDescriptor().dump());
  const size_t n = b.size();
  const uint64_t fields[3] = {n, etc::rt::fnv1a64(b), 0};
  for (char ch : std::string("ETCSEAL1")) b.push_back(uint8_t(ch));
  for (uint64_t f : fields)
    for (int i = 0; i < 8; ++i) b.push_back(uint8_t(f >> (8 * i)));
  EXPECT_EQ(unsealedSize(b), n);
  b[n / 2] ^= 0x04;
  EXPECT_EQ(failure(b),
            "the fatbin's checksum does not match its content: the file is damaged (a partial copy, or bits changed on "
            "disk or on the wire): copy it again or compile the module again");
  b[n / 2] ^= 0x04;
  b[n + 7] = '3';  // a version this runtime does not read
  EXPECT_EQ(failure(b),
            "the fatbin's seal is of a version this runtime does not read ('3'; it reads '1' and '2'): open it with the "
            "runtime of the etcc that wrote it, or compile the module again");
}

TEST(FatbinSeal, EveryFlippedBitIsCaught) {
  std::vector<uint8_t> b(300);
  for (size_t i = 0; i < b.size(); ++i) b[i] = uint8_t(i * 7);
  sealFatbin(b);
  for (size_t i = 0; i < b.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::vector<uint8_t> c = b;
      c[i] ^= uint8_t(1u << bit);
      if (i >= b.size() - kSealBytes && i < b.size() - kSealBytes + 7) {
        EXPECT_EQ(unsealedSize(c), c.size()) << i;  // "ETCSEAL" itself: no longer a seal
        continue;
      }  // (a flipped version byte is a version this runtime does not read: refused below)
      EXPECT_NE(failure(c), "(accepted)") << "byte " << i << " bit " << bit;
    }
  }
  std::vector<uint8_t> c = b;
  c[0] ^= 1;
  EXPECT_EQ(failure(c),
            "the fatbin's checksum does not match its content: the file is damaged (a partial copy, or bits changed on "
            "disk or on the wire): copy it again or compile the module again");
  c = b;
  c[b.size() - kSealBytes + 8] ^= 1;  // the length
  EXPECT_EQ(failure(c),
            "the fatbin's seal says 301 bytes of content, the file has 300: the file is damaged (a partial copy, or bits "
            "changed on disk or on the wire): copy it again or compile the module again");
}

TEST(FatbinSeal, TheRuntimeChecksTheSealBeforeReading) {
  std::vector<uint8_t> b = etc::rt::testing::makeFatbin(etc::rt::testing::sampleDescriptor().dump());
  sealFatbin(b);
  etc_module m = nullptr;
  ASSERT_EQ(etc_module_open_memory(b.data(), b.size(), &m), ETC_STATUS_OK) << etc_last_error_message();
  EXPECT_STREQ(etc_module_name(m), "sample");
  etc_module_destroy(m);
  b[b.size() / 2] ^= 0x10;  // a byte no reader looks at
  EXPECT_EQ(etc_module_open_memory(b.data(), b.size(), &m), ETC_STATUS_BAD_FATBIN);
  EXPECT_NE(std::string(etc_last_error_message()).find("checksum does not match"), std::string::npos)
      << etc_last_error_message();
}

}  // namespace
