// A module parsed and verified from text for a unit test, with the sources and diagnostics it
// refers to. parseVerified() adds a test failure, with the rendered errors, where the text is
// rejected (the test then sees a null module).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>

#include "compiler/frontend/frontend.h"

namespace etc::test {

struct ParsedModule {
  SourceManager sources;
  DiagnosticEngine diags{sources};
  std::unique_ptr<ir::Module> module;
  std::string errors() {
    std::string out;
    for (const Diagnostic& d : diags.collected()) out += diags.render(d);
    return out;
  }
};

inline std::unique_ptr<ParsedModule> parseVerified(std::string text) {
  auto p = std::make_unique<ParsedModule>();
  p->diags.setCollect(true);
  const uint32_t id = p->sources.addBuffer("test.etir", std::move(text));
  p->module = parseAndVerifyBuffer(id, LoadOptions{}, p->sources, p->diags);
  EXPECT_TRUE(p->module) << p->errors();
  return p;
}

}  // namespace etc::test
