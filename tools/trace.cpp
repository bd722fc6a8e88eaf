#include "trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

namespace etc::tools {

namespace {

using nlohmann::json;

uint64_t firstStart(const std::vector<EtcProfileRecord>& rs) {
  uint64_t t = UINT64_MAX;
  for (const EtcProfileRecord& r : rs) t = std::min<uint64_t>(t, r.start_ns);
  return rs.empty() ? 0 : t;
}

uint64_t lastEnd(const std::vector<EtcProfileRecord>& rs) {
  uint64_t t = 0;
  for (const EtcProfileRecord& r : rs) t = std::max<uint64_t>(t, r.end_ns);
  return t;
}

std::string taskName(const TraceInput& in, int task) {
  return task >= 0 && static_cast<size_t>(task) < in.task_names.size() ? in.task_names[task]
                                                                          : fmt::format("task {}", task);
}

std::string opsOf(const TraceInput& in, int task) {
  if (task < 0 || static_cast<size_t>(task) >= in.task_ops.size()) return "";
  std::string out;
  for (const std::string& op : in.task_ops[task]) out += (out.empty() ? "" : ", ") + op;
  return out;
}

double us(uint64_t ns) { return static_cast<double>(ns) / 1000.0; }

// The CTAs each SM ran, in order: decides the track names.
std::map<unsigned, std::vector<unsigned>> ctasPerSm(const std::vector<EtcProfileRecord>& rs) {
  std::map<unsigned, std::vector<unsigned>> out;
  for (const EtcProfileRecord& r : rs) {
    std::vector<unsigned>& v = out[r.sm];
    if (std::find(v.begin(), v.end(), r.cta) == v.end()) v.push_back(r.cta);
  }
  for (auto& [sm, v] : out) std::sort(v.begin(), v.end());
  return out;
}

// Time covered by the union of [start, end) intervals.
uint64_t coveredNs(std::vector<std::pair<uint64_t, uint64_t>> iv) {
  std::sort(iv.begin(), iv.end());
  uint64_t total = 0, cur_s = 0, cur_e = 0;
  bool open = false;
  for (auto [s, e] : iv) {
    if (open && s <= cur_e) {
      cur_e = std::max(cur_e, e);
      continue;
    }
    if (open) total += cur_e - cur_s;
    cur_s = s, cur_e = e, open = true;
  }
  if (open) total += cur_e - cur_s;
  return total;
}

}  // namespace

std::string chromeTraceJson(const TraceInput& in) {
  const uint64_t t0 = firstStart(in.records);
  json events = json::array();
  events.push_back({{"ph", "M"}, {"pid", 0}, {"name", "process_name"}, {"args", {{"name", "etc " + in.title}}}});
  for (const auto& [sm, ctas] : ctasPerSm(in.records))
    for (unsigned cta : ctas) {
      std::string name = ctas.size() == 1 ? fmt::format("SM {}", sm) : fmt::format("SM {} / CTA {}", sm, cta);
      events.push_back({{"ph", "M"}, {"pid", 0}, {"tid", cta}, {"name", "thread_name"}, {"args", {{"name", name}}}});
      events.push_back({{"ph", "M"}, {"pid", 0}, {"tid", cta}, {"name", "thread_sort_index"},
                        {"args", {{"sort_index", static_cast<uint64_t>(sm) * 65536 + cta}}}});
    }
  for (const EtcProfileRecord& r : in.records) {
    json coords = json::array();
    const size_t rank = r.task >= 0 && static_cast<size_t>(r.task) < in.task_names.size() ? ETC_MAX_RANK : 0;
    for (size_t k = 0; k < rank; ++k) coords.push_back(r.coords[k]);
    events.push_back({{"ph", "X"},
                      {"pid", 0},
                      {"tid", r.cta},
                      {"name", taskName(in, r.task)},
                      {"cat", opsOf(in, r.task)},
                      {"ts", us(r.start_ns - t0)},
                      {"dur", us(r.end_ns >= r.start_ns ? r.end_ns - r.start_ns : 0)},
                      {"args",
                       {{"op", opsOf(in, r.task)},
                        {"coords", coords},
                        {"wait_us", us(r.wait_ns)},
                        {"ops_begin_us", us(r.ops_begin_ns)},
                        {"ops_us", us(r.ops_ns)},
                        {"sm", r.sm}}}});
  }
  json out = {{"traceEvents", events},
              {"displayTimeUnit", "ns"},
              {"otherData", {{"title", in.title}, {"records", in.records.size()}, {"written", in.written}}}};
  return out.dump(1) + "\n";
}

std::string traceSummary(const TraceInput& in) {
  const std::vector<EtcProfileRecord>& rs = in.records;
  if (rs.empty()) return fmt::format("trace {}: no task records (was the megakernel launched?)\n", in.title);
  const uint64_t t0 = firstStart(rs), span = std::max<uint64_t>(1, lastEnd(rs) - t0);
  struct PerTask {
    uint64_t runs = 0, total = 0, max = 0, wait = 0;
  };
  std::map<int, PerTask> per_task;
  std::map<unsigned, std::vector<std::pair<uint64_t, uint64_t>>> per_sm;
  uint64_t busy_total = 0, wait_total = 0;
  for (const EtcProfileRecord& r : rs) {
    const uint64_t d = r.end_ns >= r.start_ns ? r.end_ns - r.start_ns : 0;
    PerTask& p = per_task[r.task];
    ++p.runs, p.total += d, p.max = std::max(p.max, d), p.wait += r.wait_ns;
    per_sm[r.sm].push_back({r.start_ns, r.start_ns + d});
    busy_total += d, wait_total += r.wait_ns;
  }
  std::string out = fmt::format("trace {}: {} task runs on {} SMs, {:.2f} us from the first start to the last end\n",
                                in.title, rs.size(), per_sm.size(), us(span));
  out += fmt::format("  {:<28} {:<16} {:>6} {:>10} {:>9} {:>9} {:>10}\n", "task", "op", "runs", "total us", "mean us",
                     "max us", "waiting us");
  for (const auto& [task, p] : per_task)
    out += fmt::format("  {:<28} {:<16} {:>6} {:>10.2f} {:>9.2f} {:>9.2f} {:>10.2f}\n", taskName(in, task),
                       opsOf(in, task), p.runs, us(p.total), us(p.total) / static_cast<double>(p.runs), us(p.max),
                       us(p.wait));
  double busy = 0;
  for (auto& [sm, iv] : per_sm) busy += static_cast<double>(coveredNs(iv)) / static_cast<double>(span);
  out += fmt::format("SM busy: {:.1f}% (time inside tasks over the span, mean over {} SMs)\n",
                     100.0 * busy / static_cast<double>(per_sm.size()), per_sm.size());
  out += fmt::format("waiting on events: {:.2f} us of {:.2f} us in tasks ({:.1f}%)\n", us(wait_total), us(busy_total),
                     busy_total ? 100.0 * static_cast<double>(wait_total) / static_cast<double>(busy_total) : 0.0);
  if (in.written > rs.size())
    out += fmt::format("dropped: {} task runs beyond the {} records the profile holds\n", in.written - rs.size(),
                       rs.size());
  return out;
}

}  // namespace etc::tools
