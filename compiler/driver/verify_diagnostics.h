// --verify-diagnostics: the diagnostics a run produced must be exactly those announced in the
// input by comments of the form
//   // expected-error {{message}}            on this line
//   // expected-error:9 {{message}}          on this line, at column 9
//   // expected-error@+1 {{message}}         on the next line (@-2: two lines up, @7: line 7)
//   // expected-warning@+1:12 {{message}}    ... and at column 12
//   // expected-note@-1 {{message}}
// Messages must match in full. Used by the golden tests of invalid inputs.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "compiler/support/diagnostics.h"

namespace etc {

struct ExpectedDiagnostic {
  Severity severity;
  SourceLoc loc;  // col == 0: any column
  std::string message;
  SourceLoc written_at;
};

// Collects the annotations of one file. Malformed annotations are reported to `problems`.
std::vector<ExpectedDiagnostic> parseExpectations(const SourceManager& sources, uint32_t file,
                                                  std::vector<std::string>* problems);

// Compares produced against expected; writes one line per mismatch to `out` and returns
// true when they agree exactly.
bool verifyDiagnostics(const SourceManager& sources, const std::vector<Diagnostic>& produced,
                       const std::vector<ExpectedDiagnostic>& expected, std::ostream& out);

}  // namespace etc
