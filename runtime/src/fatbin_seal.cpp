#include "fatbin_seal.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <string>

#include "elf_file.h"
#include "etc/fatbin_format.h"
#include "rt_error.h"

namespace etc::rt {

namespace {

// "ETCSEAL" and the seal's version: '1' (FNV-1a 64) or '2' (sealDigest, what sealFatbin writes).
constexpr char kSealMagic[8] = {'E', 'T', 'C', 'S', 'E', 'A', 'L', '2'};
constexpr size_t kVersionAt = 7;
constexpr uint64_t kFnvBasis = 1469598103934665603ull, kFnvPrime = 1099511628211ull;

void putLe(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(uint8_t(v >> (8 * i)));
}

}  // namespace

uint64_t fnv1a64(std::span<const uint8_t> bytes) {
  uint64_t h = kFnvBasis;
  for (uint8_t b : bytes) h = (h ^ b) * kFnvPrime;
  return h;
}

uint64_t sealDigest(std::span<const uint8_t> bytes) {
  uint64_t lane[4] = {kFnvBasis, kFnvBasis ^ 1, kFnvBasis ^ 2, kFnvBasis ^ 3};
  const size_t words = bytes.size() / 8;
  auto word = [&](size_t i) {
    uint64_t w;
    std::memcpy(&w, bytes.data() + 8 * i, 8);
    if constexpr (std::endian::native == std::endian::big) w = __builtin_bswap64(w);
    return w;
  };
  size_t i = 0;
  for (; i + 4 <= words; i += 4)
    for (int k = 0; k < 4; ++k) lane[k] = (lane[k] ^ word(i + k)) * kFnvPrime;
  for (; i < words; ++i) lane[i % 4] = (lane[i % 4] ^ word(i)) * kFnvPrime;
  for (size_t b = 8 * words; b < bytes.size(); ++b) lane[0] = (lane[0] ^ bytes[b]) * kFnvPrime;
  uint64_t h = kFnvBasis;
  for (uint64_t l : lane) h = (h ^ l) * kFnvPrime;
  return (h ^ uint64_t(bytes.size())) * kFnvPrime;
}

void sealFatbin(std::vector<uint8_t>& fatbin) {
  const uint64_t length = fatbin.size(), digest = sealDigest(fatbin);
  fatbin.insert(fatbin.end(), std::begin(kSealMagic), std::end(kSealMagic));
  putLe(fatbin, length);
  putLe(fatbin, digest);
  putLe(fatbin, 0);
}

size_t unsealedSize(std::span<const uint8_t> file) {
  const std::string damaged = "the file is damaged (a partial copy, or bits changed on disk or on the wire): copy it again "
                              "or compile the module again";
  // A seal cut short: the first container ends before the file does, and what follows is the
  // beginning of a seal (the container's header: magic, version, header size, entries size).
  if (file.size() >= 16 && loadLe(file, 0, 4) == fatbin::kMagic) {
    const uint64_t end = loadLe(file, 6, 2) + loadLe(file, 8, 8);
    if (end < file.size() && file.size() - end < kSealBytes &&
        std::memcmp(file.data() + end, kSealMagic, std::min<size_t>(kVersionAt, file.size() - end)) == 0)
      fail(ETC_STATUS_BAD_FATBIN, "the fatbin's seal is cut short (" + std::to_string(file.size() - end) + " of its " +
                                      std::to_string(kSealBytes) + " bytes): " + damaged);
  }
  if (file.size() < kSealBytes) return file.size();
  const std::span<const uint8_t> seal = file.last(kSealBytes);
  const char version = static_cast<char>(seal[kVersionAt]);
  if (std::memcmp(seal.data(), kSealMagic, kVersionAt) != 0) return file.size();
  if (version != '1' && version != '2')
    fail(ETC_STATUS_BAD_FATBIN, std::string("the fatbin's seal is of a version this runtime does not read ('") + version +
                                    "'; it reads '1' and '2'): open it with the runtime of the etcc that wrote it, or "
                                    "compile the module again");
  const size_t content = file.size() - kSealBytes;
  const uint64_t length = loadLe(seal, 8, 8), digest = loadLe(seal, 16, 8);
  if (length != content || loadLe(seal, 24, 8) != 0)
    fail(ETC_STATUS_BAD_FATBIN, "the fatbin's seal says " + std::to_string(length) + " bytes of content, the file has " +
                                    std::to_string(content) + ": " + damaged);
  if ((version == '1' ? fnv1a64(file.first(content)) : sealDigest(file.first(content))) != digest)
    fail(ETC_STATUS_BAD_FATBIN, "the fatbin's checksum does not match its content: " + damaged);
  return content;
}

}  // namespace etc::rt
