// etc-run --trace: a warm-up and a traced megakernel launch of a profiled fatbin, its records
// read back and written as a Chrome trace (tools/trace.h), the summary on standard output.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "compiler/driver/atomic_file.h"
#include "etc_run.h"
#include "trace.h"

namespace etc::tools {

void writeTrace(Module& m, const std::string& graph, const std::map<std::string, int64_t>& syms, const RunOptions& opt) {
  const etc_module h = m.handle();
  etc_launch_options lo{ETC_MODE_MEGA, opt.watchdog_ms * 1000000, opt.debug ? 1u : 0u};
  // Two launches: the first warms up the workspace and the caches, the second is traced.
  for (int i = 0; i < 2; ++i) {
    m.launch(graph, nullptr, lo);
    m.checkError(nullptr);
  }
  TraceInput in;
  in.records.resize(static_cast<size_t>(etc_module_profile_capacity(h)));
  size_t written = 0;
  checkStatus(etc_module_read_profile(h, nullptr, in.records.data(), in.records.size(), &written));
  in.written = written;
  in.records.resize(std::min(written, in.records.size()));

  const nlohmann::json d = nlohmann::json::parse(m.descriptorJson());
  for (const nlohmann::json& t : d.at("tasks")) in.task_names.push_back(t.at("name").get<std::string>());
  in.task_ops = d.at("profile").at("task_ops").get<std::vector<std::vector<std::string>>>();
  in.title = m.name() + " @" + graph;
  for (const auto& [name, value] : syms) in.title += fmt::format(" {}={}", name, value);

  std::string error;
  if (!writeFileAtomically(opt.trace, chromeTraceJson(in), &error)) throw std::runtime_error(error);
  fmt::print("{}wrote {} ({} task runs)\n", traceSummary(in), opt.trace, in.records.size());
}

}  // namespace etc::tools
