#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include <sys/stat.h>
#include <unistd.h>

#include "fixtures/shared_tree.hpp"
#include "io/error.hpp"
#include "io/file_identity.hpp"
#include "support.hpp"

using namespace evgate;
namespace fs = std::filesystem;

namespace {

std::string refusal(const fs::path& dir) {
    try {
        verify_state_dir(dir);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("a run overlapped a change when another touching run's span crosses its own", "[tree]") {
    const std::vector<RunSpan> spans = {
        {"reader", 100, 200, false},
        {"early", 10, 100, true},    // ended as the reader started: no overlap
        {"beside", 150, 300, true},  // overlaps
        {"quiet", 120, 180, false},  // overlaps, but changed nothing
    };
    CHECK(overlapped_a_change(spans, "reader"));
    CHECK(overlapped_a_change(spans, "quiet"));
    CHECK_FALSE(overlapped_a_change(spans, "early"));
    CHECK_FALSE(overlapped_a_change(spans, "beside"));  // its own change is not a contamination
    CHECK_FALSE(overlapped_a_change(spans, "never-logged"));
    CHECK_FALSE(overlapped_a_change(spans, ""));
}

TEST_CASE("the build trees over a ROOT are registered once each, and pruned when gone", "[tree]") {
    const auto top = fs::temp_directory_path() / ("evgate-tree-" + new_run_token());
    const auto root = top / "src", a = top / "a" / "fixtures", b = top / "b" / "fixtures";
    fs::create_directories(root), fs::create_directories(a), fs::create_directories(b);
    register_store(root, a);
    register_store(root, b);
    register_store(root, a / ".");  // the same directory, spelled otherwise
    CHECK(registered_stores(root) == std::vector<fs::path>{a, b});
    fs::remove_all(top / "b");
    prune_stores(root);
    CHECK(registered_stores(root) == std::vector<fs::path>{a});
    CHECK(registered_stores(top / "elsewhere").empty());  // another ROOT has its own registry
    fs::remove_all(top);
    prune_stores(root);
    CHECK(registered_stores(root).empty());
}

TEST_CASE("the state directory is refused when another user owns it, group or others may use it, or it is a link",
          "[tree]") {
    test::TempDir top;
    const auto foreign = top.path / "foreign", open = top.path / "open", link = top.path / "link", ours = top.path / "ours";
    fs::create_directory(foreign), fs::create_directory(open), fs::create_directory(ours);
    ::chmod(foreign.c_str(), 0700), ::chmod(open.c_str(), 0770), ::chmod(ours.c_str(), 0700);
    fs::create_directory_symlink(ours, link);
    const auto me = std::to_string(::geteuid());
    if (::geteuid() == 0) {
        REQUIRE(::chown(foreign.c_str(), 65534, 65534) == 0);
        CHECK(refusal(foreign) == "the state directory '" + foreign.string() +
                                      "' is owned by uid 65534, not by you (uid 0): "
                                      "refusing to trust it (another user could have planted it); remove it or set "
                                      "EVIDENCE_GATE_STATE_DIR");
    }
    CHECK_THAT(refusal(open), Catch::Contains("has mode 0770 (group or other permission bits)") &&
                                  Catch::Contains("chmod 700 it"));
    CHECK_THAT(refusal(link), Catch::Contains("is a symbolic link: refusing to trust it"));
    CHECK(refusal(ours).empty());
    // Through state_dir(): a planted directory is refused, never used.
    if (::geteuid() == 0) {
        const test::Env planted("EVIDENCE_GATE_STATE_DIR", foreign.string());
        CHECK_THROWS_WITH(state_dir(), Catch::Contains("owned by uid 65534, not by you (uid " + me + ")"));
        CHECK_THROWS_AS(TreeLock(top.path, TreeAccess::shared), Error);
    }
}

TEST_CASE("the state directory is the user's own: EVIDENCE_GATE_STATE_DIR, else XDG_RUNTIME_DIR, else the temp dir", "[tree]") {
    test::TempDir top;
    const test::Env no_xdg("XDG_RUNTIME_DIR", std::nullopt);
    const test::Env unset("EVIDENCE_GATE_STATE_DIR", std::nullopt);
    {
        const test::Env tmp("TMPDIR", top.path.string());
        const auto dir = state_dir();
        CHECK(dir == top.path / ("evidence-gate-" + std::to_string(::geteuid())));
        struct stat st {};
        REQUIRE(::lstat(dir.c_str(), &st) == 0);
        CHECK((st.st_mode & 07777) == 0700);
    }
    {
        const test::Env missing("TMPDIR", (top.path / "no-such-dir").string());
        CHECK(temp_dir() == "/tmp");  // a note, never an internal error
        const test::Env runtime("XDG_RUNTIME_DIR", top.path.string());
        CHECK(state_dir() == top.path / "evidence-gate");
        const test::Env set("EVIDENCE_GATE_STATE_DIR", (top.path / "mine" / "state").string());
        CHECK(state_dir() == top.path / "mine" / "state");
    }
}

TEST_CASE("a link planted in the state directory is refused, never followed", "[tree]") {
    test::TempDir top;
    const test::Env set("EVIDENCE_GATE_STATE_DIR", (top.path / "state").string());
    const auto root = top.path / "src";
    fs::create_directories(root);
    const auto key = sha256_hex(fs::weakly_canonical(root).string()).substr(0, 16);
    const auto outside = top.path / "outside.txt";
    std::ofstream(outside) << "not a span log\n";
    fs::create_symlink(outside, state_dir() / (key + ".spans"));
    fs::create_symlink(outside, state_dir() / (key + ".lock"));
    CHECK_THROWS_AS(log_span(root, RunSpan{"t", 1, 2, true}), Error);
    CHECK_THROWS_AS(TreeLock(root, TreeAccess::shared), Error);
    std::ifstream in(outside);
    std::string text;
    std::getline(in, text);
    CHECK(text == "not a span log");
}
