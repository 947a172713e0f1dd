#include "runs/culprit_runs.hpp"

#include <algorithm>
#include <chrono>
#include <set>

#include "inputs/evidence_layout.hpp"
#include "inputs/outcome.hpp"
#include "inputs/run_id.hpp"
#include "io/atomic_file.hpp"
#include "io/error.hpp"
#include "io/json_io.hpp"
#include "runs/order_run.hpp"
#include "runs/run_matrix.hpp"
#include "runs/sweep.hpp"

namespace fs = std::filesystem;

namespace evgate {
namespace {

constexpr std::uint64_t kMostSweeps = 100000000;  // a kept sweep numbered beyond is not counted (fewer than 9 digits)

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
        if (run.plan.column != Column::local || run.plan.order == kAloneOrder) continue;
        auto it = run.records.results.find(test);
        if (it == run.records.results.end()) continue;
        const auto cls = outcome_class(it->second.outcome);
        if (cls == OutcomeClass::fail && p.failing.empty()) {
            p.failing = prefix_through(run.plan, test);
            p.seed = run.plan.seed;
        }
        if (cls == OutcomeClass::pass && p.passing.empty()) p.passing = prefix_through(run.plan, test);
    }
    return p;
}

// One probe: `tests` in exactly that order in a fresh interpreter, fixtures restored after.
Oracle probe(const SuiteConfig& suite, const Receipt& receipt, FixtureStore& store, std::uint64_t seed) {
    return [&suite, &receipt, &store, seed](const std::vector<std::string>& tests) -> std::string {
        RunPlan plan;
        plan.id = RunId::probe();
        plan.order = plan.id.str();
        plan.seed = seed;
        plan.tests = tests;
        plan.runs_dir = suite.evidence_dir / evidence::kLocaliseRuns;
        run_order(suite, receipt, store, plan);
        const auto records = read_run_records(records_file(suite, plan));
        auto it = records.results.find(tests.back());
        return it == records.results.end() ? "" : std::string(to_string(outcome_class(it->second.outcome)));
    };
}

// What runs of `test` alone (the alone pass, its reruns, the rerun step's) showed, in run order.
std::vector<std::string> alone_outcomes(const std::string& test, const std::vector<LoadedRun>& runs) {
    std::vector<std::string> seen;
    for (const auto& run : runs) {
        if (run.plan.column != Column::local || run.plan.order != kAloneOrder || run.plan.tests != std::vector<std::string>{test}) continue;
        const auto it = run.records.results.find(test);
        if (it != run.records.results.end()) seen.emplace_back(to_string(outcome_class(it->second.outcome)));
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

// The localise step's state: the tests to localise, in the order they came (the seeds' and
// reruns' order-dependent tests in collection order, then what each sweep found), the partner
// sets found, and what of the budget is left.
class Localiser {
public:
    Localiser(const SuiteConfig& suite, const Receipt& receipt, FixtureStore& store, int per_test, const TriageAnswers& triage,
              const LocaliseProgress& progress)
        : suite_(suite), receipt_(receipt), store_(store), per_test_(per_test), triage_(triage), progress_(progress),
          // What the step's CTest TIMEOUT allows ((10 LOCALISE + 2) TIMEOUT + 30 s), less a TIMEOUT for the end.
          deadline_(Clock::now() + std::chrono::seconds(static_cast<long long>(10 * per_test + 1) * suite.timeout_seconds)) {
        for (const auto& test : receipt.tests) collection_.push_back(test.id);
        runs_ = load_runs(suite, receipt.run_receipts());
        keep_earlier();
    }

    std::vector<Culprit> run() {
        queue(order_dependent());
        for (std::size_t next = 0;;) {
            for (; next < queued_.size(); ++next) localise_one(next);
            if (!sweep_next()) break;
        }
        return std::move(culprits_);
    }

private:
    using Clock = std::chrono::steady_clock;

    // What the localise step of a `ctest` whose runs this one keeps found stays found: its
    // tests are not searched again, their partner sets are tried first, its sweeps stay done.
    void keep_earlier() {
        if (receipt_.kept.empty()) return;
        for (auto& [test, culprit] : load_culprits(suite_, receipt_.run_receipts())) {
            if (culprit.found.budget_exhausted) continue;  // searched again, with this step's budget
            seen_.insert(test);
            if (!culprit.found.partners.empty() &&
                std::find(known_.begin(), known_.end(), culprit.found.partners) == known_.end())
                known_.push_back(culprit.found.partners);
            culprits_.push_back(std::move(culprit));
        }
        for (const auto& run : runs_)
            if (const auto id = run.plan.id.local(); id && id->is_sweep() && id->number() < kMostSweeps)
                sweep_base_ = std::max(sweep_base_, static_cast<int>(id->number()));
    }

    // Order-dependent in the runs so far, not yet queued; in collection order.
    std::vector<std::string> order_dependent() const {
        RunMatrix matrix;
        for (const auto& run : runs_) matrix.add(run);
        std::vector<std::string> found;
        for (const auto& test : collection_) {
            if (seen_.count(test) != 0) continue;
            const auto attempts = matrix.attempts(test);
            if (!attempts.empty() && triage_.order_dependent(attempts)) found.push_back(test);
        }
        return found;
    }

    void queue(const std::vector<std::string>& tests) {
        for (const auto& test : tests)
            if (seen_.insert(test).second) queued_.push_back(test);
    }

    // Runs: `per_test` for each queued test, what one leaves to the next.
    void localise_one(std::size_t i) {
        const auto& test = queued_[i];
        if (progress_.starting) progress_.starting(test);
        const auto prefixes = prefixes_of(test, runs_);
        Culprit culprit;
        const int share = per_test_ * static_cast<int>(i + 1) - used_;
        const auto time_left = std::chrono::duration_cast<std::chrono::seconds>(deadline_ - Clock::now());
        if (share <= 0 || time_left.count() <= 0) {
            culprit.found.test = test;
            culprit.found.budget_exhausted = true;
            culprit.found.note = "the step's budget (" + std::to_string(per_test_) + " pytest runs for each of " +
                                 std::to_string(queued_.size()) + " order-dependent tests, and its time) was spent before this test";
        } else {
            Budget budget;
            budget.max_runs = share;
            budget.max_time = std::min(std::chrono::seconds(suite_.timeout_seconds), time_left);
            culprit.found = localise(test, prefixes.failing, prefixes.passing, probe(suite_, receipt_, store_, prefixes.seed), budget,
                                     known_, alone_outcomes(test, runs_));
            used_ += culprit.found.runs_used;
            const auto& f = culprit.found;
            if (!f.partners.empty() && !f.budget_exhausted && std::find(known_.begin(), known_.end(), f.partners) == known_.end()) {
                known_.push_back(f.partners);
                if (f.role == Role::victim) to_sweep_.push_back({f.partners, prefixes.seed});
            }
        }
        culprit.seed = prefixes.seed;
        culprit.dirtied = dirtied_by(culprit.found.partners, runs_);
        if (progress_.done) progress_.done(culprit);
        culprits_.push_back(std::move(culprit));
    }

    // The polluter sets found since the last sweep, first (together: one run of the suite, not
    // one per set), then every other test (runs/sweep.hpp); the same order again where it
    // showed new order-dependent tests. False when nothing is left to sweep.
    bool sweep_next() {
        // A sweep and its reruns may take a TIMEOUT each: only while they all fit in the step's time.
        const auto sweep_bound = std::chrono::seconds(static_cast<long long>(1 + std::max(0, suite_.reruns)) * suite_.timeout_seconds);
        while (!to_sweep_.empty() && sweeps_ < kMaxSweeps && Clock::now() + sweep_bound < deadline_) {
            const auto partners = polluters_to_sweep();
            auto plan = sweep_plan(sweep_base_ + ++sweeps_, partners, collection_);
            plan.seed = to_sweep_.front().second;
            to_sweep_.clear();
            if (progress_.sweeping) progress_.sweeping(plan, partners);
            run_order(suite_, receipt_, store_, plan);
            runs_ = load_runs(suite_, receipt_.run_receipts());
            const auto found = order_dependent();
            if (found.empty()) {
                if (progress_.swept) progress_.swept(plan, found);
                continue;
            }
            for (const auto& rerun : sweep_reruns(plan, found, suite_.reruns)) run_order(suite_, receipt_, store_, rerun);
            runs_ = load_runs(suite_, receipt_.run_receipts());
            const auto confirmed = order_dependent();  // a test the same order passed again is flaky, not this
            if (progress_.swept) progress_.swept(plan, confirmed);
            if (confirmed.empty()) continue;
            queue(confirmed);
            return true;
        }
        if (!to_sweep_.empty()) say_unswept(sweep_bound);
        return false;
    }

    // Every test of the polluter sets waiting for a sweep, once each, in the order found.
    std::vector<std::string> polluters_to_sweep() const {
        std::vector<std::string> polluters;
        for (const auto& [set, seed] : to_sweep_)
            for (const auto& test : set)
                if (std::find(polluters.begin(), polluters.end(), test) == polluters.end()) polluters.push_back(test);
        return polluters;
    }

    // Sweeps that will not run (time only shrinks, sweeps only add up): said once, not silently.
    void say_unswept(std::chrono::seconds sweep_bound) {
        const auto polluters = polluters_to_sweep();
        to_sweep_.clear();
        const auto left = std::max<long long>(0, std::chrono::duration_cast<std::chrono::seconds>(deadline_ - Clock::now()).count());
        const auto why = sweeps_ >= kMaxSweeps
                             ? std::to_string(kMaxSweeps) + " sweeps ran, the most one step runs"
                             : "a sweep and its " + std::to_string(std::max(0, suite_.reruns)) + " rerun(s) may take " +
                                   std::to_string(sweep_bound.count()) + " s (a TIMEOUT each), more than the step's " +
                                   std::to_string(left) + " s left";
        if (progress_.unswept) progress_.unswept(polluters, why);
    }

    // Sweeps are whole runs, not probes: they come out of no test's LOCALISE share, and these
    // many at most (each a run of the suite; one per round of new partner sets) within the
    // step's time.
    static constexpr int kMaxSweeps = 8;

    const SuiteConfig& suite_;
    const Receipt& receipt_;
    FixtureStore& store_;
    const int per_test_;
    const TriageAnswers& triage_;
    const LocaliseProgress& progress_;
    const Clock::time_point deadline_;
    std::vector<std::string> collection_;
    std::vector<LoadedRun> runs_;
    std::set<std::string> seen_;       // queued, ever
    std::vector<std::string> queued_;  // to localise, in this order
    std::vector<Culprit> culprits_;
    std::vector<std::vector<std::string>> known_;                               // the partner sets found so far, tried first for the next
    std::vector<std::pair<std::vector<std::string>, std::uint64_t>> to_sweep_;  // polluter sets not yet swept, with their seeds
    int used_ = 0;
    int sweeps_ = 0;
    int sweep_base_ = 0;  // the last sweep of a kept invocation: this step's are numbered after it
};

}  // namespace

std::vector<Culprit> localise_suite(const SuiteConfig& suite, const Receipt& receipt, FixtureStore& store, int per_test,
                                    const TriageAnswers& triage, const LocaliseProgress& progress) {
    auto culprits = Localiser(suite, receipt, store, per_test, triage, progress).run();
    write_file_atomic(culprits_file(suite), culprits_json(culprits, receipt.id));
    return culprits;
}

std::map<std::string, Culprit> load_culprits(const SuiteConfig& suite, const std::vector<std::string>& receipts) {
    std::map<std::string, Culprit> culprits;
    if (!fs::exists(culprits_file(suite))) return culprits;
    const auto doc = read_json_file(culprits_file(suite));
    const auto source = culprits_file(suite).string();
    const auto receipt = optional_string(doc, "receipt", source).value_or("");
    if (std::find(receipts.begin(), receipts.end(), receipt) == receipts.end()) return culprits;  // of runs no longer kept
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
