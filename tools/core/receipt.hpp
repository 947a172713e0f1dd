// The workspace receipt: what pytest really collected, from where, with which config and
// conftest files — taken before any run, and what every run is checked against afterwards.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "shuffle.hpp"
#include "suite_config.hpp"

namespace evgate {

struct EnvSensitive {
    std::string until;
    std::string owner;
    std::string reason;
};

struct ReceiptTest {
    std::string id;
    bool serial = false;
    std::vector<std::string> writes;
    std::optional<EnvSensitive> env_sensitive;
};

struct Receipt {
    std::string id;  // binds the runs of one ctest invocation to this receipt
    std::string rootdir;
    std::optional<std::string> configfile;
    std::vector<std::string> conftests;
    std::vector<ReceiptTest> tests;
    std::vector<std::string> errors;  // collection errors, "nodeid: message"
    int exitstatus = 0;
    std::optional<std::string> expected_configfile;  // the one at or above ROOT: the project's
    std::vector<std::string> stray_configs;          // below ROOT, relative to it
    std::vector<std::string> thinning;               // addopts that thin the run
    std::string git_head;                            // "" outside a git work tree
    std::string shard;                               // "k/n" for a shard's receipt, else ""
    std::string suite;

    std::vector<CollectedTest> collected() const;
};

// Collects with the suite's own command line and environment; writes receipt.json.
Receipt take_receipt(const SuiteConfig& suite);
Receipt load_receipt(const std::filesystem::path& file);

// The node ids pytest collects now, with the suite's command line and environment.
std::vector<std::string> collected_ids(const SuiteConfig& suite);

// Two config paths name the same file (or are both absent).
bool same_config(const std::optional<std::string>& a, const std::optional<std::string>& b);

// Why the receipt cannot be trusted at all (empty when it can); the receipt step fails then.
std::vector<std::string> receipt_problems(const SuiteConfig& suite, const Receipt& receipt);

}  // namespace evgate
