#include "verdicts/suite_checks.hpp"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <map>
#include <set>
#include <unordered_set>

#include "inputs/outcome.hpp"
#include "inputs/run_id.hpp"
#include "io/natural_order.hpp"
#include "runs/alone_budget.hpp"
#include "verdicts/counts.hpp"

namespace evgate {
namespace {

// A suite row is gated as the table gates its verdict: nothing defers a suite check.
LedgerRow suite_row(std::string check, Verdict verdict, std::string reason) {
    LedgerRow row;
    row.test = std::move(check);
    row.suite_scope = true;
    row.verdict = verdict;
    row.gate = info(verdict).gate;
    row.reason = std::move(reason);
    return row;
}

LedgerRow warning_row(std::string check, std::string reason) {
    auto row = suite_row(std::move(check), Verdict::stable, "warning: " + std::move(reason));
    row.warning = true;
    return row;
}

std::string list_some(const std::vector<std::string>& items, std::size_t shown = 5) {
    std::string out;
    for (std::size_t i = 0; i < items.size() && i < shown; ++i) out += (i ? ", " : "") + items[i];
    if (items.size() > shown) out += " and " + std::to_string(items.size() - shown) + " more";
    return out;
}

// ------------------------------------------------------------------ the receipt and the collection

// An option (as the receipt lists it, "-c ci.ini (PYTEST_ADDOPTS)") that names a config file or rootdir.
bool chooses_config(const std::string& option) {
    for (const char* name : {"-c ", "--config-file ", "--inifile ", "--rootdir "})
        if (option.rfind(name, 0) == 0) return true;
    return false;
}

std::vector<std::string> config_choosers(const Receipt& receipt) {
    std::vector<std::string> found;
    std::copy_if(receipt.thinning.begin(), receipt.thinning.end(), std::back_inserter(found), chooses_config);
    return found;
}

bool rooted_as_meant(const GateInput& input) {
    std::error_code ec;
    return std::filesystem::equivalent(input.receipt.rootdir, input.root, ec) &&
           same_config(input.receipt.configfile, input.receipt.expected_configfile);
}

// Did pytest run the suite the project means: rooted at ROOT, with the project's config?
LedgerRow receipt_row(const GateInput& input) {
    const auto& receipt = input.receipt;
    const auto chosen_by = config_choosers(receipt);
    const auto by_option = chosen_by.empty() ? std::string()
                                             : "an option chose another config, and with it other tests: " + list_some(chosen_by, 4);
    std::error_code ec;
    if (!std::filesystem::equivalent(receipt.rootdir, input.root, ec))
        return suite_row("receipt", Verdict::missing, "pytest chose rootdir '" + receipt.rootdir + "', not ROOT '" + input.root + "'" + (by_option.empty() ? "" : ": " + by_option));
    if (!same_config(receipt.configfile, receipt.expected_configfile))
        return suite_row("receipt", Verdict::missing,
                         "pytest read its configuration from '" + receipt.configfile.value_or("(none)") +
                             "', but the project's is '" + receipt.expected_configfile.value_or("(none)") + "': " +
                             (by_option.empty() ? std::string("a stray config file re-rooted collection") : by_option));
    return suite_row("receipt", Verdict::stable, "rootdir '" + receipt.rootdir + "', configfile '" + receipt.configfile.value_or("(none)") + "', " + std::to_string(receipt.conftests.size()) + " conftest file(s)");
}

// Who took a test out of the receipt's collection, in words.
std::string lost_by(const LostTest& lost, const Receipt& receipt) {
    if (lost.by.empty()) return "a hook that took it out of the items without pytest_deselected";
    for (const auto& plugin : receipt.pytest_plugins)
        if (lost.by.rfind(plugin + " (", 0) == 0) return lost.by + ", a plugin PYTEST_PLUGINS loads";
    return lost.by;
}

// The tests hooks took out of the receipt's collection, by who took them: "" when none.
std::string lost_in_collection(const Receipt& receipt) {
    if (receipt.deselected.empty()) return "";
    std::vector<std::pair<std::string, std::vector<std::string>>> by;  // who -> tests, in the order first seen
    for (const auto& lost : receipt.deselected) {
        const auto who = lost_by(lost, receipt);
        auto it = std::find_if(by.begin(), by.end(), [&](const auto& b) { return b.first == who; });
        if (it == by.end()) it = by.insert(by.end(), {who, {}});
        it->second.push_back(lost.id);
    }
    std::string text = std::to_string(receipt.deselected.size()) + " test(s) deselected in the receipt's collection: ";
    for (std::size_t i = 0; i < by.size(); ++i)
        text += (i ? "; " : "") + list_some(by[i].second, 3) + " by " + by[i].first;
    return text;
}

// What thins the run: options, hooks that deselect, and PYTEST_PLUGINS (which nothing in the
// project names) beside them; "" when nothing does. An option that names the config file or
// rootdir pytest would have chosen anyway (`rooted`: the receipt row holds) thins nothing.
std::string thinning_reason(const Receipt& receipt, bool rooted) {
    std::vector<std::string> options;
    std::copy_if(receipt.thinning.begin(), receipt.thinning.end(), std::back_inserter(options),
                 [&](const std::string& option) { return !rooted || !chooses_config(option); });
    std::vector<std::string> parts;
    if (!options.empty()) parts.push_back("options thin the run: " + list_some(options, 10));
    if (auto lost = lost_in_collection(receipt); !lost.empty()) parts.push_back(std::move(lost));
    if (parts.empty()) return "";
    if (!receipt.pytest_plugins.empty())
        parts.push_back("PYTEST_PLUGINS in the environment loads " + list_some(receipt.pytest_plugins));
    std::string reason;
    for (const auto& part : parts) reason += (reason.empty() ? "" : "; ") + part;
    return reason + " (a baseline catches what they drop)";
}

// Config files that would re-root pytest, options and hooks that thin or hollow out the run.
std::vector<LedgerRow> workspace_rows(const GateInput& input) {
    std::vector<LedgerRow> rows{receipt_row(input)};
    const auto& receipt = input.receipt;
    for (const auto& stray : receipt.stray_configs) {
        if (receipt.configfile && std::filesystem::path(*receipt.configfile).filename() == stray) continue;
        rows.push_back(warning_row("stray-config:" + stray, "'" + stray + "' would re-root pytest started in its directory, "
                                                                          "or on a test of this suite below it"));
    }
    // Said once: a vendored tree's or a submodule's config concerns another suite.
    if (const auto& ignored = receipt.stray_configs_ignored; !ignored.empty()) {
        const auto in_submodules = receipt.stray_configs_in_submodules.size();
        rows.push_back(suite_row(
            "stray-configs-ignored", Verdict::stable,
            std::to_string(ignored.size()) + (ignored.size() == 1 ? " config file" : " config files") +
                " below ROOT could not re-root this suite's collection (no collected test lies below its directory" +
                (in_submodules ? "; " + std::to_string(in_submodules) + " in git submodules" : std::string()) +
                "), so none warns: " + list_some(ignored, 5)));
    }
    if (auto thinning = thinning_reason(receipt, rooted_as_meant(input)); !thinning.empty()) rows.push_back(warning_row("thinning", std::move(thinning)));
    // The suite's own options and plugins a run is not (its cache, xdist's workers, reruns, coverage):
    // the runs are what they should be, but not what a plain `pytest` of the suite would do.
    if (!receipt.set_aside.empty()) {
        std::string reason = "every run sets aside ";
        for (std::size_t i = 0; i < receipt.set_aside.size(); ++i) reason += (i ? "; " : "") + receipt.set_aside[i];
        rows.push_back(warning_row("set-aside", std::move(reason)));
    }
    // A run under these calls no test, yet pytest reports setup and teardown as passed.
    if (!receipt.hollow.empty())
        rows.push_back(suite_row("options", Verdict::missing, "pytest reports the tests without running them under " + list_some(receipt.hollow, 10) + ": remove the option"));
    return rows;
}

LedgerRow collection_row(const Receipt& receipt) {
    std::vector<std::string> broken;  // what makes the collection unusable
    if (!receipt.errors.empty())
        broken.push_back(std::to_string(receipt.errors.size()) + " collection error(s): " + receipt.errors.front());
    if (const auto duplicates = duplicate_ids(receipt); !duplicates.empty())
        broken.push_back(std::to_string(duplicates.size()) + " node id(s) collected more than once: " +
                         describe_duplicates(duplicates));
    if (!broken.empty())
        return suite_row("collection", Verdict::missing, broken.size() == 1 ? broken[0] : broken[0] + "; " + broken[1]);
    if (receipt.tests.empty()) return suite_row("collection", Verdict::missing, "no tests collected");
    return suite_row("collection", Verdict::stable, counted(receipt.tests.size(), "test") + " collected");
}

// The collection against the committed baseline: fewer tests than it expects blocks.
LedgerRow baseline_row(const GateInput& input) {
    if (!input.baseline)
        return suite_row("baseline", Verdict::missing, "the baseline '" + input.baseline_file + "' does not exist; write it with `evgate baseline --suite <suite.json>`");
    const auto& baseline = *input.baseline;
    const auto collected = static_cast<std::int64_t>(input.receipt.tests.size());
    std::unordered_set<std::string> now;
    for (const auto& t : input.receipt.tests) now.insert(t.id);
    std::vector<std::string> gone;
    for (const auto& id : baseline.tests)
        if (!now.count(id)) gone.push_back(id);
    const std::string counts = "collected " + std::to_string(collected) + " tests, the baseline expects " +
                               std::to_string(baseline.collected);
    const bool shrank = collected + input.baseline_tolerance < baseline.collected ||
                        static_cast<std::int64_t>(gone.size()) > input.baseline_tolerance;
    if (shrank) return suite_row("baseline", Verdict::missing, counts + (gone.empty() ? "" : "; missing: " + list_some(gone)));
    std::string reason = counts;
    if (collected > baseline.collected) reason += " (" + std::to_string(collected - baseline.collected) + " new)";
    if (!gone.empty()) reason += "; within the tolerated drop: " + list_some(gone);
    return suite_row("baseline", Verdict::stable, reason);
}

// ------------------------------------------------------------------ the runs

// Ids the receipt does not list (a run may leave out receipt tests on purpose: a rerun prefix).
// The receipt's ids are gathered only once a run lists any.
class UnknownIds {
public:
    explicit UnknownIds(const Receipt& receipt) : receipt_(receipt) {}
    std::vector<std::string> of(const std::vector<std::string>& ids) {
        if (!ids.empty() && known_.empty())
            for (const auto& t : receipt_.tests) known_.insert(t.id);
        std::vector<std::string> out;
        for (const auto& id : ids)
            if (!known_.count(id)) out.push_back(id);
        return out;
    }

private:
    const Receipt& receipt_;
    std::unordered_set<std::string> known_;
};

// Tests a run's pytest collected that the receipt lacks (so no run planned them), and why the
// receipt lacks them where it knows.
std::string unlisted_trouble(const std::vector<std::string>& extra, const Receipt& receipt) {
    std::string why = "added since the receipt was taken, or collected in runs only";
    const auto lost = std::find_if(receipt.deselected.begin(), receipt.deselected.end(),
                                   [&](const LostTest& t) { return t.id == extra.front(); });
    if (lost != receipt.deselected.end())
        why = (extra.size() > 1 ? "the first " : "") + std::string("deselected in the receipt's collection by ") +
              lost_by(*lost, receipt) + "; in this run evidence-gate's order left it out, and the hook came after it";
    return "the receipt lacks tests pytest collected in this run, so no run planned them: " + list_some(extra) + " (" +
           why + ")";
}

// What a run's pytest processes saw that the receipt does not: another rootdir, configfile or
// conftest set, tests it lacks; else "".
std::string session_trouble(const RunRecords& r, const Receipt& receipt, UnknownIds& unknown) {
    for (const auto& s : r.sessions) {
        if (s.rootdir != receipt.rootdir)
            return "pytest ran with rootdir '" + s.rootdir + "', the receipt has '" + receipt.rootdir + "'";
        if (s.configfile != receipt.configfile)
            return "pytest ran with configfile '" + s.configfile.value_or("none") + "', the receipt has '" +
                   receipt.configfile.value_or("none") + "'";
        if (s.conftests != receipt.conftests) return "pytest loaded other conftest files than the receipt lists";
        if (auto extra = unknown.of(s.unlisted); !extra.empty())
            return unlisted_trouble(extra, receipt);
    }
    return "";
}

// 0 passed, 1 tests failed: anything else is pytest's trouble.
std::string exit_trouble(const RunRecords& r) {
    for (int status : r.exit_statuses)
        if (status != 0 && status != 1)
            return "pytest ended with exit status " + std::to_string(status) +
                   (status == 3 ? " (an internal error, INTERNALERROR)" : status == 2 ? " (interrupted)"
                                                                                      : "");
    return "";
}

LedgerRow run_row(const GateInput& input, std::size_t i, UnknownIds& unknown) {
    const auto& run = input.runs.runs()[i];
    const std::string name = "run:" + run.plan.id.str();
    if (!run.problem.empty()) return suite_row(name, Verdict::interrupted, run.problem);
    const auto& r = run.records;
    auto trouble = session_trouble(r, input.receipt, unknown);
    if (trouble.empty()) trouble = exit_trouble(r);
    if (!trouble.empty()) return suite_row(name, Verdict::missing, trouble);
    if (!r.finished) return suite_row(name, Verdict::interrupted, "the run did not finish (no 'finished' record)");
    if (!*r.finished) return suite_row(name, Verdict::interrupted, "the run did not finish: " + r.finish_note);
    return suite_row(name, Verdict::stable, std::to_string(input.runs.results(i)) + " results from " + std::to_string(r.sessions.size()) + " pytest process(es)");
}

// One row per check a run's records doubt it by: its reasons, each naming where.
std::vector<LedgerRow> doubt_rows_of(const LoadedRun& run) {
    const auto& r = run.records;
    std::vector<std::pair<std::string, std::string>> checks;  // check -> reasons, in the order first seen
    for (const auto& doubt : r.doubts) {
        std::string where = run.plan.id.str();
        if (r.sessions.size() > 1 && doubt.process > 0)
            where += ", pytest process " + std::to_string(doubt.process) + " of " + std::to_string(r.sessions.size());
        auto it = std::find_if(checks.begin(), checks.end(), [&](const auto& c) { return c.first == doubt.check; });
        if (it == checks.end()) it = checks.insert(checks.end(), {doubt.check, ""});
        it->second += (it->second.empty() ? "" : "; ") + doubt.reason + " (" + where + ")";
    }
    std::vector<LedgerRow> rows;
    for (auto& [check, reason] : checks) {
        const bool polluted = check == "outside" || check == "uncertain";
        rows.push_back(suite_row(check + ":" + run.plan.id.str(), polluted ? Verdict::polluter : Verdict::missing, std::move(reason)));
    }
    return rows;
}

// ------------------------------------------------------------------ the sandbox

// `word` in `message`, not inside a longer name (HOME in HOMEBREW).
bool has_word(const std::string& message, const std::string& word) {
    const auto name_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    for (auto at = message.find(word); at != std::string::npos; at = message.find(word, at + 1)) {
        const bool before = at > 0 && name_char(message[at - 1]);
        const bool after = at + word.size() < message.size() && name_char(message[at + word.size()]);
        if (!before && !after) return true;
    }
    return false;
}

bool has(const std::string& message, const std::string& text) { return !text.empty() && message.find(text) != std::string::npos; }

bool has_phrase(const std::string& message, std::initializer_list<const char*> phrases) {
    std::string lower = message;
    for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return std::any_of(phrases.begin(), phrases.end(), [&](const char* p) { return lower.find(p) != std::string::npos; });
}

bool names_home(const std::string& message, const GateInput& input) {
    return has_word(message, "HOME") || has(message, "~/") || (input.home.size() > 1 && has(message, input.home)) ||
           has_phrase(message, {"home dir", "home folder", "expanduser", "path.home"});
}

bool names_tmpdir(const std::string& message, const GateInput& input) {
    return has_word(message, "TMPDIR") || (input.tmpdir.size() > 1 && input.tmpdir != "/tmp" && has(message, input.tmpdir)) ||
           has_phrase(message, {"temp dir", "tmp dir", "temporary dir", "gettempdir"});
}

// Does a skip reason point at what the sandbox replaced: the home directory (~, HOME, the
// user's real home), the temp dir (TMPDIR, the user's real one), or the sandbox itself?
bool names_sandboxed_place(const std::string& message, const GateInput& input) {
    const auto& sandboxed = input.receipt.sandboxed;
    const bool all = input.receipt.sandbox_dir.empty() && sandboxed.empty();  // a receipt that does not say: both
    const auto fresh = [&](const char* variable) {
        return all || std::find(sandboxed.begin(), sandboxed.end(), variable) != sandboxed.end();
    };
    if (!input.receipt.sandbox_dir.empty() && has(message, input.receipt.sandbox_dir)) return true;
    return (fresh("HOME") && names_home(message, input)) || (fresh("TMPDIR") && names_tmpdir(message, input));
}

// A test every run of this machine skipped (every seed, rerun and the perturbed run; runners
// are other machines' homes): the first skip reason, and whether one of them points at the sandbox.
struct SkippedEverywhere {
    std::string reason;
    bool points_at_sandbox = false;
};

std::optional<SkippedEverywhere> skipped_everywhere(const LedgerRow& row, const GateInput& input) {
    // Only a row with a skip among its outcomes can be one: the attempts of the rest are not looked up.
    if (std::none_of(row.outcomes.begin(), row.outcomes.end(), [](const auto& o) { return o.second == Outcome::skipped; }))
        return std::nullopt;
    SkippedEverywhere skipped;
    bool any = false;
    for (const auto& a : input.runs.attempts(row.test)) {
        if (a.column == Column::runner) continue;
        if (outcome_class(a.outcome) != OutcomeClass::skip) return std::nullopt;
        if (!any) skipped.reason = a.message;
        any = true;
        if (!skipped.points_at_sandbox && names_sandboxed_place(a.message, input)) {
            skipped.points_at_sandbox = true;
            skipped.reason = a.message;
        }
    }
    if (!any) return std::nullopt;
    return skipped;
}

// How many different orders the seed runs ran, and why a seed did not run: its order was one an
// earlier seed ran (a small suite has few orders).
LedgerRow orders_row(const Receipt& receipt, const std::vector<std::string>& run_here) {
    const auto& orders = receipt.orders;
    std::string reason = counted(orders.distinct, "distinct order") + " from " + counted(orders.seeds, "seed");
    if (orders.repeats.empty()) return suite_row("orders", Verdict::stable, reason + ", each run once");
    std::map<std::string, std::vector<std::string>> by_earlier;  // the earlier run -> the runs that would repeat it
    for (const auto& [run, earlier] : orders.repeats)
        if (std::find(run_here.begin(), run_here.end(), run) == run_here.end()) by_earlier[earlier].push_back(run);
    std::string said;
    for (auto& [earlier, runs] : by_earlier) {
        std::sort(runs.begin(), runs.end(), natural_less);
        if (const auto alone = std::find(runs.begin(), runs.end(), RunId::first(1).str()); alone != runs.end()) {
            runs.erase(alone);
            runs.push_back("the alone pass");
        }
        said += (said.empty() ? "" : "; ") + list_some(runs, 4) + " would run " + earlier + "'s order";
    }
    if (!said.empty()) reason += ": " + said + ", so " + (orders.repeats.size() - run_here.size() == 1 ? "it did" : "they did") + " not run again";
    if (!run_here.empty())
        reason += std::string(said.empty() ? ": " : "; ") + list_some(run_here, 4) +
                  " repeat an order another shard runs, and ran here all the same (this shard's gate needs runs of its own)";
    const auto tests = receipt.tests.size();
    const bool free = std::none_of(receipt.tests.begin(), receipt.tests.end(), [](const ReceiptTest& t) { return t.serial; });
    if (free && tests <= 4) {  // why, for a suite small enough to count its orders
        std::size_t all = 1;
        for (std::size_t n = 2; n <= tests; ++n) all *= n;
        reason += " (" + counted(tests, "test") + (tests == 1 ? " has " : " have ") + (all == 1 ? "one order" : "at most " + counted(all, "order")) + ")";
    }
    return suite_row("orders", Verdict::stable, reason);
}

// What every run's sandbox holds, as the receipt says: "HOME, TMPDIR, XDG_CONFIG_HOME, ...".
std::string sandboxed_names(const Receipt& receipt) {
    if (receipt.sandbox_dir.empty() && receipt.sandboxed.empty()) return "HOME and TMPDIR";  // a receipt that does not say
    if (receipt.sandboxed.empty()) return "";
    return list_some(receipt.sandboxed, receipt.sandboxed.size());
}

}  // namespace

std::vector<LedgerRow> collection_rows(const GateInput& input) {
    std::vector<LedgerRow> rows = workspace_rows(input);
    rows.push_back(collection_row(input.receipt));
    if (!input.baseline_file.empty()) rows.push_back(baseline_row(input));
    for (const auto& finding : input.tree_findings) {  // the tree changed outside any test's lease
        rows.push_back(suite_row(finding.check, Verdict::polluter, finding.reason));
        rows.back().dirty = finding.dirty;
    }
    return rows;
}

std::vector<LedgerRow> quarantine_rows(const GateInput& input) {
    std::vector<LedgerRow> rows;
    if (input.quarantine.empty()) return rows;
    std::unordered_set<std::string> collected;
    for (const auto& t : input.receipt.tests) collected.insert(t.id);
    const Date horizon{input.today.year + 1, input.today.month, input.today.day};
    std::string file = input.quarantine_file.empty() ? "quarantine" : input.quarantine_file;
    if (const auto below = std::filesystem::path(file).lexically_relative(input.root);  // as the user names it
        !below.empty() && *below.begin() != "..")
        file = below.generic_string();
    for (const auto& entry : input.quarantine) {
        std::string notes;
        if (!collected.count(entry.test))
            notes += "matches no collected test (renamed, removed, or a typo?), so it defers nothing";
        if (entry.until > horizon)
            notes += std::string(notes.empty() ? "" : ", and ") + "is dated more than a year after today (" +
                     to_string(input.today) + "): a quarantine is a dated promise, not a standing exception";
        if (notes.empty()) continue;
        rows.push_back(warning_row("quarantine:" + file + ":" + std::to_string(entry.line),
                                   "the entry for '" + entry.test + "' (until " + to_string(entry.until) + ", owner " +
                                       entry.owner + ") " + notes));
    }
    return rows;
}

// Which runs an earlier ctest left on the same key were kept (runs/evidence_reuse.hpp), from
// when, and which seeds this one added: the evidence behind each verdict grows run by run.
std::optional<LedgerRow> reuse_row(const GateInput& input) {
    const auto& receipt = input.receipt;
    if (receipt.kept.empty()) return std::nullopt;
    std::size_t kept = 0, all = 0;
    for (const auto& run : input.runs.runs()) {
        if (run.plan.column == Column::runner) continue;
        ++all;
        kept += run.records.receipt != receipt.id;
    }
    std::string from;
    for (const auto& k : receipt.kept)
        from += (from.empty() ? "" : ", ") + k.at + " (seeds " + std::to_string(k.first_seed) + ".." + std::to_string(k.last_seed) + ")";
    return suite_row("reuse", Verdict::stable,
                     counted(kept, "run") + " of " + std::to_string(all) + " kept from the ctest run(s) of " + from +
                         ": nothing they depend on changed; this one added seeds " + std::to_string(receipt.orders.first) + ".." +
                         std::to_string(receipt.orders.seeds == 0 ? 0 : receipt.orders.seeds - 1));
}

// How far the alone pass has got: under ALONE AUTO it spends a budget per ctest, and the
// tests it has not reached run alone in a later one on the same tree.
std::optional<LedgerRow> alone_row(const GateInput& input) {
    // first.<n> ran the n-th collected test alone (the matrix keeps no run's planned tests, and
    // kept runs share this receipt's collection: runs/evidence_reuse.hpp).
    std::set<std::string> alone;
    for (const auto& run : input.runs.runs()) {
        if (!is_alone_pass(run.plan)) continue;
        const auto n = run.plan.id.number();
        if (n >= 1 && n <= input.receipt.tests.size()) alone.insert(input.receipt.tests[n - 1].id);
    }
    const auto tests = input.receipt.tests.size();
    if (alone.empty() || alone.size() >= tests) return std::nullopt;
    return suite_row("alone-pass", Verdict::stable,
                     std::to_string(alone.size()) + " of " + std::to_string(tests) +
                         " tests have run alone, first after the collection; the others run alone in the next ctest runs on "
                         "this tree (" +
                         alone_budget_rule() + ")");
}

std::vector<LedgerRow> run_rows(const GateInput& input) {
    std::vector<LedgerRow> rows;
    if (input.receipt.orders.seeds > 0) rows.push_back(orders_row(input.receipt, input.repeats_run_here));
    if (auto row = reuse_row(input)) rows.push_back(std::move(*row));
    if (auto row = alone_row(input)) rows.push_back(std::move(*row));
    const auto& runs = input.runs.runs();
    std::set<std::string> present;
    for (const auto& run : runs) present.insert(run.plan.id.str());
    for (const auto& id : input.expected_runs)
        if (!present.count(id)) rows.push_back(suite_row("run:" + id, Verdict::missing, "run " + id + " left no records"));
    UnknownIds unknown(input.receipt);
    for (std::size_t i = 0; i < runs.size(); ++i)
        if (runs[i].plan.column != Column::runner) rows.push_back(run_row(input, i, unknown));  // runners: runner_rows
    return rows;
}

std::vector<LedgerRow> doubt_rows(const GateInput& input) {
    std::vector<LedgerRow> rows;
    for (const auto& run : input.runs.runs()) {
        if (!run.problem.empty()) continue;  // run_rows blocks on it
        auto more = doubt_rows_of(run);
        rows.insert(rows.end(), more.begin(), more.end());
    }
    return rows;
}

std::vector<LedgerRow> runner_rows(const GateInput& input) {
    std::vector<LedgerRow> rows;
    for (const auto& [path, why] : input.left_out)
        rows.push_back(suite_row("runner:" + path, Verdict::missing, "runner bundle left out: " + why));
    for (const auto& [shard, why] : input.shard_problems)
        rows.push_back(suite_row("shard:" + shard, Verdict::missing, why));
    for (const auto& [shard, note] : input.shard_notes) rows.push_back(warning_row("shard:" + shard, note));
    for (const auto& runner : input.runners) {
        auto unmapped = input.unmapped.find(runner);
        if (unmapped != input.unmapped.end())
            rows.push_back(warning_row("runner:" + runner, std::to_string(unmapped->second.size()) +
                                                               " JUnit case(s) match no collected test: " + list_some(unmapped->second)));
        else
            rows.push_back(suite_row("runner:" + runner, Verdict::stable, "runner column " + runner));
    }
    return rows;
}

std::vector<LedgerRow> env_sensitive_rows(const GateInput& input) {
    std::vector<LedgerRow> rows;
    const Date horizon{input.today.year + 1, input.today.month, input.today.day};
    for (const auto& test : input.receipt.tests) {
        if (!test.env_sensitive) continue;
        const auto until = parse_date(test.env_sensitive->until);
        if (!until || !(*until > horizon)) continue;  // a malformed marker: its test row says so
        rows.push_back(warning_row("env_sensitive:" + test.id,
                                   "the env_sensitive marker of '" + test.id + "' (until " + to_string(*until) + ", owner " +
                                       test.env_sensitive->owner + ") is dated more than a year after today (" +
                                       to_string(input.today) + "): a deferral is a dated promise, not a standing exception"));
    }
    return rows;
}

std::optional<LedgerRow> sandbox_row(const GateInput& input, const std::vector<LedgerRow>& rows, std::size_t first) {
    std::vector<std::string> tests, described, pointed;
    for (auto i = first; i < rows.size(); ++i) {
        const auto skipped = skipped_everywhere(rows[i], input);
        if (!skipped) continue;
        tests.push_back(rows[i].test);
        described.push_back(rows[i].test + (skipped->reason.empty() ? "" : " ('" + skipped->reason + "')"));
        if (skipped->points_at_sandbox) pointed.push_back(rows[i].test);
    }
    if (tests.empty()) return std::nullopt;
    const auto dir = input.receipt.sandbox_dir.empty() ? std::string("the evidence directory") : "'" + input.receipt.sandbox_dir + "'";
    const auto names = sandboxed_names(input.receipt);
    std::string reason = std::to_string(tests.size()) + " test(s) skipped in every run on this machine: " +
                         list_some(described, 10) + (tests.size() > 10 ? " (all of them in 'tests')" : "") + "; ";
    reason += names.empty() ? "the suite pins what the sandbox would replace (ENVIRONMENT)"
                            : "every run has its own empty " + names + " (below " + dir + ")";
    if (!pointed.empty())
        reason += "; " + std::to_string(pointed.size()) + " of them for a reason that points at the home or temp dir (" +
                  list_some(pointed) + ")";
    if (!names.empty())
        reason += "; plain pytest runs them with your own HOME" + (input.home.empty() ? "" : " ('" + input.home + "')") +
                  ", TMPDIR and XDG directories, where they may run, and pass or fail: give a test what it needs (a "
                  "fixture that writes it), or pin the variable with ENVIRONMENT";
    auto row = warning_row("sandbox", std::move(reason));
    row.tests = std::move(tests);
    return row;
}

namespace {

// A WARN row naming every test among rows[first...] that `marked` marks (all of them in its
// `tests`): "<n> test(s) <what>: <tests>; <why>". nullopt when none is marked.
std::optional<LedgerRow> marked_tests_row(const std::vector<LedgerRow>& rows, std::size_t first, bool LedgerRow::*marked,
                                          std::string check, const std::string& what, const std::string& why) {
    std::vector<std::string> tests;
    for (auto i = first; i < rows.size(); ++i)
        if (rows[i].*marked) tests.push_back(rows[i].test);
    if (tests.empty()) return std::nullopt;
    auto row = warning_row(std::move(check), std::to_string(tests.size()) + " test(s) " + what + ": " + list_some(tests, 10) +
                                                 (tests.size() > 10 ? " (all of them in 'tests')" : "") + "; " + why);
    row.tests = std::move(tests);
    return row;
}

}  // namespace

std::optional<LedgerRow> fork_sensitive_row(const std::vector<LedgerRow>& rows, std::size_t first) {
    return marked_tests_row(rows, first, &LedgerRow::fork_sensitive, "fork-sensitive",
                            "failed in forks of the collected session where fresh processes of the same order passed",
                            "each reads state its module took at import (a time, a token, a cache, a path computed at import), "
                            "which ages with the session and is shared by its forks; their verdicts rest on the runs that "
                            "were not forks. Take such state when a test uses it (a fixture, a function), or set ISOLATION process");
}

std::vector<LedgerRow> unattributed_rows(const std::vector<LedgerRow>& rows, std::size_t first) {
    std::vector<LedgerRow> out;
    for (auto i = first; i < rows.size(); ++i) {
        const auto& test = rows[i];
        if (test.unattributed.empty()) continue;
        std::vector<std::string> quoted;
        for (const auto& g : test.unattributed) quoted.push_back("'" + g + "'");
        out.push_back(suite_row("unattributed:" + test.test, Verdict::polluter,
                                list_some(quoted) + " changed while " + test.test + " ran (in " + list_some(test.unattributed_in, 3) +
                                    "), and not when it ran alone in a fresh process: a process it did not start made the "
                                    "change (one an earlier test left running, a detached daemon, a grandchild), without "
                                    "declaring it; the writer is not named, and " +
                                    test.test + " is not blamed"));
        out.back().dirty = test.unattributed;
    }
    return out;
}

std::optional<LedgerRow> colliding_row(const std::vector<LedgerRow>& rows, std::size_t first) {
    return marked_tests_row(rows, first, &LedgerRow::collides, "collides",
                            "failed only in runs that went beside other runs of the suite and passed each time those were "
                            "done again alone",
                            "each collides with another copy of itself (a fixed port, a path outside the sandbox), which plain "
                            "pytest, one run at a time, never meets, but pytest-xdist or two CI jobs on one machine would; "
                            "their verdicts rest on the runs alone");
}

}  // namespace evgate
