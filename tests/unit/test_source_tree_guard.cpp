// The source tree outside the fixture groups: put back, kept, new files named, collections recorded.
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

TEST_CASE("the source tree outside the groups: an edit, a removal and a chmod are put back and kept, new files named and left",
          "[store]") {
    Project p("data: data/*\n");
    p.write("data/a.txt", "pristine\n");
    p.write("README.txt", "the project\n");
    p.write("docs/guide.md", "guide\n");
    p.write("src/tool.py", "print('tool')\n");
    p.write(".mypy_cache/cache", "a tool's cache: nobody's\n");
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
        p.write(".mypy_cache/new", "inside a tool's cache\n");
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
                                    !Catch::Contains(".mypy_cache") && Catch::Contains(p.root.string()));
    const auto kept = found[0].reason.substr(found[0].reason.find("kept in ") + 8);
    CHECK(Project::slurp(fs::path(kept.substr(0, kept.size() - 1)) / "README.txt") == "edited by a test\n");
    fs::remove_all(p.root / "notes");  // deleted again before the ledger: it was scratch after all
    CHECK(store.findings({{token, "seed.3"}}).size() == 1);
    Receipt receipt;
    CHECK(store.access_for(receipt.declares_writes()) == TreeAccess::exclusive);  // entries came and went: the rest takes turns
}

TEST_CASE("outside git, hidden directories are guarded too, but never version control, caches and environments", "[store]") {
    Project p("data: data/*\n");
    p.write("data/a.txt", "pristine\n");
    p.write(".config/app.toml", "mode = \"prod\"\n");
    p.write(".env", "DEBUG=0\n");
    const std::vector<std::string> nobodys = {".venv/lib/site.py", ".tox/py3/log.txt", ".nox/s/log.txt", ".eggs/e.egg",
                                              ".pytest_cache/v/x", ".ruff_cache/x", "__pycache__/m.pyc", "src/__pycache__/m.pyc",
                                              ".hg/store", ".svn/entries"};
    p.write(".venv/pyvenv.cfg", "home = /usr/bin\n");
    for (const auto& path : nobodys) p.write(path, "as the tool wrote it\n");
    FixtureStore store(p.suite);
    store.snapshot();
    std::string token;
    {
        FixtureStore::Lease lease(store, TreeAccess::shared, "seed.1");
        token = lease.token();
        p.write(".config/app.toml", "mode = \"test\"\n");
        p.write(".env", "DEBUG=1\n");
        p.write(".config/new.toml", "left by a test\n");
        for (const auto& path : nobodys) p.write(path, "rewritten by its tool\n");
        p.write(".venv/lib/new.py", "installed\n");
        p.write(".mypy_cache/new", "a new cache\n");
        lease.restore();
    }
    CHECK(p.read(".config/app.toml") == "mode = \"prod\"\n");
    CHECK(p.read(".env") == "DEBUG=0\n");
    for (const auto& path : nobodys) CHECK(p.read(path) == "rewritten by its tool\n");  // never put back
    const auto found = store.findings({{token, "seed.1"}});
    REQUIRE(found.size() == 2);
    CHECK_THAT(found[0].reason, Catch::StartsWith("seed.1 changed .config/app.toml, .env in the source tree"));
    CHECK_THAT(found[1].reason, Catch::Contains(".config/new.toml (after seed.1)") && !Catch::Contains(".venv") &&
                                    !Catch::Contains(".mypy_cache"));
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
