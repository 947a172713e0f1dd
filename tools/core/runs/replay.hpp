// Reproduction: the one shell command a blocking row carries, and the `evgate replay` it
// runs — an exact order (or a seed's order up to a test), repeated, in a given environment,
// with fixture groups restored like any other run.
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "inputs/suite_config.hpp"

namespace evgate {

struct ReplayRequest {
    std::vector<std::string> tests;     // exactly these, in this order, or:
    std::string through;                // the seed's order up to and including this test
    std::optional<std::uint64_t> seed;  // the order's seed (it also reseeds `random` per test)
    int repeat = 1;
    std::vector<std::string> environment;  // VAR=value on top of the suite's
};

// `evgate replay ...` as one line runnable from any directory.
std::string replay_command(const std::string& evgate, const std::filesystem::path& suite_file, const ReplayRequest& request);

// Runs the request; prints pytest's output and what it saw. Exit status 1 when the failure
// reproduced (the last test failed or gave no result, or a test changed a fixture group it
// did not declare), 0 when it did not.
int replay(const SuiteConfig& suite, const ReplayRequest& request, std::ostream& out);

// This executable's path, for commands that must run from anywhere.
std::string self_path();

}  // namespace evgate
