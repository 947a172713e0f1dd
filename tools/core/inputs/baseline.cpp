#include "inputs/baseline.hpp"

#include <algorithm>
#include <set>

#include <rapidjson/prettywriter.h>
#include <gsl/gsl>

#include "io/error.hpp"
#include "io/json_io.hpp"

namespace evgate {
namespace {

// The DOM keeps no positions: find the line of the `occurrence`-th `token` (a JSON key or
// string as a writer spells it) in the text; 0, meaning the whole file, if it is not there.
int line_of(std::string_view text, std::string_view token, int occurrence = 1) {
    std::size_t at = std::string_view::npos;
    for (int i = 0; i < occurrence; ++i) {
        at = text.find(token, at == std::string_view::npos ? 0 : at + 1);
        if (at == std::string_view::npos) return 0;
    }
    return 1 +
           static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
}

class BaselineParser {
public:
    BaselineParser(std::string_view text, const std::string& source) : text_(text), source_(source) {}

    Baseline parse() {
        auto doc = parse_json(text_, source_);
        if (!doc.IsObject()) throw InputError(source_, 0, "not a JSON object");
        Baseline baseline{collected(doc), tests(doc), member(doc, "tests") != nullptr};
        if (static_cast<std::size_t>(baseline.collected) < baseline.tests.size()) {
            fail("\"collected\"", "'collected' is " + std::to_string(baseline.collected) +
                                      " but 'tests' lists " + std::to_string(baseline.tests.size()) + " ids");
        }
        return baseline;
    }

private:
    [[noreturn]] void fail(std::string_view token, const std::string& what, int occurrence = 1) const {
        throw InputError(source_, line_of(text_, token, occurrence), what);
    }

    std::int64_t collected(const rapidjson::Value& doc) const {
        const auto* value = member(doc, "collected");
        if (value == nullptr) throw InputError(source_, 0, "missing 'collected'");
        if (!value->IsInt64() || value->GetInt64() < 0) {
            fail("\"collected\"", "'collected' is not a non-negative integer: " + to_json(*value));
        }
        return value->GetInt64();
    }

    std::vector<std::string> tests(const rapidjson::Value& doc) const {
        std::vector<std::string> ids;
        const auto* value = member(doc, "tests");
        if (value == nullptr) return ids;
        if (!value->IsArray()) fail("\"tests\"", "'tests' is not a list of ids: " + to_json(*value));
        std::set<std::string_view> seen;
        for (const auto& item : value->GetArray()) {
            if (!item.IsString()) fail("\"tests\"", "'tests' holds a non-string: " + to_json(item));
            std::string_view id(item.GetString(), item.GetStringLength());
            if (id.empty()) fail("\"tests\"", "'tests' holds an empty id");
            if (!seen.insert(id).second) {
                fail(json_string(id), "duplicate id in 'tests': " + quote(std::string(id)), 2);
            }
            ids.emplace_back(id);
        }
        return ids;
    }

    std::string_view text_;
    const std::string& source_;
};

}  // namespace

Baseline parse_baseline(std::string_view text, const std::string& source) {
    return BaselineParser(text, source).parse();
}

std::string baseline_json(const Baseline& baseline) {
    rapidjson::StringBuffer buffer;
    rapidjson::PrettyWriter<rapidjson::StringBuffer> writer(buffer);
    writer.SetIndent(' ', 2);
    writer.StartObject();
    writer.Key("collected");
    writer.Int64(baseline.collected);
    if (baseline.lists_tests) {
        auto ids = baseline.tests;
        std::sort(ids.begin(), ids.end());
        writer.Key("tests");
        writer.StartArray();
        for (const auto& id : ids) writer.String(id.data(), gsl::narrow<rapidjson::SizeType>(id.size()));
        writer.EndArray();
    }
    writer.EndObject();
    return std::string(buffer.GetString(), buffer.GetSize()) + "\n";
}

}  // namespace evgate
