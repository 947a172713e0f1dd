#include "json_io.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <istream>
#include <sstream>

#include <fcntl.h>
#include <unistd.h>

#include <rapidjson/error/en.h>

#include "error.hpp"

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

void write_file_atomic(const std::filesystem::path& path, std::string_view content) {
    auto temp = path;
    temp += ".tmp." + std::to_string(::getpid());
    int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw Error("cannot write " + temp.string() + ": " + std::strerror(errno));
    std::size_t done = 0;
    while (done < content.size()) {
        auto n = ::write(fd, content.data() + done, content.size() - done);
        if (n < 0) {
            if (errno == EINTR) continue;
            int saved = errno;
            ::close(fd);
            ::unlink(temp.c_str());
            throw Error("cannot write " + temp.string() + ": " + std::strerror(saved));
        }
        done += static_cast<std::size_t>(n);
    }
    ::fsync(fd);
    ::close(fd);
    if (std::rename(temp.c_str(), path.c_str()) != 0) {
        int saved = errno;
        ::unlink(temp.c_str());
        throw Error("cannot replace " + path.string() + ": " + std::strerror(saved));
    }
}

std::string read_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error("cannot read " + path.string() + ": " + std::strerror(errno));
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
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
    const auto* value = member(object, key);
    if (value == nullptr || value->IsNull()) return out;
    if (!value->IsArray()) throw InputError(source, 0, std::string("'") + key + "' is not a list");
    for (const auto& item : value->GetArray()) {
        if (!item.IsString()) throw InputError(source, 0, std::string("'") + key + "' holds a non-string");
        out.emplace_back(item.GetString(), item.GetStringLength());
    }
    return out;
}

}  // namespace evgate
