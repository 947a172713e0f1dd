#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>

#include "inputs/shards.hpp"
#include "support.hpp"

namespace fs = std::filesystem;
using namespace evgate;
using evgate::test::TempDir;

namespace {

// A shard's evidence directory holding a receipt of the suite "s" at commit "abc".
fs::path shard_dir(const fs::path& base, const std::string& spec, const std::string& git) {
    const auto dir = base / ("shard-" + spec.substr(0, 1));
    fs::create_directories(dir);
    std::ofstream(dir / "receipt.json") << R"({"rootdir": "/src", "suite": "s", "shard": ")" << spec
                                        << R"(", "tests": [{"id": "t::a"}], "git": )" << git << "}\n";
    return dir;
}

Receipt merging(const std::vector<std::string>& dirty, const std::string& digest) {
    Receipt receipt;
    receipt.rootdir = "/src";
    receipt.tests = {{"t::a", false, {}, std::nullopt}};
    receipt.git_head = "abc";
    receipt.git_dirty = dirty;
    receipt.git_digest = digest;
    return receipt;
}

// EVIDENCE_GATE_SHARDS for the length of a test.
struct Shards {
    explicit Shards(const std::string& value) { ::setenv("EVIDENCE_GATE_SHARDS", value.c_str(), 1); }
    ~Shards() { ::unsetenv("EVIDENCE_GATE_SHARDS"); }
};

std::string problems_text(const Receipt& receipt) {
    SuiteConfig suite;
    suite.name = "s";
    std::string text;
    for (const auto& [dir, why] : shard_problems(suite, receipt)) text += why + "\n";
    return text;
}

}  // namespace

TEST_CASE("shards over the same commit, dirty files and content are pooled", "[shards]") {
    TempDir t;
    const std::string git = R"({"head": "abc", "dirty": [" M a.py"], "digest": "sha256:1"})";
    const Shards env(shard_dir(t.path, "1/2", git).string() + ";" + shard_dir(t.path, "2/2", git).string());
    CHECK(problems_text(merging({" M a.py"}, "sha256:1")).empty());
    CHECK(problems_text(merging({"M  a.py"}, "sha256:1")).empty());  // staged or not: the same work tree
}

TEST_CASE("a shard that ran over other uncommitted changes blocks, naming the files", "[shards]") {
    TempDir t;
    const auto clean = shard_dir(t.path, "1/2", R"({"head": "abc", "dirty": [], "digest": "sha256:0"})");
    const auto other = shard_dir(t.path, "2/2", R"({"head": "abc", "dirty": ["?? new.py", " M a.py"], "digest": "sha256:2"})");
    const Shards env(clean.string() + ";" + other.string());
    const auto text = problems_text(merging({" M a.py"}, "sha256:1"));
    CHECK_THAT(text, Catch::Contains("dirty only there: none; dirty only here: 'a.py'"));
    CHECK_THAT(text, Catch::Contains("dirty only there: 'new.py'; dirty only here: none"));
}

TEST_CASE("a shard whose uncommitted files held other content blocks, with both digests", "[shards]") {
    TempDir t;
    const std::string before = R"({"head": "abc", "dirty": [" M tests/test_a.py"], "digest": "sha256:before"})";
    const Shards env(shard_dir(t.path, "1/2", before).string() + ";" + shard_dir(t.path, "2/2", before).string());
    const auto text = problems_text(merging({" M tests/test_a.py"}, "sha256:after"));
    CHECK_THAT(text, Catch::Contains("other content in the uncommitted files ('tests/test_a.py')"));
    CHECK_THAT(text, Catch::Contains("digest sha256:before there, sha256:after here"));
}

TEST_CASE("a shard receipt without a digest (an older evgate) is not taken for the same sources", "[shards]") {
    TempDir t;
    const std::string old = R"({"head": "abc", "dirty": []})";
    const Shards env(shard_dir(t.path, "1/1", old).string());
    CHECK_THAT(problems_text(merging({}, "sha256:clean")), Catch::Contains("(none recorded) there"));
}
