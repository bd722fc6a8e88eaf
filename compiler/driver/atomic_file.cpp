#include "compiler/driver/atomic_file.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace etc {

bool writeFileAtomically(const std::string& path, std::string_view data, std::string* error) {
  // Same directory as the target, so that rename() never crosses a file system; the pid keeps
  // two concurrent compiles of one target (make -j with a bad rule) from sharing a temporary.
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  auto fail = [&](int err) {
    *error = fmt::format("cannot write '{}': {}", path, std::strerror(err));
    std::remove(tmp.c_str());
    return false;
  };
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) {
    *error = fmt::format("cannot write '{}': {}", path, std::strerror(errno));
    return false;
  }
  bool written = std::fwrite(data.data(), 1, data.size(), f) == data.size();
  int err = errno;
  if (std::fclose(f) != 0 && written) {
    written = false;
    err = errno;
  }
  if (!written) return fail(err);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return fail(errno);
  return true;
}

}  // namespace etc
