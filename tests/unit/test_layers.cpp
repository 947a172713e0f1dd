// The folders of tools/core include one another one way only, in the order their READMEs give:
// io at the bottom, then inputs, fixtures, runs, verdicts, reports and cli at the top. A folder
// may include its own headers and those of folders below it; an include of a folder above is a
// back edge, and fails here unless it is one of the few known ones listed below with its reason.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <utility>

namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kLayers{"io", "inputs", "fixtures", "runs", "verdicts", "reports", "cli"};

// Back edges not broken yet: (including file, included header). Each goes when its reason does.
const std::set<std::pair<std::string, std::string>> kKnownBackEdges{
    // Shards and runner bundles are other machines' evidence directories: importing one reads
    // and writes runs' receipt, plans and records, and compares manifests (verdicts/manifest_diff).
    // They belong with the runs they import (or a folder above runs), not in inputs/.
    {"inputs/shards.hpp", "runs/receipt.hpp"},
    {"inputs/shards.hpp", "verdicts/manifest_diff.hpp"},
    {"inputs/shards.cpp", "runs/run_records.hpp"},
    {"inputs/shards.cpp", "runs/receipt_sources.hpp"},
    {"inputs/shards.cpp", "runs/run_plan.hpp"},
    {"inputs/runner_bundles.hpp", "runs/receipt.hpp"},
    {"inputs/runner_bundles.hpp", "runs/run_plan.hpp"},
    {"inputs/runner_bundles.hpp", "verdicts/manifest_diff.hpp"},
    // Which runs to do next (fresh processes, the partner search) depends on what the runs so
    // far show, and that is the verdicts' triage (runs/README.md says so): breaking this needs
    // the CLI to hand the triage in.
    {"runs/confirm_fresh.cpp", "verdicts/run_matrix.hpp"},
    {"runs/culprit_runs.cpp", "verdicts/run_matrix.hpp"},
};

std::size_t layer_of(const std::string& folder) {
    return static_cast<std::size_t>(std::find(kLayers.begin(), kLayers.end(), folder) - kLayers.begin());
}

}  // namespace

TEST_CASE("the folders of tools/core include one another one way, in their READMEs' order", "[layers]") {
    const fs::path core = fs::path(EVIDENCE_GATE_SOURCE_DIR) / "tools/core";
    for (const auto& layer : kLayers) CHECK(fs::exists(core / layer / "README.md"));
    const std::regex include(R"re(^\s*#\s*include\s+"(([a-z_]+)/[^"]+)")re");
    std::set<std::pair<std::string, std::string>> seen;
    std::size_t includes = 0;
    for (const auto& entry : fs::recursive_directory_iterator(core)) {
        const auto ext = entry.path().extension();
        if (ext != ".cpp" && ext != ".hpp") continue;
        const auto name = entry.path().lexically_relative(core).generic_string();
        const auto folder = name.substr(0, name.find('/'));
        INFO(name);
        REQUIRE(layer_of(folder) < kLayers.size());  // a new folder gets its place in kLayers
        std::ifstream in(entry.path());
        std::string line;
        while (std::getline(in, line)) {
            std::smatch m;
            if (!std::regex_search(line, m, include) || layer_of(m[2]) >= kLayers.size()) continue;
            ++includes;
            if (layer_of(m[2]) <= layer_of(folder)) continue;
            if (kKnownBackEdges.count({name, m[1]})) {
                seen.insert({name, m[1]});
                continue;
            }
            FAIL_CHECK(name << " includes " << m[1] << ": " << folder << "/ is below " << m[2].str()
                            << "/ (tests/unit/test_layers.cpp); move the declaration it needs down");
        }
    }
    CHECK(includes > 300);
    for (const auto& edge : kKnownBackEdges) {
        INFO(edge.first << " no longer includes " << edge.second << ": take it off kKnownBackEdges");
        CHECK(seen.count(edge));
    }
}
