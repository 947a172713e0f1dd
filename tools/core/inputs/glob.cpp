#include "inputs/glob.hpp"

#include <algorithm>
#include <cctype>
#include <regex>
#include <system_error>

#include <gsl/gsl>

#include "io/error.hpp"

namespace evgate {
namespace fs = std::filesystem;
namespace {

std::vector<std::string_view> split_segments(std::string_view pattern) {
    std::vector<std::string_view> segments;
    std::size_t start = 0;
    for (;;) {
        auto slash = pattern.find('/', start);
        segments.push_back(pattern.substr(start, slash - start));
        if (slash == std::string_view::npos) return segments;
        start = slash + 1;
    }
}

bool leaves_root(std::string_view pattern, const std::vector<std::string_view>& segments) {
    if (pattern.front() == '/' || pattern.front() == '~') return true;
    if (pattern.find_first_of(std::string_view("\\\0", 2)) != std::string_view::npos) return true;
    return std::find(segments.begin(), segments.end(), "..") != segments.end();
}

// The pattern as a message shows it: a NUL would end the message text.
std::string printable(std::string_view pattern) {
    std::string text;
    for (char c : pattern) text += c == '\0' ? std::string("\\0") : std::string(1, c);
    return quote(text);
}

bool has_wildcard(std::string_view segment) { return segment.find_first_of("*?[") != std::string_view::npos; }

// Every ASCII punctuation character is escaped: both regex dialects read "\<punct>" as
// the character itself, and none of them can then act as an operator. Letters and digits
// are never escaped ("\d" means something else), nor are bytes of UTF-8 sequences.
void append_literal(std::string& regex, char c) {
    if (std::ispunct(static_cast<unsigned char>(c)) != 0) regex += '\\';
    regex += c;
}

class GlobCompiler {
public:
    explicit GlobCompiler(std::string_view pattern) : pattern_(pattern) {}

    [[noreturn]] void fail(const std::string& what) const {
        throw Error(what + " in glob " + printable(pattern_));
    }

    // Translate one segment (not "**") and append it to `regex`.
    void segment(std::string_view text, std::string& regex) const {
        for (std::size_t i = 0; i < text.size(); ++i) {
            if (text[i] == '*') {
                regex += "[^/]*";
            } else if (text[i] == '?') {
                regex += "[^/]";
            } else if (text[i] == '[') {
                i = bracket(text, i, regex);
            } else {
                append_literal(regex, text[i]);
            }
        }
    }

private:
    // Translate the class opening at text[open]; return the index of its closing ']'.
    std::size_t bracket(std::string_view text, std::size_t open, std::string& regex) const {
        std::size_t i = open + 1;
        bool negated = i < text.size() && text[i] == '!';
        if (negated) ++i;
        regex += negated ? "[^/" : "[";
        std::size_t first = i;
        for (; i < text.size() && (text[i] != ']' || i == first); ++i) {
            char lo = text[i];
            char hi = lo;
            if (i + 2 < text.size() && text[i + 1] == '-' && text[i + 2] != ']') {
                hi = text[i + 2];
                i += 2;
            }
            range(lo, hi, negated, regex);
        }
        if (i >= text.size()) fail("unclosed '['");
        regex += ']';
        return i;
    }

    // One class member lo..hi. A positive class must not match '/', so a range across it
    // is split in two; a negated class already excludes '/'.
    void range(char lo, char hi, bool negated, std::string& regex) const {
        if (static_cast<unsigned char>(lo) >= 0x80 || static_cast<unsigned char>(hi) >= 0x80) {
            fail("non-ASCII character in '[...]'");  // bytes in C++, characters in Python
        }
        if (lo > hi) fail("reversed range '" + std::string{lo, '-', hi} + "'");
        if (!negated && lo <= '/' && '/' <= hi) {
            if (lo < '/') append_range(lo, '/' - 1, regex);
            if (hi > '/') append_range('/' + 1, hi, regex);
            return;
        }
        append_range(lo, hi, regex);
    }

    static void append_range(int lo, int hi, std::string& regex) {
        append_literal(regex, static_cast<char>(lo));
        if (hi == lo) return;
        regex += '-';
        append_literal(regex, static_cast<char>(hi));
    }

    std::string_view pattern_;
};

// Number of leading segments that hold no wildcard and name a directory.
std::size_t base_length(const std::vector<std::string_view>& segments) {
    auto literal = std::find_if(segments.begin(), segments.end(), has_wildcard);
    auto count = static_cast<std::size_t>(literal - segments.begin());
    return std::min(count, segments.size() - 1);  // the last segment names the files
}

std::string join(const std::vector<std::string_view>& segments, std::size_t count) {
    std::string joined;
    for (std::size_t i = 0; i < count; ++i) {
        if (i > 0) joined += '/';
        joined += segments[i];
    }
    return joined;
}

struct Walk {
    const fs::path& root;
    const std::regex& regex;
    const ExcludedEntry& exclude;
    GlobExpansion& found;

    // Visit the directory root/relative; `depth_left` more levels may be entered (-1: all).
    void directory(const fs::path& relative, int depth_left) {
        auto dir = root / relative;
        std::error_code error;
        fs::directory_iterator it(dir, error);
        if (!error) found.directories.push_back(relative.generic_string());
        for (; !error && it != fs::directory_iterator(); it.increment(error)) {
            entry(relative / it->path().filename(), *it, depth_left);
        }
        if (error) throw Error("cannot read directory " + dir.string() + ": " + error.message());
    }

    void entry(const fs::path& relative, const fs::directory_entry& entry, int depth_left) {
        std::error_code error;
        auto type = entry.symlink_status(error).type();  // never follows a link
        if (error) throw Error("cannot stat " + entry.path().string() + ": " + error.message());
        auto name = relative.generic_string();
        const bool is_directory = type == fs::file_type::directory;
        if (exclude && exclude(name, is_directory)) {
            found.excluded.push_back(std::move(name));
            return;
        }
        if (is_directory) {
            if (depth_left != 0) directory(relative, depth_left < 0 ? -1 : depth_left - 1);
            return;
        }
        if (std::regex_match(name, regex)) found.files.push_back(std::move(name));
    }
};

// True if root/base is a directory reached without passing through a symlink.
bool is_plain_directory(const fs::path& root, const std::string& base) {
    auto dir = root;
    for (const auto& part : fs::path(base)) {
        dir /= part;
        std::error_code error;
        if (fs::symlink_status(dir, error).type() != fs::file_type::directory) return false;
    }
    return fs::is_directory(root);
}

// The first directory on the way to `base` (itself included) that `exclude` names, or "".
std::string excluded_on_the_way(const std::string& base, const ExcludedEntry& exclude) {
    if (!exclude || base.empty()) return "";
    std::string at;
    for (const auto& part : fs::path(base)) {
        at += (at.empty() ? "" : "/") + part.string();
        if (exclude(at, true)) return at;
    }
    return "";
}

}  // namespace

GlobPattern compile_glob(std::string_view pattern) {
    GlobCompiler compiler(pattern);
    if (pattern.empty()) throw Error("empty glob");
    auto segments = split_segments(pattern);
    if (leaves_root(pattern, segments)) throw Error("glob leaves ROOT: " + printable(pattern));
    segments.erase(std::remove(segments.begin(), segments.end(), "."), segments.end());
    if (segments.empty()) compiler.fail("no file name");
    if (std::find(segments.begin(), segments.end(), "") != segments.end()) compiler.fail("empty segment");

    GlobPattern glob;
    std::size_t base = base_length(segments);
    glob.base = join(segments, base);
    bool any_depth = std::find(segments.begin(), segments.end(), "**") != segments.end();
    glob.max_depth = any_depth ? -1 : gsl::narrow<int>(segments.size() - base - 1);
    for (std::size_t i = 0; i < segments.size(); ++i) {
        bool last = i + 1 == segments.size();
        if (segments[i] == "**") {
            glob.regex += last ? ".*" : "(?:.*/)?";  // "(?:.*/)?" carries its own '/'
            continue;
        }
        compiler.segment(segments[i], glob.regex);
        if (!last) glob.regex += '/';
    }
    return glob;
}

std::vector<std::string> expand_glob(const fs::path& root, const GlobPattern& glob) {
    return expand_glob(root, glob, ExcludedEntry()).files;
}

GlobExpansion expand_glob(const fs::path& root, const GlobPattern& glob, const ExcludedEntry& exclude) {
    GlobExpansion found;
    if (!is_plain_directory(root, glob.base)) return found;
    if (auto above = excluded_on_the_way(glob.base, exclude); !above.empty()) {
        found.excluded.push_back(std::move(above));
        return found;
    }
    std::regex regex(glob.regex, std::regex::ECMAScript);
    Walk walk{root, regex, exclude, found};
    walk.directory(fs::path(glob.base), glob.max_depth);
    std::sort(found.files.begin(), found.files.end());
    return found;
}

}  // namespace evgate
