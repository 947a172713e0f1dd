#include "runs/ctest_selection.hpp"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <optional>
#include <regex>

#include <unistd.h>

namespace evgate {
namespace {

// Does `pattern` find one of `labels`? nullopt when it is not a regex we can read.
std::optional<bool> finds_one(const std::string& pattern, const std::vector<std::string>& labels) {
    try {
        const std::regex re(pattern, std::regex::extended);
        return std::any_of(labels.begin(), labels.end(), [&](const std::string& l) { return std::regex_search(l, re); });
    } catch (const std::regex_error&) {
        return std::nullopt;
    }
}

std::string read_all(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

bool ctest_labels_select(const std::vector<std::string>& args, const std::vector<std::string>& labels) {
    std::vector<std::string> include, exclude;
    for (std::size_t i = 0; i + 1 < args.size(); ++i) {
        if (args[i] == "-L" || args[i] == "--label-regex") include.push_back(args[++i]);
        else if (args[i] == "-LE" || args[i] == "--label-exclude") exclude.push_back(args[++i]);
    }
    for (const auto& pattern : exclude)
        if (finds_one(pattern, labels).value_or(false)) return false;
    if (include.empty()) return true;
    return std::any_of(include.begin(), include.end(),
                       [&](const std::string& pattern) { return finds_one(pattern, labels).value_or(true); });
}

std::vector<std::string> parent_ctest_arguments() {
    const auto parent = "/proc/" + std::to_string(::getppid());
    if (read_all(parent + "/comm").rfind("ctest", 0) != 0) return {};
    const auto line = read_all(parent + "/cmdline");  // NUL-separated
    std::vector<std::string> args;
    for (std::size_t start = 0; start < line.size();) {
        const auto end = std::min(line.find('\0', start), line.size());
        args.push_back(line.substr(start, end - start));
        start = end + 1;
    }
    return args;
}

}  // namespace evgate
