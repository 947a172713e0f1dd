#include <catch2/catch.hpp>

#include <fstream>

#include "runs/receipt_sources.hpp"
#include "support.hpp"

namespace fs = std::filesystem;
using namespace evgate;
using evgate::test::TempDir;
using evgate::test::write_text;

namespace {

FixtureFile guarded(const std::string& path, const std::string& identity, unsigned mode = 0644) {
    return {path, FileState{identity, mode, 1}};
}

std::vector<std::string> paths(const Sources& sources) {
    std::vector<std::string> out;
    for (const auto& f : sources.files) out.push_back(f.path);
    return out;
}

// A monorepo: the work tree at `top`, ROOT = top/python, a library beside it, a build tree and
// a virtual environment beside it too, and a plugin far away.
struct Monorepo {
    TempDir t;
    fs::path top = t.path / "repo", root = top / "python";
    Monorepo() {
        write_text(root / "tests/test_a.py", "import helper\n");
        write_text(top / "lib/helper.py", "def answer():\n    return 42\n");
        write_text(top / "build/CMakeCache.txt", "");
        write_text(top / "build/ext/module.py", "");
        write_text(top / "venv/pyvenv.cfg", "");
        write_text(top / "venv/lib/dep.py", "");
        write_text(t.path / "elsewhere/corp_plugin.py", "");
    }
    Sources list(const std::vector<std::string>& imported, std::vector<fs::path> left_out = {}) const {
        return list_sources({root, top, std::move(left_out)}, {guarded("tests/test_a.py", "sha256:a")}, imported);
    }
};

}  // namespace

TEST_CASE("sources: the tree listing, without bytecode and the evidence handed over", "[receipt_sources]") {
    TempDir t;
    const auto sources = list_sources({t.path, {}, {t.path / "shards"}},
                                      {guarded("tests/test_a.py", "sha256:a"), guarded("tests/__pycache__/x.pyc", "sha256:c"),
                                       guarded("shards/1/receipt.json", "sha256:r"), guarded("shardsX.py", "sha256:s"),
                                       guarded("run.sh", "sha256:r", 0755)},
                                      {});
    CHECK(paths(sources) == std::vector<std::string>{"run.sh", "shardsX.py", "tests/test_a.py"});
    CHECK(sources.files[0].state == "sha256:r 755");
    CHECK(sources.outside.empty());
}

TEST_CASE("sources: what pytest imported from beside ROOT is named relative to ROOT", "[receipt_sources]") {
    const Monorepo repo;
    const auto sources = repo.list({(repo.top / "lib/helper.py").string(), (repo.root / "tests/test_a.py").string(),
                                    (repo.top / "build/ext/module.py").string(), (repo.top / "venv/lib/dep.py").string(),
                                    (repo.t.path / "elsewhere/corp_plugin.py").string()});
    const auto plugin = fs::weakly_canonical(repo.t.path / "elsewhere/corp_plugin.py").generic_string();
    CHECK(paths(sources) == std::vector<std::string>{"../lib/helper.py", plugin, "tests/test_a.py"});
    CHECK(sources.outside == std::vector<std::string>{"../lib/helper.py", plugin});
    CHECK(sources.files[0].state.rfind("sha256:", 0) == 0);
    // A directory left out (the plugin's own) holds no sources.
    CHECK(paths(repo.list({(repo.t.path / "elsewhere/corp_plugin.py").string()}, {repo.t.path / "elsewhere"})) ==
          std::vector<std::string>{"tests/test_a.py"});
}

TEST_CASE("sources: the binaries under test, DEPENDS files and modules imported from a build tree", "[receipt_sources]") {
    const Monorepo repo;
    write_text(repo.top / "build/ext/pygeo.cpython-311-x86_64-linux-gnu.so", "module, first build");
    write_text(repo.top / "build/lib/libgeo.so", "library");
    write_text(repo.top / "venv/lib/numpy.so", "installed");
    const auto module = repo.top / "build/ext/pygeo.cpython-311-x86_64-linux-gnu.so";
    const std::vector<std::string> imported = {module.string(), (repo.top / "build/ext/module.py").string(),
                                               (repo.top / "venv/lib/numpy.so").string()};
    const std::vector<DependsFile> depends = {{"geo", repo.top / "build/lib/libgeo.so"}, {"missing", repo.top / "build/none.so"}};
    const auto list = [&] { return list_sources({repo.root, repo.top, {}}, {guarded("tests/test_a.py", "sha256:a")}, imported, depends); };
    const auto before = list();
    REQUIRE(before.built.size() == 3);
    CHECK(before.built[0].path == "<build>/ext/pygeo.cpython-311-x86_64-linux-gnu.so");
    CHECK(before.built[0].target.empty());
    CHECK(before.built[0].size == 19);
    CHECK(before.built[0].digest.rfind("sha256:", 0) == 0);
    CHECK(before.built[1].path == "<build>/lib/libgeo.so");
    CHECK(before.built[1].target == "geo");
    CHECK(before.built[2].path == "<build>/none.so");
    CHECK(before.built[2].digest == "absent");
    // The generated .py and the installed module are no sources; the binaries are in the listing.
    CHECK(paths(before) == std::vector<std::string>{"<build>/ext/pygeo.cpython-311-x86_64-linux-gnu.so", "<build>/lib/libgeo.so",
                                                    "<build>/none.so", "tests/test_a.py"});
    write_text(module, "module, rebuilt");
    const auto after = list();
    CHECK(after.digest != before.digest);
    CHECK(compare_sources(before, after).changed == std::vector<std::string>{"<build>/ext/pygeo.cpython-311-x86_64-linux-gnu.so"});
}

TEST_CASE("sources: an edit outside ROOT changes the digest, and the difference names the file", "[receipt_sources]") {
    const Monorepo repo;
    const std::vector<std::string> imported = {(repo.top / "lib/helper.py").string()};
    const auto before = repo.list(imported);
    CHECK(repo.list(imported).digest == before.digest);
    write_text(repo.top / "lib/helper.py", "def answer():\n    return 41\n");
    const auto after = repo.list(imported);
    REQUIRE(after.digest != before.digest);
    const auto diff = compare_sources(before, after);
    CHECK(diff.changed == std::vector<std::string>{"../lib/helper.py"});
    CHECK(diff.only_here.empty());
    CHECK(diff.only_there.empty());
    fs::remove(repo.top / "lib/helper.py");
    CHECK(repo.list(imported).files[0].state == "absent");
}

TEST_CASE("sources: the listing reads back only as the one its digest was made of", "[receipt_sources]") {
    TempDir t;
    const auto sources = list_sources({t.path, {}, {}}, {guarded("a.py", "sha256:a"), guarded("b.py", "sha256:b")}, {});
    write_text(t.path / "sources.json", sources_json(sources));
    const auto back = read_sources(t.path / "sources.json");
    REQUIRE(back);
    CHECK(back->digest == sources.digest);
    CHECK(paths(*back) == paths(sources));
    auto text = sources_json(sources);
    text.replace(text.find("sha256:b"), 8, "sha256:B");
    write_text(t.path / "sources.json", text);
    CHECK_FALSE(read_sources(t.path / "sources.json"));
    CHECK_FALSE(read_sources(t.path / "none.json"));
}

TEST_CASE("sources: differences in both directions", "[receipt_sources]") {
    Sources there, here;
    there.files = {{"a", "1"}, {"b", "1"}, {"d", "1"}};
    here.files = {{"a", "1"}, {"b", "2"}, {"c", "1"}};
    const auto diff = compare_sources(there, here);
    CHECK(diff.changed == std::vector<std::string>{"b"});
    CHECK(diff.only_here == std::vector<std::string>{"c"});
    CHECK(diff.only_there == std::vector<std::string>{"d"});
    CHECK(compare_sources(here, here).empty());
}
