// Commands about the user's input files: check, baseline, restore, order, diff.
#include "cli/commands/commands.hpp"

#include <cstdlib>
#include <fstream>
#include <iostream>

#include "inputs/evidence_layout.hpp"
#include "io/error.hpp"
#include "fixtures/fixture_store.hpp"
#include "io/atomic_file.hpp"
#include "io/json_io.hpp"
#include "verdicts/manifest_diff.hpp"
#include "runs/receipt.hpp"
#include "runs/shuffle.hpp"

namespace fs = std::filesystem;

namespace po = boost::program_options;

namespace evgate {

std::vector<QuarantineEntry> load_quarantine(const SuiteConfig& suite) {
    if (!suite.quarantine) return {};
    std::ifstream in(*suite.quarantine);
    if (!in) throw InputError(suite.quarantine->string(), 0, "cannot read the quarantine file");
    return parse_quarantine(in, suite.quarantine->string());
}

// A baseline that is configured but not written yet is not an input error: the gate blocks
// on it with the command that writes it.
std::optional<Baseline> load_baseline(const SuiteConfig& suite) {
    if (!suite.baseline || !fs::exists(*suite.baseline)) return std::nullopt;
    return parse_baseline(read_file(*suite.baseline), suite.baseline->string());
}

// Every user input file parses; throws the first error, naming file, line and value.
std::size_t validate_inputs(const SuiteConfig& suite) {
    const FixtureStore store(suite);
    load_quarantine(suite);
    load_baseline(suite);
    return store.groups().size();
}

int cmd_check(const Args& args) {
    auto options = suite_options("check: validate the suite's input files");
    auto vm = parse("check", args, options);
    if (!vm) return 0;
    const auto suite = suite_of(*vm);
    const auto groups = validate_inputs(suite);
    std::cout << "evgate: " << suite.name << ": inputs are valid (" << groups << " fixture groups)\n";
    return 0;
}

int cmd_baseline(const Args& args) {
    auto options = suite_options("baseline: write the collection baseline from a fresh collection");
    options.add_options()("output", po::value<std::string>(), "where to write it (default: the suite's BASELINE)")(
        "when-requested", "write only when EVIDENCE_GATE_UPDATE_BASELINE=1 is set (else exit 77: skipped)");
    auto vm = parse("baseline", args, options);
    if (!vm) return 0;
    const auto suite = suite_of(*vm);
    const char* requested = std::getenv("EVIDENCE_GATE_UPDATE_BASELINE");
    if (vm->count("when-requested") && (requested == nullptr || std::string(requested) != "1")) {
        std::cout << "evgate: " << suite.name << ": not writing the baseline; run EVIDENCE_GATE_UPDATE_BASELINE=1 ctest -R '"
                  << suite.name << "\\.baseline-update' to write it\n";
        return 77;
    }
    fs::path output = vm->count("output") ? fs::path((*vm)["output"].as<std::string>())
                                          : suite.baseline.value_or(suite.evidence_dir / evidence::kBaseline);
    const auto receipt = take_receipt(suite);
    if (!receipt.errors.empty()) throw Error("collection has errors; fix them before writing a baseline: " + receipt.errors.front());
    Baseline baseline;
    baseline.collected = static_cast<std::int64_t>(receipt.tests.size());
    baseline.lists_tests = true;
    for (const auto& t : receipt.tests) baseline.tests.push_back(t.id);
    write_file_atomic(output, baseline_json(baseline));
    std::cout << "evgate: wrote " << output.string() << " (" << baseline.collected << " tests)\n";
    return 0;
}

int cmd_restore(const Args& args) {
    auto options = suite_options("restore: bring the fixture groups back to their pristine content");
    options.add_options()("pending", "only complete the restores that killed runs left pending, keeping what they "
                                     "replace (the <name>.restore step, run by CTest after every other step)");
    auto vm = parse("restore", args, options);
    if (!vm) return 0;
    const auto suite = suite_of(*vm);
    FixtureStore store(suite);
    if (vm->count("pending")) {
        const auto interrupted = store.restore_if_pending();
        std::cout << "evgate: " << suite.name << ": "
                  << (interrupted ? "restored fixture groups left dirty by an interrupted run (a step killed by its CTest "
                                    "TIMEOUT, or by hand)"
                                  : "no restore pending");
        if (!interrupted.kept.empty()) std::cout << "; what it left is kept in " << interrupted.kept.string();
        std::cout << '\n';
        return 0;
    }
    const auto changed = store.restore();
    for (const auto& line : changed) std::cout << "evgate: " << line << '\n';
    std::cout << "evgate: " << suite.name << ": fixture groups are pristine\n";
    return 0;
}

int cmd_order(const Args& args) {
    auto options = suite_options("order: print the test order of a seed, one node id a line (JSON strings)");
    options.add_options()("seed", po::value<std::uint64_t>()->required(), "the seed");
    auto vm = parse("order", args, options);
    if (!vm) return 0;
    const auto suite = suite_of(*vm);
    const auto receipt = load_receipt(suite.receipt_file());
    for (const auto& id : shuffled_order(receipt.collected(), (*vm)["seed"].as<std::uint64_t>()))
        std::cout << json_string(id) << '\n';
    return 0;
}

// Two files as positionals: evgate diff <local.json> <runner.json>. Exit 1 when they differ.
int cmd_diff(const Args& args) {
    po::options_description options("diff: compare two environment manifests, most suspicious difference first");
    options.add_options()("help,h", "show this help");
    po::options_description files;
    files.add_options()("local", po::value<std::string>())("runner", po::value<std::string>());
    po::options_description all;
    all.add(options).add(files);
    po::positional_options_description positional;
    positional.add("local", 1).add("runner", 1);
    po::variables_map vm;
    const auto style = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
    po::store(po::command_line_parser(args).options(all).positional(positional).style(style).run(), vm);
    if (vm.count("help")) {
        std::cout << "usage: evgate diff <local.json> <runner.json>\n" << options;
        return 0;
    }
    if (!vm.count("runner")) throw Error("diff needs two manifests: evgate diff <local.json> <runner.json>");
    const auto local = vm["local"].as<std::string>(), runner = vm["runner"].as<std::string>();
    const auto drift = diff_manifests(read_manifest(local), read_manifest(runner));
    if (drift.empty()) {
        std::cout << "evgate: the manifests agree\n";
        return 0;
    }
    std::cout << "evgate: " << drift.size() << " key(s) differ between " << local << " (local) and " << runner
              << " (runner), most suspicious first:\n"
              << format_drift(drift, "runner", drift.size());
    return 1;
}

}  // namespace evgate
