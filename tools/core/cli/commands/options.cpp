#include "cli/commands/commands.hpp"

#include <iostream>

#include "runs/ctest_claim.hpp"

namespace po = boost::program_options;

namespace evgate {

std::optional<po::variables_map> parse(const char* name, const Args& args, po::options_description& options,
                                       const po::positional_options_description& positional) {
    options.add_options()("help,h", "show this help");
    po::variables_map vm;
    const auto style = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
    po::store(po::command_line_parser(args).options(options).positional(positional).style(style).run(), vm);
    if (vm.count("help")) {
        std::cout << "usage: evgate " << name << " [options]\n" << options;
        return std::nullopt;
    }
    po::notify(vm);
    return vm;
}

po::options_description suite_options(const char* caption) {
    po::options_description options(caption);
    options.add_options()("suite", po::value<std::string>()->required(), "suite.json written by evidence_gate_add_suite()");
    return options;
}

SuiteConfig suite_of(const po::variables_map& vm) {
    auto suite = load_suite_config(vm["suite"].as<std::string>());
    claim_for_ctest(suite.evidence_dir);  // before anything in it is read or written
    return suite;
}

}  // namespace evgate
