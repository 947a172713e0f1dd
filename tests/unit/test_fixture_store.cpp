#include <catch2/catch.hpp>
#include <csignal>
#include <memory>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <fcntl.h>

#include "fixture_store.hpp"
#include "receipt.hpp"

namespace fs = std::filesystem;
using namespace evgate;

namespace {

struct Project {
    fs::path top = fs::temp_directory_path() / ("evgate-store-" + std::to_string(std::random_device{}()));
    fs::path root = top / "src";
    SuiteConfig suite;

    explicit Project(const std::string& manifest) {
        fs::create_directories(root);
        write("fixtures.manifest", manifest);
        suite.name = "s";
        suite.root = root;
        suite.evidence_dir = top / "build" / "evidence" / "s";
        suite.fixtures = root / "fixtures.manifest";
    }
    ~Project() { fs::remove_all(top); }

    void write(const std::string& relative, const std::string& text) const {
        fs::create_directories((root / relative).parent_path());
        std::ofstream(root / relative, std::ios::binary) << text;
    }
    std::string read(const std::string& relative) const { return slurp(root / relative); }
    static std::string slurp(const fs::path& file) {
        std::ifstream in(file, std::ios::binary);
        std::stringstream text;
        text << in.rdbuf();
        return text.str();
    }
};

}  // namespace

TEST_CASE("restore brings changed, removed, added and chmodded files back to pristine", "[store]") {
    Project p("db: data/*.json\n");
    p.write("data/a.json", "{\"a\": 1}\n");
    p.write("data/b.json", "{\"b\": 2}\n");
    p.write("other.txt", "not leased\n");
    FixtureStore store(p.suite);
    store.snapshot();

    p.write("data/a.json", "{\"a\": 9}\n");  // same size, new content
    fs::remove(p.root / "data/b.json");
    p.write("data/c.json", "new\n");
    p.write("other.txt", "changed, but not in a group\n");
    fs::permissions(p.root / "data/a.json", fs::perms::owner_read);

    const auto changed = store.restore();
    CHECK(p.read("data/a.json") == "{\"a\": 1}\n");
    CHECK(p.read("data/b.json") == "{\"b\": 2}\n");
    CHECK_FALSE(fs::exists(p.root / "data/c.json"));
    CHECK((fs::status(p.root / "data/a.json").permissions() & fs::perms::owner_write) != fs::perms::none);
    CHECK(p.read("other.txt") == "changed, but not in a group\n");
    CHECK(changed.size() == 3);
}

TEST_CASE("a rewrite that keeps size and mtime is still caught (ctime moves)", "[store]") {
    Project p("db: data/*.json\n");
    p.write("data/a.json", "0123456789\n");
    // Older than the racy window when the stamps are taken, so the metadata shortcut applies.
    std::this_thread::sleep_for(std::chrono::milliseconds(120));
    FixtureStore store(p.suite);
    store.snapshot();
    store.restore();  // records the stamps the next restore compares with
    struct stat before {};
    ::stat((p.root / "data/a.json").c_str(), &before);
    p.write("data/a.json", "9876543210\n");
    const timespec times[2] = {before.st_atim, before.st_mtim};  // mtime put back to the nanosecond
    ::utimensat(AT_FDCWD, (p.root / "data/a.json").c_str(), times, 0);
    store.restore();
    CHECK(p.read("data/a.json") == "0123456789\n");
}

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
    CHECK_FALSE(beside.restore_if_pending());  // would block on the tree lock if it tried
    FixtureStore::Lease second(beside, TreeAccess::shared);  // shared leases go side by side
    CHECK(p.read("config/x.ini") == "being written by the running run\n");
}

TEST_CASE("restore never writes through a link that replaced a directory, and puts the directory back", "[store]") {
    Project p("db: data/sub/*.json\n");
    p.write("data/sub/a.json", "inside\n");
    FixtureStore store(p.suite);
    store.snapshot();
    fs::create_directories(p.top / "outside");
    fs::remove_all(p.root / "data/sub");
    fs::create_directory_symlink(p.top / "outside", p.root / "data/sub");
    store.restore();
    CHECK_FALSE(fs::exists(p.top / "outside/a.json"));
    CHECK_FALSE(fs::is_symlink(p.root / "data/sub"));
    CHECK(p.read("data/sub/a.json") == "inside\n");
}

TEST_CASE("a symlink in a group is restored as a link, never followed", "[store]") {
    Project p("links: data/*\n");
    fs::create_directories(p.top / "outside");
    std::ofstream(p.top / "outside/secret") << "outside ROOT\n";
    fs::create_directories(p.root / "data");
    fs::create_symlink(p.top / "outside/secret", p.root / "data/link");
    FixtureStore store(p.suite);
    store.snapshot();
    fs::remove(p.root / "data/link");
    p.write("data/link", "a file now\n");
    store.restore();
    CHECK(fs::is_symlink(p.root / "data/link"));
    CHECK(fs::read_symlink(p.root / "data/link") == p.top / "outside/secret");
    std::ifstream in(p.top / "outside/secret");
    std::string text;
    std::getline(in, text);
    CHECK(text == "outside ROOT");
}

TEST_CASE("a lease whose run changed nothing only reads; one that finds a change restores it and is logged", "[store]") {
    Project p("db: data/*.json\n");
    p.write("data/a.json", "{}\n");
    std::this_thread::sleep_for(std::chrono::milliseconds(120));  // past the racy window
    FixtureStore store(p.suite);
    store.snapshot();
    const auto stamps = p.top / "build/evidence/s/fixtures/stamps.json";
    const auto stamped = fs::last_write_time(stamps);
    std::string quiet_token, dirty_token;
    std::vector<FixtureChange> restored;
    std::thread beside;
    {
        FixtureStore::Lease quiet(store, TreeAccess::shared);
        quiet_token = quiet.token();
        CHECK(quiet.restore().empty());
        CHECK(fs::last_write_time(stamps) == stamped);  // a restore that found nothing wrote nothing
        beside = std::thread([&] {
            FixtureStore::Lease dirty(store, TreeAccess::shared);
            dirty_token = dirty.token();
            p.write("data/a.json", "{\"polluted\": true}\n");
            restored = dirty.restore();  // waits for the tree alone: the quiet run still reads
        });
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        CHECK(p.read("data/a.json") == "{\"polluted\": true}\n");
    }
    beside.join();
    REQUIRE(restored.size() == 1);
    CHECK(restored.front().group == "db");
    CHECK(restored.front().what == "restored data/a.json");
    CHECK(p.read("data/a.json") == "{}\n");
    CHECK(fs::last_write_time(stamps) != stamped);  // only the restore wrote
    CHECK(store.overlapped_a_change(quiet_token));    // it ran beside a run that changed the groups
    CHECK_FALSE(store.overlapped_a_change(dirty_token));
    Receipt receipt;
    CHECK(store.access_for(receipt) == TreeAccess::exclusive);  // the rest of this invocation takes turns
    store.snapshot();
    CHECK(store.access_for(receipt) == TreeAccess::shared);  // a new invocation goes side by side again
    receipt.tests.push_back({"tests/test_x.py::test_writer", false, {"db"}, std::nullopt});
    CHECK(store.access_for(receipt) == TreeAccess::exclusive);  // a test declares writes
}

TEST_CASE("a snapshot takes a file's new content after an edit, and its old content when it did not move", "[store]") {
    Project p("db: data/*.json\n");
    p.write("data/a.json", "first\n");
    FixtureStore store(p.suite);
    store.snapshot();
    p.write("data/a.json", "second, committed meanwhile\n");
    store.snapshot();
    p.write("data/a.json", "polluted\n");
    store.restore();
    CHECK(p.read("data/a.json") == "second, committed meanwhile\n");
    store.snapshot();
    store.snapshot();
    p.write("data/a.json", "polluted\n");
    store.restore();
    CHECK(p.read("data/a.json") == "second, committed meanwhile\n");
}

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

TEST_CASE("a snapshot of another build tree restores a waiting run's changes rather than take them for pristine",
          "[store]") {
    Project p("cfg: config/*.ini\n");
    p.write("config/x.ini", "pristine\n");
    FixtureStore(p.suite).snapshot();
    auto reader = std::make_unique<TreeLock>(p.root, TreeAccess::shared);  // a run beside: the writer waits
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {  // a run whose test polluted; its restore waits for the tree alone
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
