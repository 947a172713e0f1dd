#include "inputs/quarantine.hpp"

#include <algorithm>
#include <istream>
#include <sstream>

#include "io/error.hpp"
#include "io/json_io.hpp"

namespace evgate {
namespace {

// JsonlReader takes an unterminated last line for a torn record; here it is just the
// last line of a hand-edited file, so the text is completed before it is read.
std::string complete_lines(std::istream& in) {
    std::ostringstream text;
    text << in.rdbuf();
    auto lines = text.str();
    if (!lines.empty() && lines.back() != '\n') lines += '\n';
    return lines;
}

std::string optional_field(const rapidjson::Value& entry, const char* key, const JsonlReader& reader) {
    const auto* value = member(entry, key);
    if (value == nullptr) return {};
    if (!value->IsString()) {
        throw InputError(reader.source(), reader.line(),
                         "'" + std::string(key) + "' is not a string: " + to_json(*value));
    }
    return {value->GetString(), value->GetStringLength()};
}

std::string required_field(const rapidjson::Value& entry, const char* key, const JsonlReader& reader) {
    if (member(entry, key) == nullptr) {
        throw InputError(reader.source(), reader.line(), "missing '" + std::string(key) + "'");
    }
    auto value = optional_field(entry, key, reader);
    if (value.empty()) {
        throw InputError(reader.source(), reader.line(), "'" + std::string(key) + "' is empty");
    }
    return value;
}

Date until_field(const rapidjson::Value& entry, const JsonlReader& reader) {
    auto until = required_field(entry, "until", reader);
    auto date = parse_date(until);
    if (!date) {
        throw InputError(reader.source(), reader.line(), "'until' is not a date: " + quote(until));
    }
    return *date;
}

QuarantineEntry parse_entry(const rapidjson::Document& doc, const JsonlReader& reader) {
    if (!doc.IsObject()) {
        throw InputError(reader.source(), reader.line(), "not a JSON object: " + to_json(doc));
    }
    // Braced initialisation runs left to right: fields are checked in the documented order.
    return {required_field(doc, "test", reader), until_field(doc, reader),
            required_field(doc, "owner", reader), optional_field(doc, "reason", reader), reader.line()};
}

}  // namespace

std::vector<QuarantineEntry> parse_quarantine(std::istream& in, const std::string& source) {
    std::istringstream lines(complete_lines(in));
    JsonlReader reader(lines, source);
    std::vector<QuarantineEntry> entries;
    rapidjson::Document doc;
    while (reader.next(doc)) {
        auto entry = parse_entry(doc, reader);
        if (const auto* first = find_entry(entries, entry.test)) {
            throw InputError(source, entry.line,
                             "duplicate entry for " + quote(entry.test) + " (first on line " +
                                 std::to_string(first->line) + ")");
        }
        entries.push_back(std::move(entry));
    }
    return entries;
}

const QuarantineEntry* find_entry(const std::vector<QuarantineEntry>& entries, std::string_view test) {
    auto it = std::find_if(entries.begin(), entries.end(),
                           [&](const QuarantineEntry& entry) { return entry.test == test; });
    return it == entries.end() ? nullptr : &*it;
}

}  // namespace evgate
