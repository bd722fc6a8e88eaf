#include "elf_file.h"

#include <cstring>

namespace etc::rt {

namespace {

constexpr size_t kEhdrSize = 64, kShdrSize = 64, kSymSize = 24;

// The NUL-terminated string at `at` in a string table, if it is one.
bool stringAt(std::span<const uint8_t> strtab, uint64_t at, std::string_view& out) {
  if (at >= strtab.size()) return false;
  const auto* begin = reinterpret_cast<const char*>(strtab.data()) + at;
  const void* nul = std::memchr(begin, 0, strtab.size() - at);
  if (!nul) return false;
  out = std::string_view(begin, size_t(static_cast<const char*>(nul) - begin));
  return true;
}

}  // namespace

uint64_t loadLe(std::span<const uint8_t> b, uint64_t at, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | b[at + uint64_t(i)];
  return v;
}

bool fitsIn(uint64_t offset, uint64_t size, uint64_t total) { return offset <= total && size <= total - offset; }

bool ElfFile::readHeader(std::string& error) {
  if (b_.size() < 4 || std::memcmp(b_.data(), "\x7f" "ELF", 4) != 0) {
    error = "not an ELF file: it does not start with the ELF magic number";
    return false;
  }
  if (b_.size() < kEhdrSize) {
    error = "the ELF file is truncated: " + std::to_string(b_.size()) + " bytes, its header alone has 64";
    return false;
  }
  if (b_[4] != 2 || b_[5] != 1) {
    error = "the ELF file is not 64-bit little-endian (class " + std::to_string(b_[4]) + ", data encoding " +
            std::to_string(b_[5]) + ")";
    return false;
  }
  shoff_ = loadLe(b_, 40, 8);
  const uint64_t shentsize = loadLe(b_, 58, 2);
  shnum_ = loadLe(b_, 60, 2);
  shstrndx_ = loadLe(b_, 62, 2);
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
  if (!fitsIn(shoff_, kShdrSize, b_.size())) {
    error = "the ELF section header table at offset " + std::to_string(shoff_) + " lies past the end of the " +
            std::to_string(b_.size()) + "-byte file";
    return false;
  }
  if (shnum_ == 0) shnum_ = loadLe(b_, shoff_ + 32, 8);  // more than 0xff00 sections: in sh_size
  if (shnum_ > (b_.size() - shoff_) / shentsize_) {
    error = "the ELF section header table (" + std::to_string(shnum_) + " entries at offset " + std::to_string(shoff_) +
            ") runs past the end of the " + std::to_string(b_.size()) + "-byte file";
    return false;
  }
  if (shstrndx_ == kShnXindex) shstrndx_ = loadLe(b_, shoff_ + 40, 4);  // in sh_link of section 0
  return true;
}

ElfSection ElfFile::section(uint64_t i) const {
  const uint64_t at = shoff_ + i * shentsize_;
  ElfSection s;
  s.name = uint32_t(loadLe(b_, at, 4));
  s.type = uint32_t(loadLe(b_, at + 4, 4));
  s.addr = loadLe(b_, at + 16, 8);
  s.offset = loadLe(b_, at + 24, 8);
  s.size = loadLe(b_, at + 32, 8);
  s.link = uint32_t(loadLe(b_, at + 40, 4));
  s.info = uint32_t(loadLe(b_, at + 44, 4));
  s.entsize = loadLe(b_, at + 56, 8);
  return s;
}

bool ElfFile::data(uint64_t i, const ElfSection& s, std::span<const uint8_t>& out, std::string& error) const {
  if (s.type == kShtNobits || !fitsIn(s.offset, s.size, b_.size())) {
    error = "ELF section " + std::to_string(i) + " (" + std::to_string(s.size) + " bytes at offset " +
            std::to_string(s.offset) + ") " +
            (s.type == kShtNobits ? "has no bytes in the file (like .bss)"
                                  : "runs past the end of the " + std::to_string(b_.size()) + "-byte file");
    return false;
  }
  out = b_.subspan(s.offset, s.size);
  return true;
}

std::string_view ElfFile::sectionName(const ElfSection& s) const {
  std::span<const uint8_t> names;
  std::string ignored;
  std::string_view out;
  if (shstrndx_ >= shnum_ || !data(shstrndx_, section(shstrndx_), names, ignored) || !stringAt(names, s.name, out))
    return {};
  return out;
}

bool ElfFile::symbolTable(uint64_t symtab_index, std::span<const uint8_t>& syms, std::span<const uint8_t>& strs,
                          uint64_t& entsize, std::string& error) const {
  const ElfSection symtab = section(symtab_index);
  if (!data(symtab_index, symtab, syms, error)) return false;
  if (symtab.entsize < kSymSize) {
    error = "the ELF symbol table (section " + std::to_string(symtab_index) + ") gives an entry size of " +
            std::to_string(symtab.entsize) + " bytes, less than the 24 of a symbol";
    return false;
  }
  if (symtab.link >= shnum_) {
    error = "the ELF symbol table (section " + std::to_string(symtab_index) + ") names string table section " +
            std::to_string(symtab.link) + ", which does not exist";
    return false;
  }
  entsize = symtab.entsize;
  return data(symtab.link, section(symtab.link), strs, error);
}

ElfSymbol ElfFile::symbolAt(std::span<const uint8_t> syms, std::span<const uint8_t> strs, uint64_t at) {
  ElfSymbol s;
  if (!stringAt(strs, loadLe(syms, at, 4), s.name)) s.name = {};
  s.info = uint8_t(loadLe(syms, at + 4, 1));
  s.shndx = uint16_t(loadLe(syms, at + 6, 2));
  s.value = loadLe(syms, at + 8, 8);
  s.size = loadLe(syms, at + 16, 8);
  return s;
}

bool ElfFile::sectionOf(uint64_t symtab_index, uint64_t k, const ElfSymbol& sym, const std::string& what,
                        uint64_t& shndx, std::string& error) const {
  shndx = sym.shndx;
  if (sym.shndx != kShnXindex) return true;
  // The real index sits in the SHT_SYMTAB_SHNDX section tied to this table.
  for (uint64_t i = 0; i < shnum_; ++i) {
    const ElfSection x = section(i);
    if (x.type != kShtSymtabShndx || x.link != symtab_index) continue;
    std::span<const uint8_t> xdata;
    if (!data(i, x, xdata, error)) return false;
    if (!fitsIn(k * 4, 4, xdata.size())) break;
    shndx = loadLe(xdata, k * 4, 4);
    return true;
  }
  error = "ELF symbol '" + what + "' uses an extended section index that no SHT_SYMTAB_SHNDX section resolves";
  return false;
}

}  // namespace etc::rt
