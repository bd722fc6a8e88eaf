#include "compiler/driver/depfile.h"

#include "compiler/support/source.h"

namespace etc {

std::string escapeForMake(const std::string& path) {
  std::string out;
  for (size_t i = 0; i < path.size(); ++i) {
    char c = path[i];
    if (c == ' ' || c == '\t') {
      // make reads 2n backslashes before a space as n literal backslashes plus a separator,
      // so the backslashes in front of an escaped space are doubled first.
      for (size_t j = i; j > 0 && path[j - 1] == '\\'; --j) out += '\\';
      out += '\\';
    } else if (c == '#') {
      out += '\\';
    } else if (c == '$') {
      out += '$';
    }
    out += c;
  }
  return out;
}

std::string renderDepfile(const DepfileOptions& opts, const std::vector<std::string>& deps) {
  std::string out;
  for (size_t i = 0; i < opts.targets.size(); ++i) out += (i ? " " : "") + escapeForMake(opts.targets[i]);
  out += ':';
  for (const std::string& d : deps) out += " \\\n  " + escapeForMake(d);
  out += '\n';
  if (opts.phony)
    for (size_t i = 1; i < deps.size(); ++i) out += '\n' + escapeForMake(deps[i]) + ":\n";
  return out;
}

std::vector<std::string> filesRead(const SourceManager& sources) {
  std::vector<std::string> out;
  for (uint32_t f = 1; f <= sources.fileCount(); ++f)
    if (!sources.canonicalPath(f).empty()) out.emplace_back(sources.name(f));
  return out;
}

}  // namespace etc
