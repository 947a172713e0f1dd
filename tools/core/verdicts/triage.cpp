#include "verdicts/triage.hpp"

#include <algorithm>
#include <cmath>
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
        if (a.outcome == "interrupted") o.interrupted.push_back(a.run);
        if (a.outcome == "missing") o.missing.push_back(a.run);
        if (a.outcome == kUncalled) {
            o.uncalled.push_back(a.run);
            note_message(o.uncalled_message, a);
        }
        const auto cls = std::string(outcome_class(a.outcome));
        if (cls == "fail") note_message(o.fail_message, a);
        if (cls == "skip") note_message(o.skip_message, a);
        if (cls.empty()) continue;
        if (a.beside) o.beside_by_class[cls].push_back(a.run);
        else o.seen_not_beside.insert(cls);
        if (a.column != Column::local) {
            o.remote_runs_by_class[cls].push_back(a.run);
            if (a.column == Column::runner) o.runner_runs_by_class[cls].push_back(a.run);
            continue;
        }
        o.classes_by_order[a.order].insert(cls);
        o.runs_by_class[cls].push_back(a.run);
        if (a.order == "alone") o.alone_tried = true;
    }
    return o;
}

bool differ(const std::set<std::string>& classes) { return classes.size() > 1 && classes.count("fail") != 0; }

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

std::size_t Observations::count(const std::string& cls) const {
    const auto it = runs_by_class.find(cls);
    return it == runs_by_class.end() ? 0 : it->second.size();
}

std::string Observations::runs(const std::string& cls) const { return some_of(runs_by_class.at(cls)); }

const std::string* Observations::flaky_order() const {
    for (const auto& [order, classes] : classes_by_order)
        if (differ(classes)) return &order;
    return nullptr;
}

bool Observations::outcomes_differ() const {
    std::set<std::string> classes;
    for (const auto& [cls, runs] : runs_by_class) classes.insert(cls);
    return differ(classes);
}

bool Observations::passes_locally() const { return count("pass") && !count("fail"); }

std::string Observations::failed_only_beside() const {
    const auto beside = beside_by_class.find("fail");
    if (beside == beside_by_class.end() || seen_not_beside.count("fail")) return "";
    return "; it failed only in runs that went beside other runs (" + some_of(beside->second) +
           ") and passed when they were done again alone: it may collide with another copy of itself (a fixed path "
           "outside ROOT, a port, a server) or be nondeterministic, and neither is a pass";
}

bool Observations::fails_locally() const { return runs_by_class.size() == 1 && count("fail"); }

std::string_view to_string(Column column) {
    switch (column) {
        case Column::local: return "local";
        case Column::runner: return "runner";
        case Column::perturbed: return "perturbed";
    }
    return "local";
}

bool parse_column(std::string_view text, Column& column) {
    for (auto c : {Column::local, Column::runner, Column::perturbed}) {
        if (to_string(c) == text) {
            column = c;
            return true;
        }
    }
    return false;
}

std::string_view outcome_class(std::string_view outcome) {
    if (outcome == "passed" || outcome == "xfailed" || outcome == "xpassed") return "pass";
    if (outcome == "failed" || outcome == "error") return "fail";
    if (outcome == "skipped") return "skip";
    return "";
}

namespace {

// ------------------------------------------------------------------ forks weighed against fresh processes

bool local_result(const Attempt& a, std::string_view cls = {}) {
    const auto c = outcome_class(a.outcome);
    return a.column == Column::local && !c.empty() && (cls.empty() || c == cls);
}

struct ForkCounts {
    std::size_t failed = 0, runs = 0;  // fork attempts with a result, and those that failed
    std::vector<std::string> fresh_passed;
};

// The attempts that were not forks, and why, when forks' failures are set aside; else nullopt.
std::optional<std::pair<std::vector<Attempt>, std::string>> without_forks(const std::vector<Attempt>& attempts) {
    std::map<std::string, ForkCounts> by_order;
    std::vector<std::string> failed_in;
    for (const auto& a : attempts) {
        if (!local_result(a)) continue;
        const bool failed = outcome_class(a.outcome) == "fail";
        if (failed && !a.fork) return std::nullopt;  // a process failed it too: no fork's doing
        auto& counts = by_order[a.order];
        if (a.fork) {
            ++counts.runs;
            if (failed) {
                ++counts.failed;
                failed_in.push_back(a.run);
            }
        } else if (a.fresh) {
            counts.fresh_passed.push_back(a.run);
        }
    }
    std::vector<std::string> confirmed;
    for (const auto& [order, counts] : by_order) {
        const auto needed = fresh_runs_needed(counts.failed, counts.runs);
        if (needed > 0 && counts.fresh_passed.size() >= needed)
            confirmed.insert(confirmed.end(), counts.fresh_passed.begin(), counts.fresh_passed.end());
    }
    if (confirmed.empty()) return std::nullopt;
    std::vector<Attempt> kept;
    for (const auto& a : attempts)
        if (!a.fork) kept.push_back(a);
    return std::pair{std::move(kept),
                     "; fork-sensitive: it failed only in forks of the collected session (" + some_of(failed_in) +
                         ") and passed in fresh processes of the same order (" + some_of(confirmed) +
                         "): it reads state taken when the collection imported it (a time, a token, a path computed "
                         "at import), which ages with the session and is shared by its forks; the verdict rests on "
                         "the runs that were not forks"};
}

// The attempts of runs that were not beside others, and why, when every failure was seen beside
// another run and the redos alone passed often enough; else nullopt.
std::optional<std::pair<std::vector<Attempt>, std::string>> without_beside(const std::vector<Attempt>& attempts) {
    constexpr std::string_view kApart = ".apart";
    std::vector<std::string> failed_in, passed_apart;
    std::size_t beside = 0;
    for (const auto& a : attempts) {
        if (!local_result(a)) continue;
        const bool failed = outcome_class(a.outcome) == "fail";
        if (a.beside) {
            ++beside;
            if (failed) failed_in.push_back(a.run);
        } else if (failed) {
            return std::nullopt;  // failed with nothing beside it too
        } else if (a.run.size() > kApart.size() && a.run.compare(a.run.size() - kApart.size(), kApart.size(), kApart) == 0) {
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
    if (failed == 0 || runs == 0) return 0;
    if (failed >= runs) return 2;
    const double p = static_cast<double>(failed) / static_cast<double>(runs);
    const auto needed = static_cast<std::size_t>(std::ceil(std::log(0.05) / std::log(1.0 - p)));
    return std::max<std::size_t>(needed, 2);
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

}  // namespace evgate
