#include <fmt/format.h>

#include "etc_run.h"

namespace etc::tools {

void printInfo(const Module& m) {
  const etc_module h = m.handle();
  auto join = [](const std::vector<std::string>& v) {
    std::string out;
    for (const std::string& s : v) out += (out.empty() ? "" : ", ") + s;
    return out;
  };
  fmt::print("module {}\n", m.name());
  fmt::print("archs: {} (the fatbin holds {})\n", join(m.archs()), m.fatbinTargets());
  if (int64_t records = etc_module_profile_capacity(m.handle()))
    fmt::print("profiled (etcc --profile): up to {} task records per megakernel launch (etc-run --trace)\n", records);
  fmt::print("syms:\n");
  for (const etc_sym_info& s : m.syms()) fmt::print("  {} in [{}, {}]\n", s.name, s.lo, s.hi);
  fmt::print("tensors:\n");
  for (const etc_tensor_info& t : m.tensors()) {
    std::vector<std::string> dims(t.shape_text, t.shape_text + t.rank);
    static const char* const kDtypes[] = {"f32", "f16", "bf16", "i32", "i64", "u8"};
    static const char* const kRoles[] = {"input", "output", "param", "temp"};
    fmt::print("  {:<16} {:<5} {:<7} [{}]\n", t.name, kDtypes[t.dtype], kRoles[t.role], join(dims));
  }
  fmt::print("events ({} counter words):\n", etc_module_event_words(h));
  for (const etc_event_info& e : m.events()) {
    std::vector<std::string> dims(e.shape_text, e.shape_text + e.rank);
    fmt::print("  {:<16} [{}] words {}..{}\n", e.name, join(dims), e.offset, e.offset + e.max_elements);
  }
  fmt::print("graphs:\n");
  for (size_t g = 0; g < etc_module_num_graphs(h); ++g) {
    fmt::print("  @{}\n", etc_module_graph_name(h, g));
    for (size_t k = 0; k < etc_module_graph_num_kernels(h, g); ++k) {
      const char* name = nullptr;
      const char* task = nullptr;
      int threads = 0;
      checkStatus(etc_module_graph_kernel(h, g, k, &name, &threads, &task));
      const char* sym = nullptr;
      int64_t lo = 0, hi = 0;
      checkStatus(etc_module_graph_kernel_range(h, g, k, &sym, &lo, &hi));
      const std::string range = sym ? fmt::format(", {} in [{}, {}]", sym, lo, hi) : "";
      if (k < etc_module_graph_num_megakernels(h, g)) fmt::print("    mega     {} ({} threads{})\n", name, threads, range);
      else fmt::print("    unfused  {} (task @{}, {} threads)\n", name, task, threads);
    }
    if (!etc_module_graph_has_unfused(h, g)) fmt::print("    no unfused kernels (etcc --megakernel-only)\n");
  }
}

}  // namespace etc::tools
