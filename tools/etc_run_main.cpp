// etc-run: runs an etc fatbin on the GPU (or an .etir file on the CPU reference interpreter)
// with inputs from .npy / .safetensors files or random from a seed. See docs/runtime.md.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cmath>
#include <iostream>
#include <sstream>

#include "compiler/frontend/frontend.h"
#include "compiler/passes/pipeline.h"
#include "compiler/support/diagnostics.h"
#include "compiler/support/source.h"
#include "etc_run.h"
#include "npy.h"

namespace etc::tools {

void interpret(const std::string& ir_text, const std::string& source_name, const std::string& graph,
               const std::map<std::string, int64_t>& syms, interp::TensorMap& tensors) {
  SourceManager sources;
  DiagnosticEngine diags(sources);
  uint32_t id = sources.addBuffer(source_name, ir_text);
  std::unique_ptr<ir::Module> m = parseAndVerifyBuffer(id, LoadOptions{}, sources, diags);
  if (m) m = runPipeline(std::move(m), PipelineOptions{}, diags);
  if (!m || diags.hasErrors()) throw std::runtime_error(source_name + " does not compile (diagnostics above)");
  interp::RunResult r = interp::run(*m, graph, syms, tensors);
  if (!r.ok) throw std::runtime_error("reference interpreter: " + r.error);
}

int runEtir(const RunOptions& opt) {
  if (opt.check || opt.bench > 0 || opt.info)
    throw std::runtime_error("--check, --bench and --info need a .fatbin (an .etir file runs on the CPU interpreter)");
  SourceManager sources;
  DiagnosticEngine diags(sources);
  std::unique_ptr<ir::Module> m = parseAndVerifyFile(opt.file, LoadOptions{}, sources, diags);
  if (m) m = runPipeline(std::move(m), PipelineOptions{}, diags);
  if (!m || diags.hasErrors()) throw std::runtime_error(opt.file + " does not compile (diagnostics above)");

  std::map<std::string, int64_t> syms;
  for (const std::string& a : opt.syms) {
    auto [name, v] = parseSymAssignment(a);
    bool known = false;
    for (const ir::Sym& s : m->syms) {
      if (s.name != name) continue;
      known = true;
      if (v < s.lo || v > s.hi)
        throw std::runtime_error(fmt::format("sym {} = {} is outside its range [{}, {}]", name, v, s.lo, s.hi));
    }
    if (!known) throw std::runtime_error("no sym named '" + name + "'");
    syms[name] = v;
  }
  for (const ir::Sym& s : m->syms)
    if (!syms.count(s.name))
      throw std::runtime_error(fmt::format("sym {} is not set: give --sym {}=V with V in [{}, {}]", s.name, s.name, s.lo, s.hi));

  std::string graph = opt.graph;
  if (!graph.empty() && graph[0] == '@') graph.erase(0, 1);
  if (graph.empty()) {
    if (m->graphs.size() != 1) throw std::runtime_error("the module has several graphs: choose one with --graph");
    graph = m->graphs[0].name;
  }

  ir::Bindings b;
  b.sym = [&](uint32_t id) -> std::optional<int64_t> { return syms.at(m->syms[id].name); };
  std::vector<TensorSpec> specs;
  for (const ir::Tensor& t : m->tensors) {
    TensorSpec s{t.name, t.dtype, std::string(ir::roleName(t.role)), {}, {}};
    if (t.role != ir::Role::Temp)
      for (const ir::Expr& e : t.shape) {
        ir::EvalResult r = ir::evaluate(e, b);
        if (!r.ok()) throw std::runtime_error("the shape of tensor " + t.name + " cannot be evaluated for these syms");
        s.shape.push_back(r.value);
      }
    specs.push_back(std::move(s));
  }
  interp::TensorMap tensors = gatherInputs(specs, opt.inputs);
  interp::Order order = opt.order == "latest-first" ? interp::Order::LatestFirst
                        : opt.order == "random"     ? interp::Order::Random
                                                    : interp::Order::RunOrder;
  interp::RunResult r = interp::run(*m, graph, syms, tensors, order, opt.inputs.seed);
  if (!r.ok) throw std::runtime_error(r.error);
  for (const auto& [name, file] : opt.inputs.out) writeNpy(file, tensors.at(name));
  for (const TensorSpec& s : specs) {
    if (s.role != "output" || !tensors.count(s.name)) continue;
    const interp::HostTensor& t = tensors.at(s.name);
    double norm = 0;
    for (double x : interp::toDoubles(t)) norm += x * x;
    fmt::print("output {}: {} {}, L2 norm {:.6g}\n", s.name, ir::dtypeName(t.dtype), shapeText(t.shape), std::sqrt(norm));
  }
  return 0;
}

}  // namespace etc::tools

namespace {

std::map<std::string, std::string> assignments(const std::vector<std::string>& items, const std::string& option) {
  std::map<std::string, std::string> out;
  for (const std::string& a : items) {
    auto [name, file] = etc::tools::splitAssignment(a, option);
    if (!out.emplace(name, file).second) throw std::runtime_error(option + " gives tensor " + name + " twice");
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace etc::tools;
  CLI::App app{"etc-run: run an etc fatbin on the GPU, or an .etir file on the CPU reference interpreter"};
  RunOptions opt;
  std::vector<std::string> ins, params, outs, argmax_of;
  std::string mode = "mega";
  app.add_option("FILE", opt.file, "a .fatbin made by etcc, or an .etir file")->required();
  app.add_option("--sym", opt.syms, "set a sym: NAME=VALUE (repeatable)");
  app.add_option("--in", ins, "an input from a .npy file: NAME=FILE (repeatable)");
  app.add_option("--weights", opt.inputs.weights, "params from a .safetensors file (repeatable)");
  app.add_option("--param", params, "a param from a .npy file: NAME=FILE (repeatable)");
  app.add_option("--out", outs, "write an output to a .npy file: NAME=FILE (repeatable)");
  app.add_option("--seed", opt.inputs.seed, "seed of the random inputs and params (default 0)");
  app.add_option("--graph", opt.graph, "the graph to run (default: the module's only graph)");
  app.add_flag("--random-outputs", opt.inputs.random_outputs,
               "outputs start random from the seed instead of zero (a KV cache then holds a random past)");
  app.add_flag("--check", opt.check, "compare with the reference interpreter on the fatbin's embedded IR");
  app.add_option("--argmax-of", argmax_of,
                 "with --check or --stress: OUT=SCORES, integer output OUT is the argmax over the last axis of float "
                 "output SCORES; an OUT element that differs from the interpreter's passes only where the "
                 "interpreter's SCORES at it are within one ulp of their maximum (a near-tie) (repeatable)");
  app.add_option("--bench", opt.bench, "time N launches (after warm-up) per mode")->check(CLI::PositiveNumber);
  app.add_option("--mode", mode, "mega, unfused, unfused-graph or all")
      ->check(CLI::IsMember({"mega", "unfused", "unfused-graph", "all"}));
  app.add_flag("--info", opt.info, "print the fatbin's descriptor (no GPU needed)");
  app.add_flag("--debug", opt.debug, "check notify counts on the GPU (ETC_FLAG_DEBUG)");
  app.add_option("--watchdog-ms", opt.watchdog_ms, "spin budget of one wait in ms (default 1000)")->check(CLI::PositiveNumber);
  std::string sym_values;
  app.add_option("--stress", opt.stress,
                 "N back-to-back launches (first --mode) cycling through --sym-values; each value's result must stay "
                 "bit-identical and match the interpreter")
      ->check(CLI::PositiveNumber);
  app.add_option("--sym-values", sym_values, "with --stress: NAME=V1,V2,... (the sym that changes between launches)");
  app.add_option("--stress-also", opt.stress_also,
                 "with --stress: another fatbin of the same module (e.g. the other schedule), launched in turn in the "
                 "same context; repeatable");
  app.add_option("--check-every", opt.check_every,
                 "with --stress: compare every K-th launch with the interpreter too (default 1000; 0: only the first "
                 "of each case)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--trace", opt.trace,
                 "write a Chrome/Perfetto trace (JSON) of one megakernel launch and print a summary: time per task, "
                 "SM busy fraction, time waiting on events; needs a fatbin compiled with etcc --profile");
  app.add_option("--order", opt.order,
                 "an .etir file's tiles in the interpreter: run (default: grids in run order), latest-first (of the "
                 "tiles whose waits let them run, the latest grid's first) or random (one of them at random, from "
                 "--seed); with correct events every order gives the same bits, and an ordering the events miss shows")
      ->check(CLI::IsMember({"run", "latest-first", "random"}));
  app.add_option("--device", opt.device, "CUDA device ordinal (default 0)")->check(CLI::NonNegativeNumber);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 1;
  }
  try {
    opt.inputs.in = assignments(ins, "--in");
    opt.inputs.param = assignments(params, "--param");
    opt.inputs.out = assignments(outs, "--out");
    opt.inputs.argmax_of = assignments(argmax_of, "--argmax-of");
    if (!opt.inputs.argmax_of.empty() && !opt.check && opt.stress == 0)
      throw std::runtime_error("--argmax-of needs --check or --stress (it changes how they compare)");
    if (opt.stress > 0 || !sym_values.empty()) {
      if (opt.stress == 0 || sym_values.empty()) throw std::runtime_error("--stress and --sym-values go together");
      if (opt.inputs.random_outputs)
        throw std::runtime_error("--stress poisons the outputs before every launch: it does not take --random-outputs");
    }
    if (!opt.stress_also.empty() && opt.stress == 0) throw std::runtime_error("--stress-also needs --stress");
    if (opt.stress > 0) {
      auto [name, list] = splitAssignment(sym_values, "--sym-values");
      size_t pos = 0;
      while (pos <= list.size()) {
        size_t comma = std::min(list.find(',', pos), list.size());
        opt.stress_values.push_back(parseSymAssignment(name + "=" + list.substr(pos, comma - pos)).second);
        pos = comma + 1;
      }
      opt.stress_sym = name;
      opt.syms.push_back(name + "=" + std::to_string(opt.stress_values.front()));
    }
    if (mode == "all") opt.modes = {ETC_MODE_MEGA, ETC_MODE_UNFUSED, ETC_MODE_UNFUSED_GRAPH};
    else if (mode == "unfused") opt.modes = {ETC_MODE_UNFUSED};
    else if (mode == "unfused-graph") opt.modes = {ETC_MODE_UNFUSED_GRAPH};
    if (opt.file.size() >= 5 && opt.file.compare(opt.file.size() - 5, 5, ".etir") == 0) return runEtir(opt);
    if (!opt.order.empty()) throw std::runtime_error("--order is for an .etir file run on the CPU interpreter");
    etc::Module m = etc::Module::openFile(opt.file);
    if (opt.info) {
      printInfo(m);
      return 0;
    }
    return runFatbin(m, opt);
  } catch (const std::exception& e) {
    std::cerr << "etc-run: " << e.what() << '\n';
    return 1;
  }
}
