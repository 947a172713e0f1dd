#include "verdicts/gate.hpp"

#include <algorithm>
#include <cctype>
#include <functional>
#include <future>
#include <map>
#include <ostream>
#include <set>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "io/error.hpp"
#include "io/atomic_file.hpp"
#include "io/json_io.hpp"
#include "runs/replay.hpp"

namespace evgate {

const Outcomes::List& Outcomes::list() const {
    static const List none;
    return list_ ? *list_ : none;
}

namespace {

LedgerRow suite_row(std::string check, std::string verdict, std::string reason) {
    LedgerRow row;
    row.test = std::move(check);
    row.suite_scope = true;
    row.verdict = std::move(verdict);
    row.gate = row.verdict == "stable" ? "pass" : "block";
    row.reason = std::move(reason);
    return row;
}

std::string list_some(const std::vector<std::string>& items, std::size_t shown = 5) {
    std::string out;
    for (std::size_t i = 0; i < items.size() && i < shown; ++i) out += (i ? ", " : "") + items[i];
    if (items.size() > shown) out += " and " + std::to_string(items.size() - shown) + " more";
    return out;
}

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

// What each run saw against the receipt: same rootdir, configfile and conftest files,
// no test it was not asked for, no planned test without a result.
std::vector<LedgerRow> run_rows(const GateInput& input) {
    std::vector<LedgerRow> rows;
    UnknownIds unknown(input.receipt);
    const auto& runs = input.runs.runs();
    std::set<std::string> present;
    for (const auto& run : runs) present.insert(run.plan.id);
    for (const auto& id : input.expected_runs)
        if (!present.count(id)) rows.push_back(suite_row("run:" + id, "missing", "run " + id + " left no records"));
    for (std::size_t i = 0; i < runs.size(); ++i) {
        const auto& run = runs[i];
        if (run.plan.column == Column::runner) continue;  // another machine's paths: runner_rows
        const std::string name = "run:" + run.plan.id;
        if (!run.problem.empty()) {
            rows.push_back(suite_row(name, "interrupted", run.problem));
            continue;
        }
        const auto& r = run.records;
        std::string trouble;
        for (const auto& s : r.sessions) {
            if (s.rootdir != input.receipt.rootdir)
                trouble = "pytest ran with rootdir '" + s.rootdir + "', the receipt has '" + input.receipt.rootdir + "'";
            else if (s.configfile != input.receipt.configfile)
                trouble = "pytest ran with configfile '" + s.configfile.value_or("none") + "', the receipt has '" +
                          input.receipt.configfile.value_or("none") + "'";
            else if (s.conftests != input.receipt.conftests)
                trouble = "pytest loaded other conftest files than the receipt lists";
            else if (auto extra = unknown.of(s.unlisted); !extra.empty())
                trouble = "pytest collected tests the receipt does not list: " + list_some(extra);
            if (!trouble.empty()) break;
        }
        for (int status : r.exit_statuses) {
            if (trouble.empty() && status != 0 && status != 1)  // 0 passed, 1 tests failed: anything else is pytest's trouble
                trouble = "pytest ended with exit status " + std::to_string(status) +
                          (status == 3 ? " (an internal error, INTERNALERROR)" : status == 2 ? " (interrupted)" : "");
        }
        if (!trouble.empty()) {
            rows.push_back(suite_row(name, "missing", trouble));
        } else if (!r.finished) {
            rows.push_back(suite_row(name, "interrupted", "the run did not finish (no 'finished' record)"));
        } else if (!*r.finished) {
            rows.push_back(suite_row(name, "interrupted", "the run did not finish: " + r.finish_note));
        } else {
            rows.push_back(suite_row(name, "stable", std::to_string(input.runs.results(i)) + " results from " +
                                                         std::to_string(r.sessions.size()) + " pytest process(es)"));
        }
    }
    return rows;
}

// A run whose records doubt it (run_records.hpp, RunDoubt) is no evidence of what it ran: one
// blocking suite row per run and check, `<check>:<run>`, naming the run and, where it had
// several, the pytest process. A group changed where no test can be blamed is a polluter's
// verdict without a test; the rest is evidence that is missing.
std::vector<LedgerRow> doubt_rows(const GateInput& input) {
    std::vector<LedgerRow> rows;
    for (const auto& run : input.runs.runs()) {
        if (!run.problem.empty()) continue;  // run_rows blocks on it
        const auto& r = run.records;
        std::vector<std::pair<std::string, std::string>> checks;  // check -> reasons, in the order first seen
        for (const auto& doubt : r.doubts) {
            std::string where = run.plan.id;
            if (r.sessions.size() > 1 && doubt.process > 0)
                where += ", pytest process " + std::to_string(doubt.process) + " of " + std::to_string(r.sessions.size());
            auto it = std::find_if(checks.begin(), checks.end(), [&](const auto& c) { return c.first == doubt.check; });
            if (it == checks.end()) it = checks.insert(checks.end(), {doubt.check, ""});
            it->second += (it->second.empty() ? "" : "; ") + doubt.reason + " (" + where + ")";
        }
        for (auto& [check, reason] : checks) {
            const bool polluted = check == "outside" || check == "uncertain";
            rows.push_back(suite_row(check + ":" + run.plan.id, polluted ? "polluter" : "missing", std::move(reason)));
        }
    }
    return rows;
}

LedgerRow warning_row(std::string check, std::string reason) {
    auto row = suite_row(std::move(check), "stable", "warning: " + std::move(reason));
    row.warning = true;
    return row;
}

// Did pytest run the suite the project means: rooted at ROOT, with the project's config?
std::vector<LedgerRow> workspace_rows(const GateInput& input) {
    std::vector<LedgerRow> rows;
    const auto& receipt = input.receipt;
    std::error_code ec;
    if (!std::filesystem::equivalent(receipt.rootdir, input.root, ec)) {
        rows.push_back(suite_row("receipt", "missing", "pytest chose rootdir '" + receipt.rootdir + "', not ROOT '" + input.root + "'"));
    } else if (!same_config(receipt.configfile, receipt.expected_configfile)) {
        rows.push_back(suite_row("receipt", "missing",
                                 "pytest read its configuration from '" + receipt.configfile.value_or("(none)") +
                                     "', but the project's is '" + receipt.expected_configfile.value_or("(none)") +
                                     "': a stray config file re-rooted collection"));
    } else {
        rows.push_back(suite_row("receipt", "stable", "rootdir '" + receipt.rootdir + "', configfile '" +
                                                          receipt.configfile.value_or("(none)") + "', " +
                                                          std::to_string(receipt.conftests.size()) + " conftest file(s)"));
    }
    for (const auto& stray : receipt.stray_configs) {
        if (receipt.configfile && std::filesystem::path(*receipt.configfile).filename() == stray) continue;
        rows.push_back(warning_row("stray-config:" + stray, "'" + stray + "' would re-root pytest if it were started in its directory"));
    }
    if (!receipt.thinning.empty())
        rows.push_back(warning_row("thinning", "options thin the run: " + list_some(receipt.thinning, 10) +
                                                   " (a baseline catches what they drop)"));
    // A run under these calls no test, yet pytest reports setup and teardown as passed.
    if (!receipt.hollow.empty())
        rows.push_back(suite_row("options", "missing", "pytest reports the tests without running them under " +
                                                           list_some(receipt.hollow, 10) + ": remove the option"));
    return rows;
}

// The collection against the committed baseline: fewer tests than it expects blocks.
LedgerRow baseline_row(const GateInput& input) {
    if (!input.baseline)
        return suite_row("baseline", "missing", "the baseline '" + input.baseline_file +
                                                    "' does not exist; write it with `evgate baseline --suite <suite.json>`");
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
    if (shrank) return suite_row("baseline", "missing", counts + (gone.empty() ? "" : "; missing: " + list_some(gone)));
    std::string reason = counts;
    if (collected > baseline.collected) reason += " (" + std::to_string(collected - baseline.collected) + " new)";
    if (!gone.empty()) reason += "; within the tolerated drop: " + list_some(gone);
    return suite_row("baseline", "stable", reason);
}

std::vector<LedgerRow> collection_rows(const GateInput& input) {
    std::vector<LedgerRow> rows = workspace_rows(input);
    const auto& receipt = input.receipt;
    std::vector<std::string> broken;  // what makes the collection unusable
    if (!receipt.errors.empty())
        broken.push_back(std::to_string(receipt.errors.size()) + " collection error(s): " + receipt.errors.front());
    if (const auto duplicates = duplicate_ids(receipt); !duplicates.empty())
        broken.push_back(std::to_string(duplicates.size()) + " node id(s) collected more than once: " +
                         describe_duplicates(duplicates));
    if (!broken.empty()) {
        rows.push_back(suite_row("collection", "missing", broken.size() == 1 ? broken[0] : broken[0] + "; " + broken[1]));
    } else if (receipt.tests.empty()) {
        rows.push_back(suite_row("collection", "missing", "no tests collected"));
    } else {
        rows.push_back(suite_row("collection", "stable", std::to_string(receipt.tests.size()) + " tests collected"));
    }
    if (!input.baseline_file.empty()) rows.push_back(baseline_row(input));
    for (const auto& finding : input.tree_findings) {  // the tree changed outside any test's lease
        rows.push_back(suite_row(finding.check, "polluter", finding.reason));
        rows.back().dirty = finding.dirty;
    }
    return rows;
}

// Quarantine entries that defer nothing this suite collects (a renamed or removed test, a
// typo), and entries dated more than a year ahead: a quarantine is a dated promise.
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

// Does a skip reason point at what the sandbox replaced: the home directory (~, HOME, the
// user's real home), the temp dir (TMPDIR, the user's real one), or the sandbox itself?
bool names_sandboxed_place(const std::string& message, const GateInput& input) {
    const auto& sandboxed = input.receipt.sandboxed;
    const bool all = input.receipt.sandbox_dir.empty() && sandboxed.empty();  // a receipt that does not say: both
    const auto fresh = [&](const char* variable) {
        return all || std::find(sandboxed.begin(), sandboxed.end(), variable) != sandboxed.end();
    };
    const auto word = [&](const std::string& w) {  // `w` not inside a longer name (HOMEBREW)
        const auto name_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
        for (auto at = message.find(w); at != std::string::npos; at = message.find(w, at + 1)) {
            const bool before = at > 0 && name_char(message[at - 1]);
            const bool after = at + w.size() < message.size() && name_char(message[at + w.size()]);
            if (!before && !after) return true;
        }
        return false;
    };
    const auto has = [&](const std::string& text) { return !text.empty() && message.find(text) != std::string::npos; };
    std::string lower = message;
    for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!input.receipt.sandbox_dir.empty() && has(input.receipt.sandbox_dir)) return true;
    if (fresh("HOME")) {
        if (word("HOME") || has("~/") || (input.home.size() > 1 && has(input.home)))
            return true;
        for (const char* phrase : {"home dir", "home folder", "expanduser", "path.home"})
            if (lower.find(phrase) != std::string::npos) return true;
    }
    if (fresh("TMPDIR")) {
        if (word("TMPDIR") || (input.tmpdir.size() > 1 && input.tmpdir != "/tmp" && has(input.tmpdir))) return true;
        for (const char* phrase : {"temp dir", "tmp dir", "temporary dir", "gettempdir"})
            if (lower.find(phrase) != std::string::npos) return true;
    }
    return false;
}

// Tests skipped in every run on this machine (each run with its own empty HOME and TMPDIR)
// for a reason that points at the home or temp dir: plain pytest, with the user's own, may
// run them. Skips for other reasons (platform, missing module) are no news: they pass quietly.
std::optional<LedgerRow> sandbox_row(const GateInput& input, const std::vector<LedgerRow>& rows, std::size_t first) {
    std::vector<std::string> tests;
    for (auto i = first; i < rows.size(); ++i) {
        if (rows[i].verdict != "skipped") continue;
        bool everywhere = true, pointed = false;
        std::string reason;
        for (const auto& a : input.runs.attempts(rows[i].test)) {
            if (a.column == Column::runner) continue;  // another machine's home: not our sandbox
            everywhere = everywhere && outcome_class(a.outcome) == "skip";
            if (!pointed && names_sandboxed_place(a.message, input)) {
                pointed = true;
                reason = a.message;
            }
        }
        if (everywhere && pointed) tests.push_back(rows[i].test + " ('" + reason + "')");
    }
    if (tests.empty()) return std::nullopt;
    const auto dir = input.receipt.sandbox_dir.empty() ? std::string("the evidence directory") : "'" + input.receipt.sandbox_dir + "'";
    return warning_row("sandbox", std::to_string(tests.size()) + " test(s) skipped in every run for a reason that points at "
                                  "the home or temp dir, which every run gets fresh and empty (below " + dir + "): " +
                                  list_some(tests) + "; plain pytest runs them with your own HOME" +
                                  (input.home.empty() ? "" : " ('" + input.home + "')") +
                                  " and TMPDIR, where they may run, and pass or fail: give the test what it needs "
                                  "(a fixture that writes it), or pin HOME with ENVIRONMENT");
}

}  // namespace

namespace {

bool deferrable(Verdict v) { return v == Verdict::flaky || v == Verdict::failing || v == Verdict::portability_gap; }

// Quarantine (and, for portability gaps, env_sensitive) turns a block into a dated deferral.
void apply_policy(LedgerRow& row, Verdict verdict, const ReceiptTest& test, const GateInput& input) {
    if (verdict == Verdict::stable || verdict == Verdict::skipped) {
        row.gate = "pass";
        return;
    }
    row.gate = "block";
    if (!deferrable(verdict)) return;
    std::optional<Date> until;
    std::string owner;
    if (const auto* entry = find_entry(input.quarantine, test.id)) {
        until = entry->until;
        owner = entry->owner;
    } else if (verdict == Verdict::portability_gap && test.env_sensitive) {
        until = parse_date(test.env_sensitive->until);
        owner = test.env_sensitive->owner;
        if (!until || owner.empty()) {
            row.reason += " (env_sensitive needs until=YYYY-MM-DD and owner=...)";
            return;
        }
    }
    if (!until) return;
    row.until = to_string(*until);
    row.owner = owner;
    if (input.today <= *until) {
        row.gate = "defer";
        row.reason += " (quarantined until " + *row.until + ", owner " + owner + ")";
    } else {
        row.reason += " (quarantine expired on " + *row.until + ", owner " + owner + ")";
    }
}

// "ci-host" for "ci-host:seed.3", "perturbed" for the perturbed run.
std::string column_name(const Attempt& a) { return a.column == Column::runner ? a.run.substr(0, a.run.find(':')) : a.run; }

// For a row that compares machines: the environment keys that differ, most suspicious first,
// and the runners that have no result for the test.
std::string machine_notes(Verdict verdict, const std::vector<Attempt>& attempts, const GateInput& input) {
    std::set<std::string> seen, telling;  // columns with a result; those whose result makes the row
    const char* tells = verdict == Verdict::runner_only_pass ? "pass" : "fail";
    for (const auto& a : attempts) {
        if (a.column == Column::local) continue;
        seen.insert(column_name(a));
        if (outcome_class(a.outcome) == tells) telling.insert(column_name(a));
    }
    std::string notes;
    if (verdict == Verdict::portability_gap || verdict == Verdict::runner_only_pass) {
        for (const auto& column : telling) {
            auto it = input.drift.find(column);
            if (it == input.drift.end()) continue;
            const auto keys = drift_keys(it->second, 5);
            std::string list;
            for (const auto& k : keys) list += (list.empty() ? "" : ", ") + k;
            notes += "; " + column + " differs in " + (list.empty() ? "no recorded key" : list);
        }
    }
    for (const auto& runner : input.runners)
        if (!seen.count(runner)) notes += "; no result on runner " + runner;
    return notes;
}

std::string joined(const std::vector<std::string>& items, const std::string& separator) {
    std::string out;
    for (const auto& item : items) out += (out.empty() ? "" : separator) + item;
    return out;
}

// "fails after a (polluter, dirtied 'db')": the partner an order dependence hangs on.
void add_partner(LedgerRow& row, const Culprit& culprit) {
    const auto& f = culprit.found;
    if (f.budget_exhausted && !f.partners.empty()) {  // a best candidate is not a culprit: name none
        row.reason += "; no partner named: the search ran out of its budget (best candidate: " +
                      std::to_string(f.partners.size()) + " test(s), in localise.json)";
        return;
    }
    if (f.partners.empty()) {
        if (!f.note.empty()) row.reason += "; no partner named: " + f.note;
        return;
    }
    row.partners = f.partners;
    row.partner = joined(f.partners, " + ");
    row.partner_role = f.partner_role;
    row.cleaners = f.cleaners;
    std::string head = (f.role == Role::brittle ? "fails unless it runs after " : "fails after ") + *row.partner + " (" +
                       f.partner_role + (f.partners.size() > 1 ? "s" : "");
    for (const auto& [partner, groups] : culprit.dirtied)
        head += ", " + (f.partners.size() > 1 ? partner + " " : std::string()) + "dirtied '" + joined(groups, "', '") + "'";
    head += ")";
    if (!f.cleaners.empty()) head += "; cleaned by " + joined(f.cleaners, ", ");
    row.reason = head + "; " + row.reason;
}

const Attempt* first_with(const std::vector<Attempt>& attempts, std::string_view cls, Column column = Column::local) {
    for (const auto& a : attempts)
        if (a.column == column && (outcome_class(a.outcome) == cls || a.outcome == cls)) return &a;
    return nullptr;
}

const LoadedRun* run_named(const GateInput& input, const std::string& id) {
    for (const auto& run : input.runs.runs())
        if (run.plan.id == id) return &run;
    return nullptr;
}

// The seed's order up to the test, as the run `a` ran it (alone runs: just the test).
ReplayRequest order_through(const Attempt& a, const std::string& test, const GateInput& input) {
    ReplayRequest request;
    const auto* run = run_named(input, a.run);
    if (run == nullptr || a.order == "alone") {
        request.tests = {test};
        return request;
    }
    request.seed = run->plan.seed;
    request.through = test;
    return request;
}

// Variables whose value differs on the column that failed, where the manifest records them.
std::vector<std::string> differing_environment(const std::vector<Attempt>& attempts, const GateInput& input) {
    for (const auto& a : attempts) {
        if (a.column == Column::local || outcome_class(a.outcome) != "fail") continue;
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

// What reproduces the row's failure, as one `evgate replay` request; nullopt where nothing local can.
// The test's attempts are built only where the request depends on them.
std::optional<ReplayRequest> reproduction(Verdict verdict, const std::string& test, std::optional<std::uint32_t> number,
                                          const GateInput& input) {
    ReplayRequest request;
    switch (verdict) {
        case Verdict::order_dependent: {
            auto c = input.culprits.find(test);
            if (c != input.culprits.end() && !c->second.found.reproduce_order.empty()) {
                request.tests = c->second.found.reproduce_order;
                request.seed = c->second.seed;
                return request;
            }
            const auto attempts = input.runs.attempts(number);
            const auto* failed = first_with(attempts, "fail");
            return failed ? std::optional(order_through(*failed, test, input)) : std::nullopt;
        }
        case Verdict::flaky: {
            const auto attempts = input.runs.attempts(number);
            const auto* failed = first_with(attempts, "fail");
            if (failed == nullptr) return std::nullopt;
            request = order_through(*failed, test, input);
            request.repeat = 5;  // one failure in a few runs showed it; five give it room to show again
            return request;
        }
        case Verdict::interrupted: {
            const auto attempts = input.runs.attempts(number);
            const auto* died = first_with(attempts, "interrupted");
            return died ? std::optional(order_through(*died, test, input)) : std::nullopt;
        }
        case Verdict::portability_gap:
            request.tests = {test};
            request.environment = differing_environment(input.runs.attempts(number), input);
            return request;
        case Verdict::polluter:
        case Verdict::failing:
        case Verdict::runner_only_pass:
            request.tests = {test};
            return request;
        default:
            return std::nullopt;
    }
}

// What a test's attempts say, apart from the test's own name: a verdict and its reason.
struct Judgement {
    Classification c;
    std::string notes;  // machine_notes
};

Judgement judge(const std::vector<Attempt>& attempts, const GateInput& input) {
    auto c = classify(attempts);
    auto notes = machine_notes(c.verdict, attempts, input);
    return {std::move(c), std::move(notes)};
}

LedgerRow test_row(const ReceiptTest& test, std::optional<std::uint32_t> number, const Judgement& judged,
                   const Outcomes& outcomes, const GateInput& input) {
    const auto& c = judged.c;
    LedgerRow row;
    row.test = test.id;
    row.verdict = std::string(to_string(c.verdict));
    row.reason = c.reason + judged.notes;
    if (c.verdict == Verdict::order_dependent)
        if (auto culprit = input.culprits.find(test.id); culprit != input.culprits.end()) add_partner(row, culprit->second);
    if (!input.evgate.empty())
        if (auto request = reproduction(c.verdict, test.id, number, input))
            row.reproduce = replay_command(input.evgate, input.suite_file, *request);
    row.dirty = c.dirty;
    for (auto v : c.also) row.also.emplace_back(to_string(v));
    row.outcomes = outcomes;
    apply_policy(row, c.verdict, test, input);
    return row;
}

// The rows of the receipt's tests [begin, end), into `out`. Most tests share their attempts with
// many others (passed in every run): those are judged once per kind.
void test_rows(const GateInput& input, std::size_t begin, std::size_t end, LedgerRow* out) {
    std::unordered_map<std::string, std::pair<Judgement, Outcomes>> judged;  // by attempt key: their outcomes are shared
    std::string key;
    for (auto i = begin; i < end; ++i, ++out) {
        const auto& test = input.receipt.tests[i];
        const auto number = input.runs.find(test.id);
        if (!input.runs.attempt_key(number, key)) {
            *out = test_row(test, number, judge(input.runs.attempts(number), input), input.runs.outcomes(number), input);
            continue;
        }
        auto it = judged.find(key);
        if (it == judged.end())
            it = judged.emplace(key, std::pair(judge(input.runs.attempts(number), input), Outcomes(input.runs.outcomes(number)))).first;
        *out = test_row(test, number, it->second.first, it->second.second, input);
    }
}

void write_strings(rapidjson::Writer<rapidjson::StringBuffer>& w, const char* key, const std::vector<std::string>& items) {
    if (items.empty()) return;
    w.Key(key);
    w.StartArray();
    for (const auto& s : items) w.String(s);
    w.EndArray();
}

}  // namespace

// Every runner bundle is a column or a blocking row: a smaller comparison is never silent.
std::vector<LedgerRow> runner_rows(const GateInput& input) {
    std::vector<LedgerRow> rows;
    for (const auto& [path, why] : input.left_out)
        rows.push_back(suite_row("runner:" + path, "missing", "runner bundle left out: " + why));
    for (const auto& [shard, why] : input.shard_problems)
        rows.push_back(suite_row("shard:" + shard, "missing", why));
    for (const auto& [shard, note] : input.shard_notes) rows.push_back(warning_row("shard:" + shard, note));
    for (const auto& runner : input.runners) {
        auto unmapped = input.unmapped.find(runner);
        if (unmapped != input.unmapped.end())
            rows.push_back(warning_row("runner:" + runner, std::to_string(unmapped->second.size()) +
                                                               " JUnit case(s) match no collected test: " + list_some(unmapped->second)));
        else
            rows.push_back(suite_row("runner:" + runner, "stable", "runner column " + runner));
    }
    return rows;
}

std::vector<LedgerRow> receipt_rows(const GateInput& input) { return collection_rows(input); }

std::vector<LedgerRow> build_ledger(const GateInput& input) {
    std::vector<LedgerRow> rows = collection_rows(input);
    for (auto* more : {&quarantine_rows, &run_rows, &doubt_rows, &runner_rows}) {
        auto extra = (*more)(input);
        rows.insert(rows.end(), extra.begin(), extra.end());
    }
    // A test's row depends on the test alone: large suites are cut into parts built side by side.
    const auto& tests = input.receipt.tests;
    const std::size_t parts = tests.size() < 4096 ? 1 : std::clamp(std::thread::hardware_concurrency(), 1u, 4u);
    const auto first = rows.size();
    rows.resize(first + tests.size());
    std::vector<std::future<void>> others;
    for (std::size_t part = 1; part <= parts; ++part) {
        const auto begin = tests.size() * (part - 1) / parts, end = tests.size() * part / parts;
        auto build = [&input, &rows, first, begin, end] { test_rows(input, begin, end, &rows[first + begin]); };
        if (part < parts) others.push_back(std::async(std::launch::async, build));
        else build();
    }
    for (auto& other : others) other.get();
    if (auto sandbox = sandbox_row(input, rows, first)) rows.insert(rows.begin() + static_cast<std::ptrdiff_t>(first), std::move(*sandbox));
    return rows;
}

namespace {

// Every row a line. `flush` takes the text a megabyte at a time, and the rest at the end, so
// the ledger is never held whole.
void ledger_text(const std::vector<LedgerRow>& rows, const std::function<void(std::string_view)>& flush) {
    constexpr std::size_t kChunk = std::size_t{1} << 20;
    rapidjson::StringBuffer out;
    rapidjson::Writer<rapidjson::StringBuffer> w;
    for (const auto& row : rows) {
        w.Reset(out);
        w.StartObject();
        w.Key("test"), w.String(row.test);
        if (row.suite_scope) w.Key("scope"), w.String("suite");
        if (row.warning) w.Key("warning"), w.Bool(true);
        w.Key("verdict"), w.String(row.verdict);
        w.Key("gate"), w.String(row.gate);
        w.Key("reason"), w.String(row.reason);
        if (!row.outcomes.empty()) {
            w.Key("outcomes");
            w.StartObject();
            for (const auto& [run, outcome] : row.outcomes) w.Key(run.c_str(), static_cast<rapidjson::SizeType>(run.size())), w.String(outcome);
            w.EndObject();
        }
        write_strings(w, "also", row.also);
        write_strings(w, "dirty", row.dirty);
        if (row.until) w.Key("until"), w.String(*row.until);
        if (row.owner) w.Key("owner"), w.String(*row.owner);
        if (row.partners.size() == 1) w.Key("partner"), w.String(row.partners.front());
        if (row.partners.size() > 1) write_strings(w, "partner", row.partners);
        if (row.partner_role) w.Key("partner_role"), w.String(*row.partner_role);
        write_strings(w, "cleaners", row.cleaners);
        if (row.reproduce) w.Key("reproduce"), w.String(*row.reproduce);
        w.EndObject();
        out.Put('\n');
        if (out.GetSize() < kChunk) continue;
        flush({out.GetString(), out.GetSize()});
        out.Clear();
    }
    flush({out.GetString(), out.GetSize()});
}

}  // namespace

std::string ledger_jsonl(const std::vector<LedgerRow>& rows) {
    std::string text;
    ledger_text(rows, [&text](std::string_view part) { text += part; });
    return text;
}

void write_ledger(const std::filesystem::path& file, const std::vector<LedgerRow>& rows) {
    AtomicFile out(file);
    ledger_text(rows, [&out](std::string_view part) { out.write(part); });
    out.commit();
}

namespace {

bool printed(const LedgerRow& row) { return row.gate == "block" || row.gate == "defer" || row.warning; }

}  // namespace

void GateSummary::add(const LedgerRow& row) {
    if (printed(row)) shown.push_back(row);
    if (row.suite_scope) {
        suite_blocks += row.gate == "block";
        runners += row.test.rfind("runner:", 0) == 0 && row.gate == "pass";
        return;
    }
    ++tests;
    blocked += row.gate == "block";
    deferred += row.gate == "defer";
}

GateSummary summarize(const std::vector<LedgerRow>& rows) {
    GateSummary summary;
    for (const auto& row : rows) summary.add(row);
    return summary;
}

namespace {

namespace key {  // the members of a ledger row the gate reads, in ledger_fields() order
enum : std::size_t { test, scope, warning, verdict, gate, reason, until, owner, outcomes };
}

FieldCapture ledger_fields() {
    return FieldCapture{"test", "scope", "warning", "verdict", "gate", "reason", "until", "owner", "outcomes"};
}

// Run ids the rows name: rows mostly list the same runs as the row before, so only a change is looked up.
class RunIds {
public:
    void add(const JsonField& outcomes) {
        if (outcomes.kind != JsonField::Kind::object) return;
        const auto& items = outcomes.items;  // run, outcome, run, outcome...
        bool same = items.size() == 2 * last_.size();
        for (std::size_t i = 0; same && i < last_.size(); ++i) same = items[2 * i] == last_[i];
        if (same) return;
        last_.clear();
        for (std::size_t i = 0; i < items.size(); i += 2) {
            last_.emplace_back(items[i]);
            ids_.insert(last_.back());
        }
    }
    std::size_t size() const { return ids_.size(); }

private:
    std::vector<std::string> last_;
    std::set<std::string> ids_;
};

}  // namespace

GateSummary read_gate_summary(const std::filesystem::path& file) {
    const std::string source = file.string();
    std::string text;
    try {
        text = read_file(file);
    } catch (const Error&) {
        throw Error("cannot read the ledger " + source + "; the ledger step writes it");
    }
    JsonlSaxReader reader(text, source);
    auto f = ledger_fields();
    GateSummary summary;
    RunIds runs;
    while (reader.next(f)) {
        const Where where{source, reader.line()};
        LedgerRow row;
        row.test = required_text(f[key::test], "test", where);
        row.suite_scope = optional_text(f[key::scope], "scope", where) == std::optional<std::string_view>("suite");
        row.warning = f[key::warning].kind == JsonField::Kind::boolean && f[key::warning].boolean;
        row.verdict = required_text(f[key::verdict], "verdict", where);
        row.gate = required_text(f[key::gate], "gate", where);
        const auto reason = required_text(f[key::reason], "reason", where);
        optional_text(f[key::until], "until", where);
        optional_text(f[key::owner], "owner", where);
        if (printed(row)) row.reason = reason;  // no other row's is needed
        summary.add(row);
        runs.add(f[key::outcomes]);
    }
    if (reader.torn()) throw InputError(source, reader.line(), "torn last line");
    summary.runs = runs.size();
    return summary;
}

void print_rows(std::ostream& out, const GateSummary& summary) {
    for (const char* gate : {"block", "defer"}) {
        for (const auto& row : summary.shown) {
            if (row.gate != gate) continue;
            out << (row.gate == "block" ? "BLOCK " : "DEFER ") << row.test << ": " << row.verdict << ", " << row.reason << '\n';
        }
    }
    for (const auto& row : summary.shown)
        if (row.warning) out << "WARN " << row.test << ": " << row.reason << '\n';
}

int print_summary(std::ostream& out, const std::string& suite, const GateSummary& s, std::size_t runs) {
    out << "evidence-gate " << suite << ": " << s.tests << " tests over " << runs << " runs: " << s.blocked << " block, "
        << s.deferred << " defer, " << (s.tests - s.blocked - s.deferred) << " pass";
    if (s.suite_blocks) out << "; " << s.suite_blocks << " suite check(s) block";
    out << " -> " << (s.blocked + s.suite_blocks ? "BLOCKED" : "PASSED") << '\n';
    return s.blocked + s.suite_blocks;
}

int print_gate(std::ostream& out, const std::string& suite, const GateSummary& summary, std::size_t runs) {
    print_rows(out, summary);
    return print_summary(out, suite, summary, runs);
}

int print_gate(std::ostream& out, const std::string& suite, const std::vector<LedgerRow>& rows, std::size_t runs) {
    return print_gate(out, suite, summarize(rows), runs);
}

}  // namespace evgate
