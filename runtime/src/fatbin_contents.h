// What the runtime needs from a fatbin before any GPU is involved: the descriptor bytes (from
// the first cubin's `etc_descriptor` symbol) and the list of code targets it carries.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "code_target.h"

namespace etc::rt {

struct FatbinContents {
  std::string descriptor_json;
  std::vector<CodeTarget> targets;  // in container order
};

// Throws ETC_STATUS_BAD_FATBIN with a sentence for a truncated or foreign file.
FatbinContents readFatbinContents(std::span<const uint8_t> bytes);

}  // namespace etc::rt
