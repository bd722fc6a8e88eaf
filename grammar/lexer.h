// The .etir lexer: a hand-driven re2c loop over the SourceManager's NUL-terminated buffer
// (the implementation is generated from grammar/etir.re).
//
// Token values: IDENT, AT_NAME, FLOAT, STRING, MINUS and the keywords carry a pointer to
// their first character in the buffer (tokens never span lines, so the text is recovered from
// the location: Driver::text); INT carries its value. Nothing is copied per token.
// Lexical errors are reported here, once each, and the token returned is the parser's YYerror,
// which makes the parser recover without a second diagnostic (integer overflow, float range,
// bad escapes and control characters in strings keep their INT/FLOAT/STRING token: the token's
// extent is clear). After a fatal condition (nesting limit, the diagnostic engine's error
// limit) the lexer is `stopped()` and returns end of file from then on.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/support/diagnostics.h"
#include "compiler/support/source.h"
#include "grammar/etir_parser.h"

namespace etc::grammar {

// Whether a token kind is one of the keywords (`module` through `run`).
inline bool isKeyword(Parser::symbol_kind_type k) {
  return k >= Parser::symbol_kind::S_KW_MODULE && k <= Parser::symbol_kind::S_KW_RUN;
}

class Lexer {
 public:
  // `text` must satisfy text.data()[text.size()] == '\0' (SourceManager guarantees it).
  Lexer(uint32_t file, std::string_view text, DiagnosticEngine& diags);

  // `recovering`: the parser is recovering from a syntax error (it discards tokens, so the
  // nesting guard below restarts its count instead of reporting).
  Parser::symbol_type next(bool recovering = false);
  // Whether the last token returned by next() is the first token on its line.
  bool firstOnLine() const { return first_on_line_; }
  // Whether only blanks precede `first` (a token's first character) on its line.
  bool startsLine(const char* first) const {
    const uchar* p = reinterpret_cast<const uchar*>(first);
    while (p > begin_ && (p[-1] == ' ' || p[-1] == '\t' || p[-1] == '\r')) --p;
    return p == begin_ || p[-1] == '\n';
  }

  // Reports an error (unless stopped); stops when the engine's error limit is reached.
  void error(SourceLoc loc, std::string message, std::vector<Note> notes = {});
  // Stops the lexer: every later next() returns end of file.
  void stop() { stopped_ = true; }
  bool stopped() const { return stopped_; }

  uint32_t file() const { return file_; }

 private:
  using uchar = unsigned char;

  SourceLoc locAt(const uchar* p) const {
    return SourceLoc{file_, line_, static_cast<uint32_t>(p - line_start_) + 1};
  }
  // [b, e) on the current line -> inclusive SourceRange.
  SourceRange rangeOf(const uchar* b, const uchar* e) const {
    return SourceRange{locAt(b), locAt(e > b ? e - 1 : b)};
  }
  std::string_view textOf(const uchar* b, const uchar* e) const {
    return std::string_view(reinterpret_cast<const char*>(b), static_cast<size_t>(e - b));
  }

  Parser::symbol_type scan(bool recovering);
  Parser::symbol_type lexString(const uchar* quote);
  Parser::symbol_type lexInt(const uchar* b, const uchar* e, bool hex);
  Parser::symbol_type lexFloat(const uchar* b, const uchar* e);
  Parser::symbol_type tooDeep(const uchar* b, const uchar* e);
  Parser::symbol_type errorToken(const uchar* b, const uchar* e);
  SourceRange eofRange() const;

  uint32_t file_;
  const uchar* begin_;
  const uchar* end_;  // points at the sentinel '\0'
  const uchar* cursor_;
  const uchar* line_start_;
  uint32_t line_ = 1;
  uint32_t nest_ = 0;       // open '(' and '[' (reset at '{' and '}')
  uint32_t minus_run_ = 0;  // consecutive '-' tokens
  bool recovering_ = false;
  bool first_on_line_ = true;
  uint32_t last_line_ = 0;  // line of the previous token
  bool stopped_ = false;
  DiagnosticEngine& diags_;
};

// The value of a STRING token (its raw text between the quotes, which the lexer validated):
// escapes replaced; invalid escapes and control characters (already reported) dropped.
std::string unescapeString(std::string_view raw);

// Human-readable text of a token for messages: "identifier 'x'", "keyword 'grid'", "']'",
// "integer '42'", "end of file"... Long texts are shortened.
std::string describeToken(const Parser::symbol_type& tok);
// Name of a token kind in "expected ..." lists: "identifier", "keyword 'grid'", "']'".
std::string tokenKindName(Parser::symbol_kind_type kind);
// `c` as it appears inside '...' in a message: printable ASCII as is, others as \xNN.
std::string escapeChar(unsigned char c);

}  // namespace etc::grammar
