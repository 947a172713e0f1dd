#include "verdicts/test_rows.hpp"

#include <set>
#include <unordered_map>

#include "verdicts/reproduction.hpp"

namespace evgate {
namespace {

// ------------------------------------------------------------------ policy

// A dated promise about a test: a quarantine entry, or its env_sensitive marker.
struct Promise {
    Date until;
    std::string owner;
};

// The promise that may defer the row, where the table lets one; a malformed env_sensitive
// marker is said in the reason and defers nothing.
std::optional<Promise> promise_for(LedgerRow& row, Deferral deferral, const ReceiptTest& test, const GateInput& input) {
    if (deferral == Deferral::none) return std::nullopt;
    if (const auto* entry = find_entry(input.quarantine, test.id)) return Promise{entry->until, entry->owner};
    if (deferral != Deferral::quarantine_or_env_sensitive || !test.env_sensitive) return std::nullopt;
    const auto until = parse_date(test.env_sensitive->until);
    if (!until || test.env_sensitive->owner.empty()) {
        row.reason += " (env_sensitive needs until=YYYY-MM-DD and owner=...)";
        return std::nullopt;
    }
    return Promise{*until, test.env_sensitive->owner};
}

// The table's gate; a promise not yet expired turns a block into a dated deferral.
void apply_policy(LedgerRow& row, Verdict verdict, const ReceiptTest& test, const GateInput& input) {
    const auto& v = info(verdict);
    row.gate = v.gate;
    if (v.gate == Gate::pass) return;
    const auto promise = promise_for(row, v.deferral, test, input);
    if (!promise) return;
    row.until = to_string(promise->until);
    row.owner = promise->owner;
    if (input.today <= promise->until) {
        row.gate = Gate::defer;
        row.reason += " (quarantined until " + *row.until + ", owner " + promise->owner + ")";
    } else {
        row.reason += " (quarantine expired on " + *row.until + ", owner " + promise->owner + ")";
    }
}

// ------------------------------------------------------------------ what the row adds to the verdict

// The manifest keys that differ on each column whose outcome makes the row, most suspicious first.
std::string drift_notes(const std::set<std::string>& columns, const GateInput& input) {
    std::string notes;
    for (const auto& column : columns) {
        auto it = input.drift.find(column);
        if (it == input.drift.end()) continue;
        std::string list;
        for (const auto& k : drift_keys(it->second, 5)) list += (list.empty() ? "" : ", ") + k;
        notes += "; " + column + " differs in " + (list.empty() ? "no recorded key" : list);
    }
    return notes;
}

// For a verdict that compares machines, how the columns that make it differ from this one;
// for every row, the runners that have no result for the test.
std::string machine_notes(Verdict verdict, const std::vector<Attempt>& attempts, const GateInput& input) {
    const auto elsewhere = info(verdict).elsewhere;
    const auto tells = elsewhere == Elsewhere::pass ? OutcomeClass::pass : OutcomeClass::fail;
    std::set<std::string> seen, telling;  // columns with a result; those whose result makes the row
    for (const auto& a : attempts) {
        if (a.column == Column::local) continue;
        seen.insert(column_name(a));
        if (outcome_class(a.outcome) == tells) telling.insert(column_name(a));
    }
    std::string notes = elsewhere == Elsewhere::nothing ? "" : drift_notes(telling, input);
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

// ------------------------------------------------------------------ the rows

// What a test's attempts say, apart from the test's own name: a verdict and its reason.
struct Judgement {
    Classification c;
    std::string notes;   // machine_notes
    std::size_t orders;  // distinct seed orders among the attempts
};

std::size_t distinct_seed_orders(const std::vector<Attempt>& attempts) {
    std::set<std::string_view> orders;
    for (const auto& a : attempts)
        if (const auto order = RunId::parse(a.order); a.column == Column::local && order && order->is_seed())
            orders.insert(a.order);
    return orders.size();
}

Judgement judge(const std::vector<Attempt>& attempts, const GateInput& input) {
    auto c = classify(attempts);
    auto notes = machine_notes(c.verdict, attempts, input);
    return {std::move(c), std::move(notes), distinct_seed_orders(attempts)};
}

LedgerRow test_row(const ReceiptTest& test, std::optional<std::uint32_t> number, const Judgement& judged,
                   const Outcomes& outcomes, const GateInput& input) {
    const auto& c = judged.c;
    LedgerRow row;
    row.test = test.id;
    row.verdict = c.verdict;
    row.reason = c.reason + judged.notes;
    if (c.verdict == Verdict::order_dependent)  // the localisation step searched its partner
        if (auto culprit = input.culprits.find(test.id); culprit != input.culprits.end()) add_partner(row, culprit->second);
    if (!input.evgate.empty())
        if (auto request = reproduction(c.verdict, test.id, number, input))
            row.reproduce = replay_command(input.evgate, input.suite_file, *request);
    row.dirty = c.dirty;
    row.also = c.also;
    row.orders = judged.orders;
    row.fork_sensitive = c.fork_sensitive;
    row.collides = c.collides;
    row.unattributed = c.unattributed;
    row.unattributed_in = c.unattributed_in;
    row.outcomes = outcomes;
    apply_policy(row, c.verdict, test, input);
    return row;
}

}  // namespace

// Most tests share their attempts with many others (passed in every run): those are judged once per kind.
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

}  // namespace evgate
