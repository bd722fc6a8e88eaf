// Make dependency files (etcc -MD/-MF/-MT/-MP): which files a compile read, in the syntax GNU
// make (and Ninja, and CMake's DEPFILE) reads.
#pragma once

#include <string>
#include <vector>

namespace etc {

class SourceManager;

struct DepfileOptions {
  std::vector<std::string> targets;  // the rule's targets (-MT); at least one
  bool phony = false;                // -MP: an empty rule per prerequisite but the first
};

// "targets: dep1 dep2 ..." with one prerequisite per continued line; with phony, also
// "depN:" for every prerequisite after the first (the main file), so that deleting an
// included file does not break the build ("No rule to make target").
std::string renderDepfile(const DepfileOptions& opts, const std::vector<std::string>& deps);

// Every file the compile read from disk, main file first, in the order they were read, each
// once (buffers such as standard input are not files and are left out).
std::vector<std::string> filesRead(const SourceManager& sources);

// A path as make reads it: spaces and '#' escaped with a backslash, '$' doubled.
std::string escapeForMake(const std::string& path);

}  // namespace etc
