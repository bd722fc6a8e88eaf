// The fuzz targets' property check: a violated property aborts, which libFuzzer reports as a
// crash (and the corpus replay as a failed test), with the property on standard error.
#pragma once

#include <cstdio>
#include <cstdlib>

namespace etc::fuzz {

inline void require(bool ok, const char* target, const char* property) {
  if (ok) return;
  std::fprintf(stderr, "%s: %s\n", target, property);
  std::abort();
}

}  // namespace etc::fuzz
