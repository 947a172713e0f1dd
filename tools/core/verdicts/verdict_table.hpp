// The verdicts, in one table: for each, its name in the ledger, which wins when several apply,
// what the gate does with it and what can defer it, how it is reproduced, what its CTest entry
// and JUnit case say, how the pages draw it, what it means, and the rule that finds it in one
// test's attempts. Everything else reads the table: a new verdict kind is an enum value here
// and a row (with its rule) in verdict_table.cpp. Verdicts and gate decisions are spelled as
// text only where files are read and written.
#pragma once

#include <array>
#include <cstddef>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace evgate {

// In the table's order, which is the order legends list them (precedence is its own column).
enum class Verdict {
    stable,
    skipped,
    flaky,
    order_dependent,
    polluter,
    failing,
    portability_gap,
    runner_only_pass,
    missing,
    interrupted,
};
constexpr std::size_t kVerdictCount = 10;

// What the gate does with a row.
enum class Gate { pass,
                  defer,
                  block };

// What can turn a verdict's block into a dated deferral (a quarantine entry; the test's own
// env_sensitive(until=, owner=) marker).
enum class Deferral { none,
                      quarantine,
                      quarantine_or_env_sensitive };

// What `evgate replay` command a row carries (verdicts/reproduction.cpp builds it).
enum class Reproduce {
    nothing,                   // nothing local reproduces it
    alone,                     // the test on its own
    alone_where_it_failed,     // on its own, with the variables that differ where it failed
    partner_or_failing_order,  // the localised partner's order, else the order it failed in, up to it
    failing_order_five_times,  // the order it failed in, up to it, five times over
    order_it_died_in,          // the order its interpreter died in, up to it
};

// What its per-test CTest entry and JUnit case report: the gate's decision, or "skipped".
enum class CaseStatus { gate,
                        skipped };

// A verdict that compares machines: the outcome elsewhere that makes it, whose manifest drift
// the row's reason names.
enum class Elsewhere { nothing,
                       failure,
                       pass };

// Okabe-Ito colours, told apart with the common colour-vision deficiencies, as the pages' CSS
// classes (reports/assets/*.css).
enum class Swatch : char {
    green = 'p',
    vermillion = 'f',
    purple = 'e',
    grey = 's',
    sky = 'x',
    orange = 'y',
    black = 'i',
    yellow = 'm',
    blue = 'o',
    pale = 'n',
};

struct Observations;  // triage.hpp: what one test's attempts show
// The verdict's reason when it applies to the attempts, else nullopt.
using Rule = std::optional<std::string> (*)(const Observations&);

struct VerdictInfo {
    Verdict verdict;
    std::string_view name;  // as the ledger spells it
    int precedence;         // when several apply, the lowest number wins (tens: room for one between)
    Gate gate;              // pass or block, before any deferral
    Deferral deferral;
    Reproduce reproduce;
    CaseStatus status;
    Elsewhere elsewhere;
    Swatch colour;
    char symbol;  // shown in the cell, so a page reads without colour
    std::string_view meaning;
    Rule rule;
};

// Every verdict, in the table's order; info(v) is verdict_table()[v].
const std::array<VerdictInfo, kVerdictCount>& verdict_table();
const VerdictInfo& info(Verdict verdict);
// The verdicts in precedence order: the first that applies wins.
const std::array<Verdict, kVerdictCount>& by_precedence();

std::string_view to_string(Verdict verdict);
std::string_view to_string(Gate gate);
std::string to_string(const std::vector<Verdict>& verdicts);  // "flaky, failing"
std::string_view to_string(Swatch colour);
std::string_view to_string(Reproduce reproduce);
// The verdict or gate a file spells; nullopt for a word the table does not know.
std::optional<Verdict> verdict_named(std::string_view name);
std::optional<Gate> gate_named(std::string_view name);

// The table as JSON, for tests and tools in other languages (`evgate verdicts`).
std::string verdict_table_json();

// Names, for test failure messages.
std::ostream& operator<<(std::ostream& out, Verdict verdict);
std::ostream& operator<<(std::ostream& out, Gate gate);

}  // namespace evgate
