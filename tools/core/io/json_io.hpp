// Reading and writing JSON and JSON Lines with RapidJSON: every parse error names
// file:line:col, a torn last line is never taken for a record; whole files read with room to parse
// them in place.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <iosfwd>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <rapidjson/document.h>
#include <rapidjson/reader.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace evgate {

// Parse one JSON document; `source` names it in errors (file name).
rapidjson::Document parse_json(std::string_view text, const std::string& source);
rapidjson::Document read_json_file(const std::filesystem::path& path);
// The same, parsed in place in `storage`: the document's strings point into it (no copies), so
// it must outlive them.
rapidjson::Document read_json_file_in_place(const std::filesystem::path& path, std::string& storage);

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

// Room a buffer parsed in place keeps after its text: RapidJSON's SIMD scanning reads whole
// aligned 16-byte blocks, so it may read up to 15 bytes past the end (never further).
constexpr std::size_t kParseSlack = 16;

// JSON Lines from a whole file's bytes, without a document per line: each line is parsed in
// place in `text` (the bytes are modified; strings the handler is given point into them) into
// a SAX handler. Blank lines, torn last lines and errors as JsonlReader.
class JsonlSaxReader {
public:
    JsonlSaxReader(std::string& text, std::string source);

    // Parses the next record into `handler`; false at the end or at a torn last line.
    template <typename Handler>
    bool next(Handler& handler) {
        char* line = next_line();
        if (line == nullptr) return false;
        parse_line(line, handler);
        return true;
    }
    // The next record's line, NUL-terminated in place, not parsed yet: for a reader that picks
    // how to parse each line (parse_line). nullptr at the end or at a torn last line.
    char* next_text() { return next_line(); }
    // Where the line after the one last read starts, in the text (its size at the end).
    std::size_t position() const { return position_; }
    // Parses a line next_text() gave into `handler`; false when the handler stopped it early (a
    // callback returned false): the rest of that line is left unread and unchecked.
    template <typename Handler>
    bool parse_line(char* line, Handler& handler) {
        rapidjson::InsituStringStream in(line);
        parser_.Parse<rapidjson::kParseInsituFlag>(in, handler);
        if (!parser_.HasParseError()) return true;
        if (parser_.GetParseErrorCode() == rapidjson::kParseErrorTermination) return false;
        fail(parser_.GetParseErrorCode(), parser_.GetErrorOffset());
    }
    int line() const { return line_; }
    bool torn() const { return torn_; }
    const std::string& source() const { return source_; }

private:
    char* next_line();  // the next non-blank line, NUL-terminated in place; nullptr at the end
    [[noreturn]] void fail(rapidjson::ParseErrorCode code, std::size_t offset) const;

    std::string& text_;
    std::string source_;
    std::size_t position_ = 0;
    int line_ = 0;
    bool torn_ = false;
    rapidjson::Reader parser_;
};

// One top-level member of a JSON object as FieldCapture saw it. Strings are views into the
// parsed bytes; a list keeps its strings, an object its keys and string values alternately
// (a value that is not a string as "").
struct JsonField {
    enum class Kind : std::uint8_t { absent,
                                     null,
                                     boolean,
                                     integer,
                                     number,
                                     string,
                                     array,
                                     object };
    Kind kind = Kind::absent;
    bool boolean = false;
    std::int64_t integer = 0;  // Kind::integer: a whole number that fits 64 bits, as RapidJSON's IsInt64
    double number = 0;         // Kind::number, and Kind::integer as a double
    std::string_view text;
    std::vector<std::string_view> items;
    bool only_strings = true;  // every item of the list, or every value of the object, is a string

    bool is_int() const { return kind == Kind::integer && integer >= std::numeric_limits<int>::min() && integer <= std::numeric_limits<int>::max(); }
};

// A SAX handler that keeps the top-level members of a record named by `keys` (the first of
// duplicates, as a document's FindMember) and skips everything else, however deep.
class FieldCapture : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, FieldCapture> {
public:
    explicit FieldCapture(std::initializer_list<const char*> keys);

    const JsonField& operator[](std::size_t key) const { return fields_[key]; }
    bool is_object() const { return object_; }
    // Forgets a record whose parse a derived handler stopped early, so that the next one is
    // read from its start.
    void restart() {
        depth_ = 0;
        reset();
    }

    bool Null();
    bool Bool(bool b);
    bool Int(int i) { return Integer(i); }
    bool Uint(unsigned u) { return Integer(u); }
    bool Int64(std::int64_t i) { return Integer(i); }
    bool Uint64(std::uint64_t u);
    bool Double(double d);
    bool String(const char* text, rapidjson::SizeType length, bool copy);
    bool StartObject();
    bool Key(const char* text, rapidjson::SizeType length, bool copy);
    bool EndObject(rapidjson::SizeType) { return end(); }
    bool StartArray();
    bool EndArray(rapidjson::SizeType) { return end(); }

private:
    bool Integer(std::int64_t number);
    JsonField* value(JsonField::Kind kind, std::string_view text = {});
    bool start(JsonField::Kind kind);
    bool end();
    void reset();

    std::vector<std::string> keys_;
    std::vector<std::vector<std::size_t>> by_length_;  // key indices by key length: a key is found in a compare or two
    std::vector<JsonField> fields_;
    JsonField* current_ = nullptr;  // the captured member being read, at depth 1 or inside it
    int depth_ = 0;
    bool object_ = false;
};

// A record's file and line, for an error message (made into text only then).
struct Where {
    const std::string& source;
    int line;
};

// FieldCapture members checked like the document accessors below; errors name file and line.
std::optional<std::string_view> optional_text(const JsonField& field, const char* key, const Where& where);
std::string_view required_text(const JsonField& field, const char* key, const Where& where);
const std::vector<std::string_view>& text_list(const JsonField& field, const char* key, const Where& where);

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

// A whole file's bytes (atomic writing is atomic_file.hpp).
std::string read_file(const std::filesystem::path& path);
// The same into `text`, reusing its memory (reading file after file costs no allocation), with
// kParseSlack bytes of room after the end.
void read_file(const std::filesystem::path& path, std::string& text);

// Typed member access for documents we or the user wrote; errors name source and key.
const rapidjson::Value* member(const rapidjson::Value& object, const char* key);
std::string string_member(const rapidjson::Value& object, const char* key, const std::string& source);
std::optional<std::string> optional_string(const rapidjson::Value& object, const char* key,
                                           const std::string& source);
std::vector<std::string> string_array(const rapidjson::Value& object, const char* key,
                                      const std::string& source);
// Each string of the list `key` (none when absent or null), checked as string_array checks it.
void for_each_string(const rapidjson::Value& object, const char* key, const std::string& source,
                     const std::function<void(std::string_view)>& each);

}  // namespace evgate
