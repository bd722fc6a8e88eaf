// Writing an output file so that readers (make, a loader, a user) only ever see the old file
// or the complete new one: write a temporary in the same directory, then rename it into place.
#pragma once

#include <string>
#include <string_view>

namespace etc {

// Writes `data` to `path` atomically. On failure returns false, sets *error to a sentence
// naming the file and the reason, and leaves neither a temporary nor a partial `path` behind.
bool writeFileAtomically(const std::string& path, std::string_view data, std::string* error);

}  // namespace etc
