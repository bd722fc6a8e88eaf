#include "elf_symbols.h"

#include <cstring>

namespace etc::rt {

namespace {

constexpr size_t kEhdrSize = 64, kShdrSize = 64, kSymSize = 24;
constexpr uint32_t kShtSymtab = 2, kShtNobits = 8, kShtDynsym = 11, kShtSymtabShndx = 18;
constexpr uint16_t kShnUndef = 0, kShnLoReserve = 0xff00, kShnXindex = 0xffff;

uint64_t load(std::span<const uint8_t> b, uint64_t at, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | b[at + uint64_t(i)];
  return v;
}

// [offset, offset + size) lies inside a buffer of `total` bytes, without overflow.
bool fits(uint64_t offset, uint64_t size, uint64_t total) {
  return offset <= total && size <= total - offset;
}

struct Section {
  uint32_t type = 0;
  uint64_t addr = 0, offset = 0, size = 0, entsize = 0;
  uint32_t link = 0;
};

class Elf {
 public:
  explicit Elf(std::span<const uint8_t> b) : b_(b) {}

  bool readHeader(std::string& error) {
    if (b_.size() < 4 || std::memcmp(b_.data(), "\x7f" "ELF", 4) != 0) {
      error = "not an ELF file: it does not start with the ELF magic number";
      return false;
    }
    if (b_.size() < kEhdrSize) {
      error = "the ELF file is truncated: " + std::to_string(b_.size()) +
              " bytes, its header alone has 64";
      return false;
    }
    if (b_[4] != 2 || b_[5] != 1) {
      error = "the ELF file is not 64-bit little-endian (class " + std::to_string(b_[4]) +
              ", data encoding " + std::to_string(b_[5]) + ")";
      return false;
    }
    shoff_ = load(b_, 40, 8);
    const uint64_t shentsize = load(b_, 58, 2);
    shnum_ = load(b_, 60, 2);
    if (shoff_ == 0) {
      error = "the ELF file has no section header table";
      return false;
    }
    if (shentsize < kShdrSize) {
      error = "the ELF file gives a section header size of " + std::to_string(shentsize) +
              " bytes, less than the 64 of a section header";
      return false;
    }
    shentsize_ = shentsize;
    if (!fits(shoff_, kShdrSize, b_.size())) {
      error = "the ELF section header table at offset " + std::to_string(shoff_) +
              " lies past the end of the " + std::to_string(b_.size()) + "-byte file";
      return false;
    }
    if (shnum_ == 0) shnum_ = load(b_, shoff_ + 32, 8);  // more than 0xff00 sections: in sh_size
    if (shnum_ > (b_.size() - shoff_) / shentsize_) {
      error = "the ELF section header table (" + std::to_string(shnum_) + " entries at offset " +
              std::to_string(shoff_) + ") runs past the end of the " +
              std::to_string(b_.size()) + "-byte file";
      return false;
    }
    return true;
  }

  uint64_t sectionCount() const { return shnum_; }

  Section section(uint64_t i) const {
    const uint64_t at = shoff_ + i * shentsize_;
    Section s;
    s.type = uint32_t(load(b_, at + 4, 4));
    s.addr = load(b_, at + 16, 8);
    s.offset = load(b_, at + 24, 8);
    s.size = load(b_, at + 32, 8);
    s.link = uint32_t(load(b_, at + 40, 4));
    s.entsize = load(b_, at + 56, 8);
    return s;
  }

  // The section's bytes in the file, or false with an error (NOBITS sections have none).
  bool data(uint64_t i, const Section& s, std::span<const uint8_t>& out, std::string& error) const {
    if (s.type == kShtNobits || !fits(s.offset, s.size, b_.size())) {
      error = "ELF section " + std::to_string(i) + " (" + std::to_string(s.size) +
              " bytes at offset " + std::to_string(s.offset) + ") " +
              (s.type == kShtNobits ? "has no bytes in the file (like .bss)"
                                    : "runs past the end of the " + std::to_string(b_.size()) +
                                          "-byte file");
      return false;
    }
    out = b_.subspan(s.offset, s.size);
    return true;
  }

 private:
  std::span<const uint8_t> b_;
  uint64_t shoff_ = 0, shentsize_ = 0, shnum_ = 0;
};

// The NUL-terminated string at `at` in a string table, if it is one.
bool stringAt(std::span<const uint8_t> strtab, uint64_t at, std::string_view& out) {
  if (at >= strtab.size()) return false;
  const auto* begin = reinterpret_cast<const char*>(strtab.data()) + at;
  const void* nul = std::memchr(begin, 0, strtab.size() - at);
  if (!nul) return false;
  out = std::string_view(begin, size_t(static_cast<const char*>(nul) - begin));
  return true;
}

// Looks for `name` in symbol table section `symtab_index`. Returns false with `error` set on a
// malformed table; returns true with `found` telling whether the symbol was there.
bool searchTable(const Elf& elf, uint64_t symtab_index, std::string_view name, bool& found,
                 std::span<const uint8_t>& out, std::string& error) {
  const Section symtab = elf.section(symtab_index);
  std::span<const uint8_t> syms, strs;
  if (!elf.data(symtab_index, symtab, syms, error)) return false;
  if (symtab.entsize < kSymSize) {
    error = "the ELF symbol table (section " + std::to_string(symtab_index) +
            ") gives an entry size of " + std::to_string(symtab.entsize) +
            " bytes, less than the 24 of a symbol";
    return false;
  }
  if (symtab.link >= elf.sectionCount()) {
    error = "the ELF symbol table (section " + std::to_string(symtab_index) +
            ") names string table section " + std::to_string(symtab.link) + ", which does not exist";
    return false;
  }
  if (!elf.data(symtab.link, elf.section(symtab.link), strs, error)) return false;

  const uint64_t count = syms.size() / symtab.entsize;
  for (uint64_t k = 0; k < count; ++k) {
    const uint64_t at = k * symtab.entsize;
    std::string_view sym_name;
    if (!stringAt(strs, load(syms, at, 4), sym_name) || sym_name != name) continue;

    uint64_t shndx = load(syms, at + 6, 2);
    if (shndx == kShnXindex) {
      // The real index sits in the SHT_SYMTAB_SHNDX section tied to this table.
      bool resolved = false;
      for (uint64_t i = 0; i < elf.sectionCount() && !resolved; ++i) {
        const Section x = elf.section(i);
        if (x.type != kShtSymtabShndx || x.link != symtab_index) continue;
        std::span<const uint8_t> xdata;
        if (!elf.data(i, x, xdata, error)) return false;
        if (!fits(k * 4, 4, xdata.size())) break;
        shndx = load(xdata, k * 4, 4);
        resolved = true;
      }
      if (!resolved) {
        error = "ELF symbol '" + std::string(name) +
                "' uses an extended section index that no SHT_SYMTAB_SHNDX section resolves";
        return false;
      }
    } else if (shndx == kShnUndef || shndx >= kShnLoReserve) {
      error = "ELF symbol '" + std::string(name) + "' is " +
              (shndx == kShnUndef ? "undefined" : "not in a section") + " (section index " +
              std::to_string(shndx) + ")";
      return false;
    }
    if (shndx >= elf.sectionCount()) {
      error = "ELF symbol '" + std::string(name) + "' names section " + std::to_string(shndx) +
              ", which does not exist";
      return false;
    }
    const Section home = elf.section(shndx);
    std::span<const uint8_t> bytes;
    if (!elf.data(shndx, home, bytes, error)) {
      error = "ELF symbol '" + std::string(name) + "': " + error;
      return false;
    }
    const uint64_t value = load(syms, at + 8, 8), size = load(syms, at + 16, 8);
    // In a cubin the section address is 0 and st_value is the offset in the section.
    if (value < home.addr || !fits(value - home.addr, size, bytes.size())) {
      error = "ELF symbol '" + std::string(name) + "' (" + std::to_string(size) +
              " bytes at " + std::to_string(value) + ") lies outside its section " +
              std::to_string(shndx) + " of " + std::to_string(bytes.size()) + " bytes";
      return false;
    }
    out = bytes.subspan(value - home.addr, size);
    found = true;
    return true;
  }
  found = false;
  return true;
}

}  // namespace

bool findElfSymbol(std::span<const uint8_t> elf64, std::string_view name,
                   std::span<const uint8_t>& out, std::string& error) {
  Elf elf(elf64);
  if (!elf.readHeader(error)) return false;
  bool any_table = false;
  for (uint64_t i = 0; i < elf.sectionCount(); ++i) {
    const uint32_t type = elf.section(i).type;
    if (type != kShtSymtab && type != kShtDynsym) continue;
    any_table = true;
    bool found = false;
    if (!searchTable(elf, i, name, found, out, error)) return false;
    if (found) return true;
  }
  error = any_table ? "the ELF file has no symbol named '" + std::string(name) + "'"
                    : "the ELF file has no symbol table";
  return false;
}

}  // namespace etc::rt
