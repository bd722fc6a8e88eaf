// Reads a CUDA fatbin container (the format is described in compiler/backend/fatbin_writer.cpp)
// into the list of its images, without a GPU and without trusting the file: every size is
// checked against the bytes that are really there.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace etc::rt {

struct FatbinImage {
  bool is_ptx = false;         // PTX text, else an ELF cubin
  int sm = 0;                  // 90 for sm_90a and compute_90
  bool arch_specific = false;  // the 'a' suffix
  bool compressed = false;     // data is the compressed payload, not the image itself
  // The image inside the input: for PTX the text before its NUL; for a cubin the payload
  // (which may end in up to 7 bytes of padding).
  std::span<const uint8_t> data;

  // "sm_90a" for a cubin, "compute_90" for PTX.
  std::string archName() const;
};

// Appends every image of every container in `bytes` (a fatbin file is one container; an
// .nv_fatbin section may hold several back to back) to `out`. On failure returns false with a
// sentence in `error`; `out` may then hold the images read before the fault.
bool parseFatbin(std::span<const uint8_t> bytes, std::vector<FatbinImage>& out, std::string& error);

}  // namespace etc::rt
