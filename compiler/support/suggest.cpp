#include "compiler/support/suggest.h"

#include <algorithm>

namespace etc {

namespace {

// Optimal string alignment distance: insertions, deletions, substitutions and swaps of two
// adjacent characters (`inptu` -> `input`) each cost 1.
size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

std::string closestMatch(std::string_view name, const std::vector<std::string_view>& candidates) {
  // A third of the name, at least one edit. A one- or two-letter name only matches by one
  // inserted or deleted letter (`xx` -> `x`, `mx` -> `max`): with substitutions every other
  // short name would "match".
  size_t limit = std::max<size_t>(1, name.size() / 3);
  bool short_name = name.size() < 3;
  std::string_view best;
  size_t best_d = limit + 1;
  for (std::string_view c : candidates) {
    if (c == name) continue;
    // Names far longer or shorter cannot be within the limit; skip the quadratic work.
    if (c.size() > name.size() + limit || name.size() > c.size() + limit) continue;
    if (short_name && c.size() == name.size()) continue;
    size_t d = editDistance(name, c);
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
