#include "verdicts/ledger.hpp"

#include <functional>
#include <set>
#include <string_view>

#include "io/atomic_file.hpp"
#include "io/error.hpp"
#include "io/json_io.hpp"

namespace evgate {
namespace {

using JsonOut = rapidjson::Writer<rapidjson::StringBuffer>;

void text(JsonOut& w, std::string_view value) { w.String(value.data(), static_cast<rapidjson::SizeType>(value.size())); }

void write_strings(JsonOut& w, const char* key, const std::vector<std::string>& items) {
    if (items.empty()) return;
    w.Key(key);
    w.StartArray();
    for (const auto& s : items) w.String(s);
    w.EndArray();
}

void write_also(JsonOut& w, const std::vector<Verdict>& also) {
    if (also.empty()) return;
    w.Key("also");
    w.StartArray();
    for (const auto v : also) text(w, to_string(v));
    w.EndArray();
}

void write_outcomes(JsonOut& w, const Outcomes& outcomes) {
    if (outcomes.empty()) return;
    w.Key("outcomes");
    w.StartObject();
    for (const auto& [run, outcome] : outcomes) w.Key(run.c_str(), static_cast<rapidjson::SizeType>(run.size())), text(w, to_string(outcome));
    w.EndObject();
}

void write_partner(JsonOut& w, const LedgerRow& row) {
    if (row.partners.size() == 1) w.Key("partner"), w.String(row.partners.front());
    if (row.partners.size() > 1) write_strings(w, "partner", row.partners);
    if (row.partner_role) w.Key("partner_role"), w.String(*row.partner_role);
    write_strings(w, "cleaners", row.cleaners);
}

void write_row(JsonOut& w, const LedgerRow& row) {
    w.StartObject();
    w.Key("test"), w.String(row.test);
    if (row.suite_scope) w.Key("scope"), w.String("suite");
    if (row.warning) w.Key("warning"), w.Bool(true);
    w.Key("verdict"), text(w, to_string(row.verdict));
    w.Key("gate"), text(w, to_string(row.gate));
    // Right after the gate: what `evgate history` reads of a row stops here (reports/history.cpp).
    if (!row.suite_scope) w.Key("orders"), w.Uint64(row.orders);
    w.Key("reason"), w.String(row.reason);
    write_outcomes(w, row.outcomes);
    write_also(w, row.also);
    write_strings(w, "dirty", row.dirty);
    if (row.until) w.Key("until"), w.String(*row.until);
    if (row.owner) w.Key("owner"), w.String(*row.owner);
    write_partner(w, row);
    if (row.reproduce) w.Key("reproduce"), w.String(*row.reproduce);
    write_strings(w, "tests", row.tests);
    if (row.fork_sensitive) w.Key("fork_sensitive"), w.Bool(true);
    if (row.collides) w.Key("collides"), w.Bool(true);
    write_strings(w, "unattributed", row.unattributed);
    w.EndObject();
}

// Every row a line. `flush` takes the text a megabyte at a time, and the rest at the end, so
// the ledger is never held whole.
void ledger_text(const std::vector<LedgerRow>& rows, const std::function<void(std::string_view)>& flush) {
    constexpr std::size_t kChunk = std::size_t{1} << 20;
    rapidjson::StringBuffer out;
    JsonOut w;
    for (const auto& row : rows) {
        w.Reset(out);
        write_row(w, row);
        out.Put('\n');
        if (out.GetSize() < kChunk) continue;
        flush({out.GetString(), out.GetSize()});
        out.Clear();
    }
    flush({out.GetString(), out.GetSize()});
}

namespace key {  // the members of a ledger row the gate reads, in ledger_fields() order
enum : std::size_t { test,
                     scope,
                     warning,
                     verdict,
                     gate,
                     reason,
                     until,
                     owner,
                     outcomes };
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

// A word of the table's (a verdict, a gate), as the ledger spells it.
template <typename T>
T table_word(std::optional<T> (*named)(std::string_view), const JsonField& field, const char* key, const char* what,
             const Where& where) {
    const auto word = required_text(field, key, where);
    if (const auto value = named(word)) return *value;
    throw InputError(where.source, where.line, "'" + std::string(key) + "' is not " + what + ": " + quote(std::string(word)));
}

// The members the summary needs; the reason only where the gate prints it.
LedgerRow read_row(const FieldCapture& f, const Where& where) {
    LedgerRow row;
    row.test = required_text(f[key::test], "test", where);
    row.suite_scope = optional_text(f[key::scope], "scope", where) == std::optional<std::string_view>("suite");
    row.warning = f[key::warning].kind == JsonField::Kind::boolean && f[key::warning].boolean;
    row.verdict = table_word(verdict_named, f[key::verdict], "verdict", "a verdict", where);
    row.gate = table_word(gate_named, f[key::gate], "gate", "pass, defer or block", where);
    const auto reason = required_text(f[key::reason], "reason", where);
    optional_text(f[key::until], "until", where);
    optional_text(f[key::owner], "owner", where);
    if (printed(row)) row.reason = reason;  // no other row's is needed
    return row;
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
        summary.add(read_row(f, Where{source, reader.line()}));
        runs.add(f[key::outcomes]);
    }
    if (reader.torn()) throw InputError(source, reader.line(), "torn last line");
    summary.runs = runs.size();
    return summary;
}

}  // namespace evgate
