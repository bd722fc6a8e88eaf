// Test inputs for the runtime: a small but complete descriptor and a fatbin that carries it in
// a hand-built cubin-shaped ELF (no GPU or toolkit involved).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace etc::rt::testing {

// syms B in [1, 128] and N in [1, 1000000]; tensors x (bf16 input [B, 64]), w (f32 param
// [64, 32]), t (f32 temp [B, cdiv(N, 16)]), y (f32 output [B, 32]); events done
// ([cdiv(B, 16), 2], words 0..16) and flag ([4], words 16..20); tasks stage1 and final; one
// graph @main with a megakernel and two unfused kernels.
nlohmann::json sampleDescriptor();

// A 64-bit little-endian ELF whose symbol `symbol` holds `payload` in a PROGBITS section.
std::vector<uint8_t> makeElf(const std::string& payload, const std::string& symbol = "etc_descriptor");

// A fatbin (compiler/backend/fatbin_writer) with an sm_90a and an sm_80 cubin holding the
// descriptor and compute_90 PTX.
std::vector<uint8_t> makeFatbin(const std::string& descriptor_json);

}  // namespace etc::rt::testing
