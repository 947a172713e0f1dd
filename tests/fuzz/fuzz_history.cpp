// What evgate history reads of a run: a ledger's rows (parsed in place, each row only up to its
// gate unless a scope may follow) and the head of a junit.xml. Where a ledger is valid JSON
// Lines throughout, the rows must be exactly those a whole parse of every line gives.
#include <sstream>

#include "fuzz_support.hpp"
#include "io/json_io.hpp"
#include "reports/history.hpp"
#include "reports/junit_writer.hpp"

namespace {

struct Whole {
    std::string test, verdict, gate;
    bool suite = false;
};

// Every line parsed whole into a document; nullopt where the text is not such a ledger.
std::optional<std::vector<Whole>> parsed_whole(std::string_view text) {
    std::istringstream in{std::string(text)};
    evgate::JsonlReader reader(in, "ledger.jsonl");
    rapidjson::Document doc;
    std::vector<Whole> rows;
    try {
        while (reader.next(doc)) {
            if (!doc.IsObject()) return std::nullopt;
            const auto text_of = [&](const char* key) -> std::optional<std::string> {
                const auto* v = evgate::member(doc, key);
                if (v == nullptr || !v->IsString()) return std::nullopt;
                return std::string(v->GetString(), v->GetStringLength());
            };
            auto test = text_of("test"), verdict = text_of("verdict"), gate = text_of("gate"), scope = text_of("scope");
            const auto* scope_value = evgate::member(doc, "scope");
            if (!test || !verdict || !gate || (scope_value != nullptr && !scope_value->IsNull() && !scope)) return std::nullopt;
            rows.push_back({*test, *verdict, *gate, scope == std::optional<std::string>("suite")});
        }
    } catch (const evgate::Error&) {
        return std::nullopt;
    }
    if (reader.torn() || rows.empty()) return std::nullopt;
    return rows;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const evgate_fuzz::MemoryFile file(data, size);
    std::string text;
    std::vector<evgate::HistoryRow> rows;
    bool read = false;
    evgate_fuzz::expect_only_input_errors([&] {
        evgate::read_history_rows(file.path(), text, rows);
        read = true;
    });
    if (read) {
        for (const auto& row : rows)
            for (const auto view : {row.test, row.verdict, row.gate})
                if (!view.empty() && (view.data() < text.data() || view.data() + view.size() > text.data() + text.size()))
                    evgate_fuzz::violated("a row's text lies in the ledger's bytes");
        evgate::History history;
        history.add(evgate::RunPlace{}, rows);
    }
    if (const auto whole = parsed_whole(evgate_fuzz::text(data, size))) {
        if (!read || whole->size() != rows.size()) evgate_fuzz::violated("a valid ledger gives every row");
        for (std::size_t i = 0; i < rows.size(); ++i) {
            const auto& w = (*whole)[i];
            if (w.test != rows[i].test || w.verdict != rows[i].verdict || w.gate != rows[i].gate || w.suite != rows[i].suite_scope)
                evgate_fuzz::violated("a row read up to its gate says what the whole row says");
        }
    }
    evgate_fuzz::expect_only_input_errors([&] { evgate::read_junit_head(file.path()); });
    return 0;
}
