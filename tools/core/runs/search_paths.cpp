#include "runs/search_paths.hpp"

#include <cstdlib>

namespace evgate {

std::string prepended(const std::vector<std::string>& paths, const char* current) {
    std::string value;
    for (const auto& path : paths) value += (value.empty() ? "" : ":") + path;
    if (current != nullptr && *current != '\0') value += (value.empty() ? "" : ":") + std::string(current);
    return value;
}

void export_search_paths(const SuiteConfig& suite) {
    const std::pair<const char*, const std::vector<std::string>*> variables[] = {
        {"PYTHONPATH", &suite.python_path_prepend}, {"LD_LIBRARY_PATH", &suite.library_path_prepend}};
    for (const auto& [variable, paths] : variables)
        if (!paths->empty()) ::setenv(variable, prepended(*paths, std::getenv(variable)).c_str(), 1);
}

}  // namespace evgate
