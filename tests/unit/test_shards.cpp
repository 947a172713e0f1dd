#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include "machines/shards.hpp"
#include "runs/receipt_sources.hpp"
#include "support.hpp"

namespace fs = std::filesystem;
using namespace evgate;
using evgate::test::TempDir;

namespace {

// A listing of two files, the second with `content`.
Sources listing(const std::string& content, const std::string& extra = "") {
    Sources sources;
    sources.files = {{"tests/test_a.py", "sha256:" + content + " 644"}, {"tests/test_b.py", "sha256:b 644"}};
    if (!extra.empty()) sources.files.push_back({extra, "sha256:x 644"});
    std::sort(sources.files.begin(), sources.files.end(), [](const SourceFile& a, const SourceFile& b) { return a.path < b.path; });
    sources.digest = sources_digest(sources.files);
    return sources;
}

// A shard's evidence directory holding a receipt of the suite "s" at commit "abc", taken over
// `sources` (its listing in sources.json unless `with_listing` is false).
fs::path shard_dir(const fs::path& base, const std::string& spec, const std::optional<Sources>& sources, bool with_listing = true) {
    auto dir = base / ("shard-" + spec.substr(0, 1));
    fs::create_directories(dir);
    std::ofstream(dir / "receipt.json") << R"({"rootdir": "/src", "suite": "s", "shard": ")" << spec
                                        << R"(", "tests": [{"id": "t::a"}], "git": {"head": "abc", "dirty": []})"
                                        << (sources ? R"(, "sources": {"digest": ")" + sources->digest + "\"}" : "") << "}\n";
    if (sources && with_listing) std::ofstream(dir / "sources.json") << sources_json(*sources);
    return dir;
}

// EVIDENCE_GATE_SHARDS for the length of a test.
struct Shards {
    explicit Shards(const std::string& value) { ::setenv("EVIDENCE_GATE_SHARDS", value.c_str(), 1); }
    ~Shards() { ::unsetenv("EVIDENCE_GATE_SHARDS"); }
};

// What shard_problems says of the shards to a merging job whose receipt was taken over `ours`
// (its listing in `evidence`).
std::string problems_text(const fs::path& evidence, const Sources& ours) {
    fs::create_directories(evidence);
    std::ofstream(evidence / "sources.json") << sources_json(ours);
    SuiteConfig suite;
    suite.name = "s";
    suite.evidence_dir = evidence;
    Receipt receipt;
    receipt.rootdir = "/src";
    receipt.tests = {{"t::a", false, {}, std::nullopt}};
    receipt.git_head = "abc";
    receipt.sources_digest = ours.digest;
    std::string text;
    for (const auto& [dir, why] : shard_problems(suite, receipt)) text += why + "\n";
    return text;
}

}  // namespace

TEST_CASE("shards taken over the same sources are pooled", "[shards]") {
    TempDir t;
    const auto same = listing("a");
    const Shards env(shard_dir(t.path, "1/2", same).string() + ";" + shard_dir(t.path, "2/2", same).string());
    CHECK(problems_text(t.path / "merge", same).empty());
}

TEST_CASE("a shard taken over other sources blocks, naming the files", "[shards]") {
    TempDir t;
    const auto before = listing("a", "tests/test_gone.py");
    const Shards env(shard_dir(t.path, "1/2", before).string() + ";" + shard_dir(t.path, "2/2", before).string());
    const auto text = problems_text(t.path / "merge", listing("edited", "tests/test_new.py"));
    CHECK_THAT(text, Catch::Contains("the shard ran over other sources than this tree: changed since: 'tests/test_a.py'; "
                                     "only here: 'tests/test_new.py'; only there: 'tests/test_gone.py'"));
}

TEST_CASE("a shard whose listing is gone or does not hold its digest blocks with both digests", "[shards]") {
    TempDir t;
    const auto before = listing("a");
    auto forged = listing("edited");
    forged.digest = before.digest;  // a listing edited after the receipt: not the one digested
    const auto without = shard_dir(t.path, "1/2", before, false);
    const auto edited = shard_dir(t.path, "2/2", before, false);
    std::ofstream(edited / "sources.json") << sources_json(forged);
    const Shards env(without.string() + ";" + edited.string());
    const auto ours = listing("edited");
    const auto text = problems_text(t.path / "merge", ours);
    CHECK_THAT(text, Catch::Contains("(sources digest " + before.digest + " there, " + ours.digest + " here)"));
    CHECK_THAT(text, !Catch::Contains("changed since"));
}

TEST_CASE("a shard receipt without a digest of its sources (an older evgate) is not taken for the same sources", "[shards]") {
    TempDir t;
    const Shards env(shard_dir(t.path, "1/1", std::nullopt).string());
    CHECK_THAT(problems_text(t.path / "merge", listing("a")), Catch::Contains("records no digest of the sources it ran over"));
}

TEST_CASE("the evidence a job is handed is no part of its sources", "[shards]") {
    const evgate::test::Env shards("EVIDENCE_GATE_SHARDS", std::string("/ci/shards/1;/ci/shards/2"));
    const evgate::test::Env bundles("EVIDENCE_GATE_RUNNER_BUNDLES", std::string("/ci/runner.xml"));
    const evgate::test::Env history("EVIDENCE_GATE_HISTORY", std::string("/ci/history"));
    const evgate::test::Env compare("EVIDENCE_GATE_COMPARE", std::nullopt);
    CHECK(handed_evidence() == std::vector<fs::path>{"/ci/shards/1", "/ci/shards/2", "/ci/runner.xml", "/ci/history"});
}
