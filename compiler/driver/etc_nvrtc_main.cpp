// etc-nvrtc: etcc's toolchain worker. Compiles one CUDA source for one target with NVRTC and
// nvJitLink (compileCuda) in a process of its own; etcc starts one per target
// (compiler/backend/nvrtc_worker.h says why). Not meant to be run by hand:
//
//   etc-nvrtc TARGET [--name FILE_NAME] [--whole-program] [--option OPTION]... [--parent PID]
//
// Reads the source from standard input; writes to standard output the log's size (8 bytes,
// little-endian), NVRTC's and nvJitLink's log, the image's size and the cubin or PTX (empty when
// the compile failed). Exit status: 0 compiled, 1 the compile failed (the log says why), 2 a usage
// error (standard error says which). --parent: the pid of the etcc that started it, which it
// does not outlive.
#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "compiler/backend/toolchain.h"

namespace {

int usage(const std::string& why) {
  std::fprintf(stderr,
               "etc-nvrtc: %s\nusage: etc-nvrtc TARGET [--name FILE_NAME] [--whole-program] [--option OPTION]... "
               "[--parent PID] <SOURCE >ANSWER\n(etcc's toolchain worker: etcc runs it)\n",
               why.c_str());
  return 2;
}

void putSized(const void* data, size_t size) {
  unsigned char n[8];
  for (int i = 0; i < 8; ++i) n[i] = static_cast<unsigned char>(uint64_t(size) >> (8 * i));
  std::fwrite(n, 1, 8, stdout);
  std::fwrite(data, 1, size, stdout);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> positional, options;
  std::string name = "module.cu", parent;
  bool whole_program = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--whole-program") {
      whole_program = true;
    } else if (a == "--name" || a == "--option" || a == "--parent") {
      if (i + 1 >= argc) return usage(a + " needs a value");
      if (a == "--name") name = argv[++i];
      else if (a == "--parent") parent = argv[++i];
      else options.push_back(argv[++i]);
    } else if (a.starts_with("--")) {
      return usage("unknown option '" + a + "'");
    } else {
      positional.push_back(a);
    }
  }
  if (positional.size() != 1) return usage("expected a target, got " + std::to_string(positional.size()) + " arguments");
  const auto target = etc::backend::Target::parse(positional[0]);
  if (!target) return usage("not a target: '" + positional[0] + "'");
  if (!parent.empty()) {
    // Killed with the thread that started it; already orphaned (that thread gone before the
    // prctl) is the same.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (std::to_string(::getppid()) != parent) return 2;
  }
  std::string source;
  char buf[1 << 16];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, stdin)) > 0;) source.append(buf, n);

  const etc::backend::CompileResult r = etc::backend::compileCuda(source, name, *target, options, whole_program);
  putSized(r.log.data(), r.log.size());
  putSized(r.image.data(), r.ok ? r.image.size() : 0);
  if (std::fflush(stdout) != 0) return 2;
  return r.ok ? 0 : 1;
}
