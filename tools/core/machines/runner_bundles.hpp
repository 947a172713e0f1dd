// Runner columns: results from other machines, handed over as evidence directories this
// product wrote there, or as JUnit XML from any CI's plain pytest run.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "machines/manifest_diff.hpp"
#include "runs/receipt.hpp"
#include "runs/run_plan.hpp"

namespace evgate {

struct RunnerBundles {
    std::vector<LoadedRun> runs;                                // column runner: "<host>:seed.0" ... or "<host>" for JUnit
    std::vector<std::string> names;                             // one per runner
    std::map<std::string, std::vector<DriftEntry>> drift;       // runner -> manifest drift from local
    std::vector<std::pair<std::string, std::string>> left_out;  // bundle path -> why it was left out
    std::map<std::string, std::vector<std::string>> unmapped;   // runner -> JUnit cases matching no test
};

// `paths`: the suite's RUNNER_BUNDLES and EVIDENCE_GATE_RUNNER_BUNDLES (a ';' list).
// Nothing wrong with one bundle stops the others: it is left out, and the gate says so.
RunnerBundles load_runner_bundles(const std::vector<std::string>& paths, const Receipt& receipt,
                                  const std::filesystem::path& local_manifest);

// RUNNER_BUNDLES plus the environment's EVIDENCE_GATE_RUNNER_BUNDLES.
std::vector<std::string> bundle_paths(const std::vector<std::string>& configured);

}  // namespace evgate
