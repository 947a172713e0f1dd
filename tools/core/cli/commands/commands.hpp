// The evgate commands, each parsing its own options: one file per family —
// inputs.cpp (the user's files), runs.cpp (what runs pytest), verdicts.cpp (what judges),
// history.cpp (what many runs' evidence says together).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "inputs/baseline.hpp"
#include "verdicts/gate.hpp"
#include "inputs/quarantine.hpp"
#include "runs/receipt.hpp"
#include "inputs/suite_config.hpp"

namespace evgate {

using Args = std::vector<std::string>;

// Parses `args` strictly (no guessing of abbreviated option names); nullopt after --help.
// Arguments without an option name are an error unless `positional` takes them.
std::optional<boost::program_options::variables_map> parse(const char* name, const Args& args,
                                                           boost::program_options::options_description& options,
                                                           const boost::program_options::positional_options_description& positional = {});
// Options with the --suite every suite command takes, and the suite it names. A step that ctest
// runs claims the suite's evidence directory for its ctest first (ctest_claim.hpp).
boost::program_options::options_description suite_options(const char* caption);
SuiteConfig suite_of(const boost::program_options::variables_map& vm);

// The suite's quarantine and baseline (none when not configured or not written yet).
std::vector<QuarantineEntry> load_quarantine(const SuiteConfig& suite);
std::optional<Baseline> load_baseline(const SuiteConfig& suite);
// Every user input file parses; throws the first error, naming file, line and value.
std::size_t validate_inputs(const SuiteConfig& suite);

// What the gate judges on, before the runs are added; and the ledger written and printed.
GateInput gate_input(const SuiteConfig& suite, Receipt receipt);
int write_and_print(const SuiteConfig& suite, const std::vector<LedgerRow>& rows, std::size_t runs);

int cmd_check(const Args& args);
int cmd_baseline(const Args& args);
int cmd_restore(const Args& args);
int cmd_order(const Args& args);
int cmd_diff(const Args& args);

int cmd_fixtures(const Args& args);
int cmd_manifest(const Args& args);
int cmd_receipt(const Args& args);
int cmd_run(const Args& args);
int cmd_perturbed(const Args& args);
int cmd_rerun(const Args& args);
int cmd_localise(const Args& args);
int cmd_replay(const Args& args);

int cmd_ledger(const Args& args);
int cmd_gate(const Args& args);
int cmd_verdict(const Args& args);
int cmd_discover(const Args& args);
int cmd_verdicts(const Args& args);

int cmd_history(const Args& args);

}  // namespace evgate
