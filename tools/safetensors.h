// Reading .safetensors files (etc-run --weights): an 8-byte little-endian header length, the
// JSON header {"name": {"dtype": "BF16", "shape": [..], "data_offsets": [begin, end]}, ...,
// "__metadata__": {...}}, then the data; offsets are relative to the start of the data.
// Supported dtypes: BF16 F16 F32 I32 I64 U8. Every offset is checked against the file.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>

#include "compiler/interp/interpreter.h"

namespace etc::tools {

// Throws std::runtime_error with one sentence (without the file name).
std::map<std::string, interp::HostTensor> parseSafetensors(std::span<const uint8_t> bytes);
// "w.safetensors: ..." in the error.
std::map<std::string, interp::HostTensor> readSafetensors(const std::string& path);

}  // namespace etc::tools
