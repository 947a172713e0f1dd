// Restores owed by runs that were killed or are waiting, across build trees over one ROOT.
#include <algorithm>
#include <catch2/catch.hpp>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rapidjson/document.h>

#include "fixture_project.hpp"
#include "fixtures/fixture_store.hpp"
#include "io/error.hpp"
#include "runs/receipt.hpp"
#include "support.hpp"

namespace fs = std::filesystem;
using namespace evgate;
using evgate::test::Env;
using evgate::test::mode_of;
using evgate::test::Project;

namespace {

// Another build tree over the same sources: its own fixture directory, the same ROOT.
SuiteConfig other_build_tree(const Project& p) {
    SuiteConfig other = p.suite;
    other.evidence_dir = p.top / "other-build" / "evidence" / "s";
    return other;
}
bool a_marker_says_dirty(const fs::path& pending) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(pending, ec)) {
        std::ifstream in(entry.path());
        std::string word;
        if (in >> word && word == "dirty") return true;
    }
    return false;
}
}  // namespace

TEST_CASE("a pending restore left by a killed run is completed before anything else", "[store]") {
    Project p("cfg: config/*.ini\n");
    p.write("config/x.ini", "pristine\n");
    FixtureStore(p.suite).snapshot();
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {  // a run that dirties the groups and dies without restoring, as after kill -9
        FixtureStore store(p.suite);
        FixtureStore::Lease lease(store, TreeAccess::shared);
        p.write("config/x.ini", "polluted by a run that was killed\n");
        ::_exit(0);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    REQUIRE(p.read("config/x.ini") == "polluted by a run that was killed\n");
    FixtureStore again(p.suite);
    CHECK(again.restore_if_pending());
    CHECK(p.read("config/x.ini") == "pristine\n");
    CHECK_FALSE(again.restore_if_pending());
    again.snapshot();  // the pristine copy is still the committed content, not the polluted one
    CHECK(p.read("config/x.ini") == "pristine\n");
}

TEST_CASE("a live run's marker is not pending: runs beside it neither restore nor wait", "[store]") {
    Project p("cfg: config/*.ini\n");
    p.write("config/x.ini", "pristine\n");
    FixtureStore store(p.suite);
    store.snapshot();
    FixtureStore::Lease running(store, TreeAccess::shared);
    p.write("config/x.ini", "being written by the running run\n");
    FixtureStore beside(p.suite);
    CHECK_FALSE(beside.restore_if_pending());                // would block on the tree lock if it tried
    FixtureStore::Lease second(beside, TreeAccess::shared);  // shared leases go side by side
    CHECK(p.read("config/x.ini") == "being written by the running run\n");
}

TEST_CASE("a snapshot of another build tree restores a waiting run's changes rather than take them for pristine",
          "[store]") {
    Project p("cfg: config/*.ini\n");
    p.write("config/x.ini", "pristine\n");
    FixtureStore(p.suite).snapshot();
    auto reader = std::make_unique<TreeLock>(p.root, TreeAccess::shared);  // a run beside: the writer waits
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {    // a run whose test polluted; its restore waits for the tree alone
        reader.reset();  // the parent's copy holds the reader's lock
        FixtureStore store(p.suite);
        FixtureStore::Lease lease(store, TreeAccess::shared);
        p.write("config/x.ini", "polluted\n");
        const auto put_back = lease.restore();
        ::_exit(put_back.size() == 1 && p.read("config/x.ini") == "pristine\n" ? 0 : 1);
    }
    const auto pending = p.suite.fixtures_dir() / "pending";
    for (int i = 0; i < 1000 && !a_marker_says_dirty(pending); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    REQUIRE(a_marker_says_dirty(pending));
    // Stopped while it waits: the other build tree's snapshot gets the tree first.
    ::kill(child, SIGSTOP);
    int status = 0;
    REQUIRE(::waitpid(child, &status, WUNTRACED) == child);
    REQUIRE(WIFSTOPPED(status));
    reader.reset();
    FixtureStore beside(other_build_tree(p));
    beside.snapshot();
    CHECK(p.read("config/x.ini") == "pristine\n");
    ::kill(child, SIGCONT);
    REQUIRE(::waitpid(child, &status, 0) == child);
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));  // it still says what its tests changed
    p.write("config/x.ini", "polluted later\n");
    CHECK(beside.restore() == std::vector<std::string>{"restored config/x.ini"});
    CHECK(p.read("config/x.ini") == "pristine\n");  // the other tree's pristine is the committed content
}

TEST_CASE("a run of one build tree killed before its restore is completed by the next snapshot of another", "[store]") {
    Project p("cfg: config/*.ini\n");
    p.write("config/x.ini", "pristine\n");
    FixtureStore(p.suite).snapshot();
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        FixtureStore store(p.suite);
        FixtureStore::Lease lease(store, TreeAccess::shared);
        p.write("config/x.ini", "polluted by a run that was killed\n");
        p.write("config/new.ini", "added by it\n");
        ::_exit(0);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    FixtureStore beside(other_build_tree(p));
    const auto interrupted = beside.restore_if_pending();
    CHECK(interrupted.completed);
    CHECK(p.read("config/x.ini") == "pristine\n");
    CHECK_FALSE(fs::exists(p.root / "config/new.ini"));
    // What it put back or removed is kept in the build tree that restored: nothing is lost.
    REQUIRE(interrupted.kept.string().rfind((p.top / "other-build").string(), 0) == 0);
    CHECK(Project::slurp(interrupted.kept / "config/x.ini") == "polluted by a run that was killed\n");
    CHECK(Project::slurp(interrupted.kept / "config/new.ini") == "added by it\n");
    CHECK_FALSE(FixtureStore(p.suite).restore_if_pending());  // handled once
    beside.snapshot();
    p.write("config/x.ini", "polluted later\n");
    beside.restore();
    CHECK(p.read("config/x.ini") == "pristine\n");
}

TEST_CASE("a registered store another user owns is never restored from", "[store]") {
    if (::geteuid() != 0) return;  // needs to give a directory away
    Project p("cfg: config/*.ini\n");
    p.write("config/x.ini", "pristine\n");
    const auto other = other_build_tree(p);
    FixtureStore(other).snapshot();
    // What another user could plant: a pristine copy of theirs and a marker nobody holds.
    std::ofstream(other.fixtures_dir() / "pristine/config/x.ini") << "planted\n";
    fs::create_directories(other.fixtures_dir() / "pending");
    std::ofstream(other.fixtures_dir() / "pending/abandoned") << "";
    p.write("config/x.ini", "the user's edit\n");
    REQUIRE(::system(("chown -R 65534:65534 " + (p.top / "other-build").string()).c_str()) == 0);
    FixtureStore(p.suite).snapshot();
    CHECK(p.read("config/x.ini") == "the user's edit\n");
}
