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
  for (const ir::Kernel& k : m.kernels)
    if (k.mega) p.max_records = std::min(kMaxProfileRecords, p.max_records + maxTasks(m, k));
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
