#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <random>

#include "pytest_config.hpp"

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

TEST_CASE("thinning options are found in addopts, joined or separate", "[config]") {
    CHECK(thinning_options({"-m", "not slow", "-q", "-knot_this", "--ignore-glob=x*", "-p", "no:foo", "-p", "xdist"}) ==
          std::vector<std::string>{"-m not slow", "-k not_this", "--ignore-glob x*", "-p no:foo"});
    CHECK(thinning_options({"-q", "--tb=short"}).empty());
}
