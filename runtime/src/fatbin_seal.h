// The integrity seal etcc appends to a fatbin: 32 bytes after the fatbin container,
//   "ETCSEAL2" | u64 length of what precedes | u64 sealDigest of those bytes | u64 0
// (little-endian). The CUDA fatbin format has no checksum of its own, so without the seal a bit
// flipped inside machine code loads and runs; with it, any change to the file is an error
// before anything is read. The driver never sees the seal: the runtime hands it the container.
// Seals of etcc before session 41, "ETCSEAL1" with an FNV-1a 64 digest, are checked as well. A
// fatbin without a seal (another writer, an older etcc) is read as before.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace etc::rt {

constexpr size_t kSealBytes = 32;

// FNV-1a 64: any change to a single byte changes the digest (each step is a bijection). The
// digest of an "ETCSEAL1" seal.
uint64_t fnv1a64(std::span<const uint8_t> bytes);

// The digest of an "ETCSEAL2" seal: four FNV-1a 64 lanes over the little-endian 8-byte words
// (word i to lane i % 4), the bytes after the last whole word into lane 0 one at a time, then
// the four lanes and the length folded by FNV-1a 64. Each step is a bijection of its lane, so
// any change to a single byte still changes the digest; the four independent chains of one
// multiply a word ran 8 times as fast as FNV-1a's one chain of a multiply a byte (a 6.4 MB
// fatbin's check was a fifth of opening it).
uint64_t sealDigest(std::span<const uint8_t> bytes);

// Appends the seal.
void sealFatbin(std::vector<uint8_t>& fatbin);

// The length of the sealed content (the file without its seal), or the whole size when there is
// no seal. Throws ETC_STATUS_BAD_FATBIN when a seal is there but does not match the content.
size_t unsealedSize(std::span<const uint8_t> file);

}  // namespace etc::rt
