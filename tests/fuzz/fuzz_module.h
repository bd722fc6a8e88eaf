// The .etir fuzz targets' front end: the input as one buffer, parsed and verified, diagnostics
// collected rather than printed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "compiler/frontend/frontend.h"

namespace etc::fuzz {

inline std::unique_ptr<ir::Module> parseModule(const std::string& text, SourceManager& sources,
                                               DiagnosticEngine& diags) {
  diags.setCollect(true);
  uint32_t id = sources.addBuffer("fuzz.etir", text);
  return parseAndVerifyBuffer(id, LoadOptions{}, sources, diags);
}

// Includes would make the result depend on the files around the fuzzer; the loader and its
// include handling are covered by their own tests.
inline bool mentionsInclude(const std::string& text) { return text.find("include") != std::string::npos; }

}  // namespace etc::fuzz
