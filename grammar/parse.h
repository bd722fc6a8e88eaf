// Entry point of the front end's syntax stage: text -> AST.
#pragma once

#include <cstdint>

#include "compiler/support/diagnostics.h"
#include "grammar/ast.h"

namespace etc {

// Parses the file `file_id` of `sources`. Lexical and syntax errors go to `diags` (several per
// file: the parser recovers at the next declaration or statement). Always returns a File
// holding the declarations that parsed; callers check diags.hasErrors().
ast::File* parseFile(uint32_t file_id, const SourceManager& sources, ast::Context& ctx,
                     DiagnosticEngine& diags);

}  // namespace etc
