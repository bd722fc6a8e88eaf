#include "fatbin_seal.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "elf_file.h"
#include "rt_error.h"

namespace etc::rt {

namespace {

constexpr char kMagic[8] = {'E', 'T', 'C', 'S', 'E', 'A', 'L', '1'};

void putLe(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(uint8_t(v >> (8 * i)));
}

}  // namespace

uint64_t fnv1a64(std::span<const uint8_t> bytes) {
  uint64_t h = 1469598103934665603ull;
  for (uint8_t b : bytes) h = (h ^ b) * 1099511628211ull;
  return h;
}

void sealFatbin(std::vector<uint8_t>& fatbin) {
  const uint64_t length = fatbin.size(), digest = fnv1a64(fatbin);
  fatbin.insert(fatbin.end(), std::begin(kMagic), std::end(kMagic));
  putLe(fatbin, length);
  putLe(fatbin, digest);
  putLe(fatbin, 0);
}

size_t unsealedSize(std::span<const uint8_t> file) {
  const std::string damaged = "the file is damaged (a partial copy, or bits changed on disk or on the wire): copy it again "
                              "or compile the module again";
  // A seal cut short: the first container ends before the file does, and what follows is the
  // beginning of a seal (the container's header: magic, version, header size, entries size).
  if (file.size() >= 16 && loadLe(file, 0, 4) == 0xBA55ED50u) {
    const uint64_t end = loadLe(file, 6, 2) + loadLe(file, 8, 8);
    if (end < file.size() && file.size() - end < kSealBytes &&
        std::memcmp(file.data() + end, kMagic, std::min<size_t>(sizeof kMagic, file.size() - end)) == 0)
      fail(ETC_STATUS_BAD_FATBIN, "the fatbin's seal is cut short (" + std::to_string(file.size() - end) + " of its " +
                                      std::to_string(kSealBytes) + " bytes): " + damaged);
  }
  if (file.size() < kSealBytes) return file.size();
  const std::span<const uint8_t> seal = file.last(kSealBytes);
  if (std::memcmp(seal.data(), kMagic, sizeof kMagic) != 0) return file.size();
  const size_t content = file.size() - kSealBytes;
  const uint64_t length = loadLe(seal, 8, 8), digest = loadLe(seal, 16, 8);
  if (length != content || loadLe(seal, 24, 8) != 0)
    fail(ETC_STATUS_BAD_FATBIN, "the fatbin's seal says " + std::to_string(length) + " bytes of content, the file has " +
                                    std::to_string(content) + ": " + damaged);
  if (fnv1a64(file.first(content)) != digest)
    fail(ETC_STATUS_BAD_FATBIN, "the fatbin's checksum does not match its content: " + damaged);
  return content;
}

}  // namespace etc::rt
