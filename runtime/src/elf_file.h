// A 64-bit little-endian ELF file (a cubin) read in place, without trusting it: the header and
// section table are checked once, every section's bytes and every string before use. Shared by
// the descriptor lookup (elf_symbols) and the compiler's resource report (cubin_resources).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace etc::rt {

struct ElfSection {
  uint32_t name = 0;  // offset in the section name table
  uint32_t type = 0;
  uint64_t addr = 0, offset = 0, size = 0, entsize = 0;
  uint32_t link = 0, info = 0;
};

struct ElfSymbol {
  std::string_view name;  // "" when the string table offset is bad
  uint8_t info = 0;       // binding << 4 | type
  uint16_t shndx = 0;     // as stored: SHN_XINDEX (0xffff) means see sectionOf
  uint64_t value = 0, size = 0;
};

constexpr uint32_t kShtSymtab = 2, kShtNobits = 8, kShtDynsym = 11, kShtSymtabShndx = 18;
// A section index too large for a symbol's 16 bits: the real one is in SHT_SYMTAB_SHNDX.
constexpr uint16_t kShnXindex = 0xffff;

// Little-endian load of `bytes` bytes at `at`; the caller has checked the range.
uint64_t loadLe(std::span<const uint8_t> b, uint64_t at, int bytes);
// [offset, offset + size) lies inside a buffer of `total` bytes, without overflow.
bool fitsIn(uint64_t offset, uint64_t size, uint64_t total);

class ElfFile {
 public:
  explicit ElfFile(std::span<const uint8_t> b) : b_(b) {}

  // Checks the identification, header and section table; false with a sentence otherwise.
  bool readHeader(std::string& error);
  uint64_t sectionCount() const { return shnum_; }
  ElfSection section(uint64_t i) const;
  // The section's bytes in the file, or false with an error (NOBITS sections have none).
  bool data(uint64_t i, const ElfSection& s, std::span<const uint8_t>& out, std::string& error) const;
  // The section's name, or "" when the name table or the offset is bad.
  std::string_view sectionName(const ElfSection& s) const;

  // Calls visit(index_in_table, symbol) for each symbol of symbol table section `symtab_index`
  // until it returns false. False with an error for a malformed table (not for a malformed
  // symbol: what a symbol's fields mean is left to the caller).
  template <typename Visit>
  bool forEachSymbol(uint64_t symtab_index, std::string& error, Visit visit) const;

  // The section index of symbol number `k` of table `symtab_index`, resolving SHN_XINDEX
  // through the table's SHT_SYMTAB_SHNDX section. False with an error naming `what`.
  bool sectionOf(uint64_t symtab_index, uint64_t k, const ElfSymbol& sym, const std::string& what, uint64_t& shndx,
                 std::string& error) const;

 private:
  bool symbolTable(uint64_t symtab_index, std::span<const uint8_t>& syms, std::span<const uint8_t>& strs,
                   uint64_t& entsize, std::string& error) const;
  static ElfSymbol symbolAt(std::span<const uint8_t> syms, std::span<const uint8_t> strs, uint64_t at);

  std::span<const uint8_t> b_;
  uint64_t shoff_ = 0, shentsize_ = 0, shnum_ = 0, shstrndx_ = 0;
};

template <typename Visit>
bool ElfFile::forEachSymbol(uint64_t symtab_index, std::string& error, Visit visit) const {
  std::span<const uint8_t> syms, strs;
  uint64_t entsize = 0;
  if (!symbolTable(symtab_index, syms, strs, entsize, error)) return false;
  const uint64_t count = syms.size() / entsize;
  for (uint64_t k = 0; k < count; ++k) {
    if (!visit(k, symbolAt(syms, strs, k * entsize))) break;
  }
  return true;
}

}  // namespace etc::rt
