// etcc --profile: where a profiled megakernel keeps its per-task timeline records (etc/abi.h,
// EtcProfileRecord) and what the descriptor says about them. See docs/runtime.md, "Traces".
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

#include "compiler/ir/ir.h"

namespace etc::backend {

// More records than this are dropped (the count still says how many there were): 1M records
// are 48 MiB of counter area, zeroed before every launch of a profiled build.
constexpr int64_t kMaxProfileRecords = 1 << 20;

struct ProfileLayout {
  int64_t offset = -1;      // in words from the start of the counter area (even), after everything else
  int64_t max_records = 0;  // the tasks of all megakernels at the sym upper bounds, capped
  int64_t words() const;    // count + pad + the records
};

ProfileLayout profileLayout(const ir::Module& m);

// The descriptor's "profile": offset, max_records, record_bytes, and per task (descriptor
// order) the ops its body calls, which name the slices of a trace.
nlohmann::json profileDescriptor(const ir::Module& m, const ProfileLayout& p);

}  // namespace etc::backend
