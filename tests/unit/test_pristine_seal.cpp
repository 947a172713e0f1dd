// The pristine copy, sealed: a copy a test rewrote (the evidence directory is within its reach)
// is found, never restored from, put back from a verified copy, and named for the gate.
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "fixture_project.hpp"
#include "fixtures/fixture_store.hpp"
#include "fixtures/pristine_seal.hpp"
#include "io/error.hpp"
#include "io/file_identity.hpp"
#include "support.hpp"

namespace fs = std::filesystem;
using namespace evgate;
using evgate::test::Env;
using evgate::test::Project;

namespace {

// A project whose state directory is its own (a test here removes it).
struct SealedProject : Project {
    Env state{"EVIDENCE_GATE_STATE_DIR", (top / "state").string()};
    SealedProject() : Project("data: data/*\n") {
        write("data/config.txt", "pristine\n");
        write("README.txt", "the project\n");
    }
    fs::path store() const { return suite.fixtures_dir(); }
    fs::path pristine(const std::string& relative) const { return store() / "pristine" / relative; }
    fs::path object(const std::string& content) const { return store() / "objects" / sha256_hex(content); }
    static void rewrite(const fs::path& file, const std::string& text) { std::ofstream(file, std::ios::binary) << text; }
};

std::string store_row(const std::vector<TreeFinding>& found) {
    for (const auto& f : found)
        if (f.check == "tree:store") return f.reason;
    return "";
}

}  // namespace

TEST_CASE("a test that rewrites a group file and its pristine copy alike: the sealed content comes back, the copy is named",
          "[seal]") {
    SealedProject p;
    FixtureStore store(p.suite);
    store.snapshot();
    REQUIRE(Project::slurp(p.object("pristine\n")) == "pristine\n");  // the second copy, named by its content
    std::string token;
    {
        FixtureStore::Lease lease(store, TreeAccess::shared, "seed.0");
        token = lease.token();
        p.write("data/config.txt", "rewritten by a test\n");
        SealedProject::rewrite(p.pristine("data/config.txt"), "rewritten by a test\n");
        const auto put_back = lease.restore();
        REQUIRE(put_back.size() == 1);
        CHECK(put_back.front().what == "restored data/config.txt");
    }
    CHECK(p.read("data/config.txt") == "pristine\n");                      // never the test's content
    CHECK(Project::slurp(p.pristine("data/config.txt")) == "pristine\n");  // the copy itself put back
    const auto reason = store_row(store.findings({{token, "seed.0"}}));
    CHECK_THAT(reason, Catch::Contains("was changed since the snapshot") &&
                           Catch::Contains("pristine/data/config.txt (after seed.0; put back from a verified copy)"));
    CHECK(store_row(store.findings({})).empty());  // an execution done again since does not count
}

TEST_CASE("a pristine copy changed on its own, or the copy of a file outside the groups, is found after the process",
          "[seal]") {
    SealedProject p;
    FixtureStore store(p.suite);
    store.snapshot();
    std::string token;
    {
        FixtureStore::Lease lease(store, TreeAccess::shared, "seed.2");
        token = lease.token();
        SealedProject::rewrite(p.pristine("README.txt"), "planted\n");
        fs::remove(p.pristine("data/config.txt"));
        CHECK(lease.restore().empty());  // nothing in the groups themselves
    }
    CHECK(Project::slurp(p.pristine("README.txt")) == "the project\n");
    CHECK(Project::slurp(p.pristine("data/config.txt")) == "pristine\n");
    CHECK_THAT(store_row(store.findings({{token, "seed.2"}})),
               Catch::Contains("pristine/README.txt (after seed.2; put back") &&
                   Catch::Contains("pristine/data/config.txt (after seed.2; put back"));
    // Put back and sealed again: the next look finds nothing.
    FixtureStore::Lease again(store, TreeAccess::shared, "seed.3");
    CHECK(again.restore().empty());
    CHECK(store_row(store.findings({{again.token(), "seed.3"}})).empty());
}

TEST_CASE("a lease file rewritten to name the test's content as pristine is put back from its sealed copy first", "[seal]") {
    SealedProject p;
    FixtureStore store(p.suite);
    store.snapshot();
    const auto lease_file = Project::slurp(store.lease_file());
    {
        FixtureStore::Lease lease(store, TreeAccess::shared, "seed.1");
        p.write("data/config.txt", "forged\n");
        SealedProject::rewrite(p.pristine("data/config.txt"), "forged\n");
        auto forged = lease_file;
        const auto at = forged.find(sha256_hex("pristine\n"));
        REQUIRE(at != std::string::npos);
        forged.replace(at, 64, sha256_hex("forged\n"));
        SealedProject::rewrite(store.lease_file(), forged);
        lease.restore();
    }
    CHECK(Project::slurp(store.lease_file()) == lease_file);
    CHECK(p.read("data/config.txt") == "pristine\n");
}

TEST_CASE("when no verified copy is left the restore stops, saying so, and never writes the test's content", "[seal]") {
    SealedProject p;
    FixtureStore store(p.suite);
    store.snapshot();
    FixtureStore::Lease lease(store, TreeAccess::shared, "seed.0");
    p.write("data/config.txt", "rewritten\n");
    SealedProject::rewrite(p.pristine("data/config.txt"), "rewritten\n");
    SealedProject::rewrite(p.object("pristine\n"), "rewritten\n");
    CHECK_THROWS_WITH(lease.restore(), Catch::Contains("cannot restore " + (p.root / "data/config.txt").string()) &&
                                           Catch::Contains("no verified copy of it is left"));
    CHECK(p.read("data/config.txt") == "rewritten\n");  // what the run left, kept: nothing better is known
}

TEST_CASE("a snapshot copies again what no longer holds its sealed content, and without a seal it reads every copy", "[seal]") {
    SealedProject p;
    FixtureStore store(p.suite);
    store.snapshot();
    SealedProject::rewrite(p.pristine("README.txt"), "changed between invocations\n");
    const auto notes = store.snapshot();
    REQUIRE(notes.size() == 1);
    CHECK_THAT(notes.front(), Catch::Contains("pristine/README.txt") && Catch::Contains("copied again"));
    CHECK(Project::slurp(p.pristine("README.txt")) == "the project\n");
    // A reboot empties the state directory: nothing sealed, so every copy is read before it is kept.
    fs::remove_all(p.top / "state");
    SealedProject::rewrite(p.pristine("README.txt"), "changed while nothing was sealed\n");
    CHECK(store.snapshot().empty());
    CHECK(Project::slurp(p.pristine("README.txt")) == "the project\n");
    CHECK(PristineSeal(StorePaths{p.root, p.store(), p.suite.evidence_dir}).sealed());
}

TEST_CASE("the copies a snapshot writes are read once after it, not after every process", "[seal]") {
    SealedProject p;
    FixtureStore store(p.suite);
    store.snapshot();
    const StorePaths paths{p.root, p.store(), p.suite.evidence_dir};
    // Written after the seal's time: racy, so the first check reads them all.
    REQUIRE(PristineSeal(paths).unverified() > 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(120));  // past the racy window
    {
        FixtureStore::Lease lease(store, TreeAccess::shared, "seed.0");  // a run that changed nothing
        CHECK(lease.restore().empty());
    }
    // That check, under the shared lock, vouched for every copy: the next reads none.
    CHECK(PristineSeal(paths).unverified() == 0);
    // A copy changed since is read again, and found.
    SealedProject::rewrite(p.pristine("README.txt"), "rewritten by a test\n");
    CHECK(PristineSeal(paths).unverified() == 1);
    PristineSeal seal(paths);
    const auto found = seal.check(false);
    REQUIRE(found.size() == 1);
    CHECK(found.front().copy == "pristine/README.txt");
    CHECK(PristineSeal(paths).unverified() == 1);  // nothing vouched for while a copy is tampered
}
