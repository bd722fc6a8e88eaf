#include "compiler/backend/nvrtc_worker.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <system_error>

extern char** environ;

namespace etc::backend {

namespace fs = std::filesystem;

std::optional<std::string> nvrtcWorkerPath() {
  if (const char* env = std::getenv("ETC_NVRTC_WORKER")) {
    if (*env == '\0') return std::nullopt;
    return std::string(env);
  }
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return std::nullopt;
  const fs::path worker = self.parent_path() / "etc-nvrtc";
  if (::access(worker.c_str(), X_OK) != 0) return std::nullopt;
  return worker.string();
}

namespace {

// Writes all of `bytes` to fd; false once the reader is gone (EPIPE: a worker that stopped
// reading, whose exit status then says why).
bool writeAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(size_t(n));
  }
  return true;
}

std::string readAll(int fd) {
  std::string out;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return out;
    out.append(buf, size_t(n));
  }
}

// The worker's answer: the log's size (8 bytes, little-endian), the log, the image's size, the
// image.
bool takeSized(std::string_view& in, std::string& out) {
  if (in.size() < 8) return false;
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = n << 8 | uint8_t(in[size_t(i)]);
  in.remove_prefix(8);
  if (n > in.size()) return false;
  out.assign(in.substr(0, n));
  in.remove_prefix(n);
  return true;
}

// A pipe whose ends close on exec: the worker gets only the ends dup2'd to its 0 and 1, never
// another thread's.
struct Pipe {
  int fd[2] = {-1, -1};
  bool open() { return ::pipe2(fd, O_CLOEXEC) == 0; }
  void close(int i) {
    if (fd[i] >= 0) ::close(fd[i]);
    fd[i] = -1;
  }
  ~Pipe() {
    close(0);
    close(1);
  }
};

}  // namespace

CompileResult compileCudaInWorker(const std::string& worker, std::string_view source, std::string_view file_name,
                                  const Target& t, const std::vector<std::string>& extra_options, bool whole_program) {
  // A worker that exits before it has read its input must not kill etcc with SIGPIPE.
  static std::once_flag ignore_sigpipe;
  std::call_once(ignore_sigpipe, [] { std::signal(SIGPIPE, SIG_IGN); });
  CompileResult result;
  Pipe in, out;
  if (!in.open() || !out.open()) {
    result.log = std::string("could not make pipes for the toolchain worker: ") + std::strerror(errno) + "\n";
    return result;
  }
  std::vector<std::string> args = {worker, t.name(), "--name", std::string(file_name), "--parent",
                                   std::to_string(::getpid())};
  if (whole_program) args.push_back("--whole-program");
  for (const std::string& o : extra_options) {
    args.push_back("--option");
    args.push_back(o);
  }
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in.fd[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out.fd[1], 1);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, worker.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    result.log = "could not start the toolchain worker " + worker + ": " + std::strerror(spawned) +
                 " (set ETC_NVRTC_WORKER to another worker, or empty to compile inside etcc)\n";
    return result;
  }
  in.close(0);
  out.close(1);
  writeAll(in.fd[1], source);
  in.close(1);
  const std::string answer = readAll(out.fd[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::string_view rest = answer;
  std::string image;
  const bool answered = takeSized(rest, result.log) && takeSized(rest, image) && rest.empty();
  const bool exited = WIFEXITED(status);
  if (answered && exited && WEXITSTATUS(status) == 0 && !image.empty()) {
    result.image.assign(image.begin(), image.end());
    result.ok = true;
    return result;
  }
  if (answered && exited && WEXITSTATUS(status) == 1) return result;  // a failed compile: the log says why
  const std::string how = WIFSIGNALED(status)
                              ? "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
                                    std::string(strsignal(WTERMSIG(status))) + ")"
                          : exited && WEXITSTATUS(status) == 0 ? "gave no image"
                                                               : "exited with status " + std::to_string(WEXITSTATUS(status));
  result.log += "the toolchain worker " + worker + " " + how + " compiling for " + t.name() + "\n";
  return result;
}

}  // namespace etc::backend
