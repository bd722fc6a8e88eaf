// Source files, positions and ranges. Every AST and IR node carries a SourceRange so that any
// diagnostic, from the lexer to the last pass, can point at the user's text.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace etc {

// file == 0 means "no location" (e.g. nodes made by a pass out of thin air).
// line and col are 1-based; col counts bytes.
struct SourceLoc {
  uint32_t file = 0;
  uint32_t line = 0;
  uint32_t col = 0;
  bool valid() const { return file != 0 && line != 0; }
  friend bool operator==(const SourceLoc&, const SourceLoc&) = default;
};

struct SourceRange {
  SourceLoc begin;
  SourceLoc end;  // points at the last character of the range (inclusive)
  bool valid() const { return begin.valid(); }
};

// Owns the text of every file read in one compilation. Buffers never move once added, so
// string_views into them (identifiers in the AST) stay valid for the SourceManager's life.
class SourceManager {
 public:
  SourceManager();
  ~SourceManager();
  SourceManager(const SourceManager&) = delete;
  SourceManager& operator=(const SourceManager&) = delete;

  // Reads a file. On failure returns 0 and sets *error to a human-readable reason
  // ("No such file or directory", "is a directory", ...).
  uint32_t addFile(const std::string& path, std::string* error);
  // Adds an in-memory buffer (tests, fuzzing, stdin).
  uint32_t addBuffer(std::string name, std::string contents);

  // Name as given by the user (used in diagnostics).
  std::string_view name(uint32_t file) const;
  // The file's text; contents(f).data()[contents(f).size()] == '\0' always holds, which the
  // lexer uses as its sentinel.
  std::string_view contents(uint32_t file) const;
  // The whole line that contains loc, without its line terminator.
  std::string_view lineText(SourceLoc loc) const;

  // Include bookkeeping: where a file was included from (invalid for the main file).
  void setIncludedFrom(uint32_t file, SourceLoc where);
  SourceLoc includedFrom(uint32_t file) const;

  // Canonical path (realpath) of a file added with addFile; empty for buffers.
  std::string_view canonicalPath(uint32_t file) const;
  // Finds an already-added file by canonical path; 0 if none.
  uint32_t findByCanonicalPath(std::string_view path) const;

  size_t fileCount() const { return files_.size(); }

 private:
  struct File;
  const File& file(uint32_t id) const;
  std::vector<std::unique_ptr<File>> files_;
};

}  // namespace etc
