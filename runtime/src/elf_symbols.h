// Finds a symbol's bytes in a 64-bit little-endian ELF file (a cubin), for reading the
// embedded module descriptor without a GPU. The file is untrusted: every offset and size is
// checked before it is used.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace etc::rt {

// On success `out` is the symbol's st_size bytes inside its section's file data. Fails with a
// sentence in `error` when the file is not a 64-bit little-endian ELF, a table runs past the
// end, the symbol is absent or undefined, or it lives where the file stores no bytes (.bss).
bool findElfSymbol(std::span<const uint8_t> elf64, std::string_view name,
                   std::span<const uint8_t>& out, std::string& error);

}  // namespace etc::rt
