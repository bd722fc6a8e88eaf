#include "compiler/backend/resource_report.h"

#include <fmt/format.h>

#include <cctype>
#include <regex>
#include <set>

#include "compiler/backend/arch_limits.h"
#include "compiler/backend/cubin_resources.h"
#include "compiler/backend/descriptor.h"

namespace etc::backend {

namespace {

// The tasks of the graph whose own (unfused) kernels need the most shared memory: what a
// megakernel's need comes from.
std::string hungriestTasks(const ir::Module& m, const ir::Kernel& mega, const std::vector<CubinKernel>& kernels) {
  int64_t most = -1;
  std::string names;
  for (size_t i = 0; i < m.kernels.size(); ++i) {
    const ir::Kernel& k = m.kernels[i];
    if (k.mega || k.graph != mega.graph || k.tasks.empty()) continue;
    const int64_t need = kernels[i].usage.static_smem + kernels[i].usage.dynamic_smem;
    const std::string task = "@" + m.tasks[k.tasks.front()].name;
    if (need > most) most = need, names = task;
    else if (need == most) names += ", " + task;
  }
  return names;
}

std::string advice(const ir::Module& m, size_t kernel, const std::vector<CubinKernel>& kernels,
                   const rt::KernelFit& fit, const Target& t) {
  const ir::Kernel& k = m.kernels[kernel];
  if (fit.limiter == "shared memory") {
    std::string tasks = k.mega ? hungriestTasks(m, k, kernels) : "@" + m.tasks[k.tasks.front()].name;
    return fmt::format("use smaller tiles in {} (the shared memory a task needs grows with its matmul tiles and "
                       "expert count), or leave {} out of --arch",
                       tasks.empty() ? "its tasks" : "task " + tasks, t.name());
  }
  return fmt::format("etcc launches {} threads per CTA and ptxas keeps registers within bounds, so this is an etcc bug: "
                     "please report it with the module; meanwhile leave {} out of --arch",
                     kThreadsPerCta, t.name());
}

// Where ptxas says (an info line of its verbose report) it serialized the wgmma products of a
// megakernel (one of `megas`) or of a task function: "etc_main_mega (due to the presence of
// Extern calls)". The unfused kernels' out-of-line matmuls are left out: whole-program code
// serializes them by design (a call crosses their pipeline, C7510), and in nvJitLink's code they
// make no call (tests/cli/etcc_cli_test.sh, mm_leaf).
std::vector<std::string> serializedWgmma(const std::string& log, const std::set<std::string>& megas) {
  static const std::regex line(
      R"(wgmma\.mma_async instructions are serialized due to ([^\n]*?) in the function '([A-Za-z_$][\w$]*)')");
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (std::sregex_iterator it(log.begin(), log.end(), line), end; it != end; ++it) {
    std::string fn = (*it)[2];
    const bool kernel_code = megas.count(fn) != 0 ||
                             (fn.find("task_") != std::string::npos && fn.find("_outlined") == std::string::npos);
    if (!kernel_code) continue;
    // A task function's mangled name holds its identifier after its length ("13task_matmul_y",
    // after a hash that may end in digits): the shortest length that ends where the template
    // arguments ('I') or the name ('E') start.
    if (size_t at = fn.find("task_"); at != std::string::npos)
      for (size_t d = 1; d <= 3 && d <= at && std::isdigit(static_cast<unsigned char>(fn[at - d])); ++d) {
        const size_t len = std::stoul(fn.substr(at - d, d));
        if (at + len < fn.size() && (fn[at + len] == 'I' || fn[at + len] == 'E')) {
          fn = fn.substr(at, len);
          break;
        }
      }
    if (seen.insert(fn).second) out.push_back(fmt::format("{} (due to {})", fn, (*it)[1].str()));
  }
  return out;
}

void appendReport(const rt::DeviceLimits& d, const std::vector<CubinKernel>& kernels,
                  const std::vector<rt::KernelFit>& fits, std::string& out) {
  out += fmt::format("resources on {} ({} shared memory per CTA, {} per SM; {} registers per SM):\n", d.name,
                     rt::bytesText(d.smem_per_block_optin), rt::bytesText(d.smem_per_sm), d.regs_per_sm);
  out += fmt::format("  {:<28} {:>7} {:>6} {:>13} {:>14} {:>8}  {}\n", "kernel", "threads", "regs", "stack/spills",
                     "smem st+dyn", "CTAs/SM", "limited by");
  for (size_t i = 0; i < kernels.size(); ++i) {
    const rt::KernelUsage& u = kernels[i].usage;
    const std::string spills = kernels[i].spill_stores < 0
                                   ? "?"
                                   : fmt::format("{}+{}", kernels[i].spill_stores, kernels[i].spill_loads);
    out += fmt::format("  {:<28} {:>7} {:>6} {:>13} {:>14} {:>8}  {}\n", u.kernel, u.threads, u.registers,
                       fmt::format("{}/{}", u.local_bytes, spills), fmt::format("{}+{}", u.static_smem, u.dynamic_smem),
                       fits[i].ctas_per_sm, fits[i].problem.empty() ? fits[i].limiter : "DOES NOT FIT");
  }
}

}  // namespace

bool checkResources(const ir::Module& m, const std::vector<FatbinEntry>& images, const std::vector<std::string>& logs,
                    DiagnosticEngine& diags, std::string* report, bool enforce) {
  std::vector<std::string> names;
  std::set<std::string> megas;
  for (const ir::Kernel& k : m.kernels) {
    names.push_back(k.name);
    if (k.mega) megas.insert(k.name);
  }
  bool ok = true;
  for (size_t i = 0; i < images.size(); ++i) {
    const Target& t = images[i].target;
    if (t.kind != Target::Kind::Cubin) continue;
    const std::optional<rt::DeviceLimits> limits = archLimits(t);
    if (!limits) {
      if (report) *report += fmt::format("resources on {}: no published limits known; the runtime checks at load\n", t.name());
      continue;
    }
    std::vector<CubinKernel> kernels;
    std::string error;
    if (!readCubinResources(images[i].image, names, i < logs.size() ? logs[i] : "", kernels, error)) {
      diags.error({}, fmt::format("cannot read the resource usage of the {} cubin: {}", t.name(), error));
      ok = false;
      continue;
    }
    std::vector<rt::KernelFit> fits;
    for (size_t k = 0; k < kernels.size(); ++k) {
      kernels[k].usage.threads = kThreadsPerCta;
      fits.push_back(rt::fitKernel(*limits, kernels[k].usage));
      if (fits.back().problem.empty()) continue;
      std::string message = fmt::format("{}: {}", fits.back().problem, advice(m, k, kernels, fits.back(), t));
      if (enforce) diags.error({}, std::move(message));
      else diags.warning({}, std::move(message) + " (written anyway: --no-check-resources)");
      ok = false;
    }
    if (report) {
      appendReport(*limits, kernels, fits, *report);
      // Without --whole-program every megakernel that calls a task function is here (docs/backend.md,
      // "Matmuls inlined into the megakernel").
      for (const std::string& s : serializedWgmma(i < logs.size() ? logs[i] : "", megas))
        *report += fmt::format("  wgmma products serialized by ptxas in {}\n", s);
    }
  }
  return ok;
}

}  // namespace etc::backend
