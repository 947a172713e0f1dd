#include "cli/spellcheck.hpp"

#include <algorithm>

namespace evgate {

// Optimal string alignment: Levenshtein plus the swap of two neighbours ("gaet"), one row
// kept per earlier two.
std::size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<std::size_t> before(b.size() + 1), previous(b.size() + 1), current(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) previous[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        current[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t replace = a[i - 1] == b[j - 1] ? 0 : 1;
            current[j] = std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + replace});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) current[j] = std::min(current[j], before[j - 2] + 1);
        }
        before.swap(previous);
        previous.swap(current);
    }
    return previous[b.size()];
}

std::optional<std::string> closest_word(const std::string& typed, const std::vector<std::string>& known) {
    constexpr std::size_t kMaxEdits = 2;
    std::optional<std::string> best;
    std::size_t best_distance = kMaxEdits + 1;
    for (const auto& word : known) {
        const auto distance = edit_distance(typed, word);
        if (distance < best_distance && distance < typed.size()) {
            best = word;
            best_distance = distance;
        }
    }
    return best;
}

}  // namespace evgate
