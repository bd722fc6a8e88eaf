// The descriptor's "profile" (etcc --profile) and reading the timeline records back.
#include <string>

#include "descriptor.h"
#include "etc/abi.h"
#include "rt_error.h"

namespace etc::rt {

namespace {

[[noreturn]] void badProfile(const std::string& what) { fail(ETC_STATUS_BAD_DESCRIPTOR, "descriptor: profile: " + what); }

int64_t nonNegative(const nlohmann::json& p, const char* key) {
  if (!p.contains(key) || !p[key].is_number_integer() || p[key].get<int64_t>() < 0)
    badProfile(std::string("\"") + key + "\" is missing or not a non-negative integer");
  return p[key].get<int64_t>();
}

}  // namespace

ProfileDesc parseProfile(const nlohmann::json& p, const Descriptor& d) {
  if (!p.is_object()) badProfile("not an object");
  ProfileDesc out;
  out.offset = nonNegative(p, "offset");
  out.max_records = nonNegative(p, "max_records");
  if (nonNegative(p, "record_bytes") != static_cast<int64_t>(sizeof(EtcProfileRecord)))
    badProfile("record_bytes is not " + std::to_string(sizeof(EtcProfileRecord)) + " (abi.h EtcProfileRecord)");
  // Overflow-safe form of offset + 2 + max_records * words <= event_words, offset even.
  const int64_t room = d.event_words - out.offset - 2;
  if (out.offset % 2 != 0 || room < 0 || out.max_records > room / ETC_PROFILE_RECORD_WORDS)
    badProfile("the records (word " + std::to_string(out.offset) + ", " + std::to_string(out.max_records) +
               " records) do not fit in event_words " + std::to_string(d.event_words));
  if (!p.contains("task_ops") || !p["task_ops"].is_array() || p["task_ops"].size() != d.tasks.size())
    badProfile("\"task_ops\" is not an array with one entry per task");
  for (const nlohmann::json& ops : p["task_ops"]) {
    std::vector<std::string> names;
    if (!ops.is_array()) badProfile("an entry of \"task_ops\" is not an array");
    for (const nlohmann::json& op : ops) {
      if (!op.is_string()) badProfile("an entry of \"task_ops\" holds a non-string");
      names.push_back(op.get<std::string>());
    }
    out.task_ops.push_back(std::move(names));
  }
  return out;
}

}  // namespace etc::rt
