#include "runs/culprits.hpp"

#include <algorithm>
#include <chrono>
#include <set>

#include "inputs/evidence_layout.hpp"
#include "io/error.hpp"
#include "io/atomic_file.hpp"
#include "io/json_io.hpp"
#include "verdicts/run_matrix.hpp"
#include "runs/order_run.hpp"

namespace fs = std::filesystem;

namespace evgate {
namespace {

fs::path culprits_file(const SuiteConfig& suite) { return suite.evidence_dir / evidence::kLocalise; }

// The run's order up to and including `test`.
std::vector<std::string> prefix_through(const RunPlan& plan, const std::string& test) {
    auto end = std::find(plan.tests.begin(), plan.tests.end(), test);
    return {plan.tests.begin(), end == plan.tests.end() ? end : std::next(end)};
}

struct Prefixes {
    std::vector<std::string> failing, passing;
    std::uint64_t seed = 0;
};

// A local order in which the test failed and one in which it passed (seeds before reruns).
Prefixes prefixes_of(const std::string& test, const std::vector<LoadedRun>& runs) {
    Prefixes p;
    for (const auto& run : runs) {
        if (run.plan.column != Column::local || run.plan.order == "alone") continue;
        auto it = run.records.results.find(test);
        if (it == run.records.results.end()) continue;
        const auto cls = outcome_class(it->second.outcome);
        if (cls == "fail" && p.failing.empty()) {
            p.failing = prefix_through(run.plan, test);
            p.seed = run.plan.seed;
        }
        if (cls == "pass" && p.passing.empty()) p.passing = prefix_through(run.plan, test);
    }
    return p;
}

// One probe: `tests` in exactly that order in a fresh interpreter, fixtures restored after.
Oracle probe(const SuiteConfig& suite, const Receipt& receipt, FixtureStore& store, std::uint64_t seed) {
    return [&suite, &receipt, &store, seed](const std::vector<std::string>& tests) -> std::string {
        RunPlan plan;
        plan.id = plan.order = "probe";
        plan.seed = seed;
        plan.tests = tests;
        plan.runs_dir = suite.evidence_dir / evidence::kLocaliseRuns;
        run_order(suite, receipt, store, plan);
        const auto records = read_run_records(records_file(suite, plan));
        auto it = records.results.find(tests.back());
        return it == records.results.end() ? "" : std::string(outcome_class(it->second.outcome));
    };
}

// What runs of `test` alone (the alone pass, its reruns, the rerun step's) showed, in run order.
std::vector<std::string> alone_outcomes(const std::string& test, const std::vector<LoadedRun>& runs) {
    std::vector<std::string> seen;
    for (const auto& run : runs) {
        if (run.plan.column != Column::local || run.plan.order != "alone" || run.plan.tests != std::vector<std::string>{test}) continue;
        const auto it = run.records.results.find(test);
        if (it != run.records.results.end()) seen.emplace_back(outcome_class(it->second.outcome));
    }
    return seen;
}

std::map<std::string, std::vector<std::string>> dirtied_by(const std::vector<std::string>& partners,
                                                          const std::vector<LoadedRun>& runs) {
    std::map<std::string, std::vector<std::string>> dirtied;
    for (const auto& partner : partners) {
        std::set<std::string> groups;
        for (const auto& run : runs) {
            auto it = run.records.results.find(partner);
            if (it != run.records.results.end()) groups.insert(it->second.dirty.begin(), it->second.dirty.end());
        }
        if (!groups.empty()) dirtied[partner] = {groups.begin(), groups.end()};
    }
    return dirtied;
}

void write_list(rapidjson::Writer<rapidjson::StringBuffer>& w, const char* key, const std::vector<std::string>& items) {
    w.Key(key);
    w.StartArray();
    for (const auto& item : items) w.String(item);
    w.EndArray();
}

std::string culprits_json(const std::vector<Culprit>& culprits, const std::string& receipt_id) {
    JsonWriter json;
    auto& w = json.begin();
    w.StartObject();
    w.Key("schema"), w.Int(1);
    w.Key("receipt"), w.String(receipt_id);
    w.Key("tests"), w.StartArray();
    for (const auto& c : culprits) {
        const auto& f = c.found;
        w.StartObject();
        w.Key("test"), w.String(f.test);
        w.Key("seed"), w.Uint64(c.seed);
        w.Key("role"), w.String(std::string(to_string(f.role)));
        write_list(w, "partners", f.partners);
        w.Key("partner_role"), w.String(f.partner_role);
        write_list(w, "cleaners", f.cleaners);
        write_list(w, "reproduce_order", f.reproduce_order);
        w.Key("budget_exhausted"), w.Bool(f.budget_exhausted);
        w.Key("runs_used"), w.Int(f.runs_used);
        w.Key("note"), w.String(f.note);
        w.Key("dirtied"), w.StartObject();
        for (const auto& [partner, groups] : c.dirtied) write_list(w, partner.c_str(), groups);
        w.EndObject();
        w.EndObject();
    }
    w.EndArray();
    w.EndObject();
    return std::string(json.text()) + "\n";
}

Role parse_role(const std::string& text) {
    for (auto role : {Role::victim, Role::brittle, Role::unknown})
        if (to_string(role) == text) return role;
    return Role::unknown;
}

}  // namespace

std::vector<Culprit> localise_suite(const SuiteConfig& suite, const Receipt& receipt, FixtureStore& store, int per_test,
                                    const LocaliseProgress& progress) {
    using Clock = std::chrono::steady_clock;
    const auto runs = load_runs(suite, receipt.id);
    RunMatrix matrix;
    for (const auto& run : runs) matrix.add(run);
    std::vector<std::string> dependent;
    for (const auto& test : receipt.tests) {  // collection order: a stable result
        const auto attempts = matrix.attempts(test.id);
        if (!attempts.empty() && classify(attempts).verdict == Verdict::order_dependent) dependent.push_back(test.id);
    }
    // Runs: `per_test` for each dependent test, what one leaves to the next. Time: what the
    // step's CTest TIMEOUT allows ((10 LOCALISE + 2) TIMEOUT + 30 s), less a TIMEOUT for the end.
    const int total = per_test * static_cast<int>(dependent.size());
    int left = total;
    const auto deadline = Clock::now() + std::chrono::seconds(static_cast<long long>(10 * per_test + 1) * suite.timeout_seconds);
    std::vector<Culprit> culprits;
    std::vector<std::vector<std::string>> known;  // the partner sets found so far, tried first for the next
    for (std::size_t i = 0; i < dependent.size(); ++i) {
        const auto& test = dependent[i];
        if (progress.starting) progress.starting(test);
        const auto prefixes = prefixes_of(test, runs);
        Culprit culprit;
        const auto time_left = std::chrono::duration_cast<std::chrono::seconds>(deadline - Clock::now());
        if (left <= 0 || time_left.count() <= 0) {
            culprit.found.test = test;
            culprit.found.budget_exhausted = true;
            culprit.found.note = "the step's budget (" + std::to_string(per_test) + " pytest runs for each of " +
                                 std::to_string(dependent.size()) + " order-dependent tests, and its time) was spent before this test";
        } else {
            Budget budget;
            // Its share, and what the tests before it left unused.
            budget.max_runs = std::min(left, per_test * static_cast<int>(i + 1) - (total - left));
            budget.max_time = std::min(std::chrono::seconds(suite.timeout_seconds), time_left);
            culprit.found = localise(test, prefixes.failing, prefixes.passing, probe(suite, receipt, store, prefixes.seed), budget, known,
                                     alone_outcomes(test, runs));
            left -= culprit.found.runs_used;
            if (!culprit.found.partners.empty() && !culprit.found.budget_exhausted &&
                std::find(known.begin(), known.end(), culprit.found.partners) == known.end())
                known.push_back(culprit.found.partners);
        }
        culprit.seed = prefixes.seed;
        culprit.dirtied = dirtied_by(culprit.found.partners, runs);
        if (progress.done) progress.done(culprit);
        culprits.push_back(std::move(culprit));
    }
    write_file_atomic(culprits_file(suite), culprits_json(culprits, receipt.id));
    return culprits;
}

std::map<std::string, Culprit> load_culprits(const SuiteConfig& suite, const std::string& receipt_id) {
    std::map<std::string, Culprit> culprits;
    if (!fs::exists(culprits_file(suite))) return culprits;
    const auto doc = read_json_file(culprits_file(suite));
    const auto source = culprits_file(suite).string();
    if (optional_string(doc, "receipt", source).value_or("") != receipt_id) return culprits;  // another invocation's
    const auto* tests = member(doc, "tests");
    if (tests == nullptr || !tests->IsArray()) throw InputError(source, 0, "no 'tests' list");
    for (const auto& t : tests->GetArray()) {
        Culprit c;
        auto& f = c.found;
        f.test = string_member(t, "test", source);
        if (const auto* seed = member(t, "seed"); seed && seed->IsUint64()) c.seed = seed->GetUint64();
        f.role = parse_role(string_member(t, "role", source));
        f.partners = string_array(t, "partners", source);
        f.partner_role = optional_string(t, "partner_role", source).value_or("");
        f.cleaners = string_array(t, "cleaners", source);
        f.reproduce_order = string_array(t, "reproduce_order", source);
        const auto* exhausted = member(t, "budget_exhausted");
        f.budget_exhausted = exhausted != nullptr && exhausted->IsBool() && exhausted->GetBool();
        f.note = optional_string(t, "note", source).value_or("");
        if (const auto* dirtied = member(t, "dirtied"); dirtied && dirtied->IsObject())
            for (const auto& m : dirtied->GetObject()) c.dirtied[m.name.GetString()] = string_array(*dirtied, m.name.GetString(), source);
        culprits[f.test] = std::move(c);
    }
    return culprits;
}

}  // namespace evgate
