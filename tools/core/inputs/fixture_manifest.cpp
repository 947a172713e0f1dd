#include "inputs/fixture_manifest.hpp"

#include <algorithm>
#include <istream>
#include <string_view>

#include "inputs/glob.hpp"
#include "io/error.hpp"

namespace evgate {
namespace {

std::string_view trim(std::string_view text) {
    constexpr std::string_view space = " \t\r";
    auto first = text.find_first_not_of(space);
    if (first == std::string_view::npos) return {};
    return text.substr(first, text.find_last_not_of(space) - first + 1);
}

// Group names end up in markers (`writes(name)`), file names and messages.
bool is_valid_name(std::string_view name) {
    return std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
               c == '.' || c == '-';
    });
}

FixtureGroup parse_line(std::string_view line, int number, const std::string& source) {
    auto colon = line.find(':');
    if (colon == std::string_view::npos) {
        throw InputError(source, number, "expected 'name: glob': " + quote(std::string(line)));
    }
    std::string name(trim(line.substr(0, colon)));
    std::string pattern(trim(line.substr(colon + 1)));
    if (name.empty()) {
        throw InputError(source, number, "empty group name: " + quote(std::string(line)));
    }
    if (!is_valid_name(name)) {
        throw InputError(source, number,
                         "group name may hold only A-Z a-z 0-9 _ . -: " + quote(name));
    }
    if (pattern.empty()) throw InputError(source, number, "empty glob for group " + quote(name));
    try {
        compile_glob(pattern);
    } catch (const Error& error) {
        throw InputError(source, number, error.what());
    }
    return {std::move(name), std::move(pattern), number};
}

}  // namespace

std::vector<FixtureGroup> parse_fixture_manifest(std::istream& in, const std::string& source) {
    std::vector<FixtureGroup> groups;
    std::string text;
    for (int number = 1; std::getline(in, text); ++number) {
        auto line = trim(text);
        if (line.empty() || line.front() == '#') continue;
        auto group = parse_line(line, number, source);
        auto first = std::find_if(groups.begin(), groups.end(),
                                  [&](const FixtureGroup& g) { return g.name == group.name; });
        if (first != groups.end()) {
            throw InputError(source, number,
                             "group " + quote(group.name) + " is already defined on line " +
                                 std::to_string(first->line));
        }
        groups.push_back(std::move(group));
    }
    return groups;
}

}  // namespace evgate
