#include "compiler/support/suggest.h"

#include <algorithm>

namespace etc {

namespace {

size_t editDistance(std::string_view a, std::string_view b, size_t limit) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    size_t best = row[0];
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
      best = std::min(best, row[j]);
    }
    if (best > limit) return limit + 1;  // cannot get better: stop early on long names
  }
  return row[b.size()];
}

}  // namespace

std::string closestMatch(std::string_view name, const std::vector<std::string_view>& candidates) {
  size_t limit = std::max<size_t>(1, name.size() / 3);
  std::string_view best;
  size_t best_d = limit + 1;
  for (std::string_view c : candidates) {
    if (c == name) continue;
    size_t d = editDistance(name, c, limit);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return std::string(best);
}

std::string didYouMean(std::string_view name, const std::vector<std::string_view>& candidates) {
  std::string m = closestMatch(name, candidates);
  return m.empty() ? std::string() : "; did you mean '" + m + "'?";
}

}  // namespace etc
