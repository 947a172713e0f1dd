// FixtureStore and the fixture groups: snapshot, restore, leases, links, modes and names.
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

std::vector<std::string> sorted(std::vector<std::string> items) {
    std::sort(items.begin(), items.end());
    return items;
}
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
    CHECK(store.overlapped_a_change(quiet_token));  // it ran beside a run that changed the groups
    CHECK_FALSE(store.overlapped_a_change(dirty_token));
    Receipt receipt;
    CHECK(store.access_for(receipt.declares_writes()) == TreeAccess::exclusive);  // the rest of this invocation takes turns
    store.snapshot();
    CHECK(store.access_for(receipt.declares_writes()) == TreeAccess::shared);  // a new invocation goes side by side again
    receipt.tests.push_back({"tests/test_x.py::test_writer", false, {"db"}, std::nullopt});
    CHECK(store.access_for(receipt.declares_writes()) == TreeAccess::exclusive);  // a test declares writes
}

TEST_CASE("a lease left by an exception restores what its run changed; one ended normally leaves that to restore()",
          "[store]") {
    Project p("db: data/*.json\n");
    p.write("data/a.json", "{}\n");
    p.write("docs/readme.txt", "pristine\n");
    std::this_thread::sleep_for(std::chrono::milliseconds(120));  // past the racy window
    FixtureStore store(p.suite);
    store.snapshot();
    std::string token;
    // A stop request (or any error) leaving the run between a pytest process and its restore.
    CHECK_THROWS_AS(([&] {
                        FixtureStore::Lease lease(store, TreeAccess::shared, "seed.0");
                        token = lease.token();
                        p.write("data/a.json", "{\"polluted\": true}\n");
                        p.write("data/b.json", "{}\n");
                        p.write("docs/readme.txt", "changed\n");
                        throw Error("stopped");
                    }()),
                    Error);
    CHECK(p.read("data/a.json") == "{}\n");
    CHECK_FALSE(fs::exists(p.root / "data/b.json"));
    CHECK(p.read("docs/readme.txt") == "pristine\n");
    const auto found = store.findings({{token, "seed.0"}});  // what the run did is still told
    REQUIRE(found.size() == 1);
    CHECK(found.front().check == "tree:seed.0");

    // A lease that ends normally leaves the restore to its caller's restore(), even one taken
    // and ended while an earlier exception unwinds (what counts is an exception leaving it).
    struct LeaseAsItUnwinds {
        FixtureStore& store;
        Project& p;
        ~LeaseAsItUnwinds() {
            FixtureStore::Lease lease(store, TreeAccess::shared, "seed.1");
            p.write("data/a.json", "{\"again\": true}\n");
        }
    };
    CHECK_THROWS_AS(([&] {
                        LeaseAsItUnwinds unwinding{store, p};
                        throw Error("earlier");
                    }()),
                    Error);
    CHECK(p.read("data/a.json") == "{\"again\": true}\n");
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

namespace {

std::string owner_of(const fs::path& path) {
    struct stat st {};
    ::lstat(path.c_str(), &st);
    return std::to_string(st.st_uid) + ":" + std::to_string(st.st_gid);
}

}  // namespace

TEST_CASE("a chown of a group file, a group directory, a guarded file and a tree directory is put back", "[store]") {
    if (::geteuid() != 0) {
        WARN("only root gives a file to another user: nothing to check");
        return;
    }
    Project p("data: data/**\n");
    p.write("data/a.txt", "pristine\n");
    p.write("data/sub/b.txt", "pristine\n");
    p.write("README.txt", "the project\n");
    p.write("docs/guide.md", "guide\n");
    REQUIRE(::chown((p.root / "docs/guide.md").c_str(), 1, 2) == 0);  // a file that was never root's
    fs::permissions(p.root / "data/a.txt", static_cast<fs::perms>(02755));
    FixtureStore store(p.suite);
    store.snapshot();
    std::vector<FixtureChange> put_back;
    std::string token;
    {
        FixtureStore::Lease lease(store, TreeAccess::shared, "seed.0");
        token = lease.token();
        for (const char* path : {"data/a.txt", "data/sub", "README.txt", "docs", "docs/guide.md"})
            REQUIRE(::chown((p.root / path).c_str(), 65534, 65534) == 0);
        put_back = lease.restore();
    }
    for (const char* path : {"data/a.txt", "data/sub", "README.txt", "docs"}) CHECK(owner_of(p.root / path) == "0:0");
    CHECK(owner_of(p.root / "docs/guide.md") == "1:2");
    CHECK(mode_of(p.root / "data/a.txt") == "2755");  // the set-id bit the chown cleared is back
    CHECK(p.read("data/a.txt") == "pristine\n");
    std::vector<std::string> what;
    for (const auto& change : put_back) what.push_back(change.group + ": " + change.what);
    CHECK(sorted(what) == std::vector<std::string>{"data: restored data/a.txt", "data: restored the owner of data/sub/"});
    const auto found = store.findings({{token, "seed.0"}});
    REQUIRE(found.size() == 1);
    CHECK_THAT(found.front().reason, Catch::StartsWith("seed.0 changed README.txt, docs/guide.md, owner of docs/ in the source tree"));
    // Only the owner moved: nothing else to do at the next look.
    FixtureStore::Lease again(store, TreeAccess::shared, "seed.1");
    CHECK(again.restore().empty());
}
