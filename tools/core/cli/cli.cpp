#include "cli/cli.hpp"

#include <algorithm>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands/commands.hpp"
#include "cli/spellcheck.hpp"
#include "io/error.hpp"
#include "io/process.hpp"

namespace po = boost::program_options;

namespace evgate {
namespace {

// Every command, in the order `evgate --help` lists them: a suite's steps in the order ctest
// runs them, then the rest. A new command is one entry here and its handler (and options, if
// it takes any) in commands/<family>.cpp, declared in commands/commands.hpp.
const Command kCommands[] = {
    // name       loads                 options             handler          summary
    {"check", Loads::suite, nullptr, cmd_check, "validate the suite's fixture manifest, quarantine and baseline"},
    {"fixtures", Loads::suite, nullptr, cmd_fixtures, "complete a pending restore, then snapshot the fixture groups and source tree"},
    {"manifest", Loads::suite, nullptr, cmd_manifest, "record the environment the tests run in"},
    {"receipt", Loads::suite, nullptr, cmd_receipt, "collect the suite and record what pytest really used"},
    {"run", Loads::fixture_store, seed_option, cmd_run, "run the suite in one seed's order (seed 0: collection order)"},
    {"perturbed", Loads::receipt, nullptr, cmd_perturbed, "run the collection order in a deliberately different environment"},
    {"alone", Loads::fixture_store, nullptr, cmd_alone, "run every test alone, first after the collection (a fork each)"},
    {"rerun", Loads::fixture_store, rerun_options, cmd_rerun, "rerun orders to tell order dependence from nondeterminism"},
    {"localise", Loads::fixture_store, nullptr, cmd_localise, "name the partner of every order-dependent test, within a budget of runs"},
    {"replay", Loads::suite, replay_options, cmd_replay, "replay an order and say whether the failure reproduced"},
    {"ledger", Loads::suite, ledger_options, cmd_ledger, "build the ledger, reports and per-test verdicts (exit 0 when built)"},
    {"release", Loads::suite, nullptr, cmd_release, "stop the collected session the receipt left serving forks"},
    {"gate", Loads::suite, gate_options, cmd_gate, "build the ledger (or read it), print the gate; exit 1 when a row blocks"},
    {"verdict", Loads::suite, verdict_options, cmd_verdict, "print a test's verdict, as its CTest entry does (exit 1: none)"},
    {"discover", Loads::suite, discover_options, cmd_discover, "write one CTest entry per test (collects only when something changed)"},
    {"verdicts", Loads::nothing, nullptr, cmd_verdicts, "print the verdict table as JSON (every verdict's rule, gate, colour and meaning)"},
    {"history", Loads::nothing, history_options, cmd_history, "rank tests by verdict flips over many runs' evidence (exit 1: none read)"},
    {"baseline", Loads::suite, baseline_options, cmd_baseline, "write the collection baseline from a fresh collection"},
    {"restore", Loads::suite, restore_options, cmd_restore, "restore the fixture groups to pristine"},
    {"order", Loads::receipt, seed_option, cmd_order, "print a seed's test order, one node id a line (JSON strings)"},
    {"diff", Loads::nothing, diff_options, cmd_diff, "compare two environment manifests, most suspicious first (exit 1: differ)"},
};

void usage(std::ostream& out) {
    out << "usage: evgate <command> [options]   (evgate <command> --help for its options)\n\ncommands:\n";
    std::size_t width = 0;
    for (const auto& c : kCommands) width = std::max(width, std::strlen(c.name) + 1);
    for (const auto& c : kCommands) out << "  " << c.name << std::string(width - std::strlen(c.name), ' ') << c.summary << '\n';
}

const Command* find_command(const std::string& name) {
    for (const auto& command : kCommands)
        if (name == command.name) return &command;
    return nullptr;
}

int unknown_command(const std::string& name) {
    std::vector<std::string> names;
    for (const auto& command : kCommands) names.emplace_back(command.name);
    std::cerr << "evgate: error: unknown command " << quote(name);
    if (const auto meant = closest_word(name, names)) {
        std::cerr << "; did you mean " << quote(*meant) << "?\n";
    } else {
        std::cerr << "\n";
        usage(std::cerr);
    }
    return 2;
}

}  // namespace

gsl::span<const Command> commands() { return kCommands; }

int run_cli(int argc, char** argv) {
    const Args words(argv + 1, argv + argc);
    if (words.empty() || words[0] == "--help" || words[0] == "-h" || words[0] == "help") {
        usage(words.empty() ? std::cerr : std::cout);
        return words.empty() ? 2 : 0;
    }
    const Command* command = find_command(words[0]);
    if (command == nullptr) return unknown_command(words[0]);
    try {
        install_stop_handlers();
        const int status = run_command(*command, Args(words.begin() + 1, words.end()));
        // Asked to stop while no child ran (a snapshot, a restore): that work is done, but
        // whoever asked still hears that evgate stopped.
        throw_if_stopped();
        return status;
    } catch (const Stopped& e) {
        // What was owed is done (processes killed, groups restored): the shell's convention.
        std::cerr << "evgate: " << command->name << ": " << e.what() << '\n';
        return 128 + e.signal();
    } catch (const po::error& e) {
        std::cerr << "evgate: error: " << command->name << ": " << e.what() << '\n';
        return 2;
    } catch (const Error& e) {
        std::cerr << "evgate: error: " << e.what() << '\n';
        return 2;
    } catch (const std::exception& e) {
        std::cerr << "evgate: internal error: " << command->name << ": " << e.what() << '\n';
        return 3;
    }
}

}  // namespace evgate
