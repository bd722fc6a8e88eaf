// The module descriptor that etcc embeds in the fatbin (docs/backend.md, "The descriptor"),
// and the static layout facts that the descriptor and the generated code share.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "compiler/backend/toolchain.h"
#include "compiler/ir/ir.h"

namespace etc::backend {

constexpr int kThreadsPerCta = 256;

// Event counters: every event gets a fixed slice of one u32 array, sized for the syms' upper
// bounds; elements are row-major over those upper-bound extents.
struct EventLayout {
  std::vector<int64_t> max_extent;
  int64_t offset = 0;
  int64_t max_elements = 0;
};
std::vector<EventLayout> eventLayout(const ir::Module& m, int64_t* total_words);

// The dynamic schedule's state of a megakernel (etc/device/sched.cuh), after the event
// counters in the same zeroed area: 4 words, then a pending count per task and a queue of
// max_tasks + kSchedMaxCtas words (CTAs pop slots past the last task when they finish). The runtime launches at most kSchedMaxCtas CTAs of it.
constexpr int64_t kSchedMaxCtas = 4096;
struct SchedLayout {
  int64_t offset = -1;  // in words from the start of the counter area; -1: not dynamic
  int64_t max_tasks = 0;
  int64_t words() const { return 4 + max_tasks + max_tasks + kSchedMaxCtas; }
};
// One entry per module kernel; *total_words is the whole counter area (events included).
std::vector<SchedLayout> schedLayout(const ir::Module& m, int64_t* total_words);
// The task count of a kernel at the sym upper bounds (data-dependent extents at their bounds).
int64_t maxTasks(const ir::Module& m, const ir::Kernel& k);

// Bytes of the kernel parameter block (abi.h): 8 per sym and per tensor (at least one each),
// the fixed tail, then 8 per derived sym.
int64_t paramsBytes(const ir::Module& m, size_t nderived = 0);

struct ProfileLayout;
// With `profile` (etcc --profile), the counter area also holds the timeline records.
// `derived`: the sym-only expressions whose values follow the tail (DerivedSyms). `tmaps`: the
// tensors whose TMA tensor maps the runtime makes (tmaTensors).
std::string buildDescriptor(const ir::Module& m, const std::vector<Target>& targets, std::string_view ir_text,
                            const ProfileLayout* profile = nullptr, const std::vector<ir::Expr>& derived = {},
                            const std::vector<uint32_t>& tmaps = {});

}  // namespace etc::backend
