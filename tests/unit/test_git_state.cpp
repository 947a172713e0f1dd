#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>

#include "io/git_state.hpp"
#include "support.hpp"

namespace fs = std::filesystem;
using namespace evgate;
using evgate::test::TempDir;
using evgate::test::write_text;

namespace {

// A repository with one commit: tracked.py and .gitignore (ignoring *.log).
struct Repo {
    TempDir dir;
    fs::path root = dir.path / "repo";
    fs::path scratch = dir.path / "git.out";
    Repo() {
        write_text(root / "tracked.py", "x = 1\n");
        write_text(root / ".gitignore", "*.log\n");
        git("init -q");
        git("add -A");
        git("-c user.name=t -c user.email=t@t commit -q -m init");
    }
    void git(const std::string& args) const {
        REQUIRE(std::system(("git -C '" + root.string() + "' " + args + " >/dev/null 2>&1").c_str()) == 0);
    }
    GitState state() const {
        auto s = read_git_state(root, scratch);
        REQUIRE(s);
        return *s;
    }
};

}  // namespace

TEST_CASE("a clean work tree has no dirty list and a fixed digest", "[git]") {
    Repo repo;
    const auto clean = repo.state();
    CHECK(clean.head.size() == 40);
    CHECK(clean.dirty.empty());
    CHECK(clean.digest == worktree_digest(repo.root, {}));
}

TEST_CASE("the digest changes with the content of dirty and untracked files, not with ignored or generated ones", "[git]") {
    Repo repo;
    write_text(repo.root / "tracked.py", "x = 2\n");
    const auto edited = repo.state();
    CHECK(edited.dirty == std::vector<std::string>{" M tracked.py"});
    write_text(repo.root / "tracked.py", "x = 3\n");  // same dirty list, other content
    const auto again = repo.state();
    CHECK(again.dirty == edited.dirty);
    CHECK(again.digest != edited.digest);

    write_text(repo.root / "new/helper.py", "y = 1\n");  // a wholly untracked directory: walked
    const auto untracked = repo.state();
    CHECK(dirty_paths(untracked.dirty) == std::vector<std::string>{"new/", "tracked.py"});
    write_text(repo.root / "new/helper.py", "y = 2\n");
    CHECK(repo.state().digest != untracked.digest);

    const auto before = repo.state().digest;
    write_text(repo.root / "run.log", "ignored\n");
    write_text(repo.root / "new/build/CMakeCache.txt", "a build tree\n");
    write_text(repo.root / "new/build/evidence/s/ledger.jsonl", "{}\n");
    write_text(repo.root / "new/__pycache__/helper.pyc", "bytes\n");
    write_text(repo.root / "new/.venv/lib.py", "z\n");
    CHECK(repo.state().digest == before);

    fs::remove(repo.root / "tracked.py");  // a deleted file counts as absent
    const auto deleted = repo.state();
    CHECK(dirty_paths(deleted.dirty) == std::vector<std::string>{"new/", "tracked.py"});
    CHECK(deleted.digest != before);
}

TEST_CASE("only what lies below ROOT counts", "[git]") {
    Repo repo;
    write_text(repo.root / "suite/tests/test_a.py", "def test_a(): pass\n");
    repo.git("add -A");
    repo.git("-c user.name=t -c user.email=t@t commit -q -m suite");
    const auto suite = repo.root / "suite";
    const auto clean = read_git_state(suite, repo.scratch);
    REQUIRE(clean);
    write_text(repo.root / "tracked.py", "x = 2\n");  // beside ROOT: another suite's, a README
    write_text(repo.root / "other/new.py", "y\n");
    const auto beside = read_git_state(suite, repo.scratch);
    CHECK(beside->dirty.empty());
    CHECK(beside->digest == clean->digest);
    write_text(suite / "tests/test_a.py", "def test_a(): assert 0\n");
    write_text(suite / "tests/new.py", "z\n");
    const auto below = read_git_state(suite, repo.scratch);
    CHECK(dirty_paths(below->dirty) == std::vector<std::string>{"suite/tests/new.py", "suite/tests/test_a.py"});
    CHECK(below->digest != clean->digest);
}

TEST_CASE("reading the git state rewrites nothing under .git", "[git]") {
    Repo repo;
    write_text(repo.root / "tracked.py", "x = 2\n");
    const auto index = repo.root / ".git" / "index";
    const auto stamp = fs::last_write_time(index);
    repo.state();
    CHECK(fs::last_write_time(index) == stamp);
    CHECK(!fs::exists(repo.root / ".git" / "index.lock"));
}

TEST_CASE("outside a git work tree there is no git state", "[git]") {
    TempDir dir;
    CHECK(!read_git_state(dir.path, dir.path / "git.out"));
}
