#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <random>

#include "inputs/pytest_config.hpp"

namespace fs = std::filesystem;
using namespace evgate;

namespace {

struct TempTree {
    fs::path root = fs::temp_directory_path() / ("evgate-config-" + std::to_string(std::random_device{}()));
    TempTree() { fs::create_directories(root); }
    ~TempTree() { fs::remove_all(root); }
    void write(const std::string& relative, const std::string& text) const {
        fs::create_directories((root / relative).parent_path());
        std::ofstream(root / relative) << text;
    }
};

}  // namespace

TEST_CASE("config_in follows pytest's order and needs the pytest section where pytest does", "[config]") {
    TempTree t;
    t.write("a/pyproject.toml", "[project]\nname = 'x'\n");
    t.write("a/setup.cfg", "[tool:pytest]\n");
    CHECK(config_in(t.root / "a") == t.root / "a/setup.cfg");  // pyproject without the section does not count
    t.write("a/pyproject.toml", "[tool.pytest.ini_options]\ntestpaths = ['tests']\n");
    CHECK(config_in(t.root / "a") == t.root / "a/pyproject.toml");
    t.write("a/pytest.ini", "");  // an empty pytest.ini still wins
    CHECK(config_in(t.root / "a") == t.root / "a/pytest.ini");
    t.write("b/tox.ini", "[tox]\n");
    CHECK_FALSE(config_in(t.root / "b"));
}

TEST_CASE("the expected config is at ROOT or above; strays are below it", "[config]") {
    TempTree t;
    t.write("pytest.ini", "[pytest]\n");
    t.write("proj/tests/test_x.py", "");
    t.write("proj/src/pytest.ini", "");
    t.write("proj/tests/sub/tox.ini", "[pytest]\n");
    t.write("proj/.venv/pyvenv.cfg", "");
    t.write("proj/.venv/lib/pytest.ini", "");
    t.write("proj/build/CMakeCache.txt", "");
    t.write("proj/build/pytest.ini", "");
    CHECK(expected_config(t.root / "proj") == fs::weakly_canonical(t.root / "pytest.ini"));
    CHECK(stray_configs(t.root / "proj") == std::vector<std::string>{"src/pytest.ini", "tests/sub/tox.ini"});
}

TEST_CASE("pytest 8.1 and later take the nearest bare pyproject.toml when nothing else is found", "[config]") {
    TempTree t;
    t.write("proj/pyproject.toml", "[project]\nname = 'x'\n");  // no pytest table
    t.write("proj/sub/tests/test_a.py", "");
    const auto root = t.root / "proj" / "sub";
    CHECK_FALSE(expected_config(root).has_value());  // pytest 7.2: no config file
    CHECK(expected_config(root, true) == fs::weakly_canonical(t.root / "proj/pyproject.toml"));
    t.write("pytest.ini", "[pytest]\n");  // a real one anywhere up the tree wins over the bare one
    CHECK(expected_config(root, true) == fs::weakly_canonical(t.root / "pytest.ini"));
    CHECK(takes_bare_pyproject("8.1.0"));
    CHECK(takes_bare_pyproject("9.2.0"));
    CHECK_FALSE(takes_bare_pyproject("8.0.2"));
    CHECK_FALSE(takes_bare_pyproject("7.2.1"));
    CHECK_FALSE(takes_bare_pyproject("unknown"));
}

TEST_CASE("a stray config warns only where it could re-root a collected test", "[config]") {
    TempTree t;
    t.write("third_party/lib/.git", "gitdir: ../../.git/modules/lib\n");  // a submodule's work tree
    const auto sorted = sort_stray_configs(t.root,
                                           {"docs/tox.ini", "tests/pytest.ini", "tests/unit/deep/setup.cfg",
                                            "third_party/lib/setup.cfg", "third_party/lib/tests/pytest.ini"},
                                           {"tests/unit/test_a.py", "tests/test_b.py", "test_top.py"});
    CHECK(sorted.rerooting == std::vector<std::string>{"tests/pytest.ini"});
    CHECK(sorted.ignored == std::vector<std::string>{"docs/tox.ini", "tests/unit/deep/setup.cfg", "third_party/lib/setup.cfg",
                                                     "third_party/lib/tests/pytest.ini"});
    CHECK(sorted.in_submodules == std::vector<std::string>{"third_party/lib/setup.cfg", "third_party/lib/tests/pytest.ini"});
}

TEST_CASE("thinning options are found in addopts, joined or separate", "[config]") {
    CHECK(thinning_options({"-m", "not slow", "-q", "-knot_this", "--ignore-glob=x*", "-p", "no:foo", "-p", "xdist"}) ==
          std::vector<std::string>{"-m not slow", "-k not_this", "--ignore-glob x*", "-p no:foo"});
    CHECK(thinning_options({"-q", "--tb=short"}).empty());
}

TEST_CASE("options are read as pytest reads them: joined, separate, with '=', combined short flags", "[config]") {
    const auto options = pytest_options({"-qk", "expr", "-mslow", "-k=a or b", "--deselect=t::x", "--deselect", "t::y",
                                         "-o", "python_files=x.py", "-opython_classes=C", "--override-ini=testpaths=t",
                                         "--override-ini", "norecursedirs=n", "-vx", "--", "-k", "not_an_option"});
    std::vector<std::string> text;
    for (const auto& o : options) text.push_back(o.text());
    CHECK(text == std::vector<std::string>{"-q", "-k expr", "-m slow", "-k a or b", "--deselect t::x", "--deselect t::y",
                                           "-o python_files=x.py", "-o python_classes=C", "--override-ini testpaths=t",
                                           "--override-ini norecursedirs=n", "-v", "-x"});
    // A plugin's short option stops the reading of its word; its value is a positional.
    CHECK(pytest_options({"-n", "4", "-k", "x"}).size() == 1);
}

TEST_CASE("every ini override that changes what is collected thins the run, in every form", "[config]") {
    for (const char* key : {"python_files", "python_classes", "python_functions", "testpaths", "norecursedirs", "addopts",
                            "filterwarnings"}) {
        const std::string value = std::string(key) + "=v";
        CAPTURE(key);
        CHECK(thinning_options({"-o", value}) == std::vector<std::string>{"-o " + value});
        CHECK(thinning_options({"-o" + value}) == std::vector<std::string>{"-o " + value});
        CHECK(thinning_options({"-o=" + value}) == std::vector<std::string>{"-o " + value});
        CHECK(thinning_options({"--override-ini=" + value}) == std::vector<std::string>{"--override-ini " + value});
        CHECK(thinning_options({"--override-ini", value}) == std::vector<std::string>{"--override-ini " + value});
        CHECK(thinning_options({"-qo", value}) == std::vector<std::string>{"-o " + value});
    }
    // Other keys do not: they change how a run looks, not what runs.
    CHECK(thinning_options({"-o", "console_output_style=classic", "-o", "xfail_strict=true"}).empty());
    CHECK(thinning_options({"-o", "xfail_strict=False"}) == std::vector<std::string>{"-o xfail_strict=False"});
}

TEST_CASE("options that drop conftest files or reroute collection thin the run", "[config]") {
    CHECK(thinning_options({"--noconftest", "--confcutdir=sub", "--confcutdir", "other", "--pyargs"}) ==
          std::vector<std::string>{"--noconftest", "--confcutdir sub", "--confcutdir other", "--pyargs"});
    // Evidence runs rerun nothing inside a run (evidence_gate_aside.py): the receipt says so, not this.
    CHECK(thinning_options({"--reruns", "3", "--reruns=0"}).empty());
    CHECK(thinning_options({"-pno:doctest", "-p=no:x", "-p", "xdist"}) == std::vector<std::string>{"-p no:doctest", "-p no:x"});
    // Plugins every run blocks anyway; a warnings filter adds to the project's, it does not replace them.
    CHECK(thinning_options({"-p", "no:cacheprovider", "-pno:stepwise", "-pno:randomly", "-p", "no:random_order", "-W",
                            "ignore"})
              .empty());
    // Incomplete runs block already; these do not thin silently.
    CHECK(thinning_options({"-x", "--maxfail=2", "--maxfail", "3", "--exitfirst"}).empty());
    // Another config file or rootdir is another suite (its python_files, testpaths, addopts).
    CHECK(thinning_options({"-c", "other.ini", "--config-file=ci.toml", "--inifile", "x.ini", "--rootdir", "sub"}) ==
          std::vector<std::string>{"-c other.ini", "--config-file ci.toml", "--inifile x.ini", "--rootdir sub"});
    // A long option is never matched by a prefix: --ignorex is not --ignore.
    CHECK(thinning_options({"--ignorex", "--deselected=x"}).empty());
}

TEST_CASE("options under which pytest calls no test are hollow, not thinning", "[config]") {
    CHECK(hollow_options({"--setup-only", "--setup-plan", "--co", "--collect-only", "-k", "x"}) ==
          std::vector<std::string>{"--setup-only", "--setup-plan", "--co", "--collect-only"});
    CHECK(thinning_options({"--setup-only"}).empty());
}

// (A case's name must not start with '-': CTest hands it to Catch as an argument.)
TEST_CASE("an -o in the ini file's addopts is dropped, as pytest ignores it there", "[config]") {
    CHECK(thinning_options({"-o", "python_functions=test_ok", "-m", "fast"}, false) == std::vector<std::string>{"-m fast"});
    CHECK(thinning_options({"--override-ini=python_functions=test_ok"}, false).empty());
}
