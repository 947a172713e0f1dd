#include "io/natural_order.hpp"

#include <cctype>

namespace evgate {
namespace {

bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

}  // namespace

bool natural_less(const std::string& a, const std::string& b) {
    std::size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        if (is_digit(a[i]) && is_digit(b[j])) {
            std::size_t i2 = i, j2 = j;
            while (i2 < a.size() && is_digit(a[i2])) ++i2;
            while (j2 < b.size() && is_digit(b[j2])) ++j2;
            const auto na = std::stoull(a.substr(i, i2 - i)), nb = std::stoull(b.substr(j, j2 - j));
            if (na != nb) return na < nb;
            i = i2, j = j2;
        } else {
            if (a[i] != b[j]) return a[i] < b[j];
            ++i, ++j;
        }
    }
    return a.size() - i < b.size() - j;
}

}  // namespace evgate
