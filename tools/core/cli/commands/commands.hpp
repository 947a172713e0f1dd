// The handlers of the command table (cli.cpp) and the options of those that take any, one file
// per family: inputs.cpp (the user's files), runs.cpp (what runs pytest), verdicts.cpp (what
// judges), history.cpp (what many runs' evidence says together). A handler finds its options
// and what its entry loads in its Invocation; it writes to std::cout and throws its errors.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "cli/command.hpp"
#include "inputs/baseline.hpp"
#include "inputs/quarantine.hpp"
#include "inputs/suite_config.hpp"
#include "runs/receipt.hpp"
#include "verdicts/gate.hpp"

namespace evgate {

// The suite's quarantine and baseline (none when not configured or not written yet).
std::vector<QuarantineEntry> load_quarantine(const SuiteConfig& suite);
std::optional<Baseline> load_baseline(const SuiteConfig& suite);
// Every user input file parses; throws the first error, naming file, line and value.
std::size_t validate_inputs(const SuiteConfig& suite);

// What the gate judges on, before the runs are added; and the ledger written and printed.
GateInput gate_input(const SuiteConfig& suite, Receipt receipt);
int write_and_print(const SuiteConfig& suite, const std::vector<LedgerRow>& rows);

// inputs.cpp
void baseline_options(Options& accepted);
void restore_options(Options& accepted);
void diff_options(Options& accepted);
int cmd_check(Invocation& in);
int cmd_baseline(Invocation& in);
int cmd_restore(Invocation& in);
int cmd_order(Invocation& in);
int cmd_diff(Invocation& in);

// runs.cpp
void seed_option(Options& accepted);  // run, order
void rerun_options(Options& accepted);
void replay_options(Options& accepted);
int cmd_fixtures(Invocation& in);
int cmd_manifest(Invocation& in);
int cmd_receipt(Invocation& in);
int cmd_run(Invocation& in);
int cmd_perturbed(Invocation& in);
int cmd_rerun(Invocation& in);
int cmd_alone(Invocation& in);
int cmd_localise(Invocation& in);
int cmd_release(Invocation& in);
int cmd_replay(Invocation& in);

// verdicts.cpp
void ledger_options(Options& accepted);
void gate_options(Options& accepted);
void verdict_options(Options& accepted);
void discover_options(Options& accepted);
int cmd_ledger(Invocation& in);
int cmd_gate(Invocation& in);
int cmd_verdict(Invocation& in);
int cmd_discover(Invocation& in);
int cmd_verdicts(Invocation& in);

// history.cpp
void history_options(Options& accepted);
int cmd_history(Invocation& in);

}  // namespace evgate
