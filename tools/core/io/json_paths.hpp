// File names in JSON documents. Names are bytes, JSON text is UTF-8: a name is written with
// json_path_literal (valid UTF-8 whatever its bytes) and read back with path_from_json, so it
// comes back as the same bytes (file_identity.hpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace evgate {

void write_path(rapidjson::Writer<rapidjson::StringBuffer>& w, std::string_view path);
// `key`: [name, ...]
void write_paths(rapidjson::Writer<rapidjson::StringBuffer>& w, const char* key, const std::vector<std::string>& paths);

// The name a JSON string stands for; "" when the value is not a string.
std::string path_of(const rapidjson::Value& value);
// The name in the string member `key`; throws InputError naming `source` when it is missing.
std::string path_member(const rapidjson::Value& object, const char* key, const std::string& source);
// The names in the list member `key`; none when it is missing or not a list.
std::vector<std::string> paths_member(const rapidjson::Value& object, const char* key);

}  // namespace evgate
