#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>

#include <sys/stat.h>
#include <unistd.h>

#include "inputs/glob.hpp"
#include "io/error.hpp"
#include "support.hpp"

namespace fs = std::filesystem;
using evgate::compile_glob;
using Paths = std::vector<std::string>;
using evgate::test::AsNobody;

namespace {

bool matches(const std::string& pattern, const std::string& path) {
    return std::regex_match(path, std::regex(compile_glob(pattern).regex, std::regex::ECMAScript));
}

std::string error_of(const std::string& pattern) {
    try {
        compile_glob(pattern);
    } catch (const evgate::Error& error) {
        return error.what();
    }
    FAIL("no error for: " << pattern);
    return {};
}

struct TempTree {
    fs::path root = fs::temp_directory_path() / ("evgate-glob-" + std::to_string(::getpid()) + "-" +
                                                 std::to_string(std::random_device{}()));
    TempTree() { fs::create_directories(root); }
    ~TempTree() {
        std::error_code ignored;
        fs::permissions(root / "data/locked", fs::perms::owner_all, ignored);
        fs::remove_all(root, ignored);
    }
    void file(const std::string& relative) const {
        fs::create_directories((root / relative).parent_path());
        std::ofstream(root / relative) << relative;
    }
};

}  // namespace

TEST_CASE("glob semantics, checked with std::regex", "[glob]") {
    struct Case {
        const char* pattern;
        const char* path;
        bool match;
    };
    auto c = GENERATE(values<Case>({
        {"data/*.json", "data/a.json", true},
        {"data/*.json", "data/.hidden.json", true},
        {"data/*.json", "data/sub/a.json", false},  // '*' stops at '/'
        {"data/*.json", "data/a.jsonx", false},
        {"data/*.json", "data/aXjson", false},  // '.' is literal
        {"data/*", "data/x", true},
        {"data/*", "data/x/y", false},
        {"*", "top.txt", true},
        {"*", "dir/x", false},
        {"data/?.txt", "data/a.txt", true},
        {"data/?.txt", "data/ab.txt", false},
        {"a?b", "a/b", false},  // '?' never matches '/'
        {"data/[abc].txt", "data/b.txt", true},
        {"data/[abc].txt", "data/d.txt", false},
        {"data/[a-c].txt", "data/c.txt", true},
        {"data/[a-c].txt", "data/C.txt", false},
        {"data/[!a].txt", "data/b.txt", true},
        {"data/[!a].txt", "data/a.txt", false},
        {"data/[]].txt", "data/].txt", true},  // a leading ']' is a member
        {"data/[!]].txt", "data/x.txt", true},
        {"data/[a-].txt", "data/-.txt", true},  // a trailing '-' is a member
        {"data/[^].txt", "data/^.txt", true},   // '^' is literal in a glob class
        {"data/[^].txt", "data/a.txt", false},
        {"x[--0]y", "x/y", false},  // a range across '/' still excludes it
        {"x[--0]y", "x.y", true},
        {"x[--0]y", "x0y", true},
        {"x[!a]y", "x/y", false},
        {"data/**/*.json", "data/a.json", true},  // '**' is zero directories too
        {"data/**/*.json", "data/x/a.json", true},
        {"data/**/*.json", "data/x/y/z/a.json", true},
        {"data/**/*.json", "other/a.json", false},
        {"data/**", "data/a", true},
        {"data/**", "data/x/y/a", true},
        {"**", "a", true},
        {"**", "a/b/c", true},
        {"**/a.txt", "a.txt", true},
        {"**/a.txt", "x/y/a.txt", true},
        {"**/a.txt", "x/ya.txt", false},
        {"a/**/b/**/c", "a/b/c", true},
        {"a/**/b/**/c", "a/x/b/y/z/c", true},
        {"a**b", "axxb", true},  // '**' inside a segment is two '*'
        {"a**b", "ax/xb", false},
        {"data/file.txt", "data/file.txt", true},
        {"data/file.txt", "data/file_txt", false},
        {"./data/*.txt", "data/a.txt", true},
        {"f(1)+[x].{a,b}$^|", "f(1)+x.{a,b}$^|", true},  // metacharacters are literal
        {"f(1)+[x].{a,b}$^|", "f(1)x.{a,b}$^|", false},
        {"a b/c=d,e@f%g#h&i'j\"k;l~m!", "a b/c=d,e@f%g#h&i'j\"k;l~m!", true},
        {"caf\xc3\xa9/*.txt", "caf\xc3\xa9/menu.txt", true},
        {"d/w", "d/W", false},  // letters are never escaped into classes like \w
    }));
    INFO(c.pattern << " vs " << c.path << " via " << compile_glob(c.pattern).regex);
    CHECK(matches(c.pattern, c.path) == c.match);
}

TEST_CASE("the regex uses only constructs Python reads the same way", "[glob]") {
    CHECK(compile_glob("data/*.json").regex == "data/[^/]*\\.json");
    CHECK(compile_glob("a/**/b?").regex == "a/(?:.*/)?b[^/]");
    CHECK(compile_glob("a/**").regex == "a/.*");
    CHECK(compile_glob("[!a-c]").regex == "[^/a-c]");
    CHECK(compile_glob("[]x-]").regex == "[\\]x\\-]");
    CHECK(compile_glob("x[--0]").regex == "x[\\--\\.0]");
}

TEST_CASE("base is the wildcard-free lead, max_depth the levels below it", "[glob]") {
    struct Case {
        const char* pattern;
        const char* base;
        int max_depth;
    };
    auto c = GENERATE(values<Case>({
        {"data/*.json", "data", 0},
        {"data/sub/*/x.json", "data/sub", 1},
        {"data/*/*/x", "data", 2},
        {"data/sub/file.txt", "data/sub", 0},  // no wildcard: the parent directory
        {"file.txt", "", 0},
        {"*.txt", "", 0},
        {"data/**/*.json", "data", -1},
        {"data/*/**", "data", -1},
        {"**", "", -1},
        {"./a/./b/*", "a/b", 0},
        {"a/[xy]/c", "a", 1},
    }));
    INFO(c.pattern);
    auto glob = compile_glob(c.pattern);
    CHECK(glob.base == c.base);
    CHECK(glob.max_depth == c.max_depth);
}

TEST_CASE("bad globs are errors that quote the glob", "[glob]") {
    CHECK(error_of("") == "empty glob");
    CHECK(error_of("data/[ab") == "unclosed '[' in glob 'data/[ab'");
    CHECK(error_of("data/[]") == "unclosed '[' in glob 'data/[]'");
    CHECK(error_of("data//x") == "empty segment in glob 'data//x'");
    CHECK(error_of("data/") == "empty segment in glob 'data/'");
    CHECK(error_of(".") == "no file name in glob '.'");
    CHECK(error_of("x[z-a]") == "reversed range 'z-a' in glob 'x[z-a]'");
    CHECK(error_of("x[\xc3\xa9]") == "non-ASCII character in '[...]' in glob 'x[\xc3\xa9]'");
    CHECK(error_of("../x") == "glob leaves ROOT: '../x'");
    CHECK(error_of("/abs/*") == "glob leaves ROOT: '/abs/*'");
    CHECK(error_of("~/x") == "glob leaves ROOT: '~/x'");
    CHECK(error_of("a\\b") == "glob leaves ROOT: 'a\\b'");
}

TEST_CASE("expand_glob walks real trees without following links", "[glob]") {
    TempTree tree;
    for (const char* f : {"data/a.json", "data/b.txt", "data/.hidden.json", "data/sub/c.json",
                          "data/sub/deep/d.json", "outside/secret.json"}) {
        tree.file(f);
    }
    fs::create_directory_symlink("data", tree.root / "linkdir");
    fs::create_directory_symlink("../outside", tree.root / "data/escape");
    fs::create_symlink("nowhere", tree.root / "data/dangling.json");
    fs::create_symlink("a.json", tree.root / "data/alias.json");
    REQUIRE(::mkfifo((tree.root / "data/pipe.json").c_str(), 0600) == 0);
    auto expand = [&](const std::string& pattern) {
        return evgate::expand_glob(tree.root, compile_glob(pattern));
    };

    CHECK(expand("data/*.json") == Paths{"data/.hidden.json", "data/a.json", "data/alias.json",
                                         "data/dangling.json", "data/pipe.json"});
    CHECK(expand("data/**/*.json") == Paths{"data/.hidden.json", "data/a.json", "data/alias.json",
                                            "data/dangling.json", "data/pipe.json", "data/sub/c.json",
                                            "data/sub/deep/d.json"});
    CHECK(expand("data/*/*.json") == Paths{"data/sub/c.json"});
    CHECK(expand("data/*") == Paths{"data/.hidden.json", "data/a.json", "data/alias.json", "data/b.txt",
                                    "data/dangling.json", "data/escape", "data/pipe.json"});
    CHECK(expand("data/sub/deep/d.json") == Paths{"data/sub/deep/d.json"});
    CHECK(expand("data/sub/none.json").empty());
    CHECK(expand("linkdir/*.json").empty());  // a symlinked base is not followed either
    CHECK(expand("data/escape/*").empty());
    CHECK(expand("missing/**").empty());
    CHECK(expand("data/b.txt/*").empty());  // base is a file
    CHECK(expand("**/secret.json") == Paths{"outside/secret.json"});
    CHECK(expand("linkdir") == Paths{"linkdir"});  // the link itself is an entry
}

TEST_CASE("an unreadable directory is an error naming it", "[glob]") {
    TempTree tree;
    tree.file("data/locked/x.json");
    fs::permissions(tree.root / "data/locked", fs::perms::none);
    AsNobody nobody;
    try {
        evgate::expand_glob(tree.root, compile_glob("data/**"));
        FAIL("no error");
    } catch (const evgate::Error& error) {
        CHECK_THAT(error.what(), Catch::StartsWith("cannot read directory " +
                                                   (tree.root / "data/locked").string() + ": ") &&
                                     Catch::Contains("ermission denied"));
    }
}

TEST_CASE("an exclusion keeps a walk out of a directory, says so, and the walk names what it listed", "[glob]") {
    TempTree tree;
    for (const char* f : {"cfg/a.json", "build/receipt.json", "build/evidence/s/groups.json", "src/.git/x.json", "b.json"})
        tree.file(f);
    const evgate::ExcludedEntry exclude = [](const std::string& relative, bool directory) {
        return (directory && relative == "build") || relative.substr(relative.rfind('/') + 1) == ".git";
    };
    auto everything = evgate::expand_glob(tree.root, compile_glob("**/*.json"), exclude);
    CHECK(everything.files == Paths{"b.json", "cfg/a.json"});
    std::sort(everything.excluded.begin(), everything.excluded.end());
    CHECK(everything.excluded == Paths{"build", "src/.git"});
    std::sort(everything.directories.begin(), everything.directories.end());
    CHECK(everything.directories == Paths{"", "cfg", "src"});  // never build/ or .git/
    // A base inside an excluded directory: nothing listed, and the excluded directory named.
    const auto inside = evgate::expand_glob(tree.root, compile_glob("build/evidence/*/*.json"), exclude);
    CHECK(inside.files.empty());
    CHECK(inside.excluded == Paths{"build"});
    CHECK(evgate::expand_glob(tree.root, compile_glob("**/*.json")) ==
          Paths{"b.json", "build/evidence/s/groups.json", "build/receipt.json", "cfg/a.json", "src/.git/x.json"});
}
