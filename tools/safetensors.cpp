#include "safetensors.h"

#include <nlohmann/json.hpp>
#include <algorithm>
#include <set>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "bad_input.h"
#include "npy.h"

namespace etc::tools {
namespace {

constexpr uint64_t kMaxHeader = 100u << 20;  // the format's own limit (100 MB)

bool dtypeOf(const std::string& s, ir::DType& out) {
  static const std::pair<const char*, ir::DType> kMap[] = {{"BF16", ir::DType::BF16}, {"F16", ir::DType::F16},
                                                           {"F32", ir::DType::F32},   {"I32", ir::DType::I32},
                                                           {"I64", ir::DType::I64},   {"U8", ir::DType::U8}};
  for (const auto& [name, t] : kMap)
    if (s == name) return out = t, true;
  return false;
}

}  // namespace

std::map<std::string, interp::HostTensor> parseSafetensors(std::span<const uint8_t> b) {
  if (b.size() < 8) bad("not a .safetensors file (shorter than its 8-byte header length)");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | b[i];
  if (n > kMaxHeader) bad("the .safetensors header length " + std::to_string(n) + " is above the 100 MB limit");
  if (n > b.size() - 8) bad("the .safetensors header (" + std::to_string(n) + " bytes) runs past the end of the file");
  // nlohmann keeps the last of two equal keys; a file naming a tensor twice is ambiguous (which
  // one did the writer mean?), so the top-level keys are collected while parsing.
  std::set<std::string> names;
  std::string twice;
  auto note_key = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    if (depth == 1 && event == nlohmann::json::parse_event_t::key && parsed.is_string() &&
        !names.insert(parsed.get<std::string>()).second && twice.empty())
      twice = parsed.get<std::string>();
    return true;
  };
  nlohmann::json h = nlohmann::json::parse(b.begin() + 8, b.begin() + 8 + static_cast<std::ptrdiff_t>(n), note_key, false);
  if (h.is_discarded() || !h.is_object()) bad("the .safetensors header is not a JSON object");
  if (!twice.empty()) bad("the .safetensors header names tensor '" + twice + "' twice");
  const std::span<const uint8_t> data = b.subspan(8 + n);
  std::map<std::string, interp::HostTensor> out;
  std::vector<std::tuple<uint64_t, uint64_t, std::string>> ranges;  // [begin, end), name
  for (const auto& [name, e] : h.items()) {
    if (name == "__metadata__") continue;
    const std::string where = "tensor '" + name + "'";
    if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") || !e.contains("data_offsets") ||
        !e["dtype"].is_string() || !e["shape"].is_array() || !e["data_offsets"].is_array() || e["data_offsets"].size() != 2)
      bad(where + " needs \"dtype\", \"shape\" and two \"data_offsets\"");
    interp::HostTensor t;
    const std::string dt = e["dtype"].get<std::string>();
    if (!dtypeOf(dt, t.dtype)) bad(where + " has unsupported dtype " + dt + " (supported: BF16 F16 F32 I32 I64 U8)");
    uint64_t bytes = static_cast<uint64_t>(ir::dtypeBytes(t.dtype));
    for (const auto& x : e["shape"]) {
      if (!x.is_number_unsigned()) bad(where + " has a shape entry that is not a non-negative integer");
      t.shape.push_back(x.get<int64_t>());
      if (x.get<uint64_t>() > INT64_MAX || __builtin_mul_overflow(bytes, x.get<uint64_t>(), &bytes)) bad(where + " is too large");
    }
    const auto& off = e["data_offsets"];
    if (!off[0].is_number_unsigned() || !off[1].is_number_unsigned()) bad(where + " has non-integer data_offsets");
    const uint64_t begin = off[0].get<uint64_t>(), end = off[1].get<uint64_t>();
    if (begin > end || end > data.size())
      bad(where + " has data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + "] outside the " +
          std::to_string(data.size()) + " data bytes");
    if (end - begin != bytes)
      bad(where + " has " + std::to_string(end - begin) + " data bytes, its dtype and shape need " + std::to_string(bytes));
    t.bytes.assign(data.begin() + static_cast<std::ptrdiff_t>(begin), data.begin() + static_cast<std::ptrdiff_t>(end));
    out.emplace(name, std::move(t));
    if (begin < end) ranges.emplace_back(begin, end, name);
  }
  // Two tensors sharing bytes would alias: writing one (a param updated in place) changes the
  // other. The format forbids it; a file that does it is corrupt or hostile.
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) {
    const auto& [b0, e0, n0] = ranges[i - 1];
    const auto& [b1, e1, n1] = ranges[i];
    if (b1 < e0)
      bad("tensors '" + n0 + "' (data_offsets [" + std::to_string(b0) + ", " + std::to_string(e0) + "]) and '" + n1 +
          "' ([" + std::to_string(b1) + ", " + std::to_string(e1) + "]) overlap");
  }
  return out;
}

std::map<std::string, interp::HostTensor> readSafetensors(const std::string& path) {
  std::vector<uint8_t> bytes = readWholeFile(path);
  try {
    return parseSafetensors(bytes);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
}

}  // namespace etc::tools
