// etcc: the Event Tensor Compiler's command line.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <regex>
#include <sstream>

#include "compiler/backend/compile_module.h"
#include "compiler/backend/nvrtc_worker.h"
#include "compiler/driver/atomic_file.h"
#include "compiler/driver/depfile.h"
#include "compiler/backend/resource_report.h"
#include "compiler/driver/summary.h"
#include "compiler/driver/verify_diagnostics.h"
#include "compiler/frontend/frontend.h"
#include "compiler/ir/printer.h"
#include "compiler/passes/pipeline.h"
#include "runtime/src/fatbin_seal.h"

namespace {

struct Options {
  std::string input;
  std::string output;
  std::string emit;  // empty: from the output file's extension
  std::vector<std::string> archs;
  std::vector<std::string> include_dirs;
  bool print_after_all = false;
  std::vector<std::string> print_after;
  bool verify_diagnostics = false;
  bool summary = false;
  std::string color = "auto";
  bool verbose = false;
  bool resource_usage = false;
  bool no_check_resources = false;
  std::string schedule = "auto";
  bool no_verify_schedule = false;
  bool write_deps = false;               // -MD
  std::string dep_file;                  // -MF (implies -MD); default: the output with extension .d
  std::vector<std::string> dep_targets;  // -MT; default: the output
  bool dep_phony = false;                // -MP
  bool profile = false;                  // --profile
  bool weight_prefetch = false;          // --weight-prefetch (every matmul task)
  bool weight_prefetch_after_chain = false;  // --weight-prefetch-after-chain (the default, said)
  bool no_weight_prefetch = false;       // --no-weight-prefetch
  bool parallel_waits = false;           // --parallel-waits
  bool run_by_last_notifier = false;     // --run-by-last-notifier
  bool whole_program = false;            // --whole-program
  std::vector<std::string> device_defines;  // --device-define NAME=VALUE
  bool share_task_code = true;           // --share-task-code (default) / --no-share-task-code
  bool derived_syms = true;              // --derived-syms (default) / --no-derived-syms
  bool no_merge_tasks = false;           // --no-merge-tasks
  bool fold_attention = false;           // --fold-attention
  bool fold_attention_merge = false;     // --fold-attention-merge
  bool megakernel_only = false;          // --megakernel-only
  int64_t fold_norms_below = 0;          // --fold-norms-below N
  int64_t norm_rows = 1;                 // --norm-rows N
  int64_t unsplit_below = 0;             // --unsplit-below N
  bool reuse_temps = false;              // --reuse-temps
  bool matmul_plan_by_range = true;      // --matmul-plan-by-range (default) / --no-matmul-plan-by-range
  bool no_gated_matmul = false;          // --no-gated-matmul
  std::string specialize;                // --specialize SYM=C1,C2,...
};

// --specialize's SYM=C1,C2,... (its form checked by the option's validator).
etc::SymCuts parseSymCuts(const std::string& text) {
  etc::SymCuts out;
  const size_t eq = text.find('=');
  out.sym = text.substr(0, eq);
  std::string rest = text.substr(eq + 1);
  for (size_t at = 0; at <= rest.size();) {
    size_t comma = rest.find(',', at);
    if (comma == std::string::npos) comma = rest.size();
    out.cuts.push_back(std::stoll(rest.substr(at, comma - at)));
    at = comma + 1;
  }
  return out;
}

bool wantsDepfile(const Options& opt) { return opt.write_deps || !opt.dep_file.empty(); }

// Like gcc: -MF names the file, else the output with its extension replaced by .d.
std::string depfilePath(const Options& opt) {
  if (!opt.dep_file.empty()) return opt.dep_file;
  return std::filesystem::path(opt.output).replace_extension(".d").string();
}

// Combinations of the dependency options that cannot mean anything; empty if fine.
std::string depfileOptionProblem(const Options& opt) {
  if (!wantsDepfile(opt)) {
    if (!opt.dep_targets.empty() || opt.dep_phony) return "-MT and -MP need -MD or -MF (a dependency file to write)";
    return {};
  }
  if (opt.verify_diagnostics) return "--verify-diagnostics writes no output, so it takes no dependency file";
  bool to_stdout = opt.output.empty() || opt.output == "-";
  if (to_stdout && opt.dep_file.empty()) return "-MD without -o needs -MF FILE: there is no output name to derive it from";
  if (to_stdout && opt.dep_targets.empty()) return "a dependency file for standard output needs -MT TARGET";
  if (!to_stdout && depfilePath(opt) == opt.output)
    return fmt::format("the dependency file would overwrite the output '{}': name it with -MF", opt.output);
  return {};
}

double msSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

bool useColor(const std::string& mode) {
  if (mode == "always") return true;
  if (mode == "never") return false;
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color && *no_color) return false;
  return isatty(STDERR_FILENO);
}

// Standard output, or the file written atomically (a failed or interrupted compile never
// leaves a partial output behind).
bool writeOutput(const std::string& path, const std::string& text, std::string* error) {
  if (path.empty() || path == "-") {
    std::cout << text;
    std::cout.flush();
    return static_cast<bool>(std::cout);
  }
  return etc::writeFileAtomically(path, text, error);
}

// -MD/-MF/-MT/-MP: the Make rule "output: every file read", written atomically (before the output).
bool writeDepfile(const Options& opt, const etc::SourceManager& sources, std::string* error) {
  etc::DepfileOptions d;
  d.targets = opt.dep_targets.empty() ? std::vector<std::string>{opt.output} : opt.dep_targets;
  d.phony = opt.dep_phony;
  return etc::writeFileAtomically(depfilePath(opt), etc::renderDepfile(d, etc::filesRead(sources)), error);
}

// --emit, else from the output's extension: .fatbin (also the default with -o), .cu, .ptx,
// .cubin, .etir; with no -o, the canonical .etir text on standard output.
std::string emitKind(const Options& opt) {
  if (!opt.emit.empty()) return opt.emit;
  if (opt.output.empty() || opt.output == "-") return "etir";
  std::string ext = std::filesystem::path(opt.output).extension().string();
  if (ext == ".cu") return "cuda";
  if (ext == ".ptx") return "ptx";
  if (ext == ".cubin") return "cubin";
  if (ext == ".etir") return "etir";
  return "fatbin";
}

std::vector<etc::backend::Target> targetsOf(const Options& opt, etc::DiagnosticEngine& diags) {
  if (opt.archs.empty()) return etc::backend::defaultTargets();
  std::vector<etc::backend::Target> out;
  for (const std::string& a : opt.archs) {
    auto t = etc::backend::Target::parse(a);
    if (!t) {
      diags.error({}, fmt::format("unknown architecture '{}': expected sm_XY, sm_XYa, compute_XY or compute_XYa "
                                  "(e.g. sm_90a, sm_80, compute_90)",
                                  a));
      return {};
    }
    out.push_back(*t);
  }
  return out;
}

// CUDA, PTX, a cubin or the fatbin of a scheduled module.
bool generate(const etc::ir::Module& m, const Options& opt, const std::string& emit, etc::DiagnosticEngine& diags,
              std::string& out) {
  std::vector<etc::backend::Target> targets = targetsOf(opt, diags);
  if (targets.empty()) return false;
  if (emit == "ptx" || emit == "cubin") {
    if (targets.size() != 1) {
      diags.error({}, fmt::format("--emit={} writes one architecture; name exactly one with -arch", emit));
      return false;
    }
    if (emit == "cubin" && targets[0].kind != etc::backend::Target::Kind::Cubin) {
      diags.error({}, fmt::format("--emit=cubin needs a real architecture (sm_XY), not {}", targets[0].name()));
      return false;
    }
    if (emit == "ptx") targets[0].kind = etc::backend::Target::Kind::Ptx;
  }
  std::string cuda;
  auto emit_start = std::chrono::steady_clock::now();
  etc::backend::EmitOptions eo;
  eo.weight_prefetch = opt.weight_prefetch      ? etc::backend::WeightPrefetch::All
                       : opt.no_weight_prefetch ? etc::backend::WeightPrefetch::Off
                                                : etc::backend::WeightPrefetch::AfterChain;
  eo.parallel_waits = opt.parallel_waits;
  eo.run_by_last_notifier = opt.run_by_last_notifier;
  eo.share_task_code = opt.share_task_code;
  eo.derived_syms = opt.derived_syms;
  eo.defines = opt.device_defines;
  if (!etc::backend::generateCuda(m, targets, cuda, diags, opt.profile, eo)) return false;
  if (opt.verbose)
    std::cerr << fmt::format("etcc: emit CUDA ({} bytes): {:.3f} ms\n", cuda.size(), msSince(emit_start));
  if (emit == "cuda") {
    out = std::move(cuda);
    return true;
  }
  std::string name = m.name + ".cu";
  std::vector<etc::backend::FatbinEntry> images;
  auto start = std::chrono::steady_clock::now();
  std::vector<std::string> logs;
  const std::optional<std::string> worker = etc::backend::nvrtcWorkerPath();
  if (!etc::backend::compileTargets(cuda, name, targets, images, diags, &logs, opt.whole_program, worker)) return false;
  std::string resources;
  const bool fits = etc::backend::checkResources(m, images, logs, diags, &resources, !opt.no_check_resources);
  if (opt.verbose || opt.resource_usage) std::cerr << resources;
  if (!fits && !opt.no_check_resources) return false;
  if (opt.verbose)
    std::cerr << fmt::format("etcc: NVRTC + nvJitLink for {} target{} ({}): {:.1f} ms\n", targets.size(),
                             targets.size() == 1 ? "" : "s",
                             worker ? "worker " + *worker : std::string("in this process"), msSince(start));
  if (emit == "ptx" || emit == "cubin") {
    out.assign(images[0].image.begin(), images[0].image.end());
    return true;
  }
  std::vector<uint8_t> fatbin = etc::backend::writeFatbin(images);
  etc::rt::sealFatbin(fatbin);  // a checksum, so that the runtime refuses a damaged file
  out.assign(fatbin.begin(), fatbin.end());
  return true;
}

int run(const Options& opt) {
  etc::SourceManager sources;
  etc::DiagnosticEngine diags(sources);
  diags.setColor(useColor(opt.color));
  if (std::string problem = depfileOptionProblem(opt); !problem.empty()) {
    diags.error({}, problem);
    return 1;
  }

  if (opt.verify_diagnostics) {
    diags.setCollect(true);
    diags.setErrorLimit(0);
  }

  etc::LoadOptions load;
  load.include_dirs = opt.include_dirs;
  std::unique_ptr<etc::ir::Module> m;
  auto start = std::chrono::steady_clock::now();
  if (opt.input == "-") {
    std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    uint32_t id = sources.addBuffer("<stdin>", std::move(text));
    m = etc::parseAndVerifyBuffer(id, load, sources, diags);
  } else {
    m = etc::parseAndVerifyFile(opt.input, load, sources, diags);
  }

  if (opt.verbose)
    std::cerr << fmt::format(
        "etcc: front end (read {} file{}, parse, resolve names, verify): {:.3f} ms, {}\n", sources.fileCount(),
        sources.fileCount() == 1 ? "" : "s",
        msSince(start), m ? "verified" : "errors");
  std::string emit = emitKind(opt);
  // --emit=etir prints the module as verified; the passes still run when a dump asks for them.
  std::string parsed_text = m && emit == "etir" ? etc::ir::printModule(*m) : std::string();
  if (m && (emit != "etir" || opt.verify_diagnostics || opt.print_after_all || !opt.print_after.empty())) {
    etc::PipelineOptions po;
    po.print_after_all = opt.print_after_all;
    po.print_after.insert(opt.print_after.begin(), opt.print_after.end());
    po.dump = &std::cerr;
    po.verbose = opt.verbose;
    if (opt.schedule != "auto") po.schedule = etc::ir::parseSchedule(opt.schedule);
    po.verify_schedule = !opt.no_verify_schedule;
    po.merge_tasks = !opt.no_merge_tasks;
    po.fold_into_attention = opt.fold_attention;
    po.fold_attention_merge = opt.fold_attention_merge;
    po.fold_norms_below = opt.fold_norms_below;
    po.norm_rows = opt.norm_rows;
    po.unsplit_below = opt.unsplit_below;
    po.reuse_temps = opt.reuse_temps;
    po.matmul_plan_by_range = opt.matmul_plan_by_range;
    po.gated_matmul = !opt.no_gated_matmul;
    po.unfused_kernels = !opt.megakernel_only;
    if (!opt.specialize.empty()) po.specialize = parseSymCuts(opt.specialize);
    m = etc::runPipeline(std::move(m), po, diags);
  }

  if (opt.verify_diagnostics) {
    std::vector<etc::ExpectedDiagnostic> expected;
    std::vector<std::string> problems;
    for (uint32_t f = 1; f <= sources.fileCount(); ++f) {
      auto e = etc::parseExpectations(sources, f, &problems);
      expected.insert(expected.end(), e.begin(), e.end());
    }
    for (const std::string& p : problems) std::cerr << p << '\n';
    bool ok = etc::verifyDiagnostics(sources, diags.collected(), expected, std::cerr) && problems.empty();
    if (ok && opt.verbose) std::cerr << fmt::format("etcc: {} expected diagnostics produced\n", expected.size());
    return ok ? 0 : 1;
  }
  if (!m || diags.hasErrors()) return 1;

  std::string text;
  if (emit == "etir") {
    text = std::move(parsed_text);
  } else if (emit == "tasks") {
    text = etc::ir::printModule(*m);
  } else if (!generate(*m, opt, emit, diags, text)) {
    return 1;
  }
  // The dependency file first: if writing the output then fails, the dependency file goes too,
  // and an interrupted build leaves an output older than its inputs, which make redoes.
  std::string error;
  auto write_start = std::chrono::steady_clock::now();
  bool deps = wantsDepfile(opt);
  if (deps && !writeDepfile(opt, sources, &error)) {
    diags.error({}, error);
    return 1;
  }
  if (!writeOutput(opt.output, text, &error)) {
    if (deps) std::remove(depfilePath(opt).c_str());
    diags.error({}, error);
    return 1;
  }
  if (opt.verbose && !opt.output.empty() && opt.output != "-")
    std::cerr << fmt::format("etcc: write {}{} ({} bytes): {:.3f} ms\n", opt.output,
                             deps ? " and " + depfilePath(opt) : std::string(), text.size(), msSince(write_start));
  if (opt.summary) std::cerr << '\n' << etc::summarizeModule(*m);
  return 0;
}

// gcc's spellings of the dependency options: -MD, -MP, -MF FILE, -MFFILE, -MT TARGET, -MTTARGET.
std::string translateDependencyFlag(const std::string& a) {
  if (a == "-MD") return "--write-dependencies";
  if (a == "-MP") return "--dependency-phony";
  if (a == "-MF") return "--dependency-file";
  if (a == "-MT") return "--dependency-target";
  if (a.size() > 3 && a.rfind("-MF", 0) == 0) return "--dependency-file=" + a.substr(3);
  if (a.size() > 3 && a.rfind("-MT", 0) == 0) return "--dependency-target=" + a.substr(3);
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  CLI::App app{
      "etcc: the Event Tensor Compiler. Compiles a .etir module into one persistent GPU megakernel, shipped\n"
      "as a CUDA fatbin (cubins for sm_90a and sm_80 plus compute_90 PTX unless -arch says otherwise).\n"
      "  etcc model.etir -o model.fatbin      compile\n"
      "  etcc model.etir                      check, and print the module as canonical .etir",
      "etcc"};
  app.set_version_flag("--version", std::string("etcc ") + ETC_VERSION);
  app.footer(
      "Environment:\n"
      "  CUDA_HOME, CUDA_PATH   the CUDA toolkit whose headers NVRTC uses (default /usr/local/cuda)\n"
      "  ETC_NVRTC_WORKER       the toolchain worker that compiles each target in a process of its own\n"
      "                         (default: etc-nvrtc beside etcc, when there); empty: compile inside etcc");
  app.add_option("file", opt.input, "the .etir module to compile ('-' reads standard input)")->required();
  app.add_option("-o,--output", opt.output,
                 "write the output here (default: standard output); its extension picks --emit when that is not "
                 "given (.fatbin .cu .ptx .cubin .etir; anything else: fatbin)");
  app.add_option("--emit", opt.emit,
                 "what to produce: etir (the verified module, canonical text), tasks (the task-level module after "
                 "every pass; it compiles to the same fatbin), cuda, ptx, cubin (one -arch), fatbin")
      ->check(CLI::IsMember({"etir", "tasks", "cuda", "ptx", "cubin", "fatbin"}));
  app.add_option("--arch", opt.archs,
                 "(also -arch) a target architecture (repeatable): sm_XY or sm_XYa for a cubin, compute_XY for PTX; default: "
                 "sm_90a sm_80 compute_90")
      ->allow_extra_args(false);  // one value per occurrence: `--arch sm_80 model.etir` leaves the file alone
  app.add_option("-I,--include-dir", opt.include_dirs,
                 "search this directory for `include` files (after the including file's own directory)")
      ->allow_extra_args(false);
  app.add_flag("--print-after-all", opt.print_after_all, "print the IR to standard error after every pass");
  std::vector<std::string> points;
  for (std::string_view p : etc::dumpPointNames()) points.emplace_back(p);
  app.add_option("--print-after", opt.print_after, "print the IR to standard error after this pass (repeatable)")
      ->check(CLI::IsMember(points));
  app.add_flag("--verify-diagnostics", opt.verify_diagnostics,
               "check that the diagnostics are exactly those announced by `// expected-error@+N:COL {{message}}` "
               "comments in the input; exit 0 if so (for tests)");
  app.add_flag("-s,--summary", opt.summary,
               "after compiling, print a summary of syms, tensors, events, tasks and graphs to standard error");
  app.add_option("--color", opt.color, "colour diagnostics: auto (on a terminal, unless NO_COLOR is set), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  app.add_flag("-v,--verbose", opt.verbose, "say what the compiler does and how long each step takes, and which schedule each graph got and why");
  app.add_flag("--resource-usage", opt.resource_usage,
               "print, per cubin architecture, each kernel's registers, stack and spills, shared memory and CTAs per "
               "SM (also with -v); a kernel that cannot run on an architecture is an error either way");
  app.add_flag("--no-check-resources", opt.no_check_resources,
               "write the fatbin even when a kernel does not fit its architecture (saying so in a warning): for "
               "testing the runtime's load-time check");
  app.add_option("--schedule", opt.schedule,
                 "static, dynamic or auto (default): the schedule of every graph; static and dynamic override what the "
                 "source says, auto keeps it and lets the compiler choose where the source does not")
      ->check(CLI::IsMember({"auto", "static", "dynamic"}));
  app.add_flag("--no-verify-schedule", opt.no_verify_schedule,
               "skip the verify-schedule pass (cycles, unnotified waits, notify counts): for testing the run-time "
               "watchdog; a wrong program then hangs until the watchdog stops it");

  app.add_flag("--profile", opt.profile,
               "compile per-task timeline records into the megakernels (global timer, SM, coordinates, time "
               "waiting), for etc-run --trace; without it the kernels carry no profiling code");
  // The three forms of the weight prefetch (docs/backend.md, "Weight prefetch"); H100, session 70.
  auto* prefetch_chain = app.add_flag(
      "--weight-prefetch-after-chain", opt.weight_prefetch_after_chain,
      "in the static schedule, a matmul task of weights (params) loads its first weight tiles before its event "
      "waits where the tasks it waits for run no matmul (a decode layer's q/k/v after its norm, o after "
      "attention, gate/up after the post-attention norm, the LM head), not where they stream weights themselves "
      "(down after gate/up). The default: against none on an H100, Llama-3.2-1B decode 3.4% faster at B = 1, "
      "3.0% at 16, 0.6% at 128; Qwen3-0.6B 3.6%, 1.0%, 1.1% (session 70)");
  auto* prefetch_all = app.add_flag(
      "--weight-prefetch", opt.weight_prefetch,
      "the weight prefetch in every such matmul task, down included: for measuring (against none, H100: "
      "Llama-3.2-1B decode 3.4% faster at B = 1, 3.8% at 16, 0.8% at 128; Qwen3-0.6B 1.4%, 0.5%, 1.5%)");
  auto* prefetch_off = app.add_flag("--no-weight-prefetch", opt.no_weight_prefetch,
                                    "no weight prefetch (the default until session 71): every matmul task loads "
                                    "its weights after its waits");
  prefetch_chain->excludes(prefetch_all)->excludes(prefetch_off);
  prefetch_all->excludes(prefetch_off);
  app.add_flag("--whole-program", opt.whole_program,
               "make each cubin with NVRTC, whose ptxas sees the whole program, rather than with nvJitLink, whose "
               "ptxas serializes the wgmma products of a megakernel that calls a task function: for measuring "
               "(Llama-3.2-1B decode on an H200: 5.6% slower at B = 1, 8.9% at 16, 2.3% at 128; Qwen3-0.6B 5.7% and "
               "3.8% slower, 4.8% faster at 128; a fatbin 5 times as large, which loads 3 times as long)");
  app.add_flag("--parallel-waits", opt.parallel_waits,
               "check a task's consecutive event waits in parallel, one thread an event element and one barrier "
               "(static schedule), instead of one after another: for measuring (Llama-3.2-1B decode on an H200: level "
               "with the default at B = 1, 16 and 128)");
  app.add_flag("--run-by-last-notifier", opt.run_by_last_notifier,
               "in the static schedule, a task whose one wait is on an event element that no other task waits "
               "for, and that runs no matmul, runs in the CTA of the task whose notify completes that element, "
               "right after it, instead of in a CTA of its own that spins on the element (a decode layer's merge "
               "after its split-KV attention at every B; at B = 1 also its q/k/v sums and kv_append and the norm "
               "after each projection): for measuring (Llama-3.2-1B decode on an H100: 8.8% slower at B = 1, 0.9% at "
               "16 and 128; with the weight prefetch 11.2% and 1.2% slower than it alone at B = 1 and 16)");
  app.add_option("--specialize", opt.specialize,
                 "SYM=C1,C2,...: one megakernel per range of the sym between the cuts ([lo, C1 - 1], [C1, C2 - 1], "
                 "..., [Cn, hi]), each without the task grids that have no task in its range; the runtime launches "
                 "the one whose range holds the sym's value. Replaces the cuts a graph writes (`graph @main "
                 "specialize B = 32`)")
      ->check([](const std::string& v) -> std::string {
        static const std::regex form("[A-Za-z_][A-Za-z0-9_]*=-?[0-9]{1,18}(,-?[0-9]{1,18})*");
        return std::regex_match(v, form) ? "" : "expects SYM=C1,C2,... (integers), got '" + v + "'";
      });
  app.add_option("--device-define", opt.device_defines,
                 "NAME=VALUE: define a tuning knob of the device headers (ETC_ and capitals, digits, '_'; VALUE "
                 "an integer), before they are included (repeatable; docs/backend.md lists the knobs)")
      ->check([](const std::string& d) -> std::string {
        static const std::regex form("ETC_[A-Z0-9_]+=-?[0-9]+");
        return std::regex_match(d, form) ? "" : "expects ETC_NAME=INTEGER, got '" + d + "'";
      })
      ->allow_extra_args(false);  // `--device-define ETC_X=1 model.etir` leaves the file alone
  app.add_flag("--megakernel-only", opt.megakernel_only,
               "leave out the unfused kernels (one a task grid, which etc-run --mode unfused and unfused-graph "
               "launch): the fatbin carries the megakernels only (samples/llama_layer.etir for the default targets: 38% less "
               "CPU time in NVRTC and nvJitLink, a fatbin 29% smaller); an unfused launch of it is an error that says "
               "so");
  app.add_flag("--share-task-code,!--no-share-task-code", opt.share_task_code,
               "one function for tasks whose code differs only in tensors, events and constants (a model's layers; "
               "the default): a fatbin about 40% smaller, so a faster module load, at a step as fast within 0.5% "
               "(Llama-3.2-1B decode, H100); --no-share-task-code gives every task its own function");
  app.add_flag("--derived-syms,!--no-derived-syms", opt.derived_syms,
               "sym-only index math of the generated code that divides or takes a min or max (cdiv(16, B), say) is "
               "evaluated by the runtime once per binding and read from the kernel parameters, rather than by every "
               "task (the default); --no-derived-syms keeps it in the code");
  app.add_flag("--no-merge-tasks", opt.no_merge_tasks,
               "keep every task grid that lower-ops made (skip the merge-tasks pass): for measuring what the merges "
               "gain");
  app.add_flag("--fold-attention", opt.fold_attention,
               "run a layer's per-row q/k/v sums, rope and kv_append inside the attention tasks that read them (the "
               "fold-into-attention pass; both forms of attention_decode's short_kv choice, the one-part grid and "
               "the split-KV parts, run it for their rows): one grid less a layer, for measuring (Llama-3.2-1B decode on an H100, "
               "session 77, against the default: 0.9% slower at B = 1 and 5.7% at 8 at position 511, 2.7% and 4.4% at 4095; H200, "
               "session 36: 7.6% slower at B = 128; Qwen3-0.6B 2.0% slower at B = 1)");
  app.add_flag("--matmul-plan-by-range,!--no-matmul-plan-by-range", opt.matmul_plan_by_range,
               "below the first cut of a graph's `specialize`, a lone split-K matmul (a layer's o and down "
               "projections) whose K has room for twice the parts takes 128-column tiles in twice the parts, a grid "
               "of its own for that range (default: on; Llama-3.2-1B decode on an H200: 2.1% faster at B = 1, level "
               "to 1.7% slower from B = 16)");
  app.add_flag("--fold-attention-merge", opt.fold_attention_merge,
               "run a split-KV attention's merge inside the matmul tasks that read its result (the o projection; the "
               "fold-attention-merge pass; it turns --matmul-plan-by-range and attention_decode's short_kv choice "
               "off): one grid less a layer below B = 16, for measuring (Llama-3.2-1B decode on "
               "an H200: level at B = 1, 2.6 to 7.3% slower at B = 4 to 16; Qwen3-0.6B 0.7% slower at B = 1, 4.4% at "
               "15)");
  app.add_option("--norm-rows", opt.norm_rows,
                 "N: each task of a row norm (rmsnorm without head_dim, add_rmsnorm) takes N rows instead of one: "
                 "fewer norm tasks at large batches, so that the matmul grid after a norm does not wrap onto the "
                 "norm's CTAs; for measuring (Llama-3.2-1B decode on an H100, session 84, a task's rows one after another: N = 2 "
                 "0.7% slower at B = 64 and 2.9% at 8, N = 4 4.4% and 8.9%; since session 85 up to 4 rows in flight "
                 "together, ETC_NORM_ROWS_IN_FLIGHT, not yet timed)")
      ->check(CLI::Range(1, 64));
  app.add_option("--fold-norms-below", opt.fold_norms_below,
                 "N: where a decode layer's row norm (rmsnorm, or the residual's add_rmsnorm) has fewer rows than N, run "
                 "it inside each task of the matmul grids that read it (the fold-norms pass; the norm's grid and its "
                 "readers stay for N rows and more): two grids less a layer, each matmul task normalizing every row "
                 "itself, so only for the smallest batches (at most 48 Ki values read a task; not into an LM head); "
                 "each folded matmul prefetching its weights before its waits; for measuring (an H200, N = 3: "
                 "Llama-3.2-1B decode 14.6% slower at B = 1, 17.5% at 2; Qwen3-0.6B 20.1% and 25.2%; an H100 with the "
                 "prefetch, session 81: Llama 17.7% and 20.4% slower, as without it)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  app.add_option("--unsplit-below", opt.unsplit_below,
                 "N: where a matmul's rows (a decode step's batch) are fewer than N, a projection that etcc splits "
                 "into K parts (a layer's q/k/v, o and down) takes tiles of a few weight rows over all of K instead, "
                 "a grid of its own (as many tasks: about 128), beside the split one for N rows and more; with "
                 "--fold-norms-below N and --fold-attention a decode layer is then 6 grids there instead of 9 "
                 "(tools/gen_decode_sample.py --unsplit writes that form for every B); for measuring (Llama-3.2-1B "
                 "decode on an H100, N = 3 with both folds: 39% slower at B = 1, the narrow tiles streaming at half "
                 "the rate)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  app.add_flag("--reuse-temps", opt.reuse_temps,
               "let temps of a graph whose lives do not overlap in its run order share one tensor (same dtype and "
               "shape; the reuse-temps pass, before infer-events, which orders each new writer after the old "
               "readers): a workspace of about one layer's temps (Llama-3.2-1B decode at B = 128: 33.5 MiB of temps "
               "instead of 530), at the cost of waits the chain implies but eliminate-events does not prove (311 "
               "instead of 281); for measuring (Llama-3.2-1B decode on an H200: 9.8% slower at B = 1 and 128, 5.1% "
               "at 16)");
  app.add_flag("--no-gated-matmul", opt.no_gated_matmul,
               "keep a gated MLP's gate and up matmuls and their silu_mul as three task grids (skip the "
               "fuse-gated-matmul pass): for measuring what the fusion gains");
  app.add_flag("--write-dependencies", opt.write_deps,
               "(also -MD) write a Make dependency file listing the input and every file it includes, next to the "
               "output with extension .d unless -MF names it");
  app.add_option("--dependency-file", opt.dep_file, "(also -MF FILE) write the dependency file here (implies -MD)");
  app.add_option("--dependency-target", opt.dep_targets,
                 "(also -MT TARGET) the target of the dependency rule (repeatable; default: the -o file)")
      ->allow_extra_args(false);
  app.add_flag("--dependency-phony", opt.dep_phony,
               "(also -MP) add an empty rule for every included file, so that make does not fail once one is "
               "deleted");

  // nvcc spells it -arch; CLI11 takes single-dash names as single letters, so translate.
  std::vector<std::string> args;
  for (int i = argc - 1; i >= 1; --i) {
    std::string a = argv[i];
    if (a == "-arch" || a.rfind("-arch=", 0) == 0) a = "-" + a;
    a = translateDependencyFlag(a);
    args.push_back(a);
  }
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    // --help and --version exit 0; any usage error exits 1, like every other error.
    return rc == 0 ? 0 : 1;
  }
  return run(opt);
}
