// Lexer: token kinds, values, locations, lexical errors (exact messages and positions).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "compiler/support/diagnostics.h"
#include "compiler/support/source.h"
#include "grammar/driver.h"
#include "grammar/lexer.h"

namespace etc::grammar {
namespace {

using K = Parser::symbol_kind;
using Kind = Parser::symbol_kind_type;

std::string loc(const SourceLoc& l) { return fmt::format("{}:{}", l.line, l.col); }
std::string range(const SourceRange& r) { return loc(r.begin) + "-" + loc(r.end); }

struct Tok {
  Kind kind;
  std::string text;  // the token's text (from its location), or the integer value
  std::string range;
};

class LexerTest : public ::testing::Test {
 protected:
  // Lexes `text` to end of file (at most 10000 tokens).
  std::vector<Tok> lex(std::string text) {
    id_ = sources_.addBuffer("lex.etir", std::move(text));
    Lexer lexer(id_, sources_.contents(id_), diags_);
    std::vector<Tok> out;
    for (int i = 0; i < 10000; ++i) {
      Parser::symbol_type t = lexer.next();
      Tok tok{t.kind(), "", range(t.location)};
      switch (t.kind()) {
        case K::S_INT: tok.text = std::to_string(t.value.as<int64_t>()); break;
        case K::S_YYEOF: case K::S_YYerror: break;
        default:
          if (t.kind() == K::S_IDENT || t.kind() == K::S_AT_NAME || t.kind() == K::S_FLOAT ||
              t.kind() == K::S_STRING || t.kind() == K::S_MINUS ||
              (t.kind() >= K::S_KW_MODULE && t.kind() <= K::S_KW_RUN)) {
            tok.text = std::string(Driver::text(t.value.as<const char*>(), t.location));
          }
      }
      out.push_back(tok);
      if (t.kind() == K::S_YYEOF) break;
    }
    return out;
  }
  std::vector<Kind> kinds(const std::vector<Tok>& toks) {
    std::vector<Kind> k;
    for (auto& t : toks) k.push_back(t.kind);
    return k;
  }
  // "line:col: message" for every collected diagnostic.
  std::vector<std::string> errors() {
    std::vector<std::string> out;
    for (const Diagnostic& d : diags_.collected()) out.push_back(loc(d.loc) + ": " + d.message);
    return out;
  }

  void SetUp() override { diags_.setCollect(true); }

  SourceManager sources_;
  DiagnosticEngine diags_{sources_};
  uint32_t id_ = 0;
};

using Errors = std::vector<std::string>;

TEST_F(LexerTest, EmptyInputIsEndOfFile) {
  auto t = lex("");
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].kind, K::S_YYEOF);
  EXPECT_EQ(t[0].range, "1:1-1:1");
  EXPECT_TRUE(errors().empty());
}

TEST_F(LexerTest, Keywords) {
  auto t = lex("module include sym in const tensor event init grid task graph schedule wait "
               "notify run");
  EXPECT_EQ(kinds(t), (std::vector<Kind>{K::S_KW_MODULE, K::S_KW_INCLUDE, K::S_KW_SYM,
                                         K::S_KW_IN, K::S_KW_CONST, K::S_KW_TENSOR,
                                         K::S_KW_EVENT, K::S_KW_INIT, K::S_KW_GRID, K::S_KW_TASK,
                                         K::S_KW_GRAPH, K::S_KW_SCHEDULE, K::S_KW_WAIT,
                                         K::S_KW_NOTIFY, K::S_KW_RUN, K::S_YYEOF}));
  EXPECT_EQ(t[3].text, "in");
  EXPECT_TRUE(errors().empty());
}

TEST_F(LexerTest, IdentifiersThatLookLikeKeywords) {
  auto t = lex("modules tensor_ _run true false bf16 cdiv load static input X9_");
  ASSERT_EQ(t.size(), 12u);
  for (size_t i = 0; i + 1 < t.size(); ++i) EXPECT_EQ(t[i].kind, K::S_IDENT) << t[i].text;
  EXPECT_EQ(t[0].text, "modules");
  EXPECT_EQ(t[1].text, "tensor_");
  EXPECT_EQ(t[10].text, "X9_");
}

TEST_F(LexerTest, LocationsCountBytesAndTabsAreOneColumn) {
  auto t = lex("  foo\n\tbar  baz\n\n\t\tq");
  ASSERT_EQ(t.size(), 5u);
  EXPECT_EQ(t[0].range, "1:3-1:5");
  EXPECT_EQ(t[1].range, "2:2-2:4");
  EXPECT_EQ(t[2].range, "2:7-2:9");
  EXPECT_EQ(t[3].range, "4:3-4:3");
  EXPECT_EQ(t[4].kind, K::S_YYEOF);
  EXPECT_EQ(t[4].range, "4:4-4:4");
}

TEST_F(LexerTest, CrLfLineEndings) {
  auto t = lex("a\r\nb\r\n");
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[1].range, "2:1-2:1");
  // end of file sits on the last line's terminator
  EXPECT_EQ(t[2].range, "2:3-2:3");
}

TEST_F(LexerTest, EndOfFileAfterTrailingNewlineIsOnTheLastLine) {
  auto t = lex("const A = \n");
  EXPECT_EQ(t.back().kind, K::S_YYEOF);
  EXPECT_EQ(t.back().range, "1:11-1:11");
}

TEST_F(LexerTest, Comments) {
  auto t = lex("a // comment with \xff bytes and \"quotes\n  b//x\nc // at end of file");
  EXPECT_EQ(kinds(t), (std::vector<Kind>{K::S_IDENT, K::S_IDENT, K::S_IDENT, K::S_YYEOF}));
  EXPECT_EQ(t[1].range, "2:3-2:3");
  EXPECT_EQ(t[2].range, "3:1-3:1");
  EXPECT_TRUE(errors().empty());
}

TEST_F(LexerTest, SlashStarIsNotAComment) {
  auto t = lex("a /* b */");
  EXPECT_EQ(kinds(t), (std::vector<Kind>{K::S_IDENT, K::S_SLASH, K::S_STAR, K::S_IDENT,
                                         K::S_STAR, K::S_SLASH, K::S_YYEOF}));
}

TEST_F(LexerTest, AtNames) {
  auto t = lex("@main @_x9 task @task");
  EXPECT_EQ(kinds(t), (std::vector<Kind>{K::S_AT_NAME, K::S_AT_NAME, K::S_KW_TASK,
                                         K::S_AT_NAME, K::S_YYEOF}));
  EXPECT_EQ(t[0].text, "@main");
  EXPECT_EQ(t[0].range, "1:1-1:5");
  EXPECT_EQ(t[3].text, "@task");
}

TEST_F(LexerTest, LoneAtIsAnError) {
  auto t = lex("task @ x @1");
  EXPECT_EQ(kinds(t), (std::vector<Kind>{K::S_KW_TASK, K::S_YYerror, K::S_IDENT, K::S_YYerror,
                                         K::S_INT, K::S_YYEOF}));
  EXPECT_EQ(errors(), (Errors{"1:6: expected a name after '@'", "1:10: expected a name after '@'"}));
}

TEST_F(LexerTest, Punctuation) {
  auto t = lex("( ) [ ] { } , : = -> + - * / % <=");
  EXPECT_EQ(kinds(t),
            (std::vector<Kind>{K::S_LPAREN, K::S_RPAREN, K::S_LBRACK, K::S_RBRACK, K::S_LBRACE,
                               K::S_RBRACE, K::S_COMMA, K::S_COLON, K::S_EQUAL, K::S_ARROW,
                               K::S_PLUS, K::S_MINUS, K::S_STAR, K::S_SLASH, K::S_PERCENT,
                               K::S_LE, K::S_YYEOF}));
  EXPECT_EQ(t[9].range, "1:19-1:20");
  EXPECT_EQ(t[15].range, "1:32-1:33");
  // no spaces needed
  EXPECT_EQ(kinds(lex("a->b-1<=c")),
            (std::vector<Kind>{K::S_IDENT, K::S_ARROW, K::S_IDENT, K::S_MINUS, K::S_INT, K::S_LE,
                               K::S_IDENT, K::S_YYEOF}));
}

TEST_F(LexerTest, Integers) {
  auto t = lex("0 42 007 9223372036854775807 0x1F 0X400 0x7fffffffffffffff");
  ASSERT_EQ(t.size(), 8u);
  std::vector<std::string> values;
  for (size_t i = 0; i < 7; ++i) {
    EXPECT_EQ(t[i].kind, K::S_INT);
    values.push_back(t[i].text);
  }
  EXPECT_EQ(values, (std::vector<std::string>{"0", "42", "7", "9223372036854775807", "31",
                                              "1024", "9223372036854775807"}));
  EXPECT_EQ(t[3].range, "1:10-1:28");
  EXPECT_TRUE(errors().empty());
}

TEST_F(LexerTest, IntegerOverflow) {
  auto t = lex("x 9223372036854775808 0x8000000000000000 99999999999999999999999999999999999999999999999");
  EXPECT_EQ(kinds(t),
            (std::vector<Kind>{K::S_IDENT, K::S_INT, K::S_INT, K::S_INT, K::S_YYEOF}));
  EXPECT_EQ(errors(),
            (Errors{"1:3: integer literal '9223372036854775808' is too large (the limit is "
                    "9223372036854775807)",
                    "1:23: integer literal '0x8000000000000000' is too large (the limit is "
                    "9223372036854775807)",
                    "1:42: integer literal '9999999999999999999999999999999999999999...' is too "
                    "large (the limit is 9223372036854775807)"}));
}

TEST_F(LexerTest, Floats) {
  auto t = lex("1.5 1e-5 1.5e3 2E+10 0.0 10 1e5");
  EXPECT_EQ(kinds(t), (std::vector<Kind>{K::S_FLOAT, K::S_FLOAT, K::S_FLOAT, K::S_FLOAT,
                                         K::S_FLOAT, K::S_INT, K::S_FLOAT, K::S_YYEOF}));
  EXPECT_EQ(t[1].text, "1e-5");
  EXPECT_EQ(t[1].range, "1:5-1:8");
  EXPECT_DOUBLE_EQ(Driver::floatValue(t[2].text), 1500.0);
  EXPECT_DOUBLE_EQ(Driver::floatValue(t[1].text), 1e-5);
  EXPECT_TRUE(errors().empty());
}

TEST_F(LexerTest, MalformedNumbers) {
  auto t = lex("1. .5 0x 12ab 1.2.3 1e 7_");
  EXPECT_EQ(kinds(t), (std::vector<Kind>{K::S_YYerror, K::S_YYerror, K::S_YYerror, K::S_YYerror,
                                         K::S_YYerror, K::S_YYerror, K::S_YYerror, K::S_YYEOF}));
  EXPECT_EQ(errors(), (Errors{"1:1: invalid number '1.': write '1.0' for a float",
                              "1:4: invalid number '.5': write '0.5' for a float",
                              "1:7: invalid number '0x'", "1:10: invalid number '12ab'",
                              "1:15: invalid number '1.2.3'", "1:21: invalid number '1e'",
                              "1:24: invalid number '7_'"}));
}

TEST_F(LexerTest, FloatOutOfRange) {
  auto t = lex("1e999");
  EXPECT_EQ(t[0].kind, K::S_FLOAT);
  EXPECT_EQ(errors(), (Errors{"1:1: float literal '1e999' is out of range"}));
}

TEST_F(LexerTest, Strings) {
  auto t = lex(R"(include "a/b.etir" "q\"x\\y\nz\tw" "" "caf)" "\xc3\xa9\"");
  EXPECT_EQ(kinds(t), (std::vector<Kind>{K::S_KW_INCLUDE, K::S_STRING, K::S_STRING, K::S_STRING,
                                         K::S_STRING, K::S_YYEOF}));
  EXPECT_EQ(t[1].range, "1:9-1:18");
  EXPECT_EQ(t[1].text, "\"a/b.etir\"");
  auto value = [&](size_t i) {
    std::string_view raw = t[i].text;
    return unescapeString(raw.substr(1, raw.size() - 2));
  };
  EXPECT_EQ(value(1), "a/b.etir");
  EXPECT_EQ(value(2), "q\"x\\y\nz\tw");
  EXPECT_EQ(value(3), "");
  EXPECT_EQ(value(4), "caf\xc3\xa9");
  EXPECT_TRUE(errors().empty());
}

TEST_F(LexerTest, UnterminatedString) {
  auto t = lex("include \"abc\nmodule @m");
  EXPECT_EQ(kinds(t), (std::vector<Kind>{K::S_KW_INCLUDE, K::S_YYerror, K::S_KW_MODULE,
                                         K::S_AT_NAME, K::S_YYEOF}));
  EXPECT_EQ(t[2].range, "2:1-2:6");
  EXPECT_EQ(errors(), (Errors{"1:9: unterminated string"}));
}

TEST_F(LexerTest, UnterminatedStringAtEndOfFile) {
  auto t = lex("include \"abc\\");
  EXPECT_EQ(kinds(t), (std::vector<Kind>{K::S_KW_INCLUDE, K::S_YYerror, K::S_YYEOF}));
  EXPECT_EQ(errors(), (Errors{"1:9: unterminated string"}));
}

TEST_F(LexerTest, BadStringContents) {
  auto t = lex("\"a\\qb\" \"x\x01\x02y\" \"z\tw\"");
  // the strings are still STRING tokens: their extent is clear
  EXPECT_EQ(kinds(t), (std::vector<Kind>{K::S_STRING, K::S_STRING, K::S_STRING, K::S_YYEOF}));
  EXPECT_EQ(errors(), (Errors{"1:3: unknown escape sequence '\\q' in string",
                              "1:10: invalid character '\\x01' in string",
                              "1:17: invalid character '\\x09' in string"}));
  EXPECT_EQ(unescapeString("a\\qb"), "ab");
  EXPECT_EQ(unescapeString("x\x01\x02y"), "xy");
}

TEST_F(LexerTest, NullCharacters) {
  std::string text = "a";
  text += '\0';
  text += "b";
  text += std::string(3, '\0');
  text += "c";
  auto t = lex(text);
  EXPECT_EQ(kinds(t), (std::vector<Kind>{K::S_IDENT, K::S_YYerror, K::S_IDENT, K::S_YYerror,
                                         K::S_IDENT, K::S_YYEOF}));
  EXPECT_EQ(t[4].range, "1:7-1:7");
  EXPECT_EQ(errors(), (Errors{"1:2: null character in input", "1:4: null character in input"}));
}

TEST_F(LexerTest, NullCharacterInString) {
  std::string text = "\"a";
  text += '\0';
  text += "b\" c";
  auto t = lex(text);
  EXPECT_EQ(kinds(t), (std::vector<Kind>{K::S_STRING, K::S_IDENT, K::S_YYEOF}));
  EXPECT_EQ(errors(), (Errors{"1:3: null character in input"}));
}

TEST_F(LexerTest, InvalidCharactersOnePerRun) {
  auto t = lex("a $$# b \xff\xfe c caf\xc3\xa9 ; d");
  EXPECT_EQ(kinds(t), (std::vector<Kind>{K::S_IDENT, K::S_YYerror, K::S_IDENT, K::S_YYerror,
                                         K::S_IDENT, K::S_IDENT, K::S_YYerror, K::S_YYerror,
                                         K::S_IDENT, K::S_YYEOF}));
  EXPECT_EQ(errors(), (Errors{"1:3: invalid character '$'", "1:9: invalid character '\\xff'",
                              "1:17: invalid character '\\xc3'", "1:20: invalid character ';'"}));
}

TEST_F(LexerTest, InvalidCharacterHints) {
  lex("a < b > c . d \\ '");
  EXPECT_EQ(errors(), (Errors{"1:3: invalid character '<' (the only comparison is '<=')",
                              "1:7: invalid character '>' (arrows are written '->')",
                              "1:11: invalid character '.'", "1:15: invalid character '\\\\'",
                              "1:17: invalid character '\\''"}));
}

TEST_F(LexerTest, ControlCharacters) {
  lex("a\x01\x02 b\x7f c\x0b");
  EXPECT_EQ(errors(), (Errors{"1:2: invalid character '\\x01'", "1:6: invalid character '\\x7f'",
                              "1:9: invalid character '\\x0b'"}));
}

TEST_F(LexerTest, NestingLimit) {
  std::string ok(200, '(');
  lex(ok);
  EXPECT_TRUE(errors().empty());
  std::string deep = "x " + std::string(100000, '(');
  auto t = lex(deep);
  // 200 '(' then the error token, then end of file: the lexer has stopped
  ASSERT_EQ(t.size(), 1u + 200u + 2u);
  EXPECT_EQ(t[201].kind, K::S_YYerror);
  EXPECT_EQ(t[202].kind, K::S_YYEOF);
  EXPECT_EQ(errors(), (Errors{"1:203: expression nested too deeply (limit 200)"}));
}

TEST_F(LexerTest, NestingCountsOpenMinusClose) {
  std::string text;
  for (int i = 0; i < 1000; ++i) text += "(x[1]) ";
  lex(text);
  EXPECT_TRUE(errors().empty());
  // braces reset the count
  lex(std::string(150, '(') + "{" + std::string(150, '['));
  EXPECT_TRUE(errors().empty());
}

TEST_F(LexerTest, MinusRunLimit) {
  lex(std::string(200, '-') + "1");
  EXPECT_TRUE(errors().empty());
  lex("a - -" + std::string(300, '-'));
  EXPECT_EQ(errors(), (Errors{"1:204: expression nested too deeply (limit 200)"}));
}

TEST_F(LexerTest, NestingNotReportedWhileRecovering) {
  id_ = sources_.addBuffer("lex.etir", std::string(1000, '('));
  Lexer lexer(id_, sources_.contents(id_), diags_);
  for (;;) {
    if (lexer.next(/*recovering=*/true).kind() == K::S_YYEOF) break;
  }
  EXPECT_TRUE(errors().empty());
}

TEST_F(LexerTest, StopsAtTheErrorLimit) {
  diags_.setErrorLimit(3);
  auto t = lex("$ a $ b $ c $ d $ e");
  EXPECT_EQ(errors().size(), 3u);
  // after the third error the lexer returns end of file
  EXPECT_EQ(kinds(t), (std::vector<Kind>{K::S_YYerror, K::S_IDENT, K::S_YYerror, K::S_IDENT,
                                         K::S_YYerror, K::S_YYEOF}));
}

TEST_F(LexerTest, BinaryGarbage) {
  std::string text;
  for (int rep = 0; rep < 100; ++rep)
    for (int c = 0; c < 256; ++c) text += static_cast<char>(c);
  diags_.setErrorLimit(0);  // no limit: every run is reported once
  auto t = lex(text);
  EXPECT_EQ(t.back().kind, K::S_YYEOF);
  EXPECT_LT(t.size(), 10000u);
  // reported runs never overlap: each error is at a different place
  std::vector<std::string> e = errors();
  EXPECT_FALSE(e.empty());
  EXPECT_EQ(std::set<std::string>(e.begin(), e.end()).size(), e.size());
}

TEST_F(LexerTest, OneMegabyteLine) {
  std::string name(1 << 20, 'x');
  auto start = std::chrono::steady_clock::now();
  auto t = lex("const " + name + " = " + std::string(1 << 20, '7'));
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(s, 1.0);
  ASSERT_EQ(t.size(), 5u);
  EXPECT_EQ(t[1].range, fmt::format("1:7-1:{}", 6 + (1 << 20)));
  EXPECT_EQ(t[3].kind, K::S_INT);
  ASSERT_EQ(errors().size(), 1u);
  EXPECT_EQ(errors()[0], fmt::format("1:{}: integer literal '{}...' is too large (the limit is "
                                     "9223372036854775807)",
                                     10 + (1 << 20), std::string(40, '7')));
}

TEST(TokenNames, DescribeAndKindNames) {
  EXPECT_EQ(tokenKindName(K::S_IDENT), "identifier");
  EXPECT_EQ(tokenKindName(K::S_AT_NAME), "@name");
  EXPECT_EQ(tokenKindName(K::S_INT), "integer");
  EXPECT_EQ(tokenKindName(K::S_FLOAT), "float");
  EXPECT_EQ(tokenKindName(K::S_STRING), "string");
  EXPECT_EQ(tokenKindName(K::S_YYEOF), "end of file");
  EXPECT_EQ(tokenKindName(K::S_KW_GRID), "keyword 'grid'");
  EXPECT_EQ(tokenKindName(K::S_RBRACK), "']'");
  EXPECT_EQ(tokenKindName(K::S_ARROW), "'->'");
  EXPECT_EQ(tokenKindName(K::S_LE), "'<='");
  EXPECT_EQ(escapeChar('a'), "a");
  EXPECT_EQ(escapeChar(0xff), "\\xff");
  EXPECT_EQ(escapeChar('\n'), "\\x0a");
}

}  // namespace
}  // namespace etc::grammar
