#include "compiler/backend/profile.h"

#include <algorithm>
#include <variant>

#include "compiler/backend/descriptor.h"
#include "etc/abi.h"

namespace etc::backend {

int64_t ProfileLayout::words() const { return 2 + max_records * ETC_PROFILE_RECORD_WORDS; }

ProfileLayout profileLayout(const ir::Module& m) {
  int64_t words = 0;
  schedLayout(m, &words);
  ProfileLayout p;
  p.offset = words + (words & 1);  // records hold 64-bit timestamps
  // A launch runs one megakernel of a graph: the largest of its sym ranges' (etcc --specialize).
  std::vector<int64_t> per_graph(m.graphs.size(), 0);
  for (const ir::Kernel& k : m.kernels)
    if (k.mega) per_graph[k.graph] = std::max(per_graph[k.graph], maxTasks(m, k));
  for (int64_t n : per_graph) p.max_records = std::min(kMaxProfileRecords, p.max_records + n);
  p.max_records = std::max<int64_t>(1, p.max_records);
  return p;
}

nlohmann::json profileDescriptor(const ir::Module& m, const ProfileLayout& p) {
  nlohmann::json ops = nlohmann::json::array();
  for (const ir::Task& t : m.tasks) {
    nlohmann::json names = nlohmann::json::array();
    for (const ir::TaskStmt& st : t.body)
      if (const auto* c = std::get_if<ir::CallStmt>(&st)) names.push_back(c->call.op);
    ops.push_back(std::move(names));
  }
  return {{"offset", p.offset},
          {"max_records", p.max_records},
          {"record_bytes", sizeof(EtcProfileRecord)},
          {"task_ops", std::move(ops)}};
}

}  // namespace etc::backend
