#include "compiler/support/source.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/stat.h>

namespace etc {

struct SourceManager::File {
  std::string name;
  std::string canonical;
  std::string text;  // std::string keeps a '\0' after the last character: the lexer's sentinel
  SourceLoc included_from;
  mutable std::vector<uint32_t> line_starts;  // computed on first use
};

SourceManager::SourceManager() = default;
SourceManager::~SourceManager() = default;

namespace {

// Files larger than this are rejected up front: .etir modules are text, and a huge input is
// almost certainly a mistake (or an attack) rather than a model.
constexpr long long kMaxFileBytes = 1LL << 30;

bool readWholeFile(const std::string& path, std::string* out, std::string* error) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    *error = std::strerror(errno);
    return false;
  }
  if (S_ISDIR(st.st_mode)) {
    *error = "is a directory";
    return false;
  }
  if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode) && !S_ISCHR(st.st_mode)) {
    *error = "not a regular file";
    return false;
  }
  if (S_ISREG(st.st_mode) && st.st_size > kMaxFileBytes) {
    *error = "file is larger than 1 GiB";
    return false;
  }
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    *error = std::strerror(errno);
    return false;
  }
  out->clear();
  if (S_ISREG(st.st_mode)) out->reserve(static_cast<size_t>(st.st_size));
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) {
    if (out->size() + n > static_cast<size_t>(kMaxFileBytes)) {
      std::fclose(f);
      *error = "file is larger than 1 GiB";
      return false;
    }
    out->append(buf, n);
  }
  bool failed = std::ferror(f);
  int err = errno;
  std::fclose(f);
  if (failed) {
    *error = std::strerror(err);
    return false;
  }
  return true;
}

}  // namespace

uint32_t SourceManager::addFile(const std::string& path, std::string* error) {
  std::string text;
  if (!readWholeFile(path, &text, error)) return 0;
  uint32_t id = addBuffer(path, std::move(text));
  char resolved[PATH_MAX];
  if (realpath(path.c_str(), resolved)) files_.back()->canonical = resolved;
  return id;
}

uint32_t SourceManager::addBuffer(std::string name, std::string contents) {
  auto f = std::make_unique<File>();
  f->name = std::move(name);
  f->text = std::move(contents);
  files_.push_back(std::move(f));
  return static_cast<uint32_t>(files_.size());
}

const SourceManager::File& SourceManager::file(uint32_t id) const { return *files_.at(id - 1); }

std::string_view SourceManager::name(uint32_t id) const { return file(id).name; }

std::string_view SourceManager::contents(uint32_t id) const { return file(id).text; }

std::string_view SourceManager::lineText(SourceLoc loc) const {
  if (!loc.valid() || loc.file > files_.size()) return {};
  const File& f = file(loc.file);
  if (f.line_starts.empty()) {
    f.line_starts.push_back(0);
    for (size_t i = 0; i < f.text.size(); ++i)
      if (f.text[i] == '\n') f.line_starts.push_back(static_cast<uint32_t>(i + 1));
  }
  if (loc.line > f.line_starts.size()) return {};
  size_t begin = f.line_starts[loc.line - 1];
  size_t end = loc.line < f.line_starts.size() ? f.line_starts[loc.line] - 1 : f.text.size();
  std::string_view line(f.text.data() + begin, end - begin);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

void SourceManager::setIncludedFrom(uint32_t id, SourceLoc where) { files_.at(id - 1)->included_from = where; }

SourceLoc SourceManager::includedFrom(uint32_t id) const { return file(id).included_from; }

std::string_view SourceManager::canonicalPath(uint32_t id) const { return file(id).canonical; }

uint32_t SourceManager::findByCanonicalPath(std::string_view path) const {
  for (size_t i = 0; i < files_.size(); ++i)
    if (!files_[i]->canonical.empty() && files_[i]->canonical == path) return static_cast<uint32_t>(i + 1);
  return 0;
}

}  // namespace etc
