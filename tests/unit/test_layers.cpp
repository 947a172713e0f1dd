// The folders of tools/core include one another one way only, in the order their READMEs give:
// io at the bottom, then inputs, fixtures, runs, machines, verdicts, reports and cli at the top. A
// folder may include its own headers and those of folders below it; an include of a folder above
// is a back edge, and fails here: there are no exceptions.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kLayers{"io", "inputs", "fixtures", "runs", "machines", "verdicts", "reports", "cli"};

std::size_t layer_of(const std::string& folder) {
    return static_cast<std::size_t>(std::find(kLayers.begin(), kLayers.end(), folder) - kLayers.begin());
}

}  // namespace

TEST_CASE("the folders of tools/core include one another one way, in their READMEs' order", "[layers]") {
    const fs::path core = fs::path(EVIDENCE_GATE_SOURCE_DIR) / "tools/core";
    for (const auto& layer : kLayers) CHECK(fs::exists(core / layer / "README.md"));
    const std::regex include(R"re(^\s*#\s*include\s+"(([a-z_]+)/[^"]+)")re");
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
            FAIL_CHECK(name << " includes " << m[1] << ": " << folder << "/ is below " << m[2].str()
                            << "/ (tests/unit/test_layers.cpp); move the declaration it needs down");
        }
    }
    CHECK(includes > 300);
}
