// Run ids and outcome words: RunId and Outcome spell them, parse them and say what they are; no
// other file of tools/core spells one (the last test scans the sources for literals).
#include <catch2/catch.hpp>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>

#include "inputs/outcome.hpp"
#include "inputs/run_id.hpp"

using namespace evgate;
namespace fs = std::filesystem;

TEST_CASE("a run id is read back byte for byte, whatever its kind and suffixes", "[run_id]") {
    for (const char* text : {"seed.0", "seed.12", "seed.18446744073709551615", "first.1", "alone.3", "sweep.2", "perturbed",
                             "probe", "replay", "seed.3.rerun.1", "seed.3.rerun.1.apart", "seed.1.rerun.1.fresh.7", "first.2.fresh.1",
                             "sweep.1.rerun.2", "seed.2.apart", "perturbed.apart", "seed.0.rerun.10.rerun.2"}) {
        INFO(text);
        const auto id = RunId::parse(text);
        REQUIRE(id);
        CHECK(id->str() == text);
        CHECK(RunId::of(text) == *id);
    }
}

TEST_CASE("a run id is built from its kind, number and suffixes", "[run_id]") {
    CHECK(RunId::seed(3).str() == "seed.3");
    CHECK(RunId::first(117).str() == "first.117");
    CHECK(RunId::alone(2).str() == "alone.2");
    CHECK(RunId::sweep(4).str() == "sweep.4");
    CHECK(RunId::perturbed().str() == "perturbed");
    CHECK(RunId::probe().str() == "probe");
    CHECK(RunId::replay().str() == "replay");
    CHECK(RunId().str().empty());  // a plan not named yet
    CHECK(RunId::seed(12).rerun(3).str() == "seed.12.rerun.3");
    CHECK(RunId::seed(12).rerun(3).apart().str() == "seed.12.rerun.3.apart");
    CHECK(RunId::seed(3).fresh(2).str() == "seed.3.fresh.2");
    CHECK(std::string(kAloneOrder) == "alone");
}

TEST_CASE("what a run id is: its kind whatever its suffixes, its base, its last step", "[run_id]") {
    const auto rerun = RunId::of("seed.3.rerun.1");
    CHECK(rerun.is_seed());
    CHECK_FALSE(rerun.is_plain());
    CHECK(rerun.kind() == RunId::Kind::seed);
    CHECK(rerun.number() == 3);
    CHECK(rerun.has(RunId::Step::rerun));
    CHECK_FALSE(rerun.has(RunId::Step::fresh));
    CHECK(rerun.base() == RunId::seed(3));
    CHECK(RunId::seed(3).base() == RunId::seed(3));

    const auto fresh = RunId::of("seed.1.rerun.1.fresh.2");
    CHECK(fresh.is_fresh());
    CHECK_FALSE(fresh.is_apart());
    CHECK(fresh.suffixes().back().number == 2);
    CHECK(fresh.before_last(RunId::Step::fresh) == RunId::of("seed.1.rerun.1"));
    CHECK(RunId::of("seed.1.fresh.2.apart").before_last(RunId::Step::fresh) == RunId::seed(1));
    CHECK_FALSE(RunId::seed(1).rerun(1).before_last(RunId::Step::fresh));
    CHECK(RunId::of("seed.2.apart").is_apart());
    CHECK_FALSE(RunId::of("seed.2.apart.rerun.1").is_apart());

    CHECK(RunId::of("first.1").is_first());
    CHECK(RunId::of("first.1").is_plain());
    CHECK(RunId::of("alone.4").is_alone());
    CHECK(RunId::of("sweep.2.rerun.1").is_sweep());
    CHECK(RunId::of("perturbed").is_perturbed());
    CHECK(RunId::of("perturbed").number() == 0);
    CHECK(RunId::seed(1) != RunId::first(1));
    CHECK(RunId::seed(1) != RunId::seed(1).rerun(1));
}

TEST_CASE("anything else is no run id", "[run_id]") {
    for (const char* text : {"", "seed", "seed.", "seed.x", "seed.01", "seed.-1", "seed.+1", "seed.1 ", " seed.1", "Seed.1",
                             "seed.1.", "seed..1", "seed.1.rerun", "seed.1.rerun.", "seed.1.rerun.x", "seed.1.apart.3",
                             "seed.1.again.1", "perturbed.1", "perturbed.", "probe.1", "alone", "first", "sweep",
                             "ci-host:seed.3", "seed.18446744073709551616", "seed.3.fresh.01", "receipt", "localise/probe.41"}) {
        INFO("'" << text << "'");
        CHECK_FALSE(RunId::parse(text));
    }
    CHECK_THROWS_WITH(RunId::of("ci:seed.1"), "not a run id: 'ci:seed.1'");
    CHECK_FALSE(RunId::parse("replay.1"));
}

TEST_CASE("another machine's run is its id there under the runner's name, or the runner's name alone", "[run_id]") {
    const auto bundle = RunId::seed(3).rerun(1).on("ci-host");
    CHECK(bundle.str() == "ci-host:seed.3.rerun.1");
    CHECK(bundle.runner() == "ci-host");
    CHECK(bundle.kind() == RunId::Kind::seed);
    CHECK_FALSE(bundle.local());  // what RunId::parse says of its text
    CHECK(RunId::seed(3).local() == RunId::seed(3));
    CHECK(bundle.base().str() == "ci-host:seed.3");
    for (const char* text : {"ci-host:seed.3.rerun.1", "mac-shard-2-of-3:perturbed", "a:b:first.2", "ci:replay"}) {
        INFO(text);
        const auto id = RunId::parse_any(text);
        REQUIRE(id);
        CHECK(id->str() == text);
        CHECK_FALSE(RunId::parse(text));
    }
    CHECK(RunId::parse_any("seed.1") == RunId::seed(1));
    CHECK(RunId::parse_any("a:b:first.2")->runner() == "a:b");  // a JUnit runner's run of a bundle: the last name is the id's
    CHECK(RunId::seed(0).on("ci").on("junit-host").str() == "junit-host:ci:seed.0");
    for (const char* text : {":seed.1", "ci:", "ci:seed", "ci-host", "ci:host:x"}) {
        INFO("'" << text << "'");
        CHECK_FALSE(RunId::parse_any(text));
    }
    const auto junit = RunId::runner_run("ci-mac");  // a plain JUnit report: one run, named for its runner
    CHECK(junit.str() == "ci-mac");
    CHECK(junit.runner() == "ci-mac");
    CHECK_FALSE(junit.local());
    CHECK_FALSE(RunId().local());
}

TEST_CASE("outcome words are read back as they are written, and each says what it does of the test", "[outcome]") {
    const std::pair<Outcome, OutcomeClass> all[] = {
        {Outcome::passed, OutcomeClass::pass}, {Outcome::failed, OutcomeClass::fail}, {Outcome::error, OutcomeClass::fail}, {Outcome::skipped, OutcomeClass::skip}, {Outcome::xfailed, OutcomeClass::pass}, {Outcome::xpassed, OutcomeClass::pass}, {Outcome::uncalled, OutcomeClass::none}, {Outcome::interrupted, OutcomeClass::none}, {Outcome::missing, OutcomeClass::none}};
    std::set<std::string_view> words;
    for (const auto& [outcome, cls] : all) {
        const auto word = to_string(outcome);
        INFO(word);
        CHECK(words.insert(word).second);
        CHECK(parse_outcome(word) == outcome);
        CHECK(read_outcome(word, "records.jsonl", 3) == outcome);
        CHECK(outcome_class(outcome) == cls);
    }
    CHECK(to_string(Outcome::passed) == "passed");
    CHECK(to_string(Outcome::uncalled) == "uncalled");
    CHECK_FALSE(parse_outcome("PASSED"));
    CHECK_FALSE(parse_outcome("pass"));
    CHECK_THROWS_WITH(read_outcome("PASSED", "runs/seed.0.jsonl", 7), "runs/seed.0.jsonl:7: unknown outcome 'PASSED'");
    CHECK(TestResult{}.outcome == Outcome::missing);  // no result until one is read
    CHECK(to_string(OutcomeClass::pass) == "pass");
    CHECK(to_string(OutcomeClass::fail) == "fail");
    CHECK(to_string(OutcomeClass::skip) == "skip");
    CHECK(to_string(OutcomeClass::none).empty());
    // Maps keyed by class iterate in the order they did when keyed by these words.
    CHECK(to_string(OutcomeClass::fail) < to_string(OutcomeClass::pass));
    CHECK(OutcomeClass::fail < OutcomeClass::pass);
    CHECK(to_string(OutcomeClass::pass) < to_string(OutcomeClass::skip));
    CHECK(OutcomeClass::pass < OutcomeClass::skip);
}

namespace {

// The string literals of C++ source text (comments left out), each with its line.
std::vector<std::pair<int, std::string>> string_literals(const std::string& text) {
    std::vector<std::pair<int, std::string>> out;
    int line = 1;
    const auto count_lines = [&](std::size_t from, std::size_t to) {
        for (auto k = from; k < to && k < text.size(); ++k) line += text[k] == '\n';
    };
    for (std::size_t i = 0; i < text.size();) {
        const char c = text[i];
        if (text.compare(i, 2, "//") == 0) {
            i = text.find('\n', i);
            if (i == std::string::npos) break;
        } else if (text.compare(i, 2, "/*") == 0) {
            const auto end = text.find("*/", i);
            count_lines(i, end);
            i = end + 2;
        } else if (c == 'R' && text.compare(i + 1, 1, "\"") == 0 &&
                   (i == 0 || !(std::isalnum(static_cast<unsigned char>(text[i - 1])) || text[i - 1] == '_'))) {
            const auto open = text.find('(', i);
            const auto close = text.find(")" + text.substr(i + 2, open - i - 2) + "\"", open);
            out.emplace_back(line, text.substr(open + 1, close - open - 1));
            count_lines(i, close);
            i = text.find('"', close) + 1;
        } else if (c == '\'' && i > 0 && std::isalnum(static_cast<unsigned char>(text[i - 1]))) {
            ++i;  // a digit separator
        } else if (c == '"' || c == '\'') {
            std::string literal;
            std::size_t j = i + 1;
            for (; j < text.size() && text[j] != c; ++j) {
                if (text[j] == '\\') literal += text[j++];
                literal += text[j];
            }
            if (c == '"') out.emplace_back(line, literal);
            i = j + 1;
        } else {
            line += c == '\n';
            ++i;
        }
    }
    return out;
}

bool spells_a_run_id_or_outcome(const std::string& literal) {
    static const std::set<std::string> words{"passed", "failed", "error", "skipped", "xfailed", "xpassed", "uncalled", "interrupted",
                                             "missing", "pass", "fail", "skip", "perturbed", "alone", "probe", "replay"};
    if (words.count(literal)) return true;
    for (const char* kind : {"seed.", "first.", "alone.", "sweep."})
        if (literal.rfind(kind, 0) == 0) return true;
    for (const char* step : {".rerun", ".apart", ".fresh"}) {
        const auto at = literal.find(step);
        const auto after = at == std::string::npos ? at : at + std::string(step).size();
        if (at != std::string::npos && (after == literal.size() || literal[after] == '.')) return true;
    }
    return false;
}

}  // namespace

TEST_CASE("no file of tools/core spells a run id or an outcome word but the types that own them", "[run_id][outcome]") {
    const fs::path core = fs::path(EVIDENCE_GATE_SOURCE_DIR) / "tools/core";
    // The owners, whole.
    const std::set<std::string> owners{"inputs/run_id.hpp", "inputs/run_id.cpp", "inputs/outcome.hpp", "inputs/outcome.cpp"};
    // The same words in other vocabularies; each pair is one file's use of one word.
    const std::set<std::pair<std::string, std::string>> other_words{
        {"verdicts/verdict_table.cpp", "skipped"},      // verdict names (the table owns them) and CTest's word
        {"verdicts/verdict_table.cpp", "missing"},      // a verdict name
        {"verdicts/verdict_table.cpp", "interrupted"},  // a verdict name
        {"verdicts/verdict_table.cpp", "pass"},         // a gate decision
        {"verdicts/verdict_table.cpp", "alone"},        // how a verdict is reproduced (Reproduce::alone)
        {"cli/cli.cpp", "perturbed"},                   // command names
        {"cli/cli.cpp", "alone"},
        {"cli/cli.cpp", "replay"},
        {"inputs/suite_config.cpp", "alone"},           // the ALONE option's key in suite.json
        {"inputs/evidence_layout.hpp", "interrupted"},  // folders of the evidence directory
        {"inputs/evidence_layout.hpp", "replay"},
        {"inputs/junit.cpp", "error"},  // JUnit XML element names
        {"inputs/junit.cpp", "skipped"},
        {"reports/junit_writer.cpp", "skipped"},  // a JUnit XML attribute name
        {"reports/report_html.cpp", "pass"},      // an English verb ("... pass")
        {"runs/column.cpp", "perturbed"},         // the perturbed run's column name
    };
    std::set<std::pair<std::string, std::string>> used;
    std::size_t files = 0;
    for (const auto& entry : fs::recursive_directory_iterator(core)) {
        const auto ext = entry.path().extension();
        if (ext != ".cpp" && ext != ".hpp") continue;
        ++files;
        const auto name = entry.path().lexically_relative(core).generic_string();
        if (owners.count(name)) continue;
        std::ifstream in(entry.path());
        std::stringstream text;
        text << in.rdbuf();
        for (const auto& [line, literal] : string_literals(text.str())) {
            if (!spells_a_run_id_or_outcome(literal)) continue;
            if (other_words.count({name, literal})) {
                used.insert({name, literal});
                continue;
            }
            FAIL_CHECK(name << ":" << line << ": \"" << literal << "\": build it with RunId or Outcome (inputs/run_id.hpp, "
                                                                   "inputs/outcome.hpp)");
        }
    }
    CHECK(files > 100);
    for (const auto& [file, word] : other_words) {
        INFO(file << " no longer spells \"" << word << "\": take it off the list");
        CHECK(used.count({file, word}));
    }
}

TEST_CASE("the literal scan sees through comments and finds what it must", "[run_id]") {
    const auto found = string_literals("a = \"seed.\" + n; // \"first.\"\n/* \"alone.1\" */ b = 'x'; c = 1'000; d = R\"x(a\"b)x\";\ne = \"q\\\"uote\";");
    REQUIRE(found.size() == 3);
    CHECK(found[0] == std::pair<int, std::string>{1, "seed."});
    CHECK(found[1] == std::pair<int, std::string>{2, "a\"b"});
    CHECK(found[2] == std::pair<int, std::string>{3, "q\\\"uote"});
    CHECK(spells_a_run_id_or_outcome("seed."));
    CHECK(spells_a_run_id_or_outcome(".rerun."));
    CHECK(spells_a_run_id_or_outcome(".apart"));
    CHECK(spells_a_run_id_or_outcome("xfailed"));
    CHECK_FALSE(spells_a_run_id_or_outcome("apartment"));
    CHECK_FALSE(spells_a_run_id_or_outcome("a.apartment"));
    CHECK_FALSE(spells_a_run_id_or_outcome("passes"));
}
