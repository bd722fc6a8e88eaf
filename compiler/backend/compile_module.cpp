#include "compiler/backend/compile_module.h"

#include <fmt/format.h>

#include <optional>
#include <thread>

#include "compiler/backend/descriptor.h"
#include "compiler/backend/emit_cuda.h"
#include "compiler/backend/nvrtc_worker.h"
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

bool compileTargets(const std::string& cuda, const std::string& file_name, const std::vector<Target>& targets,
                    std::vector<FatbinEntry>& images, DiagnosticEngine& diags, std::vector<std::string>* logs,
                    bool whole_program, const std::optional<std::string>& worker) {
  std::vector<CompileResult> results(targets.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < targets.size(); ++i)
    threads.emplace_back([&, i] {
      results[i] = worker ? compileCudaInWorker(*worker, cuda, file_name, targets[i], {}, whole_program)
                          : compileCuda(cuda, file_name, targets[i], {}, whole_program);
    });
  for (std::thread& t : threads) t.join();
  bool ok = true;
  for (size_t i = 0; i < targets.size(); ++i) {
    if (!results[i].ok) {
      // Generated code is meant to always compile: what remains is a broken toolkit install (the
      // log says which header or library) or a compiler bug worth reporting with the log.
      diags.error({}, fmt::format("the CUDA compile for {} failed; NVRTC / nvJitLink said:\n{}", targets[i].name(),
                                  results[i].log));
      ok = false;
      continue;
    }
    images.push_back({targets[i], std::move(results[i].image)});
    if (logs) logs->push_back(std::move(results[i].log));
  }
  return ok;
}

}  // namespace etc::backend
