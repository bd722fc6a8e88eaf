// Writes the CUDA fatbin container in-process, uncompressed, laid out as the toolkit's
// `fatbinary --compress=false` lays it out (byte-identical for the same images; see
// fatbin_writer.cpp for the format). runtime/src/fatbin_reader.* reads it back.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/backend/toolchain.h"

namespace etc::backend {

struct FatbinEntry {
  Target target;               // Cubin -> an ELF entry, Ptx -> a PTX entry; sm and 'a' recorded
  std::vector<uint8_t> image;  // the cubin, or the PTX text (a trailing NUL is allowed)
};

// Entries are stored in the given order. Throws std::invalid_argument with a sentence naming
// the entry when a Cubin image is not an ELF file or a PTX image has no ".version" directive
// (the container records both the ELF ABI version and the PTX ISA version).
std::vector<uint8_t> writeFatbin(const std::vector<FatbinEntry>& entries);

// The PTX text as fatbinary stores it: comments removed, runs of blanks squeezed, blanks at
// the start of a line dropped, string literals untouched. The driver reads it as it reads the
// original; the writer applies it so that its output matches fatbinary's byte for byte.
std::string compactPtx(std::string_view ptx);

}  // namespace etc::backend
