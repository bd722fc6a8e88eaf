#include "compiler/support/diagnostics.h"

#include <algorithm>
#include <iostream>
#include <string>

#include <fmt/format.h>

namespace etc {

namespace {

constexpr const char* kBold = "\033[1m";
constexpr const char* kRed = "\033[1;31m";
constexpr const char* kMagenta = "\033[1;35m";
constexpr const char* kCyan = "\033[1;36m";
constexpr const char* kGreen = "\033[1;32m";
constexpr const char* kReset = "\033[0m";

// A line longer than this is shown as a window around the column, so a 1 MB line does not
// flood the terminal.
constexpr size_t kMaxShownLine = 160;

std::string_view severityName(Severity s) {
  switch (s) {
    case Severity::Error: return "error";
    case Severity::Warning: return "warning";
    case Severity::Note: return "note";
  }
  return "error";
}

bool isUtf8Continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

}  // namespace

DiagnosticEngine::DiagnosticEngine(const SourceManager& sources) : sources_(sources), out_(&std::cerr) {}

void DiagnosticEngine::renderOne(std::string& out, Severity sev, SourceLoc loc, const std::string& msg) const {
  const char* sev_color = sev == Severity::Error ? kRed : sev == Severity::Warning ? kMagenta : kCyan;
  if (loc.valid()) {
    // Clang-style include context for diagnostics inside included files.
    for (SourceLoc from = sources_.includedFrom(loc.file); from.valid(); from = sources_.includedFrom(from.file))
      out += fmt::format("In file included from {}:{}:{}:\n", sources_.name(from.file), from.line, from.col);
    if (color_) out += kBold;
    out += fmt::format("{}:{}:{}: ", sources_.name(loc.file), loc.line, loc.col);
  } else {
    if (color_) out += kBold;
    out += "etcc: ";
  }
  if (color_) out += sev_color;
  out += severityName(sev);
  out += ": ";
  if (color_) {
    out += kReset;
    out += kBold;
  }
  out += msg;
  if (color_) out += kReset;
  out += '\n';
  if (!loc.valid()) return;

  std::string_view line = sources_.lineText(loc);
  size_t col = loc.col == 0 ? 0 : loc.col - 1;
  if (col > line.size()) col = line.size();
  size_t begin = 0, end = line.size();
  if (line.size() > kMaxShownLine) {
    begin = col > kMaxShownLine / 2 ? col - kMaxShownLine / 2 : 0;
    end = std::min(line.size(), begin + kMaxShownLine);
  }
  std::string shown, caret;
  if (begin > 0) {
    shown += "...";
    caret += "   ";
  }
  for (size_t i = begin; i < end; ++i) {
    unsigned char c = static_cast<unsigned char>(line[i]);
    // Keep tabs (so the caret lines up under them) and UTF-8 text; blank out other control
    // bytes, which would garble the terminal.
    char shown_c = (c == '\t' || c >= 0x20) && c != 0x7f ? static_cast<char>(c) : ' ';
    shown += shown_c;
    if (i < col && !isUtf8Continuation(c)) caret += c == '\t' ? '\t' : ' ';
  }
  if (end < line.size()) shown += "...";
  out += "  ";
  out += shown;
  out += "\n  ";
  if (color_) out += kGreen;
  out += caret;
  out += '^';
  if (color_) out += kReset;
  out += '\n';
}

std::string DiagnosticEngine::render(const Diagnostic& d) const {
  std::string out;
  renderOne(out, d.severity, d.loc, d.message);
  for (const Note& n : d.notes) renderOne(out, Severity::Note, n.loc, n.message);
  return out;
}

void DiagnosticEngine::report(Diagnostic d) {
  if (d.severity == Severity::Error) {
    if (limitReached()) {
      ++errors_;
      return;
    }
    ++errors_;
  } else if (d.severity == Severity::Warning) {
    ++warnings_;
  }
  if (collect_) {
    collected_.push_back(std::move(d));
    return;
  }
  *out_ << render(d);
  // Said as the limit is reached: the front end stops at the next declaration, so no later
  // error would be there to trigger it.
  if (limitReached() && !limit_reported_) {
    limit_reported_ = true;
    *out_ << fmt::format("etcc: error: too many errors ({}), stopping\n", error_limit_);
  }
  out_->flush();
}

void DiagnosticEngine::error(SourceLoc loc, std::string message, std::vector<Note> notes) {
  report(Diagnostic{Severity::Error, loc, std::move(message), std::move(notes)});
}

void DiagnosticEngine::warning(SourceLoc loc, std::string message, std::vector<Note> notes) {
  report(Diagnostic{Severity::Warning, loc, std::move(message), std::move(notes)});
}

}  // namespace etc
