// Globs: the first line is the pattern, the rest a path to match. A glob that compiles never
// leaves ROOT, and its regex is one std::regex (and so evgate's walker) accepts.
#include <regex>
#include <string>

#include "fuzz_support.hpp"
#include "inputs/glob.hpp"

namespace {

bool has_parent_segment(std::string_view pattern) {
    for (std::size_t start = 0;;) {
        auto slash = pattern.find('/', start);
        if (pattern.substr(start, slash - start) == "..") return true;
        if (slash == std::string_view::npos) return false;
        start = slash + 1;
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto input = evgate_fuzz::text(data, size);
    const auto newline = input.find('\n');
    const auto pattern = input.substr(0, newline);
    const std::string subject(newline == std::string_view::npos ? std::string_view() : input.substr(newline + 1));
    evgate::GlobPattern glob;
    try {
        glob = evgate::compile_glob(pattern);
    } catch (const evgate::Error&) {
        return 0;
    }
    if (pattern.front() == '/' || has_parent_segment(pattern)) evgate_fuzz::violated("an accepted glob stays in ROOT");
    const std::regex regex(glob.regex, std::regex::ECMAScript);  // std::regex_error here is a product bug
    std::regex_match(subject, regex);
    return 0;
}
