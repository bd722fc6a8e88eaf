#include "elf_symbols.h"

#include "elf_file.h"

namespace etc::rt {

namespace {

constexpr uint16_t kShnUndef = 0, kShnLoReserve = 0xff00;

// Looks for `name` in symbol table section `symtab_index`. Returns false with `error` set on a
// malformed table; returns true with `found` telling whether the symbol was there.
bool searchTable(const ElfFile& elf, uint64_t symtab_index, std::string_view name, bool& found,
                 std::span<const uint8_t>& out, std::string& error) {
  found = false;
  bool failed = false;
  const std::string what(name);
  bool table_ok = elf.forEachSymbol(symtab_index, error, [&](uint64_t k, const ElfSymbol& sym) {
    if (sym.name != name || sym.name.empty()) return true;
    failed = true;  // until the symbol's bytes are found
    uint64_t shndx = 0;
    if (sym.shndx != kShnXindex && (sym.shndx == kShnUndef || sym.shndx >= kShnLoReserve)) {
      error = "ELF symbol '" + what + "' is " + (sym.shndx == kShnUndef ? "undefined" : "not in a section") +
              " (section index " + std::to_string(sym.shndx) + ")";
      return false;
    }
    if (!elf.sectionOf(symtab_index, k, sym, what, shndx, error)) return false;
    if (shndx >= elf.sectionCount()) {
      error = "ELF symbol '" + what + "' names section " + std::to_string(shndx) + ", which does not exist";
      return false;
    }
    const ElfSection home = elf.section(shndx);
    std::span<const uint8_t> bytes;
    if (!elf.data(shndx, home, bytes, error)) {
      error = "ELF symbol '" + what + "': " + error;
      return false;
    }
    // In a cubin the section address is 0 and st_value is the offset in the section.
    if (sym.value < home.addr || !fitsIn(sym.value - home.addr, sym.size, bytes.size())) {
      error = "ELF symbol '" + what + "' (" + std::to_string(sym.size) + " bytes at " + std::to_string(sym.value) +
              ") lies outside its section " + std::to_string(shndx) + " of " + std::to_string(bytes.size()) + " bytes";
      return false;
    }
    out = bytes.subspan(sym.value - home.addr, sym.size);
    failed = false;
    found = true;
    return false;
  });
  return table_ok && !failed;
}

}  // namespace

bool findElfSymbol(std::span<const uint8_t> elf64, std::string_view name, std::span<const uint8_t>& out,
                   std::string& error) {
  ElfFile elf(elf64);
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
  error = any_table ? "the ELF file has no symbol named '" + std::string(name) + "'" : "the ELF file has no symbol table";
  return false;
}

}  // namespace etc::rt
