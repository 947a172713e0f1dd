#include "verdicts/verdict_table.hpp"

#include <algorithm>
#include <ostream>
#include <utility>

#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>

#include "verdicts/counts.hpp"
#include "verdicts/triage.hpp"

namespace evgate {
namespace {

using Reason = std::optional<std::string>;

// ------------------------------------------------------------------ the rules, one per verdict

// The runs with a result of class `cls`, here and on the other columns (perturbed, runners):
// what the row's outcomes list, so that a reason's count is theirs (counts.hpp spells it).
std::vector<std::string> everywhere(const Observations& o, OutcomeClass cls) {
    std::vector<std::string> runs;
    for (const auto* by_class : {&o.runs_by_class, &o.remote_runs_by_class})
        if (const auto it = by_class->find(cls); it != by_class->end()) runs.insert(runs.end(), it->second.begin(), it->second.end());
    return runs;
}

std::size_t with_a_result(const Observations& o) {
    std::size_t n = 0;
    for (const auto& [cls, runs] : o.runs_by_class) n += runs.size();
    for (const auto& [cls, runs] : o.remote_runs_by_class) n += runs.size();
    return n;
}

Reason stable(const Observations& o) {
    if (!o.passes_locally()) return std::nullopt;
    if (const auto skipped = everywhere(o, OutcomeClass::skip); !skipped.empty())
        return "passes in " + o.runs(OutcomeClass::pass) + " and is skipped in " + some_of(skipped) + ": it never fails";
    return "passes in every run (" + counted(with_a_result(o), "run") + ")";
}

Reason skipped(const Observations& o) {
    if (o.runs_by_class.size() != 1 || !o.count(OutcomeClass::skip)) return std::nullopt;
    return "skipped in every run" + o.skip_message;
}

Reason flaky(const Observations& o) {
    const auto* order = o.flaky_order();
    if (order == nullptr) return std::nullopt;
    return "outcome differs between runs of the same order (" + *order + "): passes in " +
           (o.count(OutcomeClass::pass) ? o.runs(OutcomeClass::pass) : "none") + ", fails in " +
           (o.count(OutcomeClass::fail) ? o.runs(OutcomeClass::fail) : "none") +
           o.failed_only_beside() + o.fail_message;
}

Reason order_dependent(const Observations& o) {
    if (o.flaky_order() != nullptr || !o.outcomes_differ()) return std::nullopt;
    constexpr std::pair<OutcomeClass, const char*> kVerbs[] = {
        {OutcomeClass::pass, "passes"}, {OutcomeClass::fail, "fails"}, {OutcomeClass::skip, "is skipped"}};
    std::string reason = "the outcome follows the order:";
    for (const auto& [cls, verb] : kVerbs)
        if (o.count(cls)) reason += std::string(" ") + verb + " in " + o.runs(cls) + ";";
    reason.pop_back();
    return reason + o.fail_message;
}

Reason polluter(const Observations& o) {
    if (o.dirty.empty()) return std::nullopt;
    std::vector<std::string> groups, files;
    for (const auto& g : o.dirty) {
        if (g.rfind(kSourceTreePrefix, 0) == 0) files.push_back(g.substr(kSourceTreePrefix.size()));
        else groups.push_back("'" + g + "'");
    }
    std::string what;
    if (!groups.empty()) what = "changed fixture group " + listed(groups) + " without declaring it";
    if (!files.empty())
        what += (what.empty() ? "changed " : " and changed ") + some_of(files) + " in the source tree, outside every fixture group";
    return what + " (in " + some_of(o.dirtied_in) + ")";
}

Reason failing(const Observations& o) {
    if (!o.fails_locally()) return std::nullopt;
    const auto alone = o.alone_tried ? ", alone too" : ", not tried alone";
    const auto total = with_a_result(o), failed = everywhere(o, OutcomeClass::fail).size();
    if (failed == total) return "fails in every run (" + counted(total, "run") + alone + ")" + o.fail_message;
    return "fails in every local run (" + std::to_string(o.count(OutcomeClass::fail)) + " of " + counted(total, "run") + alone +
           "; not on every other column)" + o.fail_message;
}

Reason portability_gap(const Observations& o) {
    const auto failed = o.remote_runs_by_class.find(OutcomeClass::fail);
    if (!o.passes_locally() || failed == o.remote_runs_by_class.end()) return std::nullopt;
    return "passes in every local run but fails in " + some_of(failed->second) + o.failed_only_beside() + o.fail_message;
}

Reason runner_only_pass(const Observations& o) {
    const auto passed = o.runner_runs_by_class.find(OutcomeClass::pass);
    if (!o.fails_locally() || passed == o.runner_runs_by_class.end()) return std::nullopt;
    return "fails in every local run but passes in " + some_of(passed->second) + ": an inverted signal";
}

Reason missing(const Observations& o) {
    if (o.missing.empty() && o.uncalled.empty()) return std::nullopt;
    std::string reason;
    if (!o.missing.empty()) reason = "collected, but no result in " + some_of(o.missing);
    if (!o.uncalled.empty())
        reason += (reason.empty() ? "collected, but its call phase never ran in " : "; its call phase never ran in ") +
                  some_of(o.uncalled) + o.uncalled_message;
    return reason;
}

Reason interrupted(const Observations& o) {
    if (o.interrupted.empty()) return std::nullopt;
    return "the interpreter died or was killed while it ran (in " + some_of(o.interrupted) + ")";
}

// ------------------------------------------------------------------ the table

using V = Verdict;
using D = Deferral;
using R = Reproduce;
using S = CaseStatus;
using E = Elsewhere;
using C = Swatch;

constexpr std::array<VerdictInfo, kVerdictCount> kTable{{
    // verdict, name, precedence, gate, deferral, reproduce, CTest/JUnit status, elsewhere, colour, symbol, meaning, rule
    {V::stable, "stable", 100, Gate::pass, D::none, R::nothing, S::gate, E::nothing, C::green, '.',
     "passed in every run", stable},
    {V::skipped, "skipped", 90, Gate::pass, D::none, R::nothing, S::skipped, E::nothing, C::grey, 's',
     "skipped everywhere", skipped},
    {V::flaky, "flaky", 50, Gate::block, D::quarantine, R::failing_order_five_times, S::gate, E::nothing, C::orange, '~',
     "outcome differs between runs of the same order", flaky},
    {V::order_dependent, "order-dependent", 40, Gate::block, D::none, R::partner_or_failing_order, S::gate, E::nothing,
     C::vermillion, 'o',
     "outcome is fixed for a given order but differs between orders (also: failed in every order but passed alone)",
     order_dependent},
    {V::polluter, "polluter", 10, Gate::block, D::none, R::alone, S::gate, E::nothing, C::black, 'P',
     "changed a fixture group it did not declare", polluter},
    {V::failing, "failing", 70, Gate::block, D::quarantine, R::alone, S::gate, E::nothing, C::vermillion, 'F',
     "fails in every local run, alone too", failing},
    {V::portability_gap, "portability-gap", 80, Gate::block, D::quarantine_or_env_sensitive, R::alone_where_it_failed,
     S::gate, E::failure, C::sky, 'g', "passes locally, fails on a runner or under perturbation", portability_gap},
    {V::runner_only_pass, "runner-only-pass", 60, Gate::block, D::none, R::alone, S::gate, E::pass, C::purple, 'r',
     "fails locally, passes on a runner", runner_only_pass},
    {V::missing, "missing", 30, Gate::block, D::none, R::nothing, S::gate, E::nothing, C::yellow, '?',
     "collected but has no result (or its call phase never ran)", missing},
    {V::interrupted, "interrupted", 20, Gate::block, D::none, R::order_it_died_in, S::gate, E::nothing, C::black, '!',
     "the interpreter died or was killed while it ran", interrupted},
}};

constexpr bool rows_in_enum_order() {
    for (std::size_t i = 0; i < kVerdictCount; ++i)
        if (static_cast<std::size_t>(kTable[i].verdict) != i) return false;
    return true;
}
static_assert(rows_in_enum_order(), "info() finds a verdict's row by its enum value");

constexpr bool precedences_differ() {
    for (std::size_t i = 0; i < kVerdictCount; ++i)
        for (std::size_t j = i + 1; j < kVerdictCount; ++j)
            if (kTable[i].precedence == kTable[j].precedence) return false;
    return true;
}
static_assert(precedences_differ(), "of two verdicts that apply, one must win");

std::array<Verdict, kVerdictCount> precedence_order() {
    std::array<Verdict, kVerdictCount> order{};
    for (std::size_t i = 0; i < kVerdictCount; ++i) order[i] = kTable[i].verdict;
    std::sort(order.begin(), order.end(), [](Verdict a, Verdict b) { return info(a).precedence < info(b).precedence; });
    return order;
}

constexpr std::array<std::string_view, 3> kGates{"pass", "defer", "block"};

// ------------------------------------------------------------------ the table as JSON

using JsonOut = rapidjson::PrettyWriter<rapidjson::StringBuffer>;

void text(JsonOut& w, const char* key, std::string_view value) {
    w.Key(key);
    w.String(value.data(), static_cast<rapidjson::SizeType>(value.size()));
}

void deferred_by(JsonOut& w, Deferral deferral) {
    w.Key("deferred_by");
    w.StartArray();
    if (deferral != Deferral::none) w.String("quarantine");
    if (deferral == Deferral::quarantine_or_env_sensitive) w.String("env_sensitive");
    w.EndArray();
}

void verdict_json(JsonOut& w, const VerdictInfo& v) {
    w.StartObject();
    text(w, "name", v.name);
    w.Key("precedence"), w.Int(v.precedence);
    text(w, "gate", to_string(v.gate));
    deferred_by(w, v.deferral);
    text(w, "reproduce", to_string(v.reproduce));
    text(w, "ctest", v.status == CaseStatus::skipped ? "skipped" : "gate");
    w.Key("elsewhere");
    if (v.elsewhere == Elsewhere::nothing) w.Null();
    else w.String(std::string(to_string(v.elsewhere == Elsewhere::failure ? OutcomeClass::fail : OutcomeClass::pass)));
    text(w, "colour", to_string(v.colour));
    text(w, "symbol", std::string_view(&v.symbol, 1));
    text(w, "meaning", v.meaning);
    w.EndObject();
}

}  // namespace

const std::array<VerdictInfo, kVerdictCount>& verdict_table() { return kTable; }

const VerdictInfo& info(Verdict verdict) { return kTable[static_cast<std::size_t>(verdict)]; }

const std::array<Verdict, kVerdictCount>& by_precedence() {
    static const auto order = precedence_order();
    return order;
}

std::string_view to_string(Verdict verdict) { return info(verdict).name; }

std::string_view to_string(Gate gate) { return kGates[static_cast<std::size_t>(gate)]; }

std::string to_string(const std::vector<Verdict>& verdicts) {
    std::string out;
    for (const auto v : verdicts) out.append(out.empty() ? "" : ", ").append(to_string(v));
    return out;
}

std::string_view to_string(Swatch colour) {
    switch (colour) {
        case Swatch::green: return "green";
        case Swatch::vermillion: return "vermillion";
        case Swatch::purple: return "reddish purple";
        case Swatch::grey: return "grey";
        case Swatch::sky: return "sky blue";
        case Swatch::orange: return "orange";
        case Swatch::black: return "black";
        case Swatch::yellow: return "yellow";
        case Swatch::blue: return "blue";
        case Swatch::pale: return "pale grey";
    }
    return "pale grey";
}

std::string_view to_string(Reproduce reproduce) {
    switch (reproduce) {
        case Reproduce::nothing: return "nothing";
        case Reproduce::alone: return "alone";
        case Reproduce::alone_where_it_failed: return "alone where it failed";
        case Reproduce::partner_or_failing_order: return "partner or failing order";
        case Reproduce::failing_order_five_times: return "failing order five times";
        case Reproduce::order_it_died_in: return "order it died in";
    }
    return "nothing";
}

std::optional<Verdict> verdict_named(std::string_view name) {
    for (const auto& v : kTable)
        if (v.name == name) return v.verdict;
    return std::nullopt;
}

std::optional<Gate> gate_named(std::string_view name) {
    for (auto gate : {Gate::pass, Gate::defer, Gate::block})
        if (to_string(gate) == name) return gate;
    return std::nullopt;
}

std::string verdict_table_json() {
    rapidjson::StringBuffer out;
    JsonOut w(out);
    w.StartObject();
    w.Key("verdicts");
    w.StartArray();
    for (const auto& v : kTable) verdict_json(w, v);
    w.EndArray();
    w.Key("gates");
    w.StartArray();
    for (const auto gate : kGates) w.String(gate.data(), static_cast<rapidjson::SizeType>(gate.size()));
    w.EndArray();
    w.EndObject();
    return std::string(out.GetString(), out.GetSize()) + "\n";
}

std::ostream& operator<<(std::ostream& out, Verdict verdict) { return out << to_string(verdict); }

std::ostream& operator<<(std::ostream& out, Gate gate) { return out << to_string(gate); }

}  // namespace evgate
