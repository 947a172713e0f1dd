#include "io/json_paths.hpp"

#include "io/file_identity.hpp"
#include "io/json_io.hpp"

namespace evgate {

void write_path(rapidjson::Writer<rapidjson::StringBuffer>& w, std::string_view path) {
    const auto literal = json_path_literal(path);
    w.RawValue(literal.data(), literal.size(), rapidjson::kStringType);
}

void write_paths(rapidjson::Writer<rapidjson::StringBuffer>& w, const char* key, const std::vector<std::string>& paths) {
    w.Key(key), w.StartArray();
    for (const auto& p : paths) write_path(w, p);
    w.EndArray();
}

std::string path_of(const rapidjson::Value& value) {
    return value.IsString() ? path_from_json({value.GetString(), value.GetStringLength()}) : std::string();
}

std::string path_member(const rapidjson::Value& object, const char* key, const std::string& source) {
    return path_from_json(string_member(object, key, source));
}

std::vector<std::string> paths_member(const rapidjson::Value& object, const char* key) {
    std::vector<std::string> paths;
    if (const auto* list = member(object, key); list && list->IsArray())
        for (const auto& p : list->GetArray()) paths.push_back(path_of(p));
    return paths;
}

}  // namespace evgate
