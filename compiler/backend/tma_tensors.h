// The tensors whose tensor maps the runtime makes for the weight stream through TMA
// (etc/device/tma.cuh): the descriptor lists them as "tmaps", and the generated code passes
// their maps to the matmuls that stream them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/ir.h"

namespace etc {

// Sorted tensor indices: params of a 16-bit dtype and a constant rank-2 shape, at least a
// 64 x 64 box, with rows a whole number of 16 bytes (a tensor map's rules), that some task's
// matmul reads as its b (or b_up) with transpose_b: the weights of a decode matmul. None unless
// `defines` (etcc --device-define) turn the TMA stream on (ETC_MM_TMA nonzero) or the
// weight stream across tasks (ETC_MM_STREAM nonzero, etc/device/stream.cuh): its maps would
// cost the runtime work at every binding for kernels that never read them.
std::vector<uint32_t> tmaTensors(const ir::Module& m, const std::vector<std::string>& defines);

// Whether `defines` (NAME=VALUE, the last of a name winning) give `name` a nonzero value;
// `absent` where none names it.
bool defineOn(const std::vector<std::string>& defines, const std::string& name, bool absent = false);

}  // namespace etc
