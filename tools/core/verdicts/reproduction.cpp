#include "verdicts/reproduction.hpp"

#include <algorithm>

#include "inputs/outcome.hpp"
#include "inputs/run_id.hpp"
#include "io/json_io.hpp"

namespace evgate {
namespace {

using OutcomeTest = bool (*)(Outcome);
bool fails(Outcome outcome) { return outcome_class(outcome) == OutcomeClass::fail; }
bool died(Outcome outcome) { return outcome == Outcome::interrupted; }

const Attempt* first_with(const std::vector<Attempt>& attempts, OutcomeTest matches, Column column = Column::local) {
    for (const auto& a : attempts)
        if (a.column == column && matches(a.outcome)) return &a;
    return nullptr;
}

const LoadedRun* run_named(const GateInput& input, const std::string& id) {
    for (const auto& run : input.runs.runs())
        if (run.plan.id.str() == id) return &run;
    return nullptr;
}

// The order up to the test, as the run `a` ran it: a seed's by its number, one no seed makes (a
// sweep's) by its tests (alone runs: just the test).
ReplayRequest order_through(const Attempt& a, const std::string& test, const GateInput& input) {
    ReplayRequest request;
    const auto* run = run_named(input, a.run);
    if (run == nullptr || a.order == kAloneOrder) {
        request.tests = {test};
        return request;
    }
    request.seed = run->plan.seed;
    if (!run->plan.listed) {
        request.through = test;
        return request;
    }
    const auto& tests = run->plan.tests;
    const auto end = std::find(tests.begin(), tests.end(), test);
    request.tests.assign(tests.begin(), end == tests.end() ? end : std::next(end));
    return request;
}

// The order the test's first local attempt with an outcome that `matches` ran in.
std::optional<ReplayRequest> order_with(OutcomeTest matches, const std::string& test, std::optional<std::uint32_t> number,
                                        const GateInput& input) {
    const auto attempts = input.runs.attempts(number);
    const auto* found = first_with(attempts, matches);
    return found ? std::optional(order_through(*found, test, input)) : std::nullopt;
}

// The partner's order the localisation found, else the order it failed in.
std::optional<ReplayRequest> partner_order(const std::string& test, std::optional<std::uint32_t> number, const GateInput& input) {
    auto c = input.culprits.find(test);
    if (c == input.culprits.end() || c->second.found.reproduce_order.empty())
        return order_with(fails, test, number, input);
    ReplayRequest request;
    request.tests = c->second.found.reproduce_order;
    request.seed = c->second.seed;
    return request;
}

// Variables whose value differs on the column that failed, where the manifest records them.
std::vector<std::string> differing_environment(const std::vector<Attempt>& attempts, const GateInput& input) {
    for (const auto& a : attempts) {
        if (a.column == Column::local || outcome_class(a.outcome) != OutcomeClass::fail) continue;
        if (const auto* run = run_named(input, a.run); run && a.column == Column::perturbed) return run->plan.environment;
        std::vector<std::string> env;
        auto drift = input.drift.find(column_name(a));
        if (drift == input.drift.end()) return env;
        for (const auto& entry : drift->second) {
            if (entry.key.rfind("env.", 0) != 0 || !entry.other) continue;
            auto value = parse_json(*entry.other, "manifest");
            if (value.IsString()) env.push_back(entry.key.substr(4) + "=" + value.GetString());
        }
        return env;
    }
    return {};
}

ReplayRequest alone(const std::string& test) {
    ReplayRequest request;
    request.tests = {test};
    return request;
}

}  // namespace

std::string column_name(const Attempt& a) { return a.column == Column::runner ? a.run.substr(0, a.run.find(':')) : a.run; }

std::optional<ReplayRequest> reproduction(Verdict verdict, const std::string& test, std::optional<std::uint32_t> number,
                                          const GateInput& input) {
    switch (info(verdict).reproduce) {
        case Reproduce::nothing: return std::nullopt;
        case Reproduce::alone: return alone(test);
        case Reproduce::alone_where_it_failed: {
            auto request = alone(test);
            request.environment = differing_environment(input.runs.attempts(number), input);
            return request;
        }
        case Reproduce::partner_or_failing_order: return partner_order(test, number, input);
        case Reproduce::failing_order_five_times: {
            auto request = order_with(fails, test, number, input);
            if (request) request->repeat = 5;  // one failure in a few runs showed it; five give it room to show again
            return request;
        }
        case Reproduce::order_it_died_in: return order_with(died, test, number, input);
    }
    return std::nullopt;
}

}  // namespace evgate
