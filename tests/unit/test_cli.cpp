#include <catch2/catch.hpp>

#include <iostream>
#include <set>
#include <sstream>

#include "cli/cli.hpp"
#include "cli/spellcheck.hpp"
#include "io/atomic_file.hpp"
#include "io/error.hpp"
#include "io/json_io.hpp"
#include "support.hpp"

using namespace evgate;
using evgate::test::TempDir;
namespace fs = std::filesystem;
namespace po = boost::program_options;

namespace {

// What a stream received while this lived.
class Captured {
public:
    explicit Captured(std::ostream& stream) : stream_(stream), before_(stream.rdbuf(text_.rdbuf())) {}
    ~Captured() { stream_.rdbuf(before_); }
    Captured(const Captured&) = delete;
    Captured& operator=(const Captured&) = delete;
    std::string text() const { return text_.str(); }

private:
    std::ostream& stream_;
    std::ostringstream text_;
    std::streambuf* before_;
};

// run_cli with these words after `evgate`.
int cli(std::vector<std::string> words) {
    words.insert(words.begin(), "evgate");
    std::vector<char*> argv;
    for (auto& word : words) argv.push_back(word.data());
    return run_cli(static_cast<int>(argv.size()), argv.data());
}

const Command& command(const std::string& name) {
    for (const auto& c : commands())
        if (name == c.name) return c;
    FAIL("no command " << name);
    throw std::logic_error("unreachable");
}

// A suite without fixture groups, its suite.json written as evidence_gate_add_suite() writes it.
struct Suite {
    TempDir dir;
    fs::path file = dir.path / "build" / "evidence" / "s" / "suite.json";
    Suite() {
        fs::create_directories(dir.path / "src");
        fs::create_directories(file.parent_path());
        write_file_atomic(file, "{\"schema\": 1, \"name\": \"s\", \"root\": " + json_string((dir.path / "src").string()) +
                                    ", \"evidence_dir\": " + json_string(file.parent_path().string()) +
                                    ", \"plugin_dir\": \"/nowhere\", \"python\": \"/usr/bin/python3\", \"tests\": [],"
                                    " \"pytest_args\": [], \"environment\": [], \"runner_bundles\": []}\n");
    }
    std::string arg() const { return "--suite=" + file.string(); }
};

}  // namespace

TEST_CASE("edit distance counts inserts, deletes, replacements and swapped neighbours", "[cli]") {
    CHECK(edit_distance("ledger", "ledger") == 0);
    CHECK(edit_distance("ledgr", "ledger") == 1);
    CHECK(edit_distance("gaet", "gate") == 1);
    CHECK(edit_distance("histroy", "history") == 1);
    CHECK(edit_distance("rn", "run") == 1);
    CHECK(edit_distance("", "run") == 3);
    CHECK(edit_distance("kitten", "sitting") == 3);
}

TEST_CASE("a mistyped word is matched to the closest known one, never to a rewrite of all of it", "[cli]") {
    const std::vector<std::string> known{"run", "rerun", "ledger", "localise", "verdict", "verdicts"};
    CHECK(closest_word("ledgr", known) == "ledger");
    CHECK(closest_word("localize", known) == "localise");
    CHECK(closest_word("rerum", known) == "rerun");
    CHECK(closest_word("verdictz", known) == "verdict");  // a tie: the first in the table
    CHECK_FALSE(closest_word("rm", known));
    CHECK_FALSE(closest_word("history", known));
    CHECK_FALSE(closest_word("", known));
}

TEST_CASE("the command table: unique names, a summary and a handler each", "[cli]") {
    std::set<std::string> names;
    for (const auto& c : commands()) {
        CHECK(names.insert(c.name).second);
        CHECK(std::string(c.summary).size() > 10);
        CHECK(c.handler != nullptr);
    }
    CHECK(names.size() >= 18);
}

TEST_CASE("a mistyped command is an error that names the one probably meant", "[cli]") {
    Captured err(std::cerr);
    CHECK(cli({"ledgr", "--suite=x"}) == 2);
    CHECK(err.text() == "evgate: error: unknown command 'ledgr'; did you mean 'ledger'?\n");
}

TEST_CASE("an unknown command nothing resembles is an error followed by the command list", "[cli]") {
    Captured err(std::cerr);
    CHECK(cli({"frobnicate"}) == 2);
    CHECK(err.text().rfind("evgate: error: unknown command 'frobnicate'\nusage: evgate <command>", 0) == 0);
    for (const auto& c : commands()) CHECK(err.text().find(std::string("\n  ") + c.name + " ") != std::string::npos);
}

TEST_CASE("evgate --help lists every command on stdout; no command at all is a usage error", "[cli]") {
    {
        Captured out(std::cout);
        CHECK(cli({"--help"}) == 0);
        CHECK(out.text().find("  diff      compare two environment manifests") != std::string::npos);
    }
    Captured err(std::cerr);
    CHECK(cli({}) == 2);
    CHECK(err.text().rfind("usage: evgate <command>", 0) == 0);
}

TEST_CASE("every command answers --help with its options, loading nothing", "[cli]") {
    for (const auto& c : commands()) {
        INFO(c.name);
        Captured out(std::cout);
        CHECK(run_command(c, {"--help"}) == 0);  // no --suite: nothing is loaded, nothing required
        const auto help = out.text();
        CHECK(help.rfind(std::string("usage: evgate ") + c.name + " [options]", 0) == 0);
        CHECK(help.find(std::string("\n") + c.name + ": " + c.summary + "\n") != std::string::npos);
        CHECK((help.find("--suite arg") != std::string::npos) == (c.loads != Loads::nothing || std::string(c.name) == "history"));
        CHECK(help.find("--help") != std::string::npos);
    }
    CHECK(command_help(command("diff")).rfind("usage: evgate diff [options] <local.json> <runner.json>\n", 0) == 0);
    CHECK(command_help(command("replay")).find("--through arg") != std::string::npos);
    CHECK(command_help(command("gate")).find("--today arg") != std::string::npos);  // the ledger's options and its own
    CHECK(command_help(command("gate")).find("--from-ledger") != std::string::npos);
}

TEST_CASE("options are parsed strictly: no abbreviations, a mistyped one names the one meant", "[cli]") {
    const auto& run = command("run");
    const auto message = [&](const Args& args) {
        try {
            run_command(run, args);
        } catch (const po::error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    CHECK(message({"--suite=x", "--sed", "3"}) == "unrecognised option '--sed'; did you mean '--seed'?");
    CHECK(message({"--suite=x", "--sed=3"}) == "unrecognised option '--sed=3'; did you mean '--seed'?");
    CHECK(message({"--suite=x", "--see", "3"}) == "unrecognised option '--see'; did you mean '--seed'?");  // not guessed
    CHECK(message({"--suite=x", "--frobnicate"}) == "unrecognised option '--frobnicate'");
    CHECK(message({"--seed=3"}) == "the option '--suite' is required but missing");
    CHECK(message({"--suite=x"}) == "the option '--seed' is required but missing");
    CHECK(message({"--suite=x", "--seed=3", "stray"}).find("too many positional options") != std::string::npos);
}

TEST_CASE("each command gets what its entry says it needs, loaded before its handler", "[cli]") {
    Suite suite;
    {
        Captured out(std::cout);
        CHECK(run_command(command("check"), {suite.arg()}) == 0);  // the suite only: no receipt needed
        CHECK(out.text() == "evgate: s: inputs are valid (0 fixture groups)\n");
    }
    // The receipt: loaded (and missing here) before the handler starts.
    for (const Args& args : {Args{"order", "--seed=1"}, Args{"run", "--seed=1"}, Args{"rerun"}, Args{"localise"}, Args{"perturbed"}}) {
        INFO(args.front());
        CHECK(command(args.front()).loads >= Loads::receipt);
        Args words{suite.arg()};
        words.insert(words.end(), args.begin() + 1, args.end());
        CHECK_THROWS_WITH(run_command(command(args.front()), words), Catch::Contains("receipt.json"));
    }
    CHECK_THROWS_AS(run_command(command("check"), {"--suite=" + (suite.dir.path / "none.json").string()}), Error);
}

TEST_CASE("diff takes its two manifests as operands", "[cli]") {
    TempDir dir;
    const auto manifest = (dir.path / "m.json").string();
    write_file_atomic(manifest, R"({"schema": 1, "python": {"version": "3.11"}})");
    {
        Captured out(std::cout);
        CHECK(run_command(command("diff"), {manifest, manifest}) == 0);
        CHECK(out.text() == "evgate: the manifests agree\n");
    }
    CHECK_THROWS_WITH(run_command(command("diff"), {manifest}),
                      "diff needs two manifests: evgate diff <local.json> <runner.json>");
    CHECK_THROWS_WITH(run_command(command("diff"), {manifest, manifest, manifest}),
                      Catch::Contains("too many positional options"));
}
