#include "inputs/shard_spec.hpp"

#include <algorithm>
#include <cstdlib>
#include <regex>

#include "io/error.hpp"

namespace fs = std::filesystem;

namespace evgate {
namespace {

// The paths in a `;`-separated list variable.
std::vector<fs::path> path_list(const char* variable) {
    std::vector<fs::path> paths;
    const char* value = std::getenv(variable);
    if (value == nullptr) return paths;
    const std::string list = value;
    for (std::size_t start = 0; start <= list.size();) {
        const auto end = std::min(list.find(';', start), list.size());
        if (end > start) paths.emplace_back(list.substr(start, end - start));
        start = end + 1;
    }
    return paths;
}

}  // namespace

ShardSpec parse_shard_spec(const std::string& text, const std::string& variable) {
    static const std::regex form(R"(([0-9]{1,6})/([0-9]{1,6}))");
    std::smatch m;
    if (std::regex_match(text, m, form)) {
        ShardSpec spec{std::stoi(m[1]), std::stoi(m[2])};
        if (spec.index >= 1 && spec.index <= spec.count) return spec;
    }
    throw Error(variable + " must be k/n with 1 <= k <= n, not " + quote(text));
}

std::optional<ShardSpec> this_shard() {
    const char* value = std::getenv("EVIDENCE_GATE_SHARD");
    if (value == nullptr || *value == '\0') return std::nullopt;
    return parse_shard_spec(value, "EVIDENCE_GATE_SHARD");
}

std::vector<fs::path> merged_shards() { return path_list("EVIDENCE_GATE_SHARDS"); }

std::vector<fs::path> handed_evidence() {
    std::vector<fs::path> paths;
    for (const char* variable : {"EVIDENCE_GATE_SHARDS", "EVIDENCE_GATE_RUNNER_BUNDLES", "EVIDENCE_GATE_HISTORY", "EVIDENCE_GATE_COMPARE"}) {
        auto more = path_list(variable);
        paths.insert(paths.end(), more.begin(), more.end());
    }
    return paths;
}

bool runs_here(const ShardSpec& shard, const RunId& run, std::uint64_t seed) {
    if (run == RunId::perturbed()) return shard.index == 1;
    return static_cast<int>(seed % static_cast<std::uint64_t>(shard.count)) + 1 == shard.index;
}

}  // namespace evgate
