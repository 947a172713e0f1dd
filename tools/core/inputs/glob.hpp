// Globs over '/'-separated paths relative to ROOT, compiled once to a regular expression
// that std::regex (ECMAScript) and Python's re.fullmatch read the same way, so the C++
// tools and the pytest plugin agree on which files a fixture group holds.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace evgate {

struct GlobPattern {
    std::string base;   // leading wildcard-free directories, '/'-joined; "" = ROOT
    std::string regex;  // matches a whole relative path
    int max_depth;      // directory levels below base a match can sit at; -1 = any ('**')
};

// `*` any run of characters but '/', `?` one character but '/', `[abc]` `[a-z]` `[!a]`
// classes (never '/'), a whole segment `**` zero or more directories. '.' segments are
// dropped. Throws Error for bad syntax and for a glob that leaves ROOT (absolute, '~',
// '..', a backslash or NUL).
GlobPattern compile_glob(std::string_view pattern);

// Non-directory entries under root/base matching the pattern, as sorted relative paths.
// Symlinks are matched as entries and never followed; a missing base gives nothing.
// Throws Error naming a directory that cannot be read.
std::vector<std::string> expand_glob(const std::filesystem::path& root, const GlobPattern& glob);

// An entry (relative to ROOT, '/'-separated) a walk must neither match nor enter.
using ExcludedEntry = std::function<bool(const std::string& relative, bool directory)>;

struct GlobExpansion {
    std::vector<std::string> files;        // as expand_glob, sorted
    std::vector<std::string> directories;  // every directory the walk listed, base first ("" is ROOT)
    std::vector<std::string> excluded;     // entries `exclude` kept it from (the base, or one above it)
};

// expand_glob, never matching or entering what `exclude` names, and saying what it listed.
GlobExpansion expand_glob(const std::filesystem::path& root, const GlobPattern& glob, const ExcludedEntry& exclude);

}  // namespace evgate
