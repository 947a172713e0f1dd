#include "machines/manifest_diff.hpp"

#include <algorithm>
#include <tuple>

#include <gsl/gsl>

#include "io/error.hpp"
#include "io/json_io.hpp"

namespace evgate {
namespace {

bool has_prefix(std::string_view text, std::string_view prefix) { return text.substr(0, prefix.size()) == prefix; }

// Walks a manifest once, through one reused writer.
class Flattener {
public:
    std::map<std::string, std::string> out;

    void object(const rapidjson::Value& value, const std::string& prefix) {
        for (const auto& m : value.GetObject()) {
            const auto key = prefix + std::string(m.name.GetString(), m.name.GetStringLength());
            if (m.value.IsObject())
                object(m.value, key + ".");
            else if (key == "env_names" && m.value.IsArray())
                names(m.value);
            else
                out[key] = json(m.value);
        }
    }

private:
    JsonWriter writer_;

    std::string json(const rapidjson::Value& value) {
        value.Accept(writer_.begin());
        return std::string(writer_.text());
    }

    // One key per name, so that one variable set on one side only shows as that variable.
    void names(const rapidjson::Value& list) {
        for (const auto& name : list.GetArray()) {
            const auto text = name.IsString() ? std::string(name.GetString(), name.GetStringLength()) : json(name);
            out["env_names." + text] = "\"present\"";
        }
    }
};

// The environment variable a key carries, if it carries exactly one.
std::optional<std::string_view> variable_of(std::string_view key) {
    for (const std::string_view prefix : {"env.", "env_names.", "locale.env."})
        if (has_prefix(key, prefix)) return key.substr(prefix.size());
    if (key == "timezone.TZ") return key.substr(key.find('.') + 1);
    return std::nullopt;
}

// LANGUAGE too: gettext picks message translations by it, and error text is what tests compare.
bool locale_or_timezone_variable(std::string_view name) {
    return name == "TZ" || name == "LANG" || name == "LANGUAGE" || has_prefix(name, "LC_");
}

// "3.11" from the JSON text "\"3.11.2\"": a patch-level difference is not a minor-version one.
std::optional<std::string> major_minor(const std::optional<std::string>& json_text) {
    if (!json_text) return std::nullopt;
    std::string_view version = *json_text;
    if (version.size() >= 2 && version.front() == '"' && version.back() == '"')
        version = version.substr(1, version.size() - 2);
    const auto first = version.find('.');
    const auto second = first == std::string_view::npos ? first : version.find('.', first + 1);
    return std::string(version.substr(0, second));
}

// The seed's order of suspicion. Noise: keys that differ between any two machines and so
// explain nothing — the host name, the interpreter's path (which distributions it sees
// is already compared key by key), and the variables evgate itself sets or reads.
int rank_of(const DriftEntry& entry) {
    const std::string_view key = entry.key;
    if (key == "pytest_version" || has_prefix(key, "distributions.")) return drift_rank::packages;
    const auto variable = variable_of(key);
    if ((variable && locale_or_timezone_variable(*variable)) || has_prefix(key, "locale.") ||
        has_prefix(key, "timezone."))
        return drift_rank::locale_timezone;
    if (has_prefix(key, "case_sensitive.")) return drift_rank::filesystem_case;
    if (key == "cpu_count" || key == "usable_cpus") return drift_rank::cpu_count;
    if (key == "python_implementation") return drift_rank::python_minor;  // at least as telling as a minor
    if (key == "python_version")
        return major_minor(entry.local) == major_minor(entry.other) ? drift_rank::other : drift_rank::python_minor;
    if (key == "host.hostname" || key == "python_executable") return drift_rank::noise;
    if (variable && (has_prefix(*variable, "EVIDENCE_GATE_") || *variable == "PYTHONPATH" ||
                     *variable == "PYTHONDONTWRITEBYTECODE" || *variable == "PYTHONPYCACHEPREFIX"))
        return drift_rank::noise;  // our own: evgate sets them, or they steer evgate itself
    if (has_prefix(key, "env_names.")) return drift_rank::env_names;
    return drift_rank::other;
}

std::string side_line(std::string_view name, std::size_t width, const std::optional<std::string>& value) {
    return "  " + std::string(name) + std::string(width - name.size(), ' ') + ": " + value.value_or("(absent)") + '\n';
}

}  // namespace

std::map<std::string, std::string> flatten_manifest(const rapidjson::Value& manifest) {
    Expects(manifest.IsObject());
    Flattener flattener;
    flattener.object(manifest, "");
    return std::move(flattener.out);
}

void check_manifest(const rapidjson::Value& manifest, const std::string& source) {
    if (!manifest.IsObject()) throw InputError(source, 0, "not an environment manifest: not a JSON object");
    const auto* schema = member(manifest, "schema");
    if (schema == nullptr || !schema->IsInt64() || schema->GetInt64() < 1)
        throw InputError(source, 0, "not an environment manifest: no positive integer 'schema'");
    if (schema->GetInt64() > kManifestSchema)
        throw InputError(source, 0,
                         "manifest from a newer schema (" + std::to_string(schema->GetInt64()) + "); this evgate reads " +
                             std::to_string(kManifestSchema));
}

rapidjson::Document read_manifest(const std::filesystem::path& file) {
    auto doc = read_json_file(file);
    check_manifest(doc, file.string());
    return doc;
}

std::vector<DriftEntry> diff_manifests(const rapidjson::Value& local, const rapidjson::Value& other) {
    const auto a = flatten_manifest(local);
    const auto b = flatten_manifest(other);
    std::vector<DriftEntry> drift;
    for (const auto& [key, value] : a) {
        const auto it = b.find(key);
        if (it == b.end())
            drift.push_back({key, value, std::nullopt});
        else if (it->second != value)
            drift.push_back({key, value, it->second});
    }
    for (const auto& [key, value] : b)
        if (a.count(key) == 0) drift.push_back({key, std::nullopt, value});
    for (auto& entry : drift) entry.rank = rank_of(entry);
    std::sort(drift.begin(), drift.end(), [](const DriftEntry& x, const DriftEntry& y) {
        return std::tie(x.rank, x.key) < std::tie(y.rank, y.key);
    });
    return drift;
}

std::string format_drift(const std::vector<DriftEntry>& drift, std::string_view other_name, std::size_t max_keys) {
    constexpr std::string_view local_name = "local";
    const auto width = std::max(local_name.size(), other_name.size());
    const auto shown = std::min(max_keys, drift.size());
    std::string out;
    for (std::size_t i = 0; i < shown; ++i) {
        out += drift[i].key + '\n';
        out += side_line(local_name, width, drift[i].local);
        out += side_line(other_name, width, drift[i].other);
    }
    if (shown < drift.size()) out += "... and " + std::to_string(drift.size() - shown) + " more differing keys\n";
    return out;
}

std::vector<std::string> drift_keys(const std::vector<DriftEntry>& drift, std::size_t max) {
    std::vector<std::string> names;
    for (const auto& entry : drift) {
        if (names.size() >= max) break;
        if (entry.rank == drift_rank::noise) continue;  // a reason names suspects, not what always differs
        const auto variable = variable_of(entry.key);
        std::string name = variable ? std::string(*variable) : entry.key;
        if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(std::move(name));
    }
    return names;
}

}  // namespace evgate
