#include "cli/command.hpp"

#include <iostream>
#include <sstream>

#include "cli/spellcheck.hpp"
#include "runs/ctest_claim.hpp"
#include "runs/search_paths.hpp"

namespace po = boost::program_options;

namespace evgate {
namespace {

// Everything `command` accepts, in the order its help lists them: --suite, its own, --help.
Options accepted_by(const Command& command) {
    Options accepted;
    if (command.loads != Loads::nothing)
        accepted.named.add_options()("suite", po::value<std::string>()->required(),
                                     "suite.json written by evidence_gate_add_suite()");
    if (command.options != nullptr) command.options(accepted);
    accepted.named.add_options()("help,h", "show this help");
    return accepted;
}

// An option name Boost does not know, with the closest one the command has: the error says
// what was probably meant, in Boost's words otherwise.
[[noreturn]] void rethrow_with_suggestion(const po::unknown_option& e, const po::options_description& named) {
    std::vector<std::string> names;
    for (const auto& option : named.options()) names.push_back(option->canonical_display_name(po::command_line_style::allow_long));
    const auto typed = e.get_option_name();
    const auto meant = closest_word(typed.substr(0, typed.find('=')), names);  // --sed=3 meant --seed
    if (!meant) throw;
    throw po::error(std::string(e.what()) + "; did you mean '" + *meant + "'?");
}

po::variables_map parse(const Args& args, const Options& accepted) {
    po::variables_map vm;
    const auto style = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
    try {
        po::store(po::command_line_parser(args).options(accepted.named).positional(accepted.operands).style(style).run(), vm);
    } catch (const po::unknown_option& e) {
        rethrow_with_suggestion(e, accepted.named);
    }
    return vm;
}

}  // namespace

Invocation::Invocation(po::variables_map options, Loads loads) : options_(std::move(options)) {
    if (loads == Loads::nothing) return;
    suite_ = load_suite_config(get<std::string>("suite"));
    export_search_paths(*suite_);           // before anything starts a process
    claim_for_ctest(suite_->evidence_dir);  // before anything in it is read or written
    if (loads == Loads::suite) return;
    receipt_ = load_receipt(suite_->receipt_file());
    if (loads == Loads::receipt) return;
    store_.emplace(*suite_);
    say_restored(*suite_, store_->restore_if_pending());
}

void say_restored(const SuiteConfig& suite, const InterruptedRestore& restored) {
    if (!restored) return;
    std::cout << "evgate: " << suite.name << ": restored fixture groups left dirty by an interrupted run (a step killed "
              << "by its CTest TIMEOUT, or by hand"
              << (restored.kept.empty() ? std::string() : "; what it left is kept in " + restored.kept.string()) << ")"
              << std::endl;
}

std::string command_help(const Command& command) {
    const auto accepted = accepted_by(command);
    std::ostringstream out;
    out << "usage: evgate " << command.name << " [options]" << (accepted.synopsis.empty() ? "" : " " + accepted.synopsis)
        << "\n"
        << command.name << ": " << command.summary << "\n\n"
        << accepted.named;
    return out.str();
}

int run_command(const Command& command, const Args& args) {
    const auto accepted = accepted_by(command);
    auto vm = parse(args, accepted);
    if (vm.count("help")) {  // before the check for required options: --help alone is enough
        std::cout << command_help(command);
        return 0;
    }
    po::notify(vm);
    Invocation invocation(std::move(vm), command.loads);
    return command.handler(invocation);
}

}  // namespace evgate
