// Timeline traces of profiled megakernels (etcc --profile, etc-run --trace): the records of
// one launch as a Chrome / Perfetto trace (JSON) and as a text summary. Host-only and
// GPU-free, so tests feed it synthetic records.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "etc/abi.h"

namespace etc::tools {

struct TraceInput {
  std::string title;                                // e.g. "mlp @main B=8"
  std::vector<std::string> task_names;              // descriptor "tasks", without '@'
  std::vector<std::vector<std::string>> task_ops;   // descriptor "profile" "task_ops"
  std::vector<EtcProfileRecord> records;
  uint64_t written = 0;                             // records the kernel wrote (> records.size(): dropped)
};

// {"traceEvents": [...]}: one track (thread) per CTA, named and sorted by SM ("SM 3"; "SM 3 /
// CTA 135" where an SM ran several CTAs), one complete event per task run named after the task,
// with its op(s), coordinates and time spent waiting in args. Times in microseconds from the
// first start.
std::string chromeTraceJson(const TraceInput& in);

// Time per task (op), SM busy fraction (time inside tasks over the launch's span, mean over the
// SMs that ran tasks), time spent waiting on events; one line per task grid.
std::string traceSummary(const TraceInput& in);

}  // namespace etc::tools
