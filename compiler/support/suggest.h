// "did you mean ...?" for misspelled names.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace etc {

// The candidate closest to `name` by edit distance, if it is close enough to be a plausible
// typo (at most a third of the name's length, at least 1; a name under 3 letters only by one
// inserted or deleted letter); empty otherwise.
std::string closestMatch(std::string_view name, const std::vector<std::string_view>& candidates);

// "; did you mean 'x'?" or "".
std::string didYouMean(std::string_view name, const std::vector<std::string_view>& candidates);

}  // namespace etc
