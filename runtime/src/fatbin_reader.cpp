#include "fatbin_reader.h"

#include <algorithm>
#include <cstdio>

#include "etc/fatbin_format.h"

namespace etc::rt {

namespace {

uint64_t load(std::span<const uint8_t> b, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | b[at + size_t(i)];
  return v;
}

std::string hex32(uint64_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string entryName(size_t index, size_t offset) {
  return "fatbin entry " + std::to_string(index) + " at offset " + std::to_string(offset);
}

// Reads the entries of the container whose entries occupy [begin, end) of `bytes`.
bool parseEntries(std::span<const uint8_t> bytes, size_t begin, size_t end,
                  std::vector<FatbinImage>& out, size_t& index, std::string& error) {
  size_t pos = begin;
  while (pos < end) {
    const std::string name = entryName(index, pos);
    const size_t left = end - pos;
    if (left < fatbin::kEntryHeaderSize) {
      error = name + " is truncated: an entry header has " + std::to_string(fatbin::kEntryHeaderSize) +
              " bytes but only " + std::to_string(left) + " remain in the container";
      return false;
    }
    const uint16_t kind = uint16_t(load(bytes, pos, 2));
    const uint64_t header_size = load(bytes, pos + 4, 4);
    const uint64_t payload_size = load(bytes, pos + 8, 8);
    const uint64_t compressed_size = load(bytes, pos + 16, 4);
    const uint32_t sm = uint32_t(load(bytes, pos + 28, 4));
    const uint64_t flags = load(bytes, pos + 40, 8);
    if (kind != fatbin::kKindPtx && kind != fatbin::kKindElf) {
      error = name + " has unknown kind " + std::to_string(kind) + " (1 is PTX, 2 is ELF)";
      return false;
    }
    if (header_size < fatbin::kEntryHeaderSize) {
      error = name + " gives a header size of " + std::to_string(header_size) +
              " bytes, less than the " + std::to_string(fatbin::kEntryHeaderSize) + " of an entry header";
      return false;
    }
    if (header_size > left) {
      error = name + " gives a header size of " + std::to_string(header_size) + " bytes but only " +
              std::to_string(left) + " remain in the container";
      return false;
    }
    if (payload_size > left - header_size) {
      error = name + " announces a payload of " + std::to_string(payload_size) +
              " bytes but only " + std::to_string(left - header_size) +
              " remain in the container";
      return false;
    }
    FatbinImage image;
    image.is_ptx = kind == fatbin::kKindPtx;
    image.sm = int(sm);
    image.arch_specific = (flags & fatbin::kFlagArchSpecific) != 0;
    image.compressed = (flags & fatbin::kFlagCompressed) != 0;
    std::span<const uint8_t> payload = bytes.subspan(pos + header_size, payload_size);
    if (image.compressed) {
      if (compressed_size > payload_size) {
        error = name + " gives a compressed size of " + std::to_string(compressed_size) +
                " bytes, more than its payload of " + std::to_string(payload_size);
        return false;
      }
      payload = payload.first(compressed_size);
    } else if (image.is_ptx) {
      payload = payload.first(size_t(std::find(payload.begin(), payload.end(), 0) - payload.begin()));
    }
    image.data = payload;
    out.push_back(image);
    ++index;
    pos += header_size + payload_size;
  }
  return true;
}

}  // namespace

std::string FatbinImage::archName() const {
  return std::string(is_ptx ? "compute_" : "sm_") + std::to_string(sm) + (arch_specific ? "a" : "");
}

bool parseFatbin(std::span<const uint8_t> bytes, std::vector<FatbinImage>& out, std::string& error) {
  size_t pos = 0, index = 0;
  const size_t images_before = out.size();
  do {
    const size_t left = bytes.size() - pos;
    if (left < fatbin::kContainerHeaderSize) {
      error = (pos == 0 ? std::string("the file is too short to be a fatbin: ")
                        : "the data after the fatbin container at offset " + std::to_string(pos) +
                              " is too short for another container: ") +
              std::to_string(left) + " bytes, a fatbin header has " +
              std::to_string(fatbin::kContainerHeaderSize);
      return false;
    }
    const uint64_t magic = load(bytes, pos, 4);
    if (magic != fatbin::kMagic) {
      error = "not a CUDA fatbin: the magic number at offset " + std::to_string(pos) + " is " +
              hex32(magic) + ", a fatbin starts with " + hex32(fatbin::kMagic);
      return false;
    }
    const uint16_t version = uint16_t(load(bytes, pos + 4, 2));
    const uint64_t header_size = load(bytes, pos + 6, 2);
    const uint64_t entries_size = load(bytes, pos + 8, 8);
    if (version != fatbin::kVersion) {
      error = "unsupported fatbin version " + std::to_string(version) + " at offset " +
              std::to_string(pos) + " (this reader knows version " + std::to_string(fatbin::kVersion) + ")";
      return false;
    }
    if (header_size < fatbin::kContainerHeaderSize || header_size > left) {
      error = "the fatbin header at offset " + std::to_string(pos) + " gives a header size of " +
              std::to_string(header_size) + " bytes; it must be at least " +
              std::to_string(fatbin::kContainerHeaderSize) + " and within the " + std::to_string(left) +
              " bytes of the file that remain";
      return false;
    }
    if (entries_size > left - header_size) {
      error = "the fatbin at offset " + std::to_string(pos) + " is truncated: its header announces " +
              std::to_string(entries_size) + " bytes of entries but only " +
              std::to_string(left - header_size) + " follow";
      return false;
    }
    const size_t begin = pos + header_size, end = begin + entries_size;
    if (!parseEntries(bytes, begin, end, out, index, error)) return false;
    pos = end;
  } while (pos < bytes.size());
  if (out.size() == images_before) {
    error = "the fatbin holds no images";
    return false;
  }
  return true;
}

}  // namespace etc::rt
