// A test's outcome in one run: the words pytest's plugin sends in its records (and evgate's
// junit.xml carries back), spelled here once, and what each says about the test (its class).
// Every file that reads an outcome word parses it here (a word that is none is an error naming
// the file and line); everything after that holds an Outcome, and prints it with to_string().
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace evgate {

enum class Outcome {
    passed,
    failed,
    error,  // in setup or teardown
    skipped,
    xfailed,  // failed as expected
    xpassed,  // passed unexpectedly (not strict)
    // A test whose call phase never ran though it was neither skipped nor failed in setup (a
    // plugin's or conftest's pytest_runtest_protocol left it out): no result, never a pass.
    uncalled,
    interrupted,  // the interpreter died while it ran
    missing,      // planned, no result
};

constexpr std::string_view to_string(Outcome outcome) {
    switch (outcome) {
        case Outcome::passed: return "passed";
        case Outcome::failed: return "failed";
        case Outcome::error: return "error";
        case Outcome::skipped: return "skipped";
        case Outcome::xfailed: return "xfailed";
        case Outcome::xpassed: return "xpassed";
        case Outcome::uncalled: return "uncalled";
        case Outcome::interrupted: return "interrupted";
        case Outcome::missing: return "missing";
    }
    return {};
}
std::optional<Outcome> parse_outcome(std::string_view word);
// The outcome `word` names, read from `source` at `line`: anything else throws InputError naming
// them and the word.
Outcome read_outcome(std::string_view word, const std::string& source, int line);

// What an outcome says about the test: passed, xfailed and xpassed pass; failed and error fail;
// skipped skips; the rest have no result. In the order of their words, so that maps keyed by
// class keep the order they had when keyed by word.
enum class OutcomeClass { none,
                          fail,
                          pass,
                          skip };
OutcomeClass outcome_class(Outcome outcome);
std::string_view to_string(OutcomeClass cls);  // "pass" "fail" "skip", "" for none

// One test's result in one run, as its records (or a JUnit file) give it.
struct TestResult {
    Outcome outcome = Outcome::missing;  // as the plugin sends it: passed failed error skipped xfailed xpassed uncalled
    std::vector<std::string> dirty;      // groups it changed without declaring them
    std::string message;
    std::vector<std::string> changed;  // every group it changed, declared or not
    double seconds = -1;               // setup, call and teardown, as pytest measured them; -1: not said
};

}  // namespace evgate
