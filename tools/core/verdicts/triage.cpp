#include "verdicts/triage.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace evgate {
namespace {

using Runs = std::vector<std::string>;

// How the plugin names a file it saw a test change in the source tree, outside the groups.
constexpr std::string_view kSourceTreePrefix = "(source tree):";

std::string join(const std::vector<std::string>& items, std::string_view separator = ", ") {
    std::string out;
    for (const auto& item : items) {
        if (!out.empty()) out += separator;
        out += item;
    }
    return out;
}

// "seed.1, seed.4 and 3 more": short enough for one line.
std::string some(const Runs& runs) {
    constexpr std::size_t shown = 3;
    if (runs.size() <= shown + 1) return join(runs);
    return join(Runs(runs.begin(), runs.begin() + shown)) + " and " + std::to_string(runs.size() - shown) + " more";
}

std::string first_message(const std::vector<Attempt>& attempts, std::string_view cls) {
    for (const auto& a : attempts)
        if (outcome_class(a.outcome) == cls && !a.message.empty()) return ": " + a.message;
    return "";
}

struct Observations {
    std::map<std::string, std::set<std::string>> classes_by_order;  // local attempts with a result
    std::map<std::string, Runs> runs_by_class;                       // local
    std::map<std::string, Runs> remote_runs_by_class;                // runners and perturbed
    std::map<std::string, Runs> runner_runs_by_class;                // runners only
    Runs interrupted, missing;
    std::set<std::string> dirty;
    Runs dirtied_in;
    bool alone_tried = false;
};

Observations observe(const std::vector<Attempt>& attempts) {
    Observations o;
    for (const auto& a : attempts) {
        if (!a.dirty.empty()) {
            o.dirty.insert(a.dirty.begin(), a.dirty.end());
            o.dirtied_in.push_back(a.run);
        }
        if (a.outcome == "interrupted") o.interrupted.push_back(a.run);
        if (a.outcome == "missing") o.missing.push_back(a.run);
        const auto cls = std::string(outcome_class(a.outcome));
        if (cls.empty()) continue;
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

std::string_view verb(std::string_view cls) {
    return cls == "pass" ? "passes" : cls == "fail" ? "fails" : "is skipped";
}

// Outcomes "differ" only when one of them is a failure: a test skipped in some orders and
// passing in others never failed, and its skip is its own business.
std::set<std::string> local_classes(const Observations& o) {
    std::set<std::string> classes;
    for (const auto& [cls, runs] : o.runs_by_class) classes.insert(cls);
    return classes;
}

bool differ(const std::set<std::string>& classes) { return classes.size() > 1 && classes.count("fail") != 0; }

const std::string* flaky_order(const Observations& o) {
    for (const auto& [order, classes] : o.classes_by_order)
        if (differ(classes)) return &order;
    return nullptr;
}

}  // namespace

std::string_view to_string(Verdict verdict) {
    switch (verdict) {
        case Verdict::polluter: return "polluter";
        case Verdict::interrupted: return "interrupted";
        case Verdict::missing: return "missing";
        case Verdict::order_dependent: return "order-dependent";
        case Verdict::flaky: return "flaky";
        case Verdict::runner_only_pass: return "runner-only-pass";
        case Verdict::failing: return "failing";
        case Verdict::portability_gap: return "portability-gap";
        case Verdict::skipped: return "skipped";
        case Verdict::stable: return "stable";
    }
    return "stable";
}

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

Classification classify(const std::vector<Attempt>& attempts) {
    const Observations o = observe(attempts);
    std::vector<std::pair<Verdict, std::string>> found;  // every verdict that applies, with its reason

    if (!o.dirty.empty()) {
        std::vector<std::string> groups, files;  // the plugin names a source-tree file "(source tree):<path>"
        for (const auto& g : o.dirty) {
            if (g.rfind(kSourceTreePrefix, 0) == 0) files.push_back(g.substr(kSourceTreePrefix.size()));
            else groups.push_back("'" + g + "'");
        }
        std::string what;
        if (!groups.empty()) what = "changed fixture group " + join(groups) + " without declaring it";
        if (!files.empty())
            what += (what.empty() ? "changed " : " and changed ") + some(files) + " in the source tree, outside every fixture group";
        found.emplace_back(Verdict::polluter, what + " (in " + some(o.dirtied_in) + ")");
    }
    if (!o.interrupted.empty())
        found.emplace_back(Verdict::interrupted, "the interpreter died or was killed while it ran (in " +
                                                     some(o.interrupted) + ")");
    if (!o.missing.empty())
        found.emplace_back(Verdict::missing, "collected, but no result in " + some(o.missing));

    const auto count = [&](const char* cls) { return o.runs_by_class.count(cls) ? o.runs_by_class.at(cls).size() : 0; };
    const auto runs = [&](const char* cls) { return some(o.runs_by_class.at(cls)); };
    if (const auto* order = flaky_order(o)) {
        found.emplace_back(Verdict::flaky, "outcome differs between runs of the same order (" + *order +
                                               "): passes in " + (count("pass") ? runs("pass") : "none") +
                                               ", fails in " + (count("fail") ? runs("fail") : "none") +
                                               first_message(attempts, "fail"));
    } else if (differ(local_classes(o))) {
        std::string reason = "the outcome follows the order:";
        for (const char* cls : {"pass", "fail", "skip"}) {
            if (count(cls)) reason += " " + std::string(verb(cls)) + " in " + runs(cls) + ";";
        }
        reason.pop_back();
        found.emplace_back(Verdict::order_dependent, reason + first_message(attempts, "fail"));
    }

    const bool local_pass = count("pass") && !count("fail");  // skips in some orders do not count against it
    const bool local_fail = o.runs_by_class.size() == 1 && count("fail");
    if (local_fail && o.runner_runs_by_class.count("pass"))
        found.emplace_back(Verdict::runner_only_pass, "fails in every local run but passes in " +
                                                          some(o.runner_runs_by_class.at("pass")) + ": an inverted signal");
    if (local_fail) {
        found.emplace_back(Verdict::failing, "fails in every run (" + std::to_string(count("fail")) + " runs" +
                                                 (o.alone_tried ? ", alone too" : ", not tried alone") + ")" +
                                                 first_message(attempts, "fail"));
    }
    if (local_pass && o.remote_runs_by_class.count("fail"))
        found.emplace_back(Verdict::portability_gap, "passes in every local run but fails in " +
                                                         some(o.remote_runs_by_class.at("fail")) + first_message(attempts, "fail"));
    if (o.runs_by_class.size() == 1 && count("skip"))
        found.emplace_back(Verdict::skipped, "skipped in every run" + first_message(attempts, "skip"));
    if (local_pass) {
        std::string reason = "passes in every run (" + std::to_string(count("pass")) + ")";
        if (count("skip")) reason = "passes in " + runs("pass") + " and is skipped in " + runs("skip") + ": it never fails";
        found.emplace_back(Verdict::stable, reason);
    }
    if (found.empty()) found.emplace_back(Verdict::missing, "no result in any run");

    std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    Classification result;
    result.verdict = found.front().first;
    result.reason = found.front().second;
    for (auto it = std::next(found.begin()); it != found.end(); ++it)
        if (it->first != Verdict::stable) result.also.push_back(it->first);
    for (const auto& g : o.dirty) {
        const bool tree = g.rfind(kSourceTreePrefix, 0) == 0;
        const auto name = tree ? std::string(kSourceTreePrefix.substr(0, kSourceTreePrefix.size() - 1)) : g;
        if (std::find(result.dirty.begin(), result.dirty.end(), name) == result.dirty.end()) result.dirty.push_back(name);
    }
    return result;
}

}  // namespace evgate
