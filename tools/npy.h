// NumPy .npy files (format versions 1, 2 and 3) for etc-run's inputs and outputs.
//
// dtype mapping: f32 '<f4', f16 '<f2', i32 '<i4', i64 '<i8', u8 '|u1' (also '<u1'), and bf16
// '<V2' -- what np.save writes for an ml_dtypes.bfloat16 array (its descr is a 2-byte void);
// np.load gives a '|V2' array that `.view(ml_dtypes.bfloat16)` turns back into bf16. '|V2'
// is accepted on reading too. Only little-endian, C-order data.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "compiler/interp/interpreter.h"

namespace etc::tools {

using interp::HostTensor;

// Throws std::runtime_error with one sentence (without the file name) on a bad file.
HostTensor parseNpy(std::span<const uint8_t> bytes);
std::vector<uint8_t> encodeNpy(const HostTensor& t);

// With the file name in the error: "x.npy: ...".
HostTensor readNpy(const std::string& path);
// Writes to a temporary file next to `path` and renames it, so a failure leaves no partial file.
void writeNpy(const std::string& path, const HostTensor& t);

// The descr this file format uses for a dtype ("<f4", "<V2", ...).
std::string npyDescr(ir::DType t);

// Shared by the readers: the file's bytes; "path: cannot open (reason)" on failure.
std::vector<uint8_t> readWholeFile(const std::string& path);
// Writes atomically (temporary file + rename), removing the temporary on failure.
void writeWholeFile(const std::string& path, std::span<const uint8_t> bytes);

}  // namespace etc::tools
