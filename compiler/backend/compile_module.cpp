#include "compiler/backend/compile_module.h"

#include <fmt/format.h>

#include <cctype>
#include <optional>
#include <regex>
#include <set>
#include <thread>

#include "compiler/backend/descriptor.h"
#include "compiler/backend/emit_cuda.h"
#include "compiler/backend/profile.h"
#include "compiler/ir/printer.h"

namespace etc::backend {

bool generateCuda(const ir::Module& m, const std::vector<Target>& targets, std::string& cuda, DiagnosticEngine& diags,
                  bool profile, const EmitOptions& options) {
  std::optional<ProfileLayout> layout;
  if (profile) layout = profileLayout(m);
  const std::string ir_text = ir::printModule(m);
  auto descriptor = [&](const std::vector<ir::Expr>& derived, const std::vector<uint32_t>& tmaps) {
    return buildDescriptor(m, targets, ir_text, layout ? &*layout : nullptr, derived, tmaps);
  };
  return emitCuda(m, descriptor, cuda, diags, layout ? &*layout : nullptr, options);
}

namespace {

// ptxas says (an info line in NVRTC's log, from --ptxas-options=-v) where it serialized the
// wgmma products, a megakernel's matmuls at a fraction of their speed: a warning for the
// megakernels and their task functions. The unfused kernels' out-of-line matmuls are expected
// to be serialized (C7510: a function call crosses their pipeline) and are not reported.
void warnSerializedWgmma(const std::string& log, const Target& t, DiagnosticEngine& diags) {
  static const std::regex line(
      R"(wgmma\.mma_async instructions are serialized due to ([^\n]*?) in the function '([A-Za-z_$][\w$]*)')");
  std::set<std::string> seen;
  for (std::sregex_iterator it(log.begin(), log.end(), line), end; it != end; ++it) {
    std::string fn = (*it)[2];
    const bool kernel_code = fn.find("_mega") != std::string::npos ||
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
    if (!seen.insert(fn).second) continue;
    diags.warning({}, fmt::format("ptxas serialized the wgmma products of {} for {} (due to {}): its matmuls run "
                                  "one product at a time",
                                  fn, t.name(), (*it)[1].str()));
  }
}

}  // namespace

bool compileTargets(const std::string& cuda, const std::string& file_name, const std::vector<Target>& targets,
                    std::vector<FatbinEntry>& images, DiagnosticEngine& diags, std::vector<std::string>* logs) {
  std::vector<CompileResult> results(targets.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < targets.size(); ++i)
    threads.emplace_back([&, i] { results[i] = compileCuda(cuda, file_name, targets[i]); });
  for (std::thread& t : threads) t.join();
  bool ok = true;
  for (size_t i = 0; i < targets.size(); ++i) {
    if (!results[i].ok) {
      // Generated code is meant to always compile: what remains is a broken toolkit install (the
      // log says which header or library) or a compiler bug worth reporting with the log.
      diags.error({}, fmt::format("the CUDA compile for {} failed; NVRTC said:\n{}", targets[i].name(),
                                  results[i].log));
      ok = false;
      continue;
    }
    warnSerializedWgmma(results[i].log, targets[i], diags);
    images.push_back({targets[i], std::move(results[i].image)});
    if (logs) logs->push_back(std::move(results[i].log));
  }
  return ok;
}

}  // namespace etc::backend
