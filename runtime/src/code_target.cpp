#include "code_target.h"

#include <charconv>

#include "rt_error.h"

namespace etc::rt {

std::string CodeTarget::name() const {
  return (ptx ? "compute_" : "sm_") + std::to_string(sm) + (arch_specific ? "a" : "");
}

std::optional<CodeTarget> CodeTarget::parse(std::string_view text) {
  CodeTarget t;
  if (text.starts_with("sm_")) {
    text.remove_prefix(3);
  } else if (text.starts_with("compute_")) {
    text.remove_prefix(8);
    t.ptx = true;
  } else {
    return std::nullopt;
  }
  if (text.ends_with("a")) {
    t.arch_specific = true;
    text.remove_suffix(1);
  }
  if (text.size() < 2 || text.size() > 3) return std::nullopt;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), t.sm);
  if (ec != std::errc() || end != text.data() + text.size() || t.sm < 10) return std::nullopt;
  return t;
}

bool canRun(const CodeTarget& t, int major, int minor) {
  const int device = major * 10 + minor;
  if (t.arch_specific) return t.sm == device;
  if (t.ptx) return t.sm <= device;
  return t.sm / 10 == major && t.sm % 10 <= minor;
}

std::string targetsText(const std::vector<CodeTarget>& targets) {
  std::string out;
  for (const CodeTarget& t : targets) out += (out.empty() ? "" : ", ") + t.name();
  return out.empty() ? "no code at all" : out;
}

void requireCodeFor(const std::vector<CodeTarget>& targets, int major, int minor) {
  for (const CodeTarget& t : targets)
    if (canRun(t, major, minor)) return;
  fail(ETC_STATUS_NO_CODE_FOR_DEVICE, "this fatbin has no code for sm_" + std::to_string(major * 10 + minor) +
                                          " (it has " + targetsText(targets) + ")");
}

}  // namespace etc::rt
