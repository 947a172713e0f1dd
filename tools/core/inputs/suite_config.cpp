#include "inputs/suite_config.hpp"

#include "io/error.hpp"
#include "io/json_io.hpp"

namespace evgate {
namespace {

int positive_int(const rapidjson::Value& doc, const char* key, int fallback, const std::string& source) {
    const auto* value = member(doc, key);
    if (value == nullptr) return fallback;
    if (!value->IsInt() || value->GetInt() < 0)
        throw InputError(source, 0, std::string("'") + key + "' is not a non-negative integer");
    return value->GetInt();
}

std::optional<std::filesystem::path> optional_path(const rapidjson::Value& doc, const char* key,
                                                   const std::string& source) {
    auto text = optional_string(doc, key, source);
    if (!text || text->empty()) return std::nullopt;
    return std::filesystem::path(*text);
}

// DEPENDS: [{"target": name, "file": path}], the file as generation evaluated $<TARGET_FILE>.
std::vector<SuiteConfig::Dependency> dependencies(const rapidjson::Value& doc, const std::string& source) {
    std::vector<SuiteConfig::Dependency> depends;
    const auto* list = member(doc, "depends");
    if (list == nullptr || list->IsNull()) return depends;
    if (!list->IsArray()) throw InputError(source, 0, "'depends' is not a list");
    for (const auto& item : list->GetArray()) {
        if (!item.IsObject()) throw InputError(source, 0, "an entry of 'depends' is not an object");
        depends.push_back({string_member(item, "target", source), string_member(item, "file", source)});
    }
    return depends;
}

}  // namespace

SuiteConfig load_suite_config(const std::filesystem::path& file) {
    const auto doc = read_json_file(file);
    const std::string source = file.string();
    if (!doc.IsObject()) throw InputError(source, 0, "not a JSON object");
    SuiteConfig config;
    config.source = file;
    config.name = string_member(doc, "name", source);
    // By their real paths, once (the module writes them so): every path below them is compared.
    config.root = std::filesystem::weakly_canonical(string_member(doc, "root", source));
    config.evidence_dir = std::filesystem::weakly_canonical(string_member(doc, "evidence_dir", source));
    config.plugin_dir = string_member(doc, "plugin_dir", source);
    config.python = string_member(doc, "python", source);
    config.tests = string_array(doc, "tests", source);
    config.pytest_args = string_array(doc, "pytest_args", source);
    config.environment = string_array(doc, "environment", source);
    config.python_path_prepend = string_array(doc, "python_path_prepend", source);
    config.library_path_prepend = string_array(doc, "library_path_prepend", source);
    config.depends = dependencies(doc, source);
    config.runner_bundles = string_array(doc, "runner_bundles", source);
    config.fixtures = optional_path(doc, "fixtures", source);
    config.baseline = optional_path(doc, "baseline", source);
    config.quarantine = optional_path(doc, "quarantine", source);
    config.seeds = positive_int(doc, "seeds", config.seeds, source);
    config.reruns = positive_int(doc, "reruns", config.reruns, source);
    config.timeout_seconds = positive_int(doc, "timeout", config.timeout_seconds, source);
    config.test_timeout_seconds = positive_int(doc, "test_timeout", config.test_timeout_seconds, source);
    if (const auto isolation = optional_string(doc, "isolation", source)) {
        if (*isolation != "fork" && *isolation != "process")
            throw InputError(source, 0, "'isolation' is neither \"fork\" nor \"process\": " + quote(*isolation));
        config.isolation = *isolation;
    }
    if (const auto orders = optional_string(doc, "orders", source)) {
        if (*orders != "mixed" && *orders != "module" && *orders != "global")
            throw InputError(source, 0, "'orders' is none of \"mixed\", \"module\", \"global\": " + quote(*orders));
        config.orders = *orders;
    }
    if (const auto alone = optional_string(doc, "alone", source)) {
        if (*alone != "auto" && *alone != "on" && *alone != "off")
            throw InputError(source, 0, "'alone' is none of \"auto\", \"on\", \"off\": " + quote(*alone));
        config.alone = *alone;
    }
    config.baseline_tolerance = positive_int(doc, "baseline_tolerance", 0, source);
    config.localise_runs = positive_int(doc, "localise", config.localise_runs, source);
    if (const auto* perturb = member(doc, "perturb"); perturb != nullptr) {
        if (!perturb->IsBool()) throw InputError(source, 0, "'perturb' is not true or false");
        config.perturb = perturb->GetBool();
    }
    return config;
}

}  // namespace evgate
