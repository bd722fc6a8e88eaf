// Which of a fatbin's code entries a GPU can run, with the driver's rules: a cubin runs on
// devices of the same major version whose minor is at least the cubin's ('a' cubins only on
// exactly their architecture); PTX of any architecture up to the device's is JIT-compiled
// ('a' PTX only on exactly its architecture).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace etc::rt {

struct CodeTarget {
  bool ptx = false;            // compute_XY (PTX) rather than sm_XY (cubin)
  int sm = 0;                  // 90 for sm_90a
  bool arch_specific = false;  // 'a' suffix

  std::string name() const;    // "sm_90a", "compute_90"
  static std::optional<CodeTarget> parse(std::string_view text);
};

bool canRun(const CodeTarget& t, int major, int minor);

// Throws ETC_STATUS_NO_CODE_FOR_DEVICE with
// "this fatbin has no code for sm_86 (it has sm_90a, sm_80, compute_90)" when none fits.
void requireCodeFor(const std::vector<CodeTarget>& targets, int major, int minor);

std::string targetsText(const std::vector<CodeTarget>& targets);  // "sm_90a, sm_80, compute_90"

}  // namespace etc::rt
