// The fatbin container, as CUDA 13's `fatbinary -64 --compress=false` writes it (all fields
// little-endian; established by writing images with fatbinary and reading its output):
//
//   container header, 16 bytes:
//     +0 u32 magic 0xBA55ED50   +4 u16 version 1   +6 u16 header size 16
//     +8 u64 bytes that follow the header (every entry with its payload)
//   then per image, in order:
//     +0  u16 kind: 1 PTX, 2 ELF            +2  u16 0x0101 (constant in every file seen)
//     +4  u32 entry header size             +8  u64 payload size, padded to 8 bytes
//     +16 u32 compressed payload size (0: stored as is)
//     +20 u32 PTX: offset of the options record from the entry start (64); ELF: 0
//     +24 u16 minor, +26 u16 major version: PTX: the ISA version of its ".version" directive
//         (first occurrence in the raw text, even inside a comment, as fatbinary does);
//         ELF: 1 and the ELF header's EI_ABIVERSION byte (cuobjdump's "code version [1,8]")
//     +28 u32 sm (90 for sm_90a and compute_90)
//     +32 u32, +36 u32 object name offset and length (0: no name)
//     +40 u64 flags: 0x1 64-bit code, 0x10 host Linux, 0x8000 compressed payload,
//         0x100000 arch-specific ('a') target, taken from the target, not from the image
//     +48 u64 0                             +56 u64 uncompressed size (0 when stored as is)
//   PTX entries only, at +64 (the options record, the Xptxas --cmdline of fatbinary):
//     +64 u32 offset of the options text from the entry start (72), +68 u32 its length without
//     the NUL, +72 the text, NUL-terminated, zero-padded to 8 bytes (empty: 8 zero bytes)
//   payload: ELF: the cubin, zero-padded to 8 bytes; PTX: compactPtx(text), a NUL, zero-padded
//   to 8 bytes.
//
// Entries carry no alignment beyond the 8-byte padding of each payload.
#include "compiler/backend/fatbin_writer.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "etc/fatbin_format.h"

namespace etc::backend {

namespace {

size_t padTo8(size_t n) { return (n + 7) & ~size_t(7); }

void put16(std::vector<uint8_t>& out, uint16_t v) {
  for (int i = 0; i < 2; ++i) out.push_back(uint8_t(v >> (8 * i)));
}
void put32(std::vector<uint8_t>& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(uint8_t(v >> (8 * i)));
}
void put64(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(uint8_t(v >> (8 * i)));
}
void padZeros(std::vector<uint8_t>& out, size_t n) { out.insert(out.end(), n, 0); }

// The text up to the first NUL: fatbinary treats a PTX image as a C string.
std::string_view ptxText(const std::vector<uint8_t>& image) {
  std::string_view text(reinterpret_cast<const char*>(image.data()), image.size());
  return text.substr(0, text.find('\0'));
}

bool parsePtxVersion(std::string_view ptx, uint16_t& major, uint16_t& minor) {
  constexpr std::string_view kDirective = ".version";
  for (size_t at = ptx.find(kDirective); at != std::string_view::npos;
       at = ptx.find(kDirective, at + 1)) {
    size_t i = at + kDirective.size();
    while (i < ptx.size() && (ptx[i] == ' ' || ptx[i] == '\t')) ++i;
    auto number = [&](uint16_t& v) {
      const size_t start = i;
      uint32_t value = 0;
      while (i < ptx.size() && std::isdigit(static_cast<unsigned char>(ptx[i])) && value < 65536)
        value = value * 10 + uint32_t(ptx[i++] - '0');
      v = uint16_t(value);
      return i > start && value < 65536;
    };
    if (number(major) && i < ptx.size() && ptx[i++] == '.' && number(minor)) return true;
  }
  return false;
}

std::string describe(size_t index, const Target& t) {
  return "fatbin entry " + std::to_string(index) + " (" + t.name() + ")";
}

}  // namespace

std::string compactPtx(std::string_view ptx) {
  ptx = ptx.substr(0, ptx.find('\0'));
  std::string out;
  out.reserve(ptx.size());
  // The character consumed last; a comment counts as a non-blank. Starting non-blank keeps one
  // blank at the very start of the text, as fatbinary does.
  char prev = 'x';
  auto isBlankish = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  size_t i = 0;
  while (i < ptx.size()) {
    const char c = ptx[i];
    if (c == '"') {
      size_t end = i + 1;
      while (end < ptx.size() && ptx[end] != '"') end += ptx[end] == '\\' ? 2 : 1;
      end = std::min(end + 1, ptx.size());
      out.append(ptx.substr(i, end - i));
      prev = '"';
      i = end;
    } else if (c == '/' && i + 1 < ptx.size() && ptx[i + 1] == '/') {
      i = std::min(ptx.find('\n', i), ptx.size());  // the newline itself stays
      prev = '/';
    } else if (c == '/' && i + 1 < ptx.size() && ptx[i + 1] == '*') {
      const size_t close = ptx.find("*/", i + 2);
      i = close == std::string_view::npos ? ptx.size() : close + 2;
      prev = '/';
    } else {
      // Only spaces and tabs are squeezed; a blank after any whitespace (newline included) goes.
      if (!((c == ' ' || c == '\t') && isBlankish(prev))) out.push_back(c);
      prev = c;
      ++i;
    }
  }
  return out;
}

std::vector<uint8_t> writeFatbin(const std::vector<FatbinEntry>& entries) {
  std::vector<uint8_t> body;
  for (size_t index = 0; index < entries.size(); ++index) {
    const FatbinEntry& e = entries[index];
    const bool is_ptx = e.target.kind == Target::Kind::Ptx;
    uint16_t major = 0, minor = 0;
    std::string compact;
    if (is_ptx) {
      if (!parsePtxVersion(ptxText(e.image), major, minor))
        throw std::invalid_argument(describe(index, e.target) +
                                    " is not PTX: it has no \".version X.Y\" directive");
      compact = compactPtx(ptxText(e.image));
    } else {
      static constexpr uint8_t kElfMagic[4] = {0x7f, 'E', 'L', 'F'};
      if (e.image.size() < 16 || !std::equal(kElfMagic, kElfMagic + 4, e.image.begin()))
        throw std::invalid_argument(describe(index, e.target) + " is not an ELF cubin");
      major = 1;
      minor = e.image[8];  // EI_ABIVERSION
    }
    const size_t payload = is_ptx ? compact.size() + 1 : e.image.size();
    const uint32_t header_size = fatbin::kEntryHeaderSize + (is_ptx ? fatbin::kPtxOptionsRecordSize + 8 : 0);
    const uint64_t flags = fatbin::kFlag64Bit | fatbin::kFlagHostLinux | (e.target.arch_specific ? fatbin::kFlagArchSpecific : 0);

    put16(body, is_ptx ? fatbin::kKindPtx : fatbin::kKindElf);
    put16(body, fatbin::kEntryConstant);
    put32(body, header_size);
    put64(body, padTo8(payload));
    put32(body, 0);  // stored uncompressed
    put32(body, is_ptx ? fatbin::kEntryHeaderSize : 0);
    put16(body, minor);
    put16(body, major);
    put32(body, uint32_t(e.target.sm));
    put32(body, 0);
    put32(body, 0);
    put64(body, flags);
    put64(body, 0);
    put64(body, 0);
    if (is_ptx) {
      put32(body, fatbin::kEntryHeaderSize + fatbin::kPtxOptionsRecordSize);  // where the (empty) options are
      put32(body, 0);
      padZeros(body, 8);  // the options' NUL and its padding
    }
    if (is_ptx) {
      body.insert(body.end(), compact.begin(), compact.end());
      body.push_back(0);
    } else {
      body.insert(body.end(), e.image.begin(), e.image.end());
    }
    padZeros(body, padTo8(payload) - payload);
  }

  std::vector<uint8_t> out;
  out.reserve(fatbin::kContainerHeaderSize + body.size());
  put32(out, fatbin::kMagic);
  put16(out, fatbin::kVersion);
  put16(out, fatbin::kContainerHeaderSize);
  put64(out, body.size());
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

}  // namespace etc::backend
