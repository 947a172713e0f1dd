#include "io/json_io.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <istream>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rapidjson/error/en.h>

#include "io/error.hpp"

namespace evgate {
namespace {

// 1-based line and column of a byte offset, for error messages.
std::pair<int, int> line_col(std::string_view text, std::size_t offset) {
    int line = 1;
    int col = 1;
    for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
        if (text[i] == '\n') {
            ++line;
            col = 1;
        } else {
            ++col;
        }
    }
    return {line, col};
}

}  // namespace

rapidjson::Document parse_json(std::string_view text, const std::string& source) {
    rapidjson::Document doc;
    doc.Parse(text.data(), text.size());
    if (doc.HasParseError()) {
        auto [line, col] = line_col(text, doc.GetErrorOffset());
        throw InputError(source, line,
                         "column " + std::to_string(col) + ": not valid JSON: " +
                             rapidjson::GetParseError_En(doc.GetParseError()));
    }
    return doc;
}

rapidjson::Document read_json_file(const std::filesystem::path& path) {
    return parse_json(read_file(path), path.string());
}

JsonlReader::JsonlReader(std::istream& in, std::string source)
    : in_(in), source_(std::move(source)) {}

bool JsonlReader::next(rapidjson::Document& doc) {
    while (std::getline(in_, text_)) {
        ++line_;
        if (in_.eof()) {  // getline hit the end before a '\n': the writer died mid-record
            torn_ = !text_.empty();
            return false;
        }
        if (text_.find_first_not_of(" \t\r") == std::string::npos) continue;
        doc.Parse(text_.data(), text_.size());
        if (doc.HasParseError()) {
            throw InputError(source_, line_,
                             "column " + std::to_string(doc.GetErrorOffset() + 1) +
                                 ": not valid JSON: " + rapidjson::GetParseError_En(doc.GetParseError()));
        }
        return true;
    }
    return false;
}

rapidjson::Document read_json_file_in_place(const std::filesystem::path& path, std::string& storage) {
    read_file(path, storage);
    rapidjson::Document doc;
    doc.ParseInsitu(storage.data());
    if (doc.HasParseError()) parse_json(read_file(path), path.string());  // parsing in place moved the bytes the error counts in
    return doc;
}

JsonlSaxReader::JsonlSaxReader(std::string& text, std::string source) : text_(text), source_(std::move(source)) {
    if (text_.capacity() < text_.size() + kParseSlack) text_.reserve(text_.size() + kParseSlack);
}

char* JsonlSaxReader::next_line() {
    while (position_ < text_.size()) {
        ++line_;
        const auto end = text_.find('\n', position_);
        if (end == std::string::npos) {  // the writer died mid-record
            torn_ = true;
            return nullptr;
        }
        const auto begin = position_;
        position_ = end + 1;
        auto content = begin;
        while (content < end && (text_[content] == ' ' || text_[content] == '\t' || text_[content] == '\r')) ++content;
        if (content == end) continue;  // blank
        text_[end] = '\0';
        return &text_[begin];
    }
    return nullptr;
}

void JsonlSaxReader::fail(rapidjson::ParseErrorCode code, std::size_t offset) const {
    throw InputError(source_, line_,
                     "column " + std::to_string(offset + 1) + ": not valid JSON: " + rapidjson::GetParseError_En(code));
}

namespace {

// A key of a few bytes: compared in place, cheaper than a call to memcmp for every member.
bool same(const std::string& key, const char* text, std::size_t length) {
    for (std::size_t i = 0; i < length; ++i)
        if (key[i] != text[i]) return false;
    return true;
}

}  // namespace

FieldCapture::FieldCapture(std::initializer_list<const char*> keys) : keys_(keys.begin(), keys.end()), fields_(keys.size()) {
    for (std::size_t i = 0; i < keys_.size(); ++i) {
        const auto length = keys_[i].size();
        if (by_length_.size() <= length) by_length_.resize(length + 1);
        by_length_[length].push_back(i);
    }
}

void FieldCapture::reset() {
    for (auto& field : fields_) {
        field.kind = JsonField::Kind::absent;
        field.items.clear();  // keeps its capacity: no allocation per record
        field.only_strings = true;
    }
    current_ = nullptr;
    object_ = false;
}

// A value at the current depth: a captured member's own (depth 1), or an item of a captured
// list or object (depth 2). Returns the member when the value is its own.
JsonField* FieldCapture::value(JsonField::Kind kind, std::string_view text) {
    if (depth_ == 0) reset();  // a record that is not an object captures nothing
    if (current_ == nullptr) return nullptr;
    if (depth_ == 1) {
        auto* field = current_;
        current_ = nullptr;
        field->kind = kind;
        field->text = text;
        return field;
    }
    if (depth_ == 2) {
        const bool string = kind == JsonField::Kind::string;
        current_->only_strings = current_->only_strings && string;
        if (current_->kind == JsonField::Kind::array && string) current_->items.push_back(text);
        if (current_->kind == JsonField::Kind::object && string) current_->items.back() = text;  // the key's value
    }
    return nullptr;
}

bool FieldCapture::Null() {
    value(JsonField::Kind::null);
    return true;
}

bool FieldCapture::Bool(bool b) {
    if (auto* field = value(JsonField::Kind::boolean)) field->boolean = b;
    return true;
}

bool FieldCapture::Integer(std::int64_t number) {
    if (auto* field = value(JsonField::Kind::integer)) field->integer = number, field->number = static_cast<double>(number);
    return true;
}

bool FieldCapture::Uint64(std::uint64_t u) {
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return Double(static_cast<double>(u));
    return Integer(static_cast<std::int64_t>(u));
}

bool FieldCapture::Double(double d) {
    if (auto* field = value(JsonField::Kind::number)) field->number = d;
    return true;
}

bool FieldCapture::String(const char* text, rapidjson::SizeType length, bool) {
    value(JsonField::Kind::string, {text, length});
    return true;
}

bool FieldCapture::Key(const char* text, rapidjson::SizeType length, bool) {
    if (depth_ == 1) {
        current_ = nullptr;
        if (length < by_length_.size())
            for (auto i : by_length_[length])
                if (same(keys_[i], text, length) && fields_[i].kind == JsonField::Kind::absent) current_ = &fields_[i];
    } else if (depth_ == 2 && current_ != nullptr) {
        current_->items.emplace_back(text, length);
        current_->items.emplace_back();  // its value: "" unless a string follows
    }
    return true;
}

bool FieldCapture::StartObject() { return start(JsonField::Kind::object); }
bool FieldCapture::StartArray() { return start(JsonField::Kind::array); }

bool FieldCapture::start(JsonField::Kind kind) {
    if (depth_ == 0 && kind == JsonField::Kind::object) {
        reset();
        object_ = true;
    } else if (auto* field = value(kind); field != nullptr) {
        current_ = field;  // its items come at depth 2
    }
    ++depth_;
    return true;
}

bool FieldCapture::end() {
    if (--depth_ == 1) current_ = nullptr;
    return true;
}

std::optional<std::string_view> optional_text(const JsonField& field, const char* key, const Where& where) {
    if (field.kind == JsonField::Kind::absent || field.kind == JsonField::Kind::null) return std::nullopt;
    if (field.kind != JsonField::Kind::string) throw InputError(where.source, where.line, std::string("'") + key + "' is not a string");
    return field.text;
}

std::string_view required_text(const JsonField& field, const char* key, const Where& where) {
    auto text = optional_text(field, key, where);
    if (!text) throw InputError(where.source, where.line, std::string("missing string '") + key + "'");
    return *text;
}

const std::vector<std::string_view>& text_list(const JsonField& field, const char* key, const Where& where) {
    if (field.kind == JsonField::Kind::absent || field.kind == JsonField::Kind::null) return field.items;  // empty
    if (field.kind != JsonField::Kind::array) throw InputError(where.source, where.line, std::string("'") + key + "' is not a list");
    if (!field.only_strings) throw InputError(where.source, where.line, std::string("'") + key + "' holds a non-string");
    return field.items;
}

rapidjson::Writer<rapidjson::StringBuffer>& JsonWriter::begin() {
    buffer_.Clear();
    writer_.Reset(buffer_);
    return writer_;
}

std::string to_json(const rapidjson::Value& value) {
    JsonWriter writer;
    value.Accept(writer.begin());
    return std::string(writer.text());
}

std::string json_string(std::string_view text) {
    JsonWriter writer;
    writer.begin().String(text.data(), static_cast<rapidjson::SizeType>(text.size()));
    return std::string(writer.text());
}

std::string read_file(const std::filesystem::path& path) {
    std::string text;
    read_file(path, text);
    return text;
}

void read_file(const std::filesystem::path& path, std::string& text) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error("cannot read " + path.string() + ": " + std::strerror(errno));
    struct stat st {};
    // More than fstat saw, so that the read that finds the end needs no larger buffer, and the
    // text keeps its slack for parsing in place.
    text.resize((::fstat(fd, &st) == 0 && st.st_size > 0 ? static_cast<std::size_t>(st.st_size) : 0) + kParseSlack);
    std::size_t done = 0;
    for (;;) {  // to the end, even past the size fstat saw (a run still appending)
        if (done == text.size()) text.resize(2 * text.size());
        const auto n = ::read(fd, &text[done], text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            const int saved = errno;
            ::close(fd);
            throw Error("cannot read " + path.string() + ": " + std::strerror(saved));
        }
        if (n == 0) break;
        done += static_cast<std::size_t>(n);
    }
    ::close(fd);
    if (text.size() < done + kParseSlack) text.resize(done + kParseSlack);  // a file that grew as it was read
    text.resize(done);
}

const rapidjson::Value* member(const rapidjson::Value& object, const char* key) {
    if (!object.IsObject()) return nullptr;
    auto it = object.FindMember(key);
    return it == object.MemberEnd() ? nullptr : &it->value;
}

std::string string_member(const rapidjson::Value& object, const char* key, const std::string& source) {
    auto value = optional_string(object, key, source);
    if (!value) throw InputError(source, 0, std::string("missing string '") + key + "'");
    return *value;
}

std::optional<std::string> optional_string(const rapidjson::Value& object, const char* key,
                                           const std::string& source) {
    const auto* value = member(object, key);
    if (value == nullptr || value->IsNull()) return std::nullopt;
    if (!value->IsString()) throw InputError(source, 0, std::string("'") + key + "' is not a string");
    return std::string(value->GetString(), value->GetStringLength());
}

std::vector<std::string> string_array(const rapidjson::Value& object, const char* key,
                                      const std::string& source) {
    std::vector<std::string> out;
    for_each_string(object, key, source, [&out](std::string_view item) { out.emplace_back(item); });
    return out;
}

void for_each_string(const rapidjson::Value& object, const char* key, const std::string& source,
                     const std::function<void(std::string_view)>& each) {
    const auto* value = member(object, key);
    if (value == nullptr || value->IsNull()) return;
    if (!value->IsArray()) throw InputError(source, 0, std::string("'") + key + "' is not a list");
    for (const auto& item : value->GetArray()) {
        if (!item.IsString()) throw InputError(source, 0, std::string("'") + key + "' holds a non-string");
        each({item.GetString(), item.GetStringLength()});
    }
}

}  // namespace evgate
