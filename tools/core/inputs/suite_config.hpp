// The suite as evidence_gate_add_suite() configured it: suite.json in the evidence directory.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "inputs/evidence_layout.hpp"

namespace evgate {

struct SuiteConfig {
    std::string name;
    std::filesystem::path root;          // pytest's rootdir and cwd
    std::filesystem::path evidence_dir;  // everything we write goes below it
    std::filesystem::path plugin_dir;    // holds evidence_gate_pytest.py
    std::string python;
    std::vector<std::string> tests;                 // pytest arguments, relative to root
    std::vector<std::string> pytest_args;           // extra pytest arguments
    std::vector<std::string> environment;           // VAR=value for every run
    std::vector<std::string> python_path_prepend;   // PYTHON_PATH_PREPEND: after the plugin's directory
    std::vector<std::string> library_path_prepend;  // LIBRARY_PATH_PREPEND: before LD_LIBRARY_PATH
    struct Dependency {
        std::string target;          // a DEPENDS target
        std::filesystem::path file;  // what it builds: collection depends on it
    };
    std::vector<Dependency> depends;
    std::optional<std::filesystem::path> fixtures;
    std::optional<std::filesystem::path> baseline;
    std::optional<std::filesystem::path> quarantine;
    std::vector<std::string> runner_bundles;
    int seeds = 8;
    int reruns = 2;
    int timeout_seconds = 600;
    int test_timeout_seconds = 120;  // TEST_TIMEOUT: the bound on one test; 0: none
    std::string isolation = "fork";  // ISOLATION: "fork" (forks of one collected session where safe) or "process"
    std::string orders = "mixed";    // ORDERS: which family each seed's order is (runs/shuffle.hpp)
    std::string alone = "auto";      // ALONE: the alone pass, "auto" (small suites), "on" or "off"
    std::int64_t baseline_tolerance = 0;
    int localise_runs = 30;  // pytest runs the partner search may spend per order-dependent test
    bool perturb = true;
    std::filesystem::path source;  // suite.json itself, for messages

    // Paths in the evidence directory (evidence_layout.hpp says what each holds).
    std::filesystem::path runs_dir() const { return evidence_dir / evidence::kRuns; }
    std::filesystem::path receipt_file() const { return evidence_dir / evidence::kReceipt; }
    std::filesystem::path manifest_file() const { return evidence_dir / evidence::kManifest; }
    std::filesystem::path perturbed_manifest_file() const { return evidence_dir / evidence::kPerturbedManifest; }
    std::filesystem::path ledger_file() const { return evidence_dir / evidence::kLedger; }
    std::filesystem::path fixtures_dir() const { return evidence_dir / evidence::kFixtures; }
};

SuiteConfig load_suite_config(const std::filesystem::path& file);

}  // namespace evgate
