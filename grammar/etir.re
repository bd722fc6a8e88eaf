// The .etir lexer (re2c). Generated into build/generated/grammar/etir_lexer.cpp.
//
// Ninja-style: no YYFILL; the buffer ends with a '\0' sentinel (SourceManager guarantees
// contents().data()[contents().size()] == '\0'). No regular expression below can match a '\0',
// so the DFA always stops at the sentinel; the "\x00" rule then tells end of file (the
// sentinel) from a NUL byte inside the file.
//
// Lexical decisions:
//   * whitespace is ' ', '\t', '\r', '\n' (lines are counted at '\n'; columns count bytes);
//   * `//` comments run to the end of the line and may contain any byte but NUL;
//   * integers: decimal `[0-9]+` or hex `0x[0-9a-fA-F]+`; values above INT64_MAX are an error;
//   * floats: `1.5`, `1.5e3`, `1e-5`, `2E+10`: digits are required on both sides of the '.'
//     (`.5` and `1.` are errors with a hint), and a float needs a '.' or an exponent, so `10`
//     is an integer and `1e-5` a float;
//   * a number immediately followed by letters, digits, '_' or '.' (`12ab`, `0x`, `1.2.3`) is
//     one invalid token, not a number and a name;
//   * strings "..." on one line; escapes \" \\ \n \t; control characters (below 0x20, 0x7f)
//     are rejected, bytes >= 0x80 are kept (UTF-8 paths);
//   * `@name` is one token (AT_NAME; Driver::atName strips the '@'); '@' alone is an error;
//   * invalid bytes (control characters, bytes >= 0x80, and ; # $ ? ! ` ~ ^ & | \ ' > and a
//     lone < or .) are reported once per run of consecutive invalid bytes, as
//     "invalid character '\xff'" (non-printables escaped as \xNN);
//   * a NUL byte inside the file is "null character in input" (one per run);
//   * nesting guard: more than ast::kMaxExprDepth open '(' / '[' (or a run of that many '-')
//     is "expression nested too deeply (limit 200)" and stops the lexer (end of file after).
//
// Messages: "invalid number '1.': write '1.0' for a float", "integer literal '...' is too
// large (the limit is 9223372036854775807)", "float literal '1e999' is out of range",
// "unterminated string", "unknown escape sequence '\q' in string", "invalid character '\x01'
// in string", "expected a name after '@'". Long token texts are cut at 40 characters + "...".

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include <fmt/format.h>

#include "grammar/lexer.h"

namespace etc::grammar {

namespace {

using symbol_type = Parser::symbol_type;

// Shortened token text for messages.
std::string clip(std::string_view text) {
  constexpr size_t kMax = 40;
  if (text.size() <= kMax) return std::string(text);
  return std::string(text.substr(0, kMax)) + "...";
}

// Bytes that cannot begin any token (the "invalid character" rule extends over them).
bool invalidStart(unsigned char c) {
  if (c >= 0x80 || c < 0x20) return c != 0 && c != '\t' && c != '\r' && c != '\n';
  switch (c) {
    case '$': case '#': case '?': case '!': case '`': case '~': case '^': case '&':
    case '|': case '\\': case '\'': case ';': case '>': case 0x7f:
      return true;
    default:
      return false;
  }
}

}  // namespace

std::string escapeChar(unsigned char c) {
  if (c == '\'') return "\\'";
  if (c == '\\') return "\\\\";
  if (c >= 0x20 && c < 0x7f) return std::string(1, static_cast<char>(c));
  return fmt::format("\\x{:02x}", c);
}

Lexer::Lexer(uint32_t file, std::string_view text, DiagnosticEngine& diags)
    : file_(file),
      begin_(reinterpret_cast<const uchar*>(text.data())),
      end_(reinterpret_cast<const uchar*>(text.data()) + text.size()),
      cursor_(begin_),
      line_start_(begin_),
      diags_(diags) {}

void Lexer::error(SourceLoc loc, std::string message, std::vector<Note> notes) {
  if (stopped_) return;
  diags_.error(loc, std::move(message), std::move(notes));
  if (diags_.limitReached()) stopped_ = true;
}

symbol_type Lexer::errorToken(const uchar* b, const uchar* e) {
  return Parser::make_YYerror(rangeOf(b, e));
}

symbol_type Lexer::tooDeep(const uchar* b, const uchar* e) {
  error(locAt(b), fmt::format("expression nested too deeply (limit {})", ast::kMaxExprDepth));
  stopped_ = true;
  return errorToken(b, e);
}

// End of file is located just past the last character of the last line (on the final '\n'
// when the file ends with one), so "unexpected end of file" shows the line that is cut short.
SourceRange Lexer::eofRange() const {
  SourceLoc loc;
  if (end_ > begin_ && end_[-1] == '\n' && line_ > 1) {
    const uchar* nl = end_ - 1;
    const uchar* start = nl;
    while (start > begin_ && start[-1] != '\n') --start;
    loc = SourceLoc{file_, line_ - 1, static_cast<uint32_t>(nl - start) + 1};
  } else {
    loc = SourceLoc{file_, line_, static_cast<uint32_t>(end_ - line_start_) + 1};
  }
  return SourceRange{loc, loc};
}

symbol_type Lexer::lexInt(const uchar* b, const uchar* e, bool hex) {
  constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  uint64_t v = 0;
  bool overflow = false;
  if (hex) {
    for (const uchar* p = b + 2; p < e && !overflow; ++p) {
      unsigned d = *p <= '9' ? *p - '0' : (*p | 0x20) - 'a' + 10;
      if (v > (kMax - d) / 16) overflow = true;
      else v = v * 16 + d;
    }
  } else {
    for (const uchar* p = b; p < e && !overflow; ++p) {
      unsigned d = *p - '0';
      if (v > (kMax - d) / 10) overflow = true;
      else v = v * 10 + d;
    }
  }
  if (overflow) {
    error(locAt(b), fmt::format("integer literal '{}' is too large (the limit is {})",
                                clip(textOf(b, e)), kMax));
    v = kMax;
  }
  return Parser::make_INT(static_cast<int64_t>(v), rangeOf(b, e));
}

symbol_type Lexer::lexFloat(const uchar* b, const uchar* e) {
  double v = 0;
  auto [ptr, ec] = std::from_chars(reinterpret_cast<const char*>(b),
                                   reinterpret_cast<const char*>(e), v);
  if (ec != std::errc() || ptr != reinterpret_cast<const char*>(e) || !std::isfinite(v)) {
    error(locAt(b), fmt::format("float literal '{}' is out of range", clip(textOf(b, e))));
  }
  return Parser::make_FLOAT(reinterpret_cast<const char*>(b), rangeOf(b, e));
}

// `quote` points at the opening '"'. Strings end at the closing '"'; a newline or the end of
// the file first makes the string unterminated (reported at the opening quote; the token is
// YYerror). Bad escapes and control characters are reported (one error per run); the token
// is then still a STRING, since its extent is clear. The value is the raw text between the
// quotes; unescapeString() makes the string.
symbol_type Lexer::lexString(const uchar* quote) {
  const uchar* p = quote + 1;
  for (;;) {
    while (*p >= 0x20 && *p != '"' && *p != '\\' && *p != 0x7f) ++p;
    uchar c = *p;
    if (c == '"') break;
    if (c == '\n' || c == '\r' || (c == 0 && p == end_)) {
      error(locAt(quote), "unterminated string");
      cursor_ = p;
      return errorToken(quote, p);
    }
    if (c == '\\') {
      uchar n = p[1];
      if (n == '"' || n == '\\' || n == 'n' || n == 't') {
        p += 2;
      } else if (n == '\n' || n == '\r' || (n == 0 && p + 1 == end_)) {
        ++p;  // unterminated: reported by the next iteration
      } else {
        error(locAt(p), fmt::format("unknown escape sequence '\\{}' in string", escapeChar(n)));
        p += 2;
      }
      continue;
    }
    // a control character (or NUL) inside the string: one error per run
    const uchar* bad = p;
    while ((*p < 0x20 || *p == 0x7f) && *p != '\n' && *p != '\r' && !(*p == 0 && p == end_)) ++p;
    if (*bad == 0) {
      error(locAt(bad), "null character in input");
    } else {
      error(locAt(bad), fmt::format("invalid character '{}' in string", escapeChar(*bad)));
    }
  }
  cursor_ = p + 1;
  return Parser::make_STRING(reinterpret_cast<const char*>(quote), rangeOf(quote, p + 1));
}

std::string unescapeString(std::string_view raw) {
  std::string out;
  out.reserve(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(raw[i]);
    if (c == '\\' && i + 1 < raw.size()) {
      switch (raw[++i]) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        default: break;  // reported by the lexer
      }
    } else if (c >= 0x20 && c != 0x7f) {
      out += static_cast<char>(c);
    }
  }
  return out;
}

symbol_type Lexer::next(bool recovering) {
  symbol_type t = scan(recovering);
  first_on_line_ = t.location.begin.line != last_line_;
  last_line_ = t.location.begin.line;
  return t;
}

symbol_type Lexer::scan(bool recovering) {
  if (stopped_) return Parser::make_YYEOF(eofRange());
  if (recovering && !recovering_) {
    // The parser has just popped its stack back to a statement or declaration list, where
    // nothing is open.
    nest_ = 0;
    minus_run_ = 0;
  }
  recovering_ = recovering;
  const uint32_t minus_run = minus_run_;
  minus_run_ = 0;
  for (;;) {
    // fast path for the common case of single spaces and indentation
    while (*cursor_ == ' ') ++cursor_;
    const uchar* tok = cursor_;
    const uchar* p = cursor_;
    const uchar* q = p;  // YYMARKER
    (void)q;
#define TOKEN(kind) \
  do { cursor_ = p; return Parser::make_##kind(rangeOf(tok, p)); } while (0)
#define VTOKEN(kind) \
  do { cursor_ = p; return Parser::make_##kind(reinterpret_cast<const char*>(tok), rangeOf(tok, p)); } while (0)
    /*!re2c
      re2c:define:YYCTYPE = "unsigned char";
      re2c:define:YYCURSOR = p;
      re2c:define:YYMARKER = q;
      re2c:yyfill:enable = 0;
      re2c:indent:top = 2;

      ident = [A-Za-z_][A-Za-z0-9_]*;
      dec   = [0-9]+;
      hex   = "0" [xX] [0-9a-fA-F]+;
      exp   = [eE] [+-]? [0-9]+;
      flt   = [0-9]+ "." [0-9]+ exp? | [0-9]+ exp;

      [ \t\r]+       { cursor_ = p; continue; }
      "\n"           { cursor_ = p; ++line_; line_start_ = p; continue; }
      "//" [^\n\x00]* { cursor_ = p; continue; }

      "module"       { VTOKEN(KW_MODULE); }
      "include"      { VTOKEN(KW_INCLUDE); }
      "sym"          { VTOKEN(KW_SYM); }
      "const"        { VTOKEN(KW_CONST); }
      "tensor"       { VTOKEN(KW_TENSOR); }
      "event"        { VTOKEN(KW_EVENT); }
      "task"         { VTOKEN(KW_TASK); }
      "graph"        { VTOKEN(KW_GRAPH); }
      "in"           { VTOKEN(KW_IN); }
      "init"         { VTOKEN(KW_INIT); }
      "grid"         { VTOKEN(KW_GRID); }
      "schedule"     { VTOKEN(KW_SCHEDULE); }
      "specialize"   { VTOKEN(KW_SPECIALIZE); }
      "wait"         { VTOKEN(KW_WAIT); }
      "notify"       { VTOKEN(KW_NOTIFY); }
      "run"          { VTOKEN(KW_RUN); }
      ident          { VTOKEN(IDENT); }

      "@" ident {
        cursor_ = p;
        return Parser::make_AT_NAME(reinterpret_cast<const char*>(tok), rangeOf(tok, p));
      }
      "@" {
        cursor_ = p;
        error(locAt(tok), "expected a name after '@'");
        return errorToken(tok, p);
      }

      dec            { cursor_ = p; return lexInt(tok, p, false); }
      hex            { cursor_ = p; return lexInt(tok, p, true); }
      flt            { cursor_ = p; return lexFloat(tok, p); }
      [0-9] [A-Za-z0-9_.]* {
        cursor_ = p;
        std::string_view t = textOf(tok, p);
        if (t.back() == '.' && std::all_of(t.begin(), t.end() - 1,
                                           [](char c) { return c >= '0' && c <= '9'; })) {
          error(locAt(tok), fmt::format("invalid number '{}': write '{}0' for a float",
                                        clip(t), clip(t)));
        } else {
          error(locAt(tok), fmt::format("invalid number '{}'", clip(t)));
        }
        return errorToken(tok, p);
      }
      "." [0-9]+ {
        cursor_ = p;
        std::string_view t = textOf(tok, p);
        error(locAt(tok), fmt::format("invalid number '{}': write '0{}' for a float",
                                      clip(t), clip(t)));
        return errorToken(tok, p);
      }

      "\""           { return lexString(tok); }

      // Nesting guard: more than kMaxExprDepth open '(' / '[' (or a run of that many '-')
      // stops the parse with one error, so neither Bison's stack nor later recursive walks
      // get deep. While the parser discards tokens in error recovery the count restarts
      // instead (the parser holds at most two tokens shifted since its stack was reset).
      "("  { cursor_ = p; if (++nest_ > ast::kMaxExprDepth) { if (!recovering_) return tooDeep(tok, p); nest_ = 0; } TOKEN(LPAREN); }
      "["  { cursor_ = p; if (++nest_ > ast::kMaxExprDepth) { if (!recovering_) return tooDeep(tok, p); nest_ = 0; } TOKEN(LBRACK); }
      ")"  { if (nest_) --nest_; TOKEN(RPAREN); }
      "]"  { if (nest_) --nest_; TOKEN(RBRACK); }
      "{"  { nest_ = 0; TOKEN(LBRACE); }
      "}"  { nest_ = 0; TOKEN(RBRACE); }
      ","  { TOKEN(COMMA); }
      ":"  { TOKEN(COLON); }
      "="  { TOKEN(EQUAL); }
      "->" { TOKEN(ARROW); }
      "+"  { TOKEN(PLUS); }
      "-"  {
        cursor_ = p;
        minus_run_ = minus_run + 1;
        if (minus_run_ > ast::kMaxExprDepth) {
          if (!recovering_) return tooDeep(tok, p);
          minus_run_ = 0;
        }
        VTOKEN(MINUS);
      }
      "*"  { TOKEN(STAR); }
      "/"  { TOKEN(SLASH); }
      "%"  { TOKEN(PERCENT); }
      "<=" { TOKEN(LE); }

      "\x00" {
        if (tok == end_) {
          cursor_ = tok;  // stay at the sentinel
          return Parser::make_YYEOF(eofRange());
        }
        while (p < end_ && *p == 0) ++p;
        cursor_ = p;
        error(locAt(tok), "null character in input");
        return errorToken(tok, p);
      }

      * {
        while (p < end_ && invalidStart(*p)) ++p;
        cursor_ = p;
        if (*tok == '<') {
          error(locAt(tok), "invalid character '<' (the only comparison is '<=')");
        } else if (*tok == '>') {
          error(locAt(tok), "invalid character '>' (arrows are written '->')");
        } else {
          error(locAt(tok), fmt::format("invalid character '{}'", escapeChar(*tok)));
        }
        return errorToken(tok, p);
      }
    */
#undef TOKEN
#undef VTOKEN
  }
}

// ---- token descriptions for messages ----------------------------------------------------

namespace {

using kind = Parser::symbol_kind;

std::string quoteString(std::string_view s) {
  std::string out = "\"";
  size_t n = 0;
  for (unsigned char c : s) {
    if (++n > 30) {
      out += "...";
      break;
    }
    if (c == '"') out += "\\\"";
    else if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7f) out += fmt::format("\\x{:02x}", c);
    else out += static_cast<char>(c);
  }
  out += '"';
  return out;
}

}  // namespace

std::string tokenKindName(Parser::symbol_kind_type k) {
  switch (k) {
    case kind::S_YYEOF: return "end of file";
    case kind::S_IDENT: return "identifier";
    case kind::S_AT_NAME: return "@name";
    case kind::S_INT: return "integer";
    case kind::S_FLOAT: return "float";
    case kind::S_STRING: return "string";
    case kind::S_YYerror:
    case kind::S_YYUNDEF: return "invalid token";
    default: break;
  }
  std::string name = Parser::symbol_name(k);
  if (isKeyword(k)) return "keyword '" + name + "'";
  return "'" + name + "'";
}

std::string describeToken(const Parser::symbol_type& tok) {
  const Parser::symbol_kind_type k = tok.kind();
  auto text = [&] {
    return std::string_view(tok.value.as<const char*>(),
                            tok.location.end.col - tok.location.begin.col + 1);
  };
  switch (k) {
    case kind::S_IDENT:
      return "identifier '" + clip(text()) + "'";
    case kind::S_AT_NAME:
      return "'" + clip(text()) + "'";
    case kind::S_INT:
      return fmt::format("integer '{}'", tok.value.as<int64_t>());
    case kind::S_FLOAT:
      return "float '" + clip(text()) + "'";
    case kind::S_STRING: {
      std::string_view t = text();
      return "string " + quoteString(unescapeString(t.substr(1, t.size() - 2)));
    }
    default:
      return tokenKindName(k);
  }
}

}  // namespace etc::grammar
