// The integrity seal etcc appends to a fatbin: 32 bytes after the fatbin container,
//   "ETCSEAL1" | u64 length of what precedes | u64 FNV-1a 64 of those bytes | u64 0
// (little-endian). The CUDA fatbin format has no checksum of its own, so without the seal a bit
// flipped inside machine code loads and runs; with it, any change to the file is an error
// before anything is read. The driver never sees the seal: the runtime hands it the container.
// A fatbin without a seal (another writer, an older etcc) is read as before.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace etc::rt {

constexpr size_t kSealBytes = 32;

// FNV-1a 64: any change to a single byte changes the digest (each step is a bijection).
uint64_t fnv1a64(std::span<const uint8_t> bytes);

// Appends the seal.
void sealFatbin(std::vector<uint8_t>& fatbin);

// The length of the sealed content (the file without its seal), or the whole size when there is
// no seal. Throws ETC_STATUS_BAD_FATBIN when a seal is there but does not match the content.
size_t unsealedSize(std::span<const uint8_t> file);

}  // namespace etc::rt
