// The fatbin container's constants, shared by the compiler that writes it
// (compiler/backend/fatbin_writer.cpp, which describes the layout) and the runtime that reads it
// (runtime/src/fatbin_reader.cpp): one definition, so the two cannot drift apart.
#pragma once

#include <cstdint>

namespace etc::fatbin {

constexpr uint32_t kMagic = 0xBA55ED50u;  // the first word of every container
constexpr uint16_t kVersion = 1;
constexpr uint16_t kContainerHeaderSize = 16;
constexpr uint32_t kEntryHeaderSize = 64;
constexpr uint16_t kKindPtx = 1, kKindElf = 2;
constexpr uint16_t kEntryConstant = 0x0101;     // at +2 of every entry header seen
constexpr uint32_t kPtxOptionsRecordSize = 8;   // a PTX entry's options record, before its text
constexpr uint64_t kFlag64Bit = 0x1, kFlagHostLinux = 0x10, kFlagCompressed = 0x8000,
                   kFlagArchSpecific = 0x100000;

}  // namespace etc::fatbin
