// Reading and writing JSON and JSON Lines with RapidJSON: every parse error names
// file:line:col, a torn last line is never taken for a record, files are replaced atomically.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace evgate {

// Parse one JSON document; `source` names it in errors (file name).
rapidjson::Document parse_json(std::string_view text, const std::string& source);
rapidjson::Document read_json_file(const std::filesystem::path& path);

// Reads JSON Lines one record at a time. Blank lines are skipped. A last line without
// '\n' is torn (a writer died mid-record): next() stops there and torn() tells.
class JsonlReader {
public:
    JsonlReader(std::istream& in, std::string source);

    // Next record into `doc`; false at the end. Throws InputError for a line that is not JSON.
    bool next(rapidjson::Document& doc);
    int line() const { return line_; }
    bool torn() const { return torn_; }
    const std::string& source() const { return source_; }

private:
    std::istream& in_;
    std::string source_;
    std::string text_;
    int line_ = 0;
    bool torn_ = false;
};

// One compact JSON text per value, through a single reused writer.
class JsonWriter {
public:
    rapidjson::Writer<rapidjson::StringBuffer>& begin();  // reset buffer and writer
    std::string_view text() const { return {buffer_.GetString(), buffer_.GetSize()}; }

private:
    rapidjson::StringBuffer buffer_;
    rapidjson::Writer<rapidjson::StringBuffer> writer_{buffer_};
};

std::string to_json(const rapidjson::Value& value);
std::string json_string(std::string_view text);  // a JSON string literal, quoted and escaped

// Write `content` to a temporary file beside `path`, flush it and rename it over `path`.
void write_file_atomic(const std::filesystem::path& path, std::string_view content);
std::string read_file(const std::filesystem::path& path);

// Typed member access for documents we or the user wrote; errors name source and key.
const rapidjson::Value* member(const rapidjson::Value& object, const char* key);
std::string string_member(const rapidjson::Value& object, const char* key, const std::string& source);
std::optional<std::string> optional_string(const rapidjson::Value& object, const char* key,
                                           const std::string& source);
std::vector<std::string> string_array(const rapidjson::Value& object, const char* key,
                                      const std::string& source);

}  // namespace evgate
