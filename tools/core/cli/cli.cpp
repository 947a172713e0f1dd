#include "cli/cli.hpp"

#include <iostream>
#include <string>
#include <vector>

#include "cli/commands/commands.hpp"
#include "io/error.hpp"
#include "io/process.hpp"

namespace po = boost::program_options;

namespace evgate {
namespace {

struct Command {
    const char* name;
    const char* summary;
    int (*handler)(const Args& args);
};

const Command kCommands[] = {
    {"check", "validate the suite's fixture manifest, quarantine and baseline", cmd_check},
    {"fixtures", "snapshot the fixture groups (after completing a pending restore)", cmd_fixtures},
    {"manifest", "record the environment manifest", cmd_manifest},
    {"receipt", "collect and record the workspace receipt", cmd_receipt},
    {"run", "run the suite in one seed's order", cmd_run},
    {"perturbed", "run the suite in a deliberately different environment", cmd_perturbed},
    {"rerun", "rerun orders to tell order dependence from nondeterminism", cmd_rerun},
    {"localise", "name the partner of every order-dependent test", cmd_localise},
    {"replay", "replay an order and say whether the failure reproduced", cmd_replay},
    {"ledger", "build the ledger, reports and per-test verdicts", cmd_ledger},
    {"gate", "print the gate and fail when a row blocks", cmd_gate},
    {"verdict", "print a test's verdict, as its CTest entry does", cmd_verdict},
    {"discover", "write one CTest entry per test", cmd_discover},
    {"verdicts", "print the verdict table as JSON", cmd_verdicts},
    {"history", "rank tests by verdict flips over many runs' evidence", cmd_history},
    {"baseline", "write the collection baseline", cmd_baseline},
    {"restore", "restore the fixture groups to pristine", cmd_restore},
    {"order", "print a seed's test order", cmd_order},
    {"diff", "compare two environment manifests, most suspicious first", cmd_diff},
};

void usage(std::ostream& out) {
    out << "usage: evgate <command> [options]   (evgate <command> --help for its options)\n\ncommands:\n";
    for (const auto& c : kCommands) out << "  " << c.name << std::string(10 - std::string(c.name).size(), ' ') << c.summary << '\n';
}

}  // namespace

int run_cli(int argc, char** argv) {
    const Args words(argv + 1, argv + argc);
    if (words.empty() || words[0] == "--help" || words[0] == "-h" || words[0] == "help") {
        usage(words.empty() ? std::cerr : std::cout);
        return words.empty() ? 2 : 0;
    }
    for (const auto& command : kCommands) {
        if (words[0] != command.name) continue;
        try {
            install_stop_handlers();
            const int status = command.handler(Args(words.begin() + 1, words.end()));
            // Asked to stop while no child ran (a snapshot, a restore): that work is done, but
            // whoever asked still hears that evgate stopped.
            throw_if_stopped();
            return status;
        } catch (const Stopped& e) {
            // What was owed is done (processes killed, groups restored): the shell's convention.
            std::cerr << "evgate: " << command.name << ": " << e.what() << '\n';
            return 128 + e.signal();
        } catch (const po::error& e) {
            std::cerr << "evgate: error: " << command.name << ": " << e.what() << '\n';
            return 2;
        } catch (const Error& e) {
            std::cerr << "evgate: error: " << e.what() << '\n';
            return 2;
        } catch (const std::exception& e) {
            std::cerr << "evgate: internal error: " << command.name << ": " << e.what() << '\n';
            return 3;
        }
    }
    std::cerr << "evgate: error: unknown command " << quote(words[0]) << "\n";
    usage(std::cerr);
    return 2;
}

}  // namespace evgate
