// Manifest diffs: flatten two environment manifests, compare them key by key and rank the
// keys that differ by how likely such a difference is to explain a portability gap (seed 000:
// packages, then locale and timezone, filesystem case, CPU count, Python minor version).
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <rapidjson/document.h>

namespace evgate {

// The newest manifest schema this evgate reads (the plugin's SCHEMA).
constexpr int kManifestSchema = 1;

// Suspicion ranks of a differing key, most suspicious first.
namespace drift_rank {
constexpr int packages = 1;         // distributions.*, pytest_version
constexpr int locale_timezone = 2;  // locale.*, timezone.*, the variables TZ, LANG, LC_*
constexpr int filesystem_case = 3;  // case_sensitive.*
constexpr int cpu_count = 4;        // cpu_count, usable_cpus
constexpr int python_minor = 5;     // python_version major.minor, python_implementation
constexpr int other = 6;            // platform, encodings, umask, hash seed, a patch-level Python...
constexpr int env_names = 7;        // which other variables exist: many differ on any CI, few matter
constexpr int noise = 8;            // differs between any two machines: hostname, interpreter path
}  // namespace drift_rank

struct DriftEntry {
    std::string key;                   // flattened: "timezone.TZ", "distributions.attrs"
    std::optional<std::string> local;  // the value as compact JSON text; nullopt: no such key
    std::optional<std::string> other;
    int rank = drift_rank::other;
};

// key -> compact JSON text of the value. Nested objects join their keys with '.'; arrays stay
// one value, except env_names: one key per variable, "env_names.<NAME>" -> "\"present\"".
std::map<std::string, std::string> flatten_manifest(const rapidjson::Value& manifest);

// Throws InputError naming `source` unless `manifest` is a manifest this evgate can read.
void check_manifest(const rapidjson::Value& manifest, const std::string& source);
rapidjson::Document read_manifest(const std::filesystem::path& file);  // parsed and checked

// The keys whose values differ (or exist on one side only), by rank, then by key.
std::vector<DriftEntry> diff_manifests(const rapidjson::Value& local, const rapidjson::Value& other);

// Per key, as the seed's parity_diff prints it, first `max_keys` entries:
//   timezone.TZ
//     local : null
//     runner: "Asia/Tokyo"
// `other_name` labels the second side; a side without the key reads (absent).
std::string format_drift(const std::vector<DriftEntry>& drift, std::string_view other_name, std::size_t max_keys);

// Up to `max` distinct names for a one-line reason, most suspicious first. Keys that carry one
// environment variable (env.TZ, env_names.TZ, timezone.TZ, locale.env.LANG) are named by the
// variable, once: "TZ, LANG, timezone.utc_offset_minutes". Noise-ranked keys are left out.
std::vector<std::string> drift_keys(const std::vector<DriftEntry>& drift, std::size_t max);

}  // namespace evgate
