#include "compiler/driver/verify_diagnostics.h"

#include <fmt/format.h>

#include <ostream>

namespace etc {

namespace {

std::string_view severityWord(Severity s) {
  return s == Severity::Error ? "error" : s == Severity::Warning ? "warning" : "note";
}

bool parseNumber(std::string_view s, size_t* pos, int64_t* out) {
  size_t start = *pos;
  int64_t v = 0;
  while (*pos < s.size() && s[*pos] >= '0' && s[*pos] <= '9' && v < 100000000) v = v * 10 + (s[(*pos)++] - '0');
  *out = v;
  return *pos > start;
}

}  // namespace

std::vector<ExpectedDiagnostic> parseExpectations(const SourceManager& sources, uint32_t file,
                                                  std::vector<std::string>* problems) {
  std::vector<ExpectedDiagnostic> out;
  std::string_view text = sources.contents(file);
  uint32_t line = 1;
  size_t line_start = 0;
  static constexpr std::string_view kTag = "expected-";
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
      continue;
    }
    if (text.compare(i, kTag.size(), kTag) != 0) continue;
    SourceLoc written{file, line, static_cast<uint32_t>(i - line_start + 1)};
    auto bad = [&](std::string_view why) {
      problems->push_back(fmt::format("{}:{}:{}: malformed expectation: {}", sources.name(file), line, written.col, why));
    };
    size_t p = i + kTag.size();
    Severity sev;
    std::string_view rest = text.substr(p);
    if (rest.starts_with("error")) {
      sev = Severity::Error;
      p += 5;
    } else if (rest.starts_with("warning")) {
      sev = Severity::Warning;
      p += 7;
    } else if (rest.starts_with("note")) {
      sev = Severity::Note;
      p += 4;
    } else {
      continue;  // "expected-" in ordinary text
    }
    int64_t target_line = line, col = 0;
    if (p < text.size() && text[p] == ':') {  // `expected-error:COL`: this line, that column
      ++p;
      if (!parseNumber(text, &p, &col)) {
        bad("expected a column after ':'");
        continue;
      }
    } else if (p < text.size() && text[p] == '@') {
      ++p;
      char sign = p < text.size() && (text[p] == '+' || text[p] == '-') ? text[p++] : 0;
      int64_t n;
      if (!parseNumber(text, &p, &n)) {
        bad("expected a line number after '@'");
        continue;
      }
      target_line = sign == '+' ? line + n : sign == '-' ? line - n : n;
      if (p < text.size() && text[p] == ':') {
        ++p;
        if (!parseNumber(text, &p, &col)) {
          bad("expected a column after ':'");
          continue;
        }
      }
    }
    while (p < text.size() && text[p] == ' ') ++p;
    if (text.compare(p, 2, "{{") != 0) {
      bad("expected '{{' before the message");
      continue;
    }
    size_t close = text.find("}}", p + 2);
    size_t eol = text.find('\n', p);
    if (close == std::string_view::npos || (eol != std::string_view::npos && close > eol)) {
      bad("expected '}}' after the message on the same line");
      continue;
    }
    if (target_line < 1) {
      bad("the line it points at is before the start of the file");
      continue;
    }
    out.push_back({sev, SourceLoc{file, static_cast<uint32_t>(target_line), static_cast<uint32_t>(col)},
                   std::string(text.substr(p + 2, close - p - 2)), written});
    i = close + 1;
  }
  return out;
}

bool verifyDiagnostics(const SourceManager& sources, const std::vector<Diagnostic>& produced,
                       const std::vector<ExpectedDiagnostic>& expected, std::ostream& out) {
  struct Got {
    Severity severity;
    SourceLoc loc;
    const std::string* message;
  };
  std::vector<Got> got;
  for (const Diagnostic& d : produced) {
    got.push_back({d.severity, d.loc, &d.message});
    for (const Note& n : d.notes) got.push_back({Severity::Note, n.loc, &n.message});
  }
  std::vector<bool> used(got.size(), false);
  bool ok = true;
  for (const ExpectedDiagnostic& e : expected) {
    bool found = false;
    for (size_t k = 0; k < got.size() && !found; ++k) {
      const Got& g = got[k];
      if (used[k] || g.severity != e.severity || g.loc.file != e.loc.file || g.loc.line != e.loc.line) continue;
      if ((e.loc.col != 0 && g.loc.col != e.loc.col) || *g.message != e.message) continue;
      used[k] = found = true;
    }
    if (!found) {
      ok = false;
      out << fmt::format("{}:{}:{}: expected {} at line {}{} was not produced: {}\n", sources.name(e.written_at.file),
                         e.written_at.line, e.written_at.col, severityWord(e.severity), e.loc.line,
                         e.loc.col ? fmt::format(", column {}", e.loc.col) : "", e.message);
    }
  }
  for (size_t k = 0; k < got.size(); ++k) {
    if (used[k]) continue;
    ok = false;
    const Got& g = got[k];
    if (g.loc.valid())
      out << fmt::format("{}:{}:{}: unexpected {}: {}\n", sources.name(g.loc.file), g.loc.line, g.loc.col,
                         severityWord(g.severity), *g.message);
    else
      out << fmt::format("unexpected {} without location: {}\n", severityWord(g.severity), *g.message);
  }
  return ok;
}

}  // namespace etc
