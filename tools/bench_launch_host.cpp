// The host work of a launch after a change (a sym set or a tensor bound since the last one):
// every binding checked against the syms, every tensor's shape evaluated from the descriptor,
// the workspace laid out and the kernel's parameter block built. A launch with nothing changed
// reuses that (docs/runtime.md, "Launch"); a serving loop whose batch size changes pays it at
// each change. Needs no GPU: fake device pointers are bound.
//   etc-bench-launch-host model.fatbin [SYM=VALUE ...]   (unset syms take their upper bound)
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "runtime/src/descriptor.h"
#include "runtime/src/fatbin_contents.h"
#include "runtime/src/fatbin_seal.h"
#include "runtime/src/params.h"
#include "runtime/src/rt_error.h"
#include "runtime/src/sym_state.h"
#include "runtime/src/workspace.h"
#include "tools/etc_run_host.h"

namespace {

using namespace etc::rt;

// What DeviceModule::launch derives from the host state (the same calls), against a fake
// workspace base.
size_t hostWork(const Descriptor& d, const SymState& st) {
  const std::vector<int64_t> syms = st.symValues();
  st.checkBindings();
  const WorkspaceLayout layout = layoutWorkspace(d, st);
  return launchParams(d, st, syms, layout, 1ull << 40, 1000000000, 0).size();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: etc-bench-launch-host model.fatbin [SYM=VALUE ...]\n");
    return 2;
  }
  try {
    std::ifstream f(argv[1], std::ios::binary);
    if (!f) throw Error(ETC_STATUS_IO, std::string(argv[1]) + ": cannot open");
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), {});
    bytes.resize(unsealedSize(bytes));
    const Descriptor d = parseDescriptor(readFatbinContents(bytes).descriptor_json);
    SymState st(d);
    for (const SymDesc& s : d.syms) st.setSym(s.name, s.hi);
    for (int a = 2; a < argc; ++a) {
      const auto [name, value] = etc::tools::parseSymAssignment(argv[a], "sym");
      st.setSym(name, value);
    }
    size_t bound = 0;
    for (size_t i = 0; i < d.tensors.size(); ++i)
      if (d.tensors[i].role != ETC_ROLE_TEMP) {
        st.bind(d.tensors[i].name, 0x1000 + 256 * i, d.tensors[i].dtype, st.tensorShape(i));
        ++bound;
      }
    size_t sink = hostWork(d, st);  // warm-up
    std::vector<double> us;
    for (int r = 0; r < 9; ++r) {
      const int n = 200;
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < n; ++i) sink += hostWork(d, st);
      us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / n);
    }
    std::sort(us.begin(), us.end());
    fmt::print("{}: {} tensors ({} bound), {} events: host work of a launch after a change {:.1f} us "
               "(median of 9 x 200; min {:.1f}, max {:.1f}; {} parameter bytes)\n",
               argv[1], d.tensors.size(), bound, d.events.size(), us[4], us[0], us[8], sink / (9 * 200 + 1));
  } catch (const std::exception& e) {  // etc::rt::Error, and parseSymAssignment's runtime_error
    std::fprintf(stderr, "etc-bench-launch-host: %s\n", e.what());
    return 1;
  }
  return 0;
}
