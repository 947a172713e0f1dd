#include <catch2/catch.hpp>
#include <algorithm>
#include <csignal>
#include <cstdio>
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

#include <rapidjson/document.h>

#include "io/error.hpp"
#include "fixtures/fixture_store.hpp"
#include "runs/receipt.hpp"
#include "support.hpp"

namespace fs = std::filesystem;
using namespace evgate;
using evgate::test::Env;

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

TEST_CASE("restore brings changed, removed, added and chmodded files back to pristine, the tree outside the groups too",
          "[store]") {
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
    CHECK(p.read("other.txt") == "not leased\n");  // guarded: a file of the source tree
    CHECK(changed.size() == 4);
    CHECK(std::count(changed.begin(), changed.end(), "restored other.txt (source tree)") == 1);
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

namespace {

std::vector<std::string> sorted(std::vector<std::string> items) {
    std::sort(items.begin(), items.end());
    return items;
}

std::string mode_of(const fs::path& path) {
    struct stat st {};
    ::lstat(path.c_str(), &st);
    char text[8];
    std::snprintf(text, sizeof text, "%04o", st.st_mode & 07777);
    return text;
}

}  // namespace

TEST_CASE("a glob reaching into a build tree, the evidence directory or .git leases none of it, and no restore deletes it",
          "[store]") {
    Project p("cfg: **/*.json\n");
    p.suite.evidence_dir = p.root / "build" / "evidence" / "s";  // the build tree inside ROOT
    p.write("cfg/a.json", "{}\n");
    p.write("build/CMakeCache.txt", "# a build tree\n");
    p.write("build/evidence/s/receipt.json", "{\"receipt\": true}\n");
    p.write("other-build/CMakeCache.txt", "# another one\n");
    p.write("other-build/x.json", "{\"x\": 1}\n");
    p.write(".git/info.json", "{}\n");
    FixtureStore store(p.suite);
    const auto notes = store.snapshot();
    REQUIRE(notes.size() == 1);
    CHECK_THAT(notes.front(), Catch::Contains("group 'cfg'") && Catch::Contains("build") && Catch::Contains("other-build") &&
                                  Catch::Contains(".git") && Catch::Contains("never leased"));
    const auto lease = Project::slurp(store.lease_file());
    CHECK_THAT(lease, Catch::Contains("cfg/a.json") && !Catch::Contains("receipt.json") && !Catch::Contains("x.json"));
    p.write("build/evidence/s/ledger.json", "{}\n");  // what the build writes as it goes
    p.write("cfg/a.json", "{\"polluted\": 1}\n");
    store.restore();
    CHECK(p.read("cfg/a.json") == "{}\n");
    CHECK(p.read("build/evidence/s/receipt.json") == "{\"receipt\": true}\n");
    CHECK(fs::exists(p.root / "build/evidence/s/ledger.json"));
    CHECK(fs::exists(p.root / "build/evidence/s/fixtures/groups.json"));
    CHECK(p.read("other-build/x.json") == "{\"x\": 1}\n");
}

TEST_CASE("a directory a test chmodded is put back before anything below it is read, as a user who is not root", "[store]") {
    Project p("data: data/**\n");
    p.write("data/a.txt", "pristine\n");
    p.write("data/sub/b.txt", "pristine\n");
    p.write("docs/guide.md", "guide\n");
    fs::permissions(p.root / "data/sub", static_cast<fs::perms>(0750));
    REQUIRE(::system(("chown -R 65534:65534 " + p.top.string()).c_str()) == 0);
    const evgate::test::AsNobody nobody;  // as root, an unreadable directory would still be read
    const Env state("EVIDENCE_GATE_STATE_DIR", (p.top / "state").string());
    FixtureStore store(p.suite);
    store.snapshot();
    std::vector<FixtureChange> put_back;
    std::string token;
    {
        FixtureStore::Lease lease(store, TreeAccess::shared, "seed.0");
        token = lease.token();
        REQUIRE(::chmod((p.root / "data/sub").c_str(), 0555) == 0);
        REQUIRE(::chmod((p.root / "data").c_str(), 0) == 0);
        ::chmod((p.root / "docs").c_str(), 0);
        put_back = lease.restore();
    }
    CHECK(mode_of(p.root / "data") == "0755");
    CHECK(mode_of(p.root / "data/sub") == "0750");
    CHECK(mode_of(p.root / "docs") == "0755");
    CHECK(p.read("data/sub/b.txt") == "pristine\n");
    std::vector<std::string> what;
    for (const auto& change : put_back) what.push_back(change.group + ": " + change.what);
    CHECK(sorted(what) == std::vector<std::string>{"data: restored the mode of data/", "data: restored the mode of data/sub/"});
    const auto found = store.findings({{token, "seed.0"}});
    REQUIRE(found.size() == 1);  // the tree outside the groups is the gate's; the groups' changes are the tests'
    CHECK(found.front().check == "tree:seed.0");
    CHECK_THAT(found.front().reason, Catch::StartsWith("seed.0 changed mode of docs/ in the source tree"));
    CHECK(store.findings({}).empty());  // an execution done again since does not count
}

TEST_CASE("the source tree outside the groups: an edit, a removal and a chmod are put back and kept, new files named and left",
          "[store]") {
    Project p("data: data/*\n");
    p.write("data/a.txt", "pristine\n");
    p.write("README.txt", "the project\n");
    p.write("docs/guide.md", "guide\n");
    p.write("src/tool.py", "print('tool')\n");
    p.write(".hidden/cache", "not guarded outside git\n");
    FixtureStore store(p.suite);
    store.snapshot();
    std::string token;
    {
        FixtureStore::Lease lease(store, TreeAccess::shared, "seed.3");
        token = lease.token();
        p.write("README.txt", "edited by a test\n");
        fs::remove(p.root / "docs/guide.md");
        fs::permissions(p.root / "src/tool.py", static_cast<fs::perms>(0600));
        p.write("notes/left.txt", "a file a test left\n");
        p.write("scratch.db", "created and deleted again\n");
        fs::remove(p.root / "scratch.db");
        p.write(".hidden/new", "inside a hidden directory\n");
        CHECK(lease.restore().empty());  // nothing in the groups
    }
    CHECK(p.read("README.txt") == "the project\n");
    CHECK(p.read("docs/guide.md") == "guide\n");
    CHECK(mode_of(p.root / "src/tool.py") == "0644");
    CHECK(p.read("notes/left.txt") == "a file a test left\n");  // never removed: a user's editor may have saved it
    const auto found = store.findings({{token, "seed.3"}});
    REQUIRE(found.size() == 2);
    CHECK(found[0].check == "tree:seed.3");
    CHECK_THAT(found[0].reason, Catch::StartsWith("seed.3 changed README.txt, docs/guide.md, src/tool.py in the source tree, "
                                                  "outside every fixture group; restored (what it replaced is kept in "));
    CHECK(found[0].dirty == std::vector<std::string>{"(source tree)"});
    CHECK(found[1].check == "tree:left");
    CHECK_THAT(found[1].reason, Catch::Contains("notes/left.txt (after seed.3)") && !Catch::Contains("scratch.db") &&
                                    !Catch::Contains(".hidden") && Catch::Contains(p.root.string()));
    const auto kept = found[0].reason.substr(found[0].reason.find("kept in ") + 8);
    CHECK(Project::slurp(fs::path(kept.substr(0, kept.size() - 1)) / "README.txt") == "edited by a test\n");
    fs::remove_all(p.root / "notes");  // deleted again before the ledger: it was scratch after all
    CHECK(store.findings({{token, "seed.3"}}).size() == 1);
    Receipt receipt;
    CHECK(store.access_for(receipt) == TreeAccess::exclusive);  // entries came and went: the rest takes turns
}

TEST_CASE("a run whose tests only create and delete scratch files beside the sources touched the tree", "[store]") {
    Project p("data: data/*\n");
    p.write("data/a.txt", "pristine\n");
    p.write("tests/test_x.py", "\n");
    FixtureStore store(p.suite);
    store.snapshot();
    std::string scratch, quiet;
    {
        FixtureStore::Lease lease(store, TreeAccess::shared, "seed.1");
        scratch = lease.token();
        p.write("tool_temp/config.ini", "[scratch]\n");
        fs::remove_all(p.root / "tool_temp");
        lease.restore();
    }
    {
        FixtureStore::Lease lease(store, TreeAccess::shared, "seed.2");
        quiet = lease.token();
        lease.restore();
    }
    CHECK(store.findings({{scratch, "seed.1"}}).empty());  // nothing left, nothing to restore
    const auto spans = read_spans(p.root);
    const auto touched = [&](const std::string& token) {
        return std::any_of(spans.begin(), spans.end(), [&](const RunSpan& s) { return s.token == token && s.touched; });
    };
    CHECK(touched(scratch));  // runs beside it may have seen its scratch files
    CHECK_FALSE(touched(quiet));
}

TEST_CASE("a collection that writes at import is put back, recorded for the gate, and never taken for pristine", "[store]") {
    Project p("data: data/*\n");
    p.write("data/state.txt", "pristine\n");
    p.write("README.txt", "the project\n");
    FixtureStore store(p.suite);
    const auto report = store.guard_collection("discovery", "collection at ctest start (discovery)", [&] {
        p.write("data/state.txt", "written at import\n");
        p.write("README.txt", "also written at import\n");
        p.write("generated.txt", "left by the collection\n");
    });
    CHECK(report.changed());
    CHECK(p.read("data/state.txt") == "pristine\n");
    CHECK(p.read("README.txt") == "the project\n");
    auto found = store.findings({});
    REQUIRE(found.size() == 2);
    CHECK(found[0].check == "tree:discovery");
    CHECK_THAT(found[0].reason, Catch::StartsWith("collection at ctest start (discovery) changed fixture group 'data' "
                                                  "(restored data/state.txt) and README.txt in the source tree, outside "
                                                  "every fixture group, outside any test; restored"));
    CHECK(found[0].dirty == std::vector<std::string>{"data", "(source tree)"});
    CHECK_THAT(found[1].reason, Catch::Contains("generated.txt (after collection at ctest start (discovery))"));
    // The next snapshot's pristine is the committed content, not what the import wrote.
    store.snapshot();
    p.write("data/state.txt", "polluted\n");
    store.restore();
    CHECK(p.read("data/state.txt") == "pristine\n");
    // A collection that throws is guarded the same way.
    CHECK_THROWS(store.guard_collection("receipt", "collection (receipt)", [&] {
        p.write("data/state.txt", "written, then the collection failed\n");
        throw Error("pytest collection did not complete");
    }));
    CHECK(p.read("data/state.txt") == "pristine\n");
    // A clean collection replaces its earlier record.
    store.guard_collection("discovery", "collection at ctest start (discovery)", [] {});
    found = store.findings({});
    CHECK(std::none_of(found.begin(), found.end(), [](const TreeFinding& f) { return f.check == "tree:discovery"; }));
    CHECK(std::any_of(found.begin(), found.end(), [](const TreeFinding& f) { return f.check == "tree:receipt"; }));
}

TEST_CASE("a fixture file whose name is not UTF-8 is leased in valid UTF-8 JSON and restored to the same bytes", "[store]") {
    Project p("data: data/*\n");
    const std::string name = "data/caf\xe9.txt";
    p.write(name, "pristine\n");
    FixtureStore store(p.suite);
    store.snapshot();
    for (const auto& file : {store.lease_file(), p.suite.fixtures_dir() / "tree.json", p.suite.fixtures_dir() / "stamps.json"}) {
        const auto text = Project::slurp(file);
        rapidjson::Document doc;
        doc.Parse<rapidjson::kParseValidateEncodingFlag>(text.c_str(), text.size());
        CHECK_FALSE(doc.HasParseError());
    }
    CHECK_THAT(Project::slurp(store.lease_file()), Catch::Contains("caf\\udce9.txt"));
    p.write(name, "polluted\n");
    CHECK(store.restore() == std::vector<std::string>{"restored " + name});
    CHECK(p.read(name) == "pristine\n");
    CHECK(fs::directory_iterator(p.root / "data")->path().filename() == "caf\xe9.txt");  // no second file beside it
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
