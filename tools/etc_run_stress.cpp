// etc-run --stress: back-to-back launches that change a sym every time, optionally alternating
// with other fatbins of the same module (--stress-also, e.g. the other schedule) in the same
// context. Each (fatbin, value) case gets its own inputs and buffers; every launch's outputs
// are poisoned first and must equal, bit for bit, the first launch of that case (no stale
// counter, queue or workspace state changes a result); the first launch of each case and every
// --check-every'th launch are also compared with the interpreter. Device memory in use and the
// process's resident memory are read after the first round of cases and at the end: both must
// stay flat.
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

#include "etc_run_device.h"

namespace etc::tools {
namespace {

struct Case {
  Module* module;
  int64_t value;
  std::vector<TensorSpec> specs;
  std::map<std::string, std::unique_ptr<DeviceBuffer>> buffers;
  const std::map<std::string, interp::HostTensor>* reference;
  std::map<std::string, interp::HostTensor> first;
};

size_t deviceBytesInUse(etc_module h) {
  size_t free_bytes = 0, total = 0;
  checkStatus(etc_module_mem_info(h, &free_bytes, &total));
  return total - free_bytes;
}

size_t residentBytes() {
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return static_cast<size_t>(resident) * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

// What must agree for one set of buffers to serve two fatbins: the module's name, syms and
// tensors. The IR itself may differ (the schedule is part of it).
std::string interfaceOf(const Module& m) {
  std::string out = m.name();
  for (const etc_sym_info& s : m.syms()) out += fmt::format(";sym {} {} {}", s.name, s.lo, s.hi);
  for (const etc_tensor_info& t : m.tensors()) {
    out += fmt::format(";tensor {} {} {}", t.name, static_cast<int>(t.dtype), static_cast<int>(t.role));
    for (int d = 0; d < t.rank; ++d) out += fmt::format(" {}", t.shape_text[d]);
  }
  return out;
}

double mib(size_t b) { return static_cast<double>(b) / (1024.0 * 1024.0); }

}  // namespace

int runStress(Module& m, const RunOptions& opt, const std::string& graph, std::map<std::string, int64_t> syms) {
  std::vector<std::unique_ptr<Module>> others;
  std::vector<Module*> modules{&m};
  for (const std::string& path : opt.stress_also) {
    others.push_back(std::make_unique<Module>(Module::openFile(path)));
    if (interfaceOf(*others.back()) != interfaceOf(m))
      throw std::runtime_error("--stress-also " + path + ": it holds a different module than " + opt.file +
                               " (its name, syms or tensors differ)");
    modules.push_back(others.back().get());
  }
  // Inputs and references first, so that a bad input file is reported before the GPU is
  // touched; then the device and one set of buffers per case. One reference per value: every
  // fatbin of the module must match it.
  std::map<int64_t, std::map<std::string, interp::HostTensor>> references;
  std::map<int64_t, interp::TensorMap> inputs;
  std::vector<Case> cases;
  for (int64_t v : opt.stress_values) {
    for (Module* mod : modules) {
      mod->setSym(opt.stress_sym, v);
      syms[opt.stress_sym] = v;
      Case c{mod, v, specsOf(*mod), {}, nullptr, {}};
      if (!inputs.count(v)) {
        inputs[v] = gatherInputs(c.specs, opt.inputs);
        interp::TensorMap ref = inputs[v];
        interpret(m.ir(), m.name() + " (embedded IR)", graph, syms, ref);
        for (const TensorSpec& s : c.specs)
          if (s.role == "output") references[v][s.name] = ref.at(s.name);
      }
      c.reference = &references[v];
      cases.push_back(std::move(c));
    }
  }
  for (Module* mod : modules) mod->loadDevice(opt.device);
  for (Case& c : cases) {
    const etc_module h = c.module->handle();
    for (const TensorSpec& s : c.specs) {
      if (s.role == "temp") continue;
      const interp::HostTensor t = s.role == "output" ? interp::zeros(s.dtype, s.shape) : inputs[c.value].at(s.name);
      auto buf = std::make_unique<DeviceBuffer>(h, t.bytes.size());
      checkStatus(etc_module_memcpy_htod(h, buf->get(), t.bytes.data(), t.bytes.size()));
      c.buffers[s.name] = std::move(buf);
    }
  }

  etc_launch_options lo{opt.modes.front(), opt.watchdog_ms * 1000000, opt.debug ? 1u : 0u};
  int64_t mismatches = 0, checked = 0;
  double worst = 0;
  bool ok = true;
  size_t dev0 = 0, rss0 = 0;
  for (int64_t i = 0; i < opt.stress; ++i) {
    Case& c = cases[static_cast<size_t>(i) % cases.size()];
    const etc_module h = c.module->handle();
    c.module->setSym(opt.stress_sym, c.value);
    for (const TensorSpec& s : c.specs) {
      if (s.role == "temp") continue;
      if (s.role == "output") {  // poisoned, so that a launch that skips a write shows
        interp::HostTensor z = interp::zeros(s.dtype, s.shape);
        std::fill(z.bytes.begin(), z.bytes.end(), static_cast<uint8_t>(0x7f));
        checkStatus(etc_module_memcpy_htod(h, c.buffers[s.name]->get(), z.bytes.data(), z.bytes.size()));
      }
      c.module->bind(s.name, c.buffers[s.name]->get(), static_cast<etc_dtype>(s.dtype), s.shape);
    }
    c.module->launch(graph, nullptr, lo);
    c.module->checkError(nullptr);
    const bool check_now = opt.check_every > 0 && (i + 1) % opt.check_every == 0;
    for (const TensorSpec& s : c.specs) {
      if (s.role != "output") continue;
      interp::HostTensor t = interp::zeros(s.dtype, s.shape);
      checkStatus(etc_module_memcpy_dtoh(h, t.bytes.data(), c.buffers[s.name]->get(), t.bytes.size()));
      auto first = c.first.find(s.name);
      if (first == c.first.end() || check_now) {
        Comparison cmp = compareWithReference(s.name, t, *c.reference, opt.inputs);
        if (first == c.first.end()) fmt::print("stress {}={} ({}): {}\n", opt.stress_sym, c.value, c.module == &m ? opt.file : "--stress-also", cmp.line);
        if (!cmp.ok && check_now) fmt::print("stress: launch {}: {}\n", i, cmp.line);
        ok = ok && cmp.ok;
        worst = std::max(worst, cmp.error);
        ++checked;
      }
      if (first == c.first.end()) {
        c.first.emplace(s.name, std::move(t));
      } else if (t.bytes != first->second.bytes) {
        if (mismatches++ < 5)
          fmt::print("stress: launch {} ({}={}): output {} differs from the first launch of that case\n", i,
                     opt.stress_sym, c.value, s.name);
      }
    }
    if (static_cast<size_t>(i + 1) == cases.size()) dev0 = deviceBytesInUse(h), rss0 = residentBytes();
  }
  const size_t dev1 = deviceBytesInUse(m.handle()), rss1 = residentBytes();
  // Device memory must not grow at all past the first round (a leak per launch would show as
  // MiBs); the host's resident size may move by allocator noise, not by a leak per launch.
  const bool flat = opt.stress <= static_cast<int64_t>(cases.size()) ||
                    (dev1 <= dev0 + (1u << 20) && rss1 <= rss0 + (16u << 20));
  fmt::print("stress memory: device in use {:.1f} MiB after the first round, {:.1f} MiB at the end; resident "
             "{:.1f} MiB, then {:.1f} MiB: {}\n",
             mib(dev0), mib(dev1), mib(rss0), mib(rss1), flat ? "flat" : "GROWING");
  fmt::print("stress {}: {} launches over {}={} values x {} fatbin(s), {} differing from the first launch of their "
             "case, {} compared with the interpreter, worst rel L2 {:.2e}: {}\n",
             modeName(lo.mode), opt.stress, opt.stress_sym, opt.stress_values.size(), modules.size(), mismatches,
             checked, worst, ok && mismatches == 0 && flat ? "ok" : "FAILED");
  return ok && mismatches == 0 && flat ? 0 : 1;
}

}  // namespace etc::tools
