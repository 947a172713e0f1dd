#include "verdicts/triage.hpp"

#include <algorithm>
#include <optional>
#include <utility>

namespace evgate {
namespace {

void note_message(std::string& first, const Attempt& a) {
    if (first.empty() && !a.message.empty()) first = ": " + a.message;
}

Observations observe(const std::vector<Attempt>& attempts) {
    Observations o;
    for (const auto& a : attempts) {
        if (!a.dirty.empty()) {
            o.dirty.insert(a.dirty.begin(), a.dirty.end());
            o.dirtied_in.push_back(a.run);
        }
        if (a.outcome == Outcome::interrupted) o.interrupted.push_back(a.run);
        if (a.outcome == Outcome::missing) o.missing.push_back(a.run);
        if (a.outcome == Outcome::uncalled) {
            o.uncalled.push_back(a.run);
            note_message(o.uncalled_message, a);
        }
        const auto cls = outcome_class(a.outcome);
        if (cls == OutcomeClass::fail) note_message(o.fail_message, a);
        if (cls == OutcomeClass::skip) note_message(o.skip_message, a);
        if (cls == OutcomeClass::none) continue;
        if (a.beside) o.beside_by_class[cls].push_back(a.run);
        else o.seen_not_beside.insert(cls);
        if (a.column != Column::local) {
            o.remote_runs_by_class[cls].push_back(a.run);
            if (a.column == Column::runner) o.runner_runs_by_class[cls].push_back(a.run);
            continue;
        }
        o.classes_by_order[a.order].insert(cls);
        o.runs_by_class[cls].push_back(a.run);
        if (a.order == kAloneOrder) o.alone_tried = true;
    }
    return o;
}

bool differ(const std::set<OutcomeClass>& classes) { return classes.size() > 1 && classes.count(OutcomeClass::fail) != 0; }

// One name per dirty group; every source-tree file as "(source tree)".
std::vector<std::string> dirty_names(const std::set<std::string>& dirty) {
    std::vector<std::string> names;
    for (const auto& g : dirty) {
        const bool tree = g.rfind(kSourceTreePrefix, 0) == 0;
        auto name = tree ? std::string(kSourceTreePrefix.substr(0, kSourceTreePrefix.size() - 1)) : g;
        if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(std::move(name));
    }
    return names;
}

}  // namespace

std::string listed(const std::vector<std::string>& items) {
    std::string out;
    for (const auto& item : items) {
        if (!out.empty()) out += ", ";
        out += item;
    }
    return out;
}

std::string some_of(const std::vector<std::string>& items) {
    constexpr std::size_t shown = 3;
    if (items.size() <= shown + 1) return listed(items);
    return listed({items.begin(), items.begin() + shown}) + " and " + std::to_string(items.size() - shown) + " more";
}

std::size_t Observations::count(OutcomeClass cls) const {
    const auto it = runs_by_class.find(cls);
    return it == runs_by_class.end() ? 0 : it->second.size();
}

std::string Observations::runs(OutcomeClass cls) const { return some_of(runs_by_class.at(cls)); }

const std::string* Observations::flaky_order() const {
    for (const auto& [order, classes] : classes_by_order)
        if (differ(classes)) return &order;
    return nullptr;
}

bool Observations::outcomes_differ() const {
    std::set<OutcomeClass> classes;
    for (const auto& [cls, runs] : runs_by_class) classes.insert(cls);
    return differ(classes);
}

bool Observations::passes_locally() const { return count(OutcomeClass::pass) && !count(OutcomeClass::fail); }

std::string Observations::failed_only_beside() const {
    const auto beside = beside_by_class.find(OutcomeClass::fail);
    if (beside == beside_by_class.end() || seen_not_beside.count(OutcomeClass::fail)) return "";
    return "; it failed only in runs that went beside other runs (" + some_of(beside->second) +
           ") and passed when they were done again alone: it may collide with another copy of itself (a fixed path "
           "outside ROOT, a port, a server) or be nondeterministic, and neither is a pass";
}

bool Observations::fails_locally() const { return runs_by_class.size() == 1 && count(OutcomeClass::fail); }

namespace {

// ------------------------------------------------------------------ forks weighed against fresh processes

bool local_result(const Attempt& a, OutcomeClass cls = OutcomeClass::none) {
    const auto c = outcome_class(a.outcome);
    return a.column == Column::local && c != OutcomeClass::none && (cls == OutcomeClass::none || c == cls);
}

// The attempts that were not forks, and why, when forks' failures are set aside (fork_doubt);
// else nullopt.
std::optional<std::pair<std::vector<Attempt>, std::string>> without_forks(const std::vector<Attempt>& attempts) {
    const auto doubt = fork_doubt(attempts);
    if (!doubt || doubt->passed.size() < doubt->needed) return std::nullopt;
    std::vector<std::string> failed_in;
    std::vector<Attempt> kept;
    for (const auto& a : attempts) {
        if (!a.fork) kept.push_back(a);
        else if (local_result(a, OutcomeClass::fail)) failed_in.push_back(a.run);
    }
    const auto where = doubt->order.empty() ? std::string("of its orders") : "of the same order";
    return std::pair{std::move(kept),
                     "; fork-sensitive: it failed only in forks of the collected session (" + some_of(failed_in) +
                         ") and passed in fresh processes " + where + " (" + some_of(doubt->passed) +
                         "): it reads state taken when the collection imported it (a time, a token, a path computed "
                         "at import), which ages with the session and is shared by its forks; the verdict rests on "
                         "the runs that were not forks"};
}

// The attempts of runs that were not beside others, and why, when every failure was seen beside
// another run and the redos alone passed often enough; else nullopt.
std::optional<std::pair<std::vector<Attempt>, std::string>> without_beside(const std::vector<Attempt>& attempts) {
    std::vector<std::string> failed_in, passed_apart;
    std::size_t beside = 0;
    for (const auto& a : attempts) {
        if (!local_result(a)) continue;
        const bool failed = outcome_class(a.outcome) == OutcomeClass::fail;
        if (a.beside) {
            ++beside;
            if (failed) failed_in.push_back(a.run);
        } else if (failed) {
            return std::nullopt;  // failed with nothing beside it too
        } else if (const auto id = RunId::parse(a.run); id && id->is_apart()) {
            passed_apart.push_back(a.run);
        }
    }
    const auto needed = fresh_runs_needed(failed_in.size(), beside);
    if (needed == 0 || needed > kMostFreshRuns || passed_apart.size() < needed) return std::nullopt;
    std::vector<Attempt> kept;
    for (const auto& a : attempts)
        if (!a.beside) kept.push_back(a);
    return std::pair{std::move(kept),
                     "; it collides with another copy of itself: it failed only in runs that went beside other runs (" +
                         some_of(failed_in) + ") and passed each time they were done again alone (" + some_of(passed_apart) +
                         ") — a fixed port, or a path outside the sandbox, which plain pytest, one run at a time, never "
                         "shares; the verdict rests on the runs alone"};
}

// Where the test ran alone in a fresh process and changed nothing there: what it changed in other
// runs, taken off it (the groups and runs), with its attempts cleaned; else nullopt.
struct Unattributed {
    std::vector<Attempt> attempts;
    std::vector<std::string> groups, runs, alone;
};
std::optional<Unattributed> not_its_changes(const std::vector<Attempt>& attempts) {
    Unattributed u;
    std::set<std::string> groups;
    for (const auto& a : attempts) {
        const bool alone_fresh = a.fresh && a.order == kAloneOrder && local_result(a);
        if (alone_fresh && !a.dirty.empty()) return std::nullopt;  // alone, it did it: its own change
        if (alone_fresh) u.alone.push_back(a.run);
        if (!a.dirty.empty()) {
            groups.insert(a.dirty.begin(), a.dirty.end());
            u.runs.push_back(a.run);
        }
    }
    if (u.alone.empty() || groups.empty()) return std::nullopt;
    u.groups.assign(groups.begin(), groups.end());
    u.attempts = attempts;
    for (auto& a : u.attempts) a.dirty.clear();
    return u;
}

Classification by_precedence_of(const std::vector<Attempt>& attempts) {
    const Observations o = observe(attempts);
    Classification result;
    bool found = false;
    for (const Verdict v : by_precedence()) {
        auto reason = info(v).rule(o);
        if (!reason) continue;
        if (!found) {
            result.verdict = v;
            result.reason = std::move(*reason);
            found = true;
        } else if (v != Verdict::stable) {  // a test that also passes everywhere: no news beside the verdict
            result.also.push_back(v);
        }
    }
    if (!found) {
        result.verdict = Verdict::missing;
        result.reason = "no result in any run";
    }
    result.dirty = dirty_names(o.dirty);
    return result;
}

}  // namespace

std::size_t fresh_runs_needed(std::size_t failed, std::size_t runs) {
    constexpr double kAlpha = 0.01;
    if (failed == 0 || runs == 0) return 0;
    failed = std::min(failed, runs);
    for (std::size_t m = 2; m <= kMostFreshRuns; ++m) {
        double chance = 1.0;  // C(runs, failed) / C(runs + m, failed)
        for (std::size_t i = 0; i < failed; ++i) chance *= static_cast<double>(runs - i) / static_cast<double>(runs + m - i);
        if (chance <= kAlpha) return m;
    }
    return kMostFreshRuns + 1;
}

std::optional<ForkDoubt> fork_doubt(const std::vector<Attempt>& attempts) {
    struct Counts {
        std::size_t failed = 0, runs = 0;  // fork attempts with a result, and those that failed
        std::vector<std::string> fresh_passed;
    };
    std::map<std::string, Counts> by_order;
    Counts all;
    for (const auto& a : attempts) {
        if (!local_result(a)) continue;
        const bool failed = outcome_class(a.outcome) == OutcomeClass::fail;
        if (failed && !a.fork) return std::nullopt;  // a process failed it too (a fresh one among them)
        for (auto* counts : {&by_order[a.order], &all}) {
            if (a.fork) {
                ++counts->runs;
                counts->failed += failed;
            } else if (a.fresh) {
                counts->fresh_passed.push_back(a.run);
            }
        }
    }
    if (all.failed == 0) return std::nullopt;
    // Forks failed it wherever it ran: the order has nothing to do with it, and any fresh process counts.
    if (all.failed == all.runs && fresh_runs_needed(all.failed, all.runs) <= kMostFreshRuns)
        return ForkDoubt{"", fresh_runs_needed(all.failed, all.runs), std::move(all.fresh_passed)};
    // Else the order whose fresh processes are nearest to setting its forks aside.
    std::optional<ForkDoubt> best;
    for (auto& [order, counts] : by_order) {
        const auto needed = fresh_runs_needed(counts.failed, counts.runs);
        if (needed == 0 || needed > kMostFreshRuns) continue;
        const auto short_of = needed - std::min(needed, counts.fresh_passed.size());
        if (!best || short_of < best->needed - std::min(best->needed, best->passed.size()))
            best = ForkDoubt{order, needed, std::move(counts.fresh_passed)};
    }
    return best;
}

Classification classify(const std::vector<Attempt>& attempts) {
    const auto unattributed = not_its_changes(attempts);
    const auto& own = unattributed ? unattributed->attempts : attempts;
    const auto processes = without_forks(own);
    const auto& unforked = processes ? processes->first : own;
    const auto alone = without_beside(unforked);
    auto result = by_precedence_of(alone ? alone->first : unforked);
    if (processes) {
        result.fork_sensitive = true;
        result.reason += processes->second;
    }
    if (alone) {
        result.collides = true;
        result.reason += alone->second;
    }
    if (unattributed) {
        result.unattributed = dirty_names({unattributed->groups.begin(), unattributed->groups.end()});
        result.unattributed_in = unattributed->runs;
        result.reason += "; not blamed for changing " + listed(result.unattributed) + " while it ran (in " +
                         some_of(unattributed->runs) + "): alone in a fresh process (" + some_of(unattributed->alone) +
                         ") it changed nothing";
    }
    return result;
}

TriageAnswers triage_answers() {
    TriageAnswers answers;
    answers.order_dependent = [](const std::vector<Attempt>& attempts) {
        return classify(attempts).verdict == Verdict::order_dependent;
    };
    answers.fresh_doubts = [](const std::vector<Attempt>& attempts) {
        const auto c = classify(attempts);
        FreshDoubts doubts;
        doubts.changed = !c.dirty.empty();
        if (c.verdict == Verdict::flaky || c.verdict == Verdict::order_dependent || c.verdict == Verdict::failing)
            doubts.forks = fork_doubt(attempts);
        return doubts;
    };
    return answers;
}

}  // namespace evgate
