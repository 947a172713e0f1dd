#include <catch2/catch.hpp>

#include <fstream>

#include "io/atomic_file.hpp"
#include "io/json_io.hpp"
#include "runs/discover_cache.hpp"
#include "support.hpp"

using namespace evgate;
using evgate::test::TempDir;
namespace fs = std::filesystem;

namespace {

// A suite in a scratch tree: ROOT with tests, a build tree below it holding the evidence directory.
struct Project {
    TempDir dir;
    SuiteConfig suite;
    fs::path entries;
    std::vector<std::string> environment{"PATH=/usr/bin", "PYTEST_ADDOPTS=-x", "HOME=/root"};

    Project() {
        suite.name = "s";
        suite.root = dir.path / "root";
        suite.evidence_dir = suite.root / "build" / "evidence" / "s";
        suite.plugin_dir = dir.path / "plugin";
        suite.python = "/bin/sh";  // any file: only its stamp counts
        suite.source = suite.evidence_dir / "suite.json";
        for (const auto& d : {suite.root / "tests" / "__pycache__", suite.root / ".git", suite.evidence_dir, suite.plugin_dir})
            fs::create_directories(d);
        write("tests/test_a.py", "def test_a(): pass\n");
        write("pytest.ini", "[pytest]\n");
        write("build/CMakeCache.txt", "");
        write_file_atomic(suite.source, "{\"name\": \"s\"}\n");
        write_file_atomic(suite.plugin_dir / "evidence_gate_pytest.py", "# plugin\n");
        entries = suite.evidence_dir / "ctest-entries.cmake";
    }
    void write(const std::string& relative, const std::string& text) const {
        std::ofstream(suite.root / relative, std::ios::binary) << text;  // in place: a new inode would hide an edit
    }
    std::string fingerprint() const { return collection_fingerprint(suite, entries, "/bin/true", environment); }
    // Discover's bookkeeping after writing the entries for `ids`.
    std::string remember(const std::vector<std::string>& ids) const {
        write_file_atomic(entries, "add_test(...)\n");
        auto f = fingerprint();
        remember_entries(suite, entries, f, ids);
        return f;
    }
};

}  // namespace

TEST_CASE("the entries are reused while nothing collection reads has changed", "[discover]") {
    Project p;
    CHECK_FALSE(entries_current(p.suite, p.entries, p.fingerprint()));  // never collected
    p.remember({"tests/test_a.py::test_a"});
    CHECK(entries_current(p.suite, p.entries, p.fingerprint()));
    // Files collection never reads: bytecode caches, version control, build trees, other files.
    p.write("tests/__pycache__/test_a.cpython-311.pyc", "x");
    p.write(".git/conftest.py", "x");
    p.write("build/conftest.py", "x");
    p.write("tests/data.txt", "x");
    CHECK(entries_current(p.suite, p.entries, p.fingerprint()));
}

TEST_CASE("a change to a test file, a conftest, a config file, the suite or pytest's variables collects again", "[discover]") {
    const std::vector<std::function<void(Project&)>> changes = {
        [](Project& p) { p.write("tests/test_a.py", "def test_a(): pass\ndef test_b(): pass\n"); },
        [](Project& p) { p.write("tests/test_new.py", ""); },
        [](Project& p) { fs::remove(p.suite.root / "tests" / "test_a.py"); },
        [](Project& p) { p.write("tests/conftest.py", ""); },
        [](Project& p) { p.write("pytest.ini", "[pytest]\naddopts = -k a\n"); },
        [](Project& p) { p.write("tests/pyproject.toml", ""); },
        [](Project& p) { write_file_atomic(p.suite.source, "{\"name\": \"s\", \"pytest_args\": [\"-k\", \"a\"]}\n"); },
        [](Project& p) { p.environment.push_back("PYTHONPATH=/elsewhere"); },
        [](Project& p) { p.environment[1] = "PYTEST_ADDOPTS=-k a"; },
        [](Project& p) { write_file_atomic(p.suite.plugin_dir / "evidence_gate_pytest.py", "# plugin, new\n"); },
        [](Project& p) { write_file_atomic(p.suite.plugin_dir / "evidence_gate_leases.py", "# another module\n"); },
        [](Project& p) { write_file_atomic(p.entries, "edited by hand\n"); },
    };
    for (std::size_t i = 0; i < changes.size(); ++i) {
        INFO("change " << i);
        Project p;
        p.remember({"tests/test_a.py::test_a"});
        changes[i](p);
        CHECK_FALSE(entries_current(p.suite, p.entries, p.fingerprint()));
    }
}

TEST_CASE("variables that do not reach pytest's collection leave the entries alone, and no value is written", "[discover]") {
    Project p;
    p.environment.push_back("DEPLOY_API_TOKEN=canary-4711");
    p.remember({"t::a"});
    p.environment.back() = "DEPLOY_API_TOKEN=another";
    p.environment[0] = "PATH=/opt/bin";
    CHECK(entries_current(p.suite, p.entries, p.fingerprint()));
    p.environment.push_back("PYTHONSECRET=canary-4711");
    p.remember({"t::a"});
    for (const auto& entry : fs::directory_iterator(p.suite.evidence_dir))
        CHECK_THAT(read_file(entry.path()), !Catch::Contains("canary-4711") && !Catch::Contains("PYTHONSECRET"));
}

TEST_CASE("the ledger step forgets entries registered for another collection than the receipt's", "[discover]") {
    Project p;
    const auto f = p.remember({"t::a", "t::b"});
    CHECK_FALSE(forget_stale_entries(p.suite, {"t::a", "t::b"}));
    CHECK(entries_current(p.suite, p.entries, f));
    CHECK(forget_stale_entries(p.suite, {"t::a", "t::b", "t::c"}));  // a parametrize that reads a data file
    CHECK_FALSE(entries_current(p.suite, p.entries, f));
    CHECK_FALSE(forget_stale_entries(p.suite, {"t::a"}));  // nothing left to forget
}

TEST_CASE("what the project's build puts on the path collects again when it appears or is rebuilt", "[discover]") {
    // A DEPENDS target's file, and a module in a PYTHON_PATH_PREPEND directory, outside ROOT.
    const std::vector<std::function<void(Project&)>> changes = {
        [](Project& p) { write_file_atomic(p.dir.path / "out" / "geo.so", "built\n"); },
        [](Project& p) { write_file_atomic(p.dir.path / "out" / "geo_helpers.py", ""); },
        [](Project& p) { write_file_atomic(p.dir.path / "lib" / "libgeo.so", "built\n"); },
    };
    for (std::size_t i = 0; i < changes.size(); ++i) {
        INFO("change " << i);
        Project p;
        fs::create_directories(p.dir.path / "out");
        fs::create_directories(p.dir.path / "lib");
        p.suite.python_path_prepend = {(p.dir.path / "out").string()};
        p.suite.depends = {{"geo", p.dir.path / "lib" / "libgeo.so"}};
        p.remember({"t::a"});
        CHECK(entries_current(p.suite, p.entries, p.fingerprint()));
        changes[i](p);
        CHECK_FALSE(entries_current(p.suite, p.entries, p.fingerprint()));
    }
}
