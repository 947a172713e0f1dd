#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "runs/pytest_command.hpp"
#include "runs/sandbox.hpp"
#include "support.hpp"

namespace fs = std::filesystem;
using namespace evgate;
using evgate::test::Env;
using evgate::test::TempDir;
using evgate::test::write_text;

namespace {

SuiteConfig suite_in(const fs::path& dir, std::vector<std::string> environment = {}) {
    SuiteConfig suite;
    suite.name = "s";
    suite.root = dir / "src";
    suite.evidence_dir = dir / "evidence";
    suite.plugin_dir = dir / "plugin";
    suite.python = "/usr/bin/python3";
    suite.environment = std::move(environment);
    return suite;
}

// The value of `name` in a process's environment; nullopt when it is not set.
std::optional<std::string> value_of(const ProcessSpec& spec, const std::string& name) {
    std::optional<std::string> value;
    for (const auto& e : spec.environment)
        if (e.rfind(name + "=", 0) == 0) value = e.substr(name.size() + 1);  // the last one wins, as for execve
    return value;
}

bool has(const std::vector<std::string>& names, const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

TEST_CASE("every pytest process gets HOME, TMPDIR and the XDG base directories in its sandbox", "[pytest_command]") {
    TempDir t;
    const Env config("XDG_CONFIG_HOME", std::string("/home/ana/.config"));
    const Env data("XDG_DATA_HOME", std::string("/home/ana/.local/share"));
    const Env mpl("MPLCONFIGDIR", std::string("/home/ana/.mpl"));
    const Env runtime("XDG_RUNTIME_DIR", std::string("/run/user/1000"));
    const auto suite = suite_in(t.path);
    const Env root("EVIDENCE_GATE_SANDBOX_DIR", (t.path / "sandboxes").string());
    const auto spec = pytest_process(suite, {}, suite.evidence_dir / "logs" / "seed.0.log");
    const auto sandbox = sandbox_of(suite, suite.evidence_dir / "logs" / "seed.0.log");
    CHECK(sandbox.parent_path().parent_path() == t.path / "sandboxes");
    CHECK(value_of(spec, "HOME") == (sandbox / "home").string());
    CHECK(value_of(spec, "TMPDIR") == (sandbox / "tmp").string());
    CHECK(value_of(spec, "XDG_CONFIG_HOME") == (sandbox / "home/.config").string());
    CHECK(value_of(spec, "XDG_CACHE_HOME") == (sandbox / "home/.cache").string());
    CHECK(value_of(spec, "XDG_DATA_HOME") == (sandbox / "home/.local/share").string());
    CHECK(value_of(spec, "XDG_STATE_HOME") == (sandbox / "home/.local/state").string());
    CHECK_FALSE(value_of(spec, "MPLCONFIGDIR"));                   // dropped: matplotlib falls back to the sandboxed home
    CHECK(value_of(spec, "XDG_RUNTIME_DIR") == "/run/user/1000");  // sockets, not the home
    for (const auto& e : spec.environment) CHECK(e.find("/home/ana") == std::string::npos);
}

TEST_CASE("a suite that pins HOME keeps the XDG directories below its own HOME", "[pytest_command]") {
    TempDir t;
    const Env sandboxes("EVIDENCE_GATE_SANDBOX_DIR", (t.path / "sandboxes").string());
    const Env config("XDG_CONFIG_HOME", std::string("/home/ana/.config"));
    const Env cache("XDG_CACHE_HOME", std::nullopt);
    const auto suite = suite_in(t.path, {"HOME=/srv/fixture-home", "XDG_DATA_HOME=/srv/data"});
    const auto spec = pytest_process(suite, {}, suite.evidence_dir / "logs" / "receipt.log");
    CHECK(value_of(spec, "HOME") == "/srv/fixture-home");
    CHECK(value_of(spec, "XDG_DATA_HOME") == "/srv/data");
    CHECK_FALSE(value_of(spec, "XDG_CONFIG_HOME"));  // unset: below the pinned HOME, as the specification says
    const auto env = sandbox_environment(suite, "/b/sandbox/<run>");
    CHECK(env.fresh == std::vector<std::string>{"TMPDIR"});
    CHECK(env.pinned == std::vector<std::string>{"HOME", "XDG_DATA_HOME"});
    CHECK(has(env.dropped, "XDG_CONFIG_HOME"));
    CHECK_FALSE(has(env.dropped, "XDG_CACHE_HOME"));  // only what is set is dropped
}

TEST_CASE("a PYTHONPATH in ENVIRONMENT is appended after the plugin's directory, never replacing it", "[pytest_command]") {
    TempDir t;
    const Env sandboxes("EVIDENCE_GATE_SANDBOX_DIR", (t.path / "sandboxes").string());
    const Env inherited("PYTHONPATH", std::string("/from/ctest"));
    const auto suite = suite_in(t.path, {"PYTHONPATH=/corp/plugins:/corp/lib", "TZ=UTC"});
    const auto spec = pytest_process(suite, {}, suite.evidence_dir / "logs" / "seed.1.log");
    CHECK(value_of(spec, "PYTHONPATH") == (t.path / "plugin").string() + ":/corp/plugins:/corp/lib:/from/ctest");
    CHECK(value_of(spec, "TZ") == "UTC");
    CHECK(std::count_if(spec.environment.begin(), spec.environment.end(),
                        [](const std::string& e) { return e.rfind("PYTHONPATH=", 0) == 0; }) == 1);
    const Env none("PYTHONPATH", std::nullopt);
    CHECK(value_of(pytest_process(suite_in(t.path), {}, suite.evidence_dir / "logs" / "x.log"), "PYTHONPATH") ==
          (t.path / "plugin").string());
}

TEST_CASE("the plugins evgate turns off come after the suite's own arguments, before the paths", "[pytest_command]") {
    // pytest takes the last -p of a name: a `-p randomly` in PYTEST_ARGS must not undo ours.
    TempDir t;
    auto suite = suite_in(t.path);
    suite.pytest_args = {"-p", "randomly", "-p", "cacheprovider"};
    suite.tests = {"tests"};
    const auto argv = pytest_process(suite, {"--evidence-gate-run=seed.1"}, suite.evidence_dir / "logs" / "seed.1.log").argv;
    const auto at = [&](const std::string& word) { return std::find(argv.begin(), argv.end(), word) - argv.begin(); };
    CHECK(argv.back() == "tests");
    CHECK(at("evidence_gate_pytest") < at("--evidence-gate-run=seed.1"));
    for (const char* off : {"no:randomly", "no:random_order", "no:cacheprovider"}) {
        CHECK(at(off) > at("randomly"));
        CHECK(at(off) > at("cacheprovider"));
        CHECK(argv[static_cast<std::size_t>(at(off)) - 1] == "-p");
        CHECK(at(off) < at("tests"));
    }
}

TEST_CASE("every kind of run gets a sandbox of one short length, wherever the build tree is", "[sandbox]") {
    TempDir t;
    const Env tmpdir("TMPDIR", std::nullopt);
    const Env root("EVIDENCE_GATE_SANDBOX_DIR", std::nullopt);
    auto suite = suite_in(t.path / "builds/a-group/a-subgroup/a-project-with-a-long-name/build/tests/python");
    std::set<std::size_t> lengths;
    for (const char* id : {"receipt", "seed.0", "seed.12.rerun.3", "seed.12.rerun.3.apart", "first.117", "sweep.2.rerun.1",
                           "localise/probe.41", "seed.3.fresh.2"}) {
        const auto tmp = sandbox_of(suite, suite.evidence_dir / "logs" / (std::string(id) + ".log")) / "tmp";
        lengths.insert(tmp.string().size());
        CHECK(tmp.string().rfind("/tmp/evgate-", 0) == 0);
        // Room for multiprocessing's pymp-XXXXXXXX/listener-XXXXXXXX and pytest's tmp_path below it.
        CHECK(tmp.string().size() + 64 < 108);
    }
    CHECK(lengths.size() == 1);
    // Two build trees never share one.
    auto other = suite;
    other.evidence_dir = t.path / "elsewhere";
    CHECK(sandbox_of(other, other.evidence_dir / "logs/seed.0.log") != sandbox_of(suite, suite.evidence_dir / "logs/seed.0.log"));
    remove_suite_sandboxes(suite);
    remove_suite_sandboxes(other);
}

TEST_CASE("a short TMPDIR holds the sandbox root; a long one is passed over for /tmp", "[sandbox]") {
    TempDir t;
    const Env root("EVIDENCE_GATE_SANDBOX_DIR", std::nullopt);
    fs::create_directories("/tmp/eg-short");
    {
        const Env tmpdir("TMPDIR", std::string("/tmp/eg-short"));
        CHECK(sandbox_root().parent_path() == "/tmp/eg-short");
    }
    const auto deep = t.path / "a/very/long/temporary/directory";
    fs::create_directories(deep);
    const Env tmpdir("TMPDIR", deep.string());
    CHECK(sandbox_root().parent_path() == "/tmp");
    fs::remove_all("/tmp/eg-short");
}

TEST_CASE("a sandbox root that others can write is refused, naming the variable that moves it", "[sandbox]") {
    TempDir t;
    const auto open = t.path / "open";
    fs::create_directories(open);
    fs::permissions(open, fs::perms::all);
    const Env root("EVIDENCE_GATE_SANDBOX_DIR", open.string());
    CHECK_THROWS_WITH(sandbox_root(), Catch::Contains("the sandbox directory") && Catch::Contains("mode 0777") &&
                                          Catch::Contains("EVIDENCE_GATE_SANDBOX_DIR"));
}

TEST_CASE("a run's sandbox is emptied at its start and removed at its end, whatever a test did to it", "[sandbox]") {
    TempDir t;
    const Env root("EVIDENCE_GATE_SANDBOX_DIR", (t.path / "sandboxes").string());
    const auto suite = suite_in(t.path);
    const auto log = suite.evidence_dir / "logs" / "seed.1.log";
    const auto sandbox = sandbox_of(suite, log);
    fs::create_directories(sandbox / "tmp/locked/inner");
    write_text(sandbox / "tmp/locked/inner/file", "x");
    write_text(sandbox / "home/.rc", "x");
    fs::permissions(sandbox / "tmp/locked", fs::perms::none);
    empty_sandbox(suite, log);
    CHECK(fs::is_empty(sandbox / "tmp"));
    CHECK(fs::is_empty(sandbox / "home"));
    fs::create_directories(sandbox / "tmp/locked");
    fs::permissions(sandbox / "tmp/locked", fs::perms::none);
    remove_sandbox(suite, log);
    CHECK_FALSE(fs::exists(sandbox));
}
