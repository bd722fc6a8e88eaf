// etc-run on a fatbin: bind host tensors to device buffers, launch in each asked mode, check
// against the interpreter, time, write outputs.
#include <algorithm>
#include <map>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

#include "etc_run.h"
#include "etc_run_device.h"
#include "npy.h"

namespace etc::tools {

std::vector<TensorSpec> specsOf(const Module& m) {
  std::vector<TensorSpec> out;
  static const char* const kRoles[] = {"input", "output", "param", "temp"};
  for (const etc_tensor_info& t : m.tensors()) {
    TensorSpec s;
    s.name = t.name;
    s.dtype = static_cast<ir::DType>(t.dtype);  // etc_dtype and ir::DType list the dtypes in one order
    s.role = kRoles[t.role];
    s.shape_text.assign(t.shape_text, t.shape_text + t.rank);
    if (s.role != "temp") s.shape = m.tensorShape(t.name);
    out.push_back(std::move(s));
  }
  return out;
}

const char* modeName(etc_mode m) {
  switch (m) {
    case ETC_MODE_MEGA: return "mega";
    case ETC_MODE_UNFUSED: return "unfused";
    case ETC_MODE_UNFUSED_GRAPH: return "unfused-graph";
  }
  return "?";
}


int runFatbin(Module& m, const RunOptions& opt) {
  std::map<std::string, int64_t> syms;
  for (const std::string& a : opt.syms) {
    auto [name, v] = parseSymAssignment(a);
    m.setSym(name, v);
    syms[name] = v;
  }
  for (const etc_sym_info& s : m.syms())
    if (!syms.count(s.name))
      throw std::runtime_error(fmt::format("sym {} is not set: give --sym {}=V with V in [{}, {}]", s.name, s.name, s.lo, s.hi));
  const std::vector<std::string> graphs = m.graphs();
  std::string graph = opt.graph.empty() && graphs.size() == 1 ? graphs[0] : opt.graph;
  if (!graph.empty() && graph[0] == '@') graph.erase(0, 1);
  if (std::find(graphs.begin(), graphs.end(), graph) == graphs.end()) {
    std::string known;
    for (const std::string& g : graphs) known += (known.empty() ? "@" : ", @") + g;
    throw std::runtime_error(graph.empty() ? "the module has several graphs (" + known + "): choose one with --graph"
                                           : "no graph named @" + graph + " (the module's graphs: " + known + ")");
  }

  const size_t graph_index = static_cast<size_t>(std::find(graphs.begin(), graphs.end(), graph) - graphs.begin());
  for (etc_mode mode : opt.modes)
    if (mode != ETC_MODE_MEGA && !etc_module_graph_has_unfused(m.handle(), graph_index))
      throw std::runtime_error(fmt::format(
          "--mode {}: this fatbin has no unfused kernels (etcc --megakernel-only left them out): use --mode mega",
          modeName(mode)));

  if (!opt.trace.empty()) {
    if (etc_module_profile_capacity(m.handle()) == 0)
      throw std::runtime_error("--trace needs a fatbin compiled with etcc --profile (this one records no timeline)");
    if (std::find(opt.modes.begin(), opt.modes.end(), ETC_MODE_MEGA) == opt.modes.end())
      throw std::runtime_error("--trace records the megakernel: use --mode mega or all");
    if (opt.stress > 0) throw std::runtime_error("--trace and --stress do not go together");
  }
  if (opt.stress > 0) return runStress(m, opt, graph, syms);
  const std::vector<TensorSpec> specs = specsOf(m);
  interp::TensorMap host = gatherInputs(specs, opt.inputs);
  std::map<std::string, interp::HostTensor> reference;
  if (opt.check) {
    interp::TensorMap ref = host;
    interpret(m.ir(), m.name() + " (embedded IR)", graph, syms, ref);
    for (const TensorSpec& s : specs)
      if (s.role == "output") reference[s.name] = ref.at(s.name);
  }

  m.loadDevice(opt.device);
  const etc_module h = m.handle();
  std::map<std::string, std::unique_ptr<DeviceBuffer>> buffers;
  for (const TensorSpec& s : specs) {
    if (s.role == "temp") continue;
    const interp::HostTensor t = s.role == "output" ? initialOutput(s, host) : host.at(s.name);
    auto buf = std::make_unique<DeviceBuffer>(h, t.bytes.size());
    checkStatus(etc_module_memcpy_htod(h, buf->get(), t.bytes.data(), t.bytes.size()));
    m.bind(s.name, buf->get(), static_cast<etc_dtype>(s.dtype), s.shape);
    buffers[s.name] = std::move(buf);
  }

  etc_launch_options lo{ETC_MODE_MEGA, opt.watchdog_ms * 1000000, opt.debug ? 1u : 0u};
  bool all_ok = true;
  std::map<std::string, interp::HostTensor> first_results;  // the first mode's results of --out's tensors
  // An output comes back to the host only to be compared or written: a decode step's KV caches
  // at B = 128 are 17 GB, and a --bench call there took 55 s, 38 of them in the system.
  auto wanted = [&](const TensorSpec& s) { return opt.check || opt.inputs.out.count(s.name) > 0; };
  bool fresh = true;  // the outputs hold their initial contents (just bound, nothing launched)
  for (etc_mode mode : opt.modes) {
    lo.mode = mode;
    // Traced before the checked launch, which then starts from its initial outputs like every other.
    if (mode == ETC_MODE_MEGA && !opt.trace.empty()) {
      writeTrace(m, graph, syms, opt);
      fresh = false;
    }
    // Outputs start from the same contents in every mode (zeros, or random with
    // --random-outputs), as in the reference run.
    for (const TensorSpec& s : specs) {
      if (s.role != "output" || fresh) continue;
      interp::HostTensor z = initialOutput(s, host);
      checkStatus(etc_module_memcpy_htod(h, buffers[s.name]->get(), z.bytes.data(), z.bytes.size()));
    }
    m.launch(graph, nullptr, lo);
    m.checkError(nullptr);
    fresh = false;
    for (const TensorSpec& s : specs) {
      if (s.role != "output" || !wanted(s)) continue;
      interp::HostTensor t = interp::zeros(s.dtype, s.shape);
      checkStatus(etc_module_memcpy_dtoh(h, t.bytes.data(), buffers[s.name]->get(), t.bytes.size()));
      if (opt.check) {
        Comparison c = compareWithReference(s.name, t, reference, opt.inputs);
        fmt::print("check {}: {}\n", modeName(mode), c.line);
        all_ok = all_ok && c.ok;
      }
      if (opt.inputs.out.count(s.name) && !first_results.count(s.name)) first_results[s.name] = std::move(t);
    }
    if (opt.bench > 0) {
      std::vector<double> us = m.benchmark(graph, nullptr, lo, std::max(3, opt.bench / 10), opt.bench);
      std::sort(us.begin(), us.end());
      double median = us.size() % 2 ? us[us.size() / 2] : 0.5 * (us[us.size() / 2 - 1] + us[us.size() / 2]);
      fmt::print("bench {}: median {:.2f} us, min {:.2f} us, max {:.2f} us over {} launches\n", modeName(mode), median,
                 us.front(), us.back(), us.size());
    }
  }
  // Outputs are written only once everything ran, from the first mode's results.
  for (const auto& [name, file] : opt.inputs.out) writeNpy(file, first_results.at(name));
  if (!opt.check && opt.bench == 0) {
    std::map<std::string, const TensorSpec*> outputs;  // by name, as before
    for (const TensorSpec& s : specs)
      if (s.role == "output") outputs[s.name] = &s;
    for (const auto& [name, s] : outputs) fmt::print("output {}: {} {}\n", name, ir::dtypeName(s->dtype), shapeText(s->shape));
  }
  return all_ok ? 0 : 1;
}

}  // namespace etc::tools
