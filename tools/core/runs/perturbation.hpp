// The perturbed run: the suite once more on this machine in a deliberately different
// environment — a cheap second machine (seed 000's portability ledger).
#pragma once

#include <string>
#include <vector>

#include "inputs/suite_config.hpp"

namespace evgate {

struct Perturbation {
    std::vector<std::string> environment;  // VAR=value that differ from the local runs
    std::vector<int> cpus;                 // a restricted CPU set, where there is more than one
    std::vector<std::string> changes;      // one phrase per change, for the log
};

// A timezone with a half-hour offset far from the local one, another locale, another
// PYTHONHASHSEED, one CPU (its HOME and TMPDIR are its own, as every run's: runs/sandbox.hpp).
// Variables the suite pins with ENVIRONMENT are left as the user pinned them.
Perturbation choose_perturbation(const SuiteConfig& suite);

}  // namespace evgate
