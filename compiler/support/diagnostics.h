// Diagnostics: "file:line:col: error: message", the source line, a caret, then notes.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <string>
#include <vector>

#include "compiler/support/source.h"

namespace etc {

enum class Severity { Error, Warning, Note };

struct Note {
  SourceLoc loc;
  std::string message;
};

struct Diagnostic {
  Severity severity = Severity::Error;
  SourceLoc loc;
  std::string message;
  std::vector<Note> notes;
};

class DiagnosticEngine {
 public:
  explicit DiagnosticEngine(const SourceManager& sources);

  void error(SourceLoc loc, std::string message, std::vector<Note> notes = {});
  void warning(SourceLoc loc, std::string message, std::vector<Note> notes = {});
  void report(Diagnostic d);

  size_t errorCount() const { return errors_; }
  size_t warningCount() const { return warnings_; }
  bool hasErrors() const { return errors_ != 0; }

  // Where rendered diagnostics go (default std::cerr). Ignored while collecting.
  void setStream(std::ostream* out) { out_ = out; }
  void setColor(bool on) { color_ = on; }
  // Collect instead of printing (used by --verify-diagnostics).
  void setCollect(bool on) { collect_ = on; }
  const std::vector<Diagnostic>& collected() const { return collected_; }
  // After this many errors, further errors are dropped and one "too many errors" is printed.
  void setErrorLimit(size_t limit) { error_limit_ = limit; }
  bool limitReached() const { return error_limit_ != 0 && errors_ >= error_limit_; }

  // Renders one diagnostic (with source line and caret) as text.
  std::string render(const Diagnostic& d) const;

  const SourceManager& sources() const { return sources_; }

 private:
  void renderOne(std::string& out, Severity sev, SourceLoc loc, const std::string& msg) const;

  const SourceManager& sources_;
  std::ostream* out_;
  bool color_ = false;
  bool collect_ = false;
  size_t errors_ = 0;
  size_t warnings_ = 0;
  size_t error_limit_ = 50;
  bool limit_reported_ = false;
  std::vector<Diagnostic> collected_;
};

}  // namespace etc
