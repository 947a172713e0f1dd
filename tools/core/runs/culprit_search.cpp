#include "runs/culprit_search.hpp"

#include <algorithm>
#include <numeric>
#include <optional>

#include <gsl/gsl>

namespace evgate {
namespace {

using Order = std::vector<std::string>;
using Indices = std::vector<std::size_t>;  // positions in the tests before the one localised, ascending
using Clock = std::chrono::steady_clock;

constexpr std::size_t max_cleaners = 3;

std::string join(const std::vector<std::string>& items, const std::string& separator = ", ") {
    std::string out;
    for (const auto& item : items) {
        if (!out.empty()) out += separator;
        out += item;
    }
    return out;
}

std::string shown(const std::string& outcome) { return outcome.empty() ? "no result" : outcome; }

std::string shown(const Order& outcomes) {
    Order words;
    std::transform(outcomes.begin(), outcomes.end(), std::back_inserter(words),
                   [](const std::string& o) { return shown(o); });
    return join(words);
}

// A run without a result is tried again, up to this many attempts: an occasional crash must
// not steer the search, and one that recurs says something about the order.
constexpr int attempts_per_run = 3;

// Every run goes through here, so the budget holds everywhere.
class Runner {
public:
    Runner(const Oracle& oracle, const Budget& budget) : oracle_(oracle), budget_(budget), start_(Clock::now()) {}

    // nullopt: the budget is spent before a result came. "": no result in any attempt.
    std::optional<std::string> run(const Order& order) {
        for (int attempt = 1;; ++attempt) {
            if (spent()) return std::nullopt;
            ++used_;
            const auto outcome = oracle_(order);
            if (outcome.empty()) ++no_result_;
            if (!outcome.empty() || attempt == attempts_per_run) return outcome;
        }
    }

    // Runs held back for verification: a search cut short must leave room to check its best
    // candidate, or a flaky test would walk away with one. Time is held back at the mean run.
    void hold_back(int runs) { held_back_ = runs; }

    int used() const { return used_; }
    int no_result() const { return no_result_; }

    std::string spent_note() const {
        return "budget of " + std::to_string(budget_.max_runs) + " runs or " + std::to_string(budget_.max_time.count()) +
               " s spent after " + std::to_string(used_) + " runs";
    }

private:
    bool spent() const {
        const auto elapsed = Clock::now() - start_;
        const auto per_run = used_ > 0 ? elapsed / used_ : Clock::duration::zero();
        return used_ + held_back_ >= budget_.max_runs || elapsed + per_run * held_back_ >= budget_.max_time;
    }

    const Oracle& oracle_;
    const Budget& budget_;
    Clock::time_point start_;
    int held_back_ = 0;
    int used_ = 0;
    int no_result_ = 0;
};

// What a partner flips: a victim fails after its polluters and passes alone; a brittle test
// passes after its state-setters and fails alone.
struct Goal {
    OutcomeClass target;
    OutcomeClass alone;
    std::string order_name;
    std::string partner_role;
};

const Goal victim_goal{OutcomeClass::fail, OutcomeClass::pass, "failing order", "polluter"};
const Goal brittle_goal{OutcomeClass::pass, OutcomeClass::fail, "passing order", "state-setter"};
const Goal cleaner_goal{OutcomeClass::pass, OutcomeClass::none, "", ""};  // the victim passes again after polluter and cleaner

enum class Check { target,
                   other,
                   no_result,
                   out_of_budget };

// Where a search ended: `no_result` and `out_of_budget` cut it short.
enum class End { minimal,
                 not_reproducible,
                 no_result,
                 out_of_budget };

End cut_by(Check check) { return check == Check::no_result ? End::no_result : End::out_of_budget; }

// One search: subsets of `before` (kept in their order, which the subset-stable shuffle
// makes meaningful) run between `head` and the test.
struct Search {
    Order head;
    const Order& before;
    const Goal& goal;
    const std::string& test;
    Runner& runner;

    Order order_of(const Indices& subset) const {
        Order order = head;
        for (const auto i : subset) order.push_back(before[i]);
        order.push_back(test);
        return order;
    }

    // No result is neither outcome: a search that took it for either could blame a bystander.
    Check check(const Indices& subset) {
        const auto outcome = runner.run(order_of(subset));
        if (!outcome) return Check::out_of_budget;
        if (outcome->empty()) return Check::no_result;
        return *outcome == to_string(goal.target) ? Check::target : Check::other;
    }
};

struct Reduction {
    Indices set;              // the smallest set seen to reproduce: the best candidate so far
    bool reproduces = false;  // `set` reproduced in one of our runs, not only in the caller's order
    End end = End::minimal;
};

bool halts(Check check) { return check == Check::no_result || check == Check::out_of_budget; }

// The first `length` tests before it, then the required ones (all later, ascending).
Indices prefix_with(std::size_t length, const Indices& required) {
    Indices set(length);
    std::iota(set.begin(), set.end(), std::size_t{0});
    set.insert(set.end(), required.begin(), required.end());
    return set;
}

// Delta debugging by prefixes: bisect for the shortest prefix that, with the tests already
// required, reproduces; its last test is needed, so require it and search below it until the
// required tests reproduce on their own. Each partner costs about log2(n) + 1 runs where
// ddmin pays twice that for one and far more for a chain. The probe first is one run for the
// usual case of the test just before it; the whole order is rerun only when no shorter prefix
// reproduces, to tell "does not reproduce" from "needs the whole order".
Reduction minimise(Search& search) {
    const std::size_t n = search.before.size();
    Reduction r{prefix_with(n, {}), false, End::minimal};
    const auto cut = [&r](Check check) { return Reduction{r.set, r.reproduces, cut_by(check)}; };
    if (n > 1) {
        const auto check = search.check({n - 1});
        if (halts(check)) return cut(check);
        if (check == Check::target) return {{n - 1}, true, End::minimal};
    }
    Indices required;
    std::size_t upper = n;  // the tests from `upper` on are required or not needed
    while (true) {
        // prefix_with(lo) does not reproduce (alone, or checked below); prefix_with(hi) does.
        std::size_t lo = 0, hi = upper;
        while (hi - lo > 1) {
            const std::size_t mid = lo + (hi - lo) / 2;
            auto set = prefix_with(mid, required);
            const auto check = search.check(set);
            if (halts(check)) return cut(check);
            if (check == Check::other) {
                lo = mid;
            } else {
                r = {std::move(set), true, End::minimal};
                hi = mid;
            }
        }
        if (!r.reproduces) {
            const auto check = search.check(r.set);
            if (halts(check)) return cut(check);
            if (check == Check::other) return {r.set, false, End::not_reproducible};
            r.reproduces = true;
        }
        required.insert(required.begin(), hi - 1);
        upper = hi - 1;
        // With nothing left below, `required` is the set that just reproduced.
        if (upper == 0) break;
        const auto check = search.check(required);
        if (halts(check)) return cut(check);
        if (check == Check::target) break;
    }
    return {required, true, End::minimal};
}

// The claim is the flip, so both sides are rerun in alternation: with the set the test must
// reproduce, alone it must not. A nondeterministic test fails this and gets no partner.
Check verify(Search& search, const Indices& set, int confirmations, std::string& note) {
    const Order with_set = search.order_of(set);
    Order seen_with, seen_alone;
    for (int k = 0; k < confirmations; ++k) {
        const auto with = search.runner.run(with_set);
        if (!with) return Check::out_of_budget;
        const auto alone = search.runner.run({search.test});
        if (!alone) return Check::out_of_budget;
        seen_with.push_back(*with);
        seen_alone.push_back(*alone);
        if (*with != to_string(search.goal.target) || *alone != to_string(search.goal.alone)) {
            note = "not reproducible: after " + join(Order(with_set.begin(), with_set.end() - 1)) + " it gave " +
                   shown(seen_with) + "; alone " + shown(seen_alone);
            return Check::other;
        }
    }
    return Check::target;
}

struct Alone {
    Role role = Role::unknown;
    bool out_of_budget = false;
    std::string note;
};

// Passes every time alone: a victim. Fails every time: brittle. Anything else is no ground for
// a partner. `before`: what runs alone already showed, counted first.
Alone run_alone(Runner& runner, const std::string& test, int confirmations, const Order& before) {
    Order seen(before.begin(), before.begin() + std::min<std::ptrdiff_t>(confirmations, static_cast<std::ptrdiff_t>(before.size())));
    for (int k = static_cast<int>(seen.size()); k < confirmations; ++k) {
        const auto outcome = runner.run({test});
        if (!outcome) return {Role::unknown, true, runner.spent_note() + " while running it alone"};
        seen.push_back(*outcome);
    }
    const auto count = [&](OutcomeClass cls) { return std::count(seen.begin(), seen.end(), to_string(cls)); };
    if (count(OutcomeClass::pass) == confirmations) return {Role::victim, false, ""};
    if (count(OutcomeClass::fail) == confirmations) return {Role::brittle, false, ""};
    const bool mixed = count(OutcomeClass::pass) > 0 && count(OutcomeClass::fail) > 0;
    return {Role::unknown, false,
            (mixed ? "nondeterministic: alone it gave " : "no steady outcome alone: ") + shown(seen) +
                "; no partner is named for it"};
}

Order pick(const Order& before, const Indices& set) {
    Order picked;
    for (const auto i : set) picked.push_back(before[i]);
    return picked;
}

// Why the partners are a best candidate rather than a verified minimal set ("" when they are not).
std::string caveat(const Runner& runner, End end, Check verified) {
    if (end == End::minimal && verified == Check::target) return "";
    const std::string why = end == End::no_result
                                ? "the search stopped at a run with no result in " + std::to_string(attempts_per_run) + " attempts"
                                : runner.spent_note();
    const char* what = end == End::minimal         ? "the partners found are not verified"
                       : verified == Check::target ? "the best candidate so far is not minimal"
                                                   : "the best candidate so far is neither minimal nor verified";
    return why + ": " + what;
}

// The positions in `before` of each test of `set`, in the order they hold there; nullopt when
// one of them is not there.
std::optional<Indices> positions(const Order& before, const Order& set) {
    Indices found;
    for (const auto& test : set) {
        const auto at = std::find(before.begin(), before.end(), test);
        if (at == before.end()) return std::nullopt;
        found.push_back(static_cast<std::size_t>(at - before.begin()));
    }
    std::sort(found.begin(), found.end());
    return found;
}

// A partner set found for another test, tried in one run and then verified: when it flips this
// test too, no search is needed. true when it did (partners filled).
bool known_partners(Localisation& out, Search& search, const std::vector<Order>& known, const Budget& budget) {
    for (const auto& set : known) {
        const auto at = positions(search.before, set);
        if (!at || at->empty()) continue;
        if (search.check(*at) != Check::target) continue;
        std::string note;
        if (verify(search, *at, budget.confirmations, note) != Check::target) continue;
        out.partners = pick(search.before, *at);
        out.partner_role = search.goal.partner_role;
        return true;
    }
    return false;
}

// Fills partners from the order in which the test showed the goal's target outcome; returns
// what a reader needs to know about the search ("" when nothing).
std::string find_partners(Localisation& out, const Order& prefix, const Goal& goal, Runner& runner, const Budget& budget,
                          const std::vector<Order>& known) {
    if (prefix.empty()) return "no " + goal.order_name + " given: nothing to search";
    const Order before(prefix.begin(), prefix.end() - 1);
    if (before.empty()) return "it ran first in the " + goal.order_name + ": no earlier test to name";
    Search search{{}, before, goal, out.test, runner};
    if (known_partners(out, search, known, budget)) return "";
    runner.hold_back(2 * budget.confirmations);
    const auto reduction = minimise(search);
    runner.hold_back(0);
    if (reduction.end == End::not_reproducible) {
        return goal.target == OutcomeClass::fail
                   ? "not reproducible: the failing order passed when rerun"
                   : "it failed in every order tried, the passing order included: not order-dependent after all";
    }
    std::string note;
    const auto verdict = verify(search, reduction.set, budget.confirmations, note);
    if (verdict == Check::other) return note;
    out.partners = pick(before, reduction.set);
    out.partner_role = goal.partner_role;
    out.budget_exhausted = reduction.end == End::out_of_budget || verdict == Check::out_of_budget;
    return caveat(runner, reduction.end, verdict);
}

// Optional (iFixFlakies' cleaners): they point at the reset the polluter is missing. Only a
// passing order that ran the polluter before the victim is evidence that one exists, between
// the two: the prefix search over that window finds it in a few runs where trying every test
// would cost one run each. Found cleaners are set aside and the rest searched again.
std::string find_cleaners(Localisation& out, const Order& passing, Runner& runner) {
    const auto& polluter = out.partners.front();
    const auto at = std::find(passing.begin(), passing.end(), polluter);
    if (at == passing.end()) return "";
    Order window(at + 1, passing.end() - 1);
    while (!window.empty() && out.cleaners.size() < max_cleaners) {
        Search search{{polluter}, window, cleaner_goal, out.test, runner};
        const auto reduction = minimise(search);
        if (reduction.end == End::out_of_budget) return "cleaner search stopped by the budget";
        // Several tests that clean only together are no single cleaner to point at.
        if (reduction.end != End::minimal || reduction.set.size() != 1) break;
        const auto cleaner = window.begin() + static_cast<std::ptrdiff_t>(reduction.set.front());
        out.cleaners.push_back(*cleaner);
        window.erase(cleaner);
    }
    return "";
}

}  // namespace

std::string_view to_string(Role role) {
    switch (role) {
        case Role::victim: return "victim";
        case Role::brittle: return "brittle";
        case Role::unknown: break;
    }
    return "unknown";
}

Localisation localise(const std::string& test,
                      const std::vector<std::string>& failing_prefix,
                      const std::vector<std::string>& passing_prefix,
                      const Oracle& run, const Budget& budget, const std::vector<std::vector<std::string>>& known,
                      const std::vector<std::string>& alone_before) {
    Expects(budget.confirmations > 0);
    Expects(failing_prefix.empty() || failing_prefix.back() == test);
    Expects(passing_prefix.empty() || passing_prefix.back() == test);
    Runner runner(run, budget);
    Localisation out;
    out.test = test;
    const auto alone = run_alone(runner, test, budget.confirmations, alone_before);
    out.role = alone.role;
    out.budget_exhausted = alone.out_of_budget;
    std::vector<std::string> notes = {alone.note};
    if (alone.role == Role::victim) notes.push_back(find_partners(out, failing_prefix, victim_goal, runner, budget, known));
    if (alone.role == Role::brittle) notes.push_back(find_partners(out, passing_prefix, brittle_goal, runner, budget, known));
    if (out.role == Role::victim && out.partners.size() == 1 && !out.budget_exhausted)
        notes.push_back(find_cleaners(out, passing_prefix, runner));

    if (out.role == Role::victim) out.reproduce_order = out.partners;
    if (out.role == Role::brittle || !out.partners.empty()) out.reproduce_order.push_back(test);
    if (runner.no_result() > 0)
        notes.push_back(std::to_string(runner.no_result()) + " runs gave no result, counted as neither pass nor fail");
    notes.erase(std::remove(notes.begin(), notes.end(), std::string()), notes.end());
    out.runs_used = runner.used();
    out.note = join(notes, "; ");
    return out;
}

}  // namespace evgate
