// Commands about the user's input files: check, baseline, restore, order, diff.
#include "cli/commands/commands.hpp"

#include <cstdlib>
#include <fstream>
#include <iostream>

#include "fixtures/fixture_store.hpp"
#include "inputs/evidence_layout.hpp"
#include "io/atomic_file.hpp"
#include "io/error.hpp"
#include "io/json_io.hpp"
#include "machines/manifest_diff.hpp"
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

void baseline_options(Options& accepted) {
    accepted.named.add_options()("output", po::value<std::string>(), "where to write it (default: the suite's BASELINE)")(
        "when-requested", "write only when EVIDENCE_GATE_UPDATE_BASELINE=1 is set (else exit 77: skipped)");
}

void restore_options(Options& accepted) {
    accepted.named.add_options()("pending",
                                 "only complete the restores that killed runs left pending, keeping what they "
                                 "replace (the <name>.restore step, run by CTest after every other step)");
}

void diff_options(Options& accepted) {
    accepted.named.add_options()("manifest", po::value<std::vector<std::string>>(), "the two manifests, local then runner");
    accepted.operands.add("manifest", 2);
    accepted.synopsis = "<local.json> <runner.json>";
}

int cmd_check(Invocation& in) {
    const auto& suite = in.suite();
    const auto groups = validate_inputs(suite);
    std::cout << "evgate: " << suite.name << ": inputs are valid (" << groups << " fixture groups)\n";
    return 0;
}

int cmd_baseline(Invocation& in) {
    const auto& suite = in.suite();
    const char* requested = std::getenv("EVIDENCE_GATE_UPDATE_BASELINE");
    if (in.has("when-requested") && (requested == nullptr || std::string(requested) != "1")) {
        std::cout << "evgate: " << suite.name << ": not writing the baseline; run EVIDENCE_GATE_UPDATE_BASELINE=1 ctest -R '"
                  << suite.name << "\\.baseline-update' to write it\n";
        return 77;
    }
    fs::path output = in.has("output") ? fs::path(in.get<std::string>("output"))
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

int cmd_restore(Invocation& in) {
    const auto& suite = in.suite();
    FixtureStore store(suite);
    if (in.has("pending")) {
        const auto interrupted = store.restore_if_pending();
        if (interrupted) say_restored(suite, interrupted);
        else std::cout << "evgate: " << suite.name << ": no restore pending (any step that takes the tree first completes one)\n";
        return 0;
    }
    const auto changed = store.restore();
    for (const auto& line : changed) std::cout << "evgate: " << line << '\n';
    std::cout << "evgate: " << suite.name << ": fixture groups are pristine\n";
    return 0;
}

int cmd_order(Invocation& in) {
    for (const auto& id : seed_order(in.receipt().collected(), in.get<std::uint64_t>("seed"), in.suite().orders))
        std::cout << json_string(id) << '\n';
    return 0;
}

// Exit 1 when the manifests differ.
int cmd_diff(Invocation& in) {
    const auto files = in.has("manifest") ? in.get<std::vector<std::string>>("manifest") : std::vector<std::string>{};
    if (files.size() != 2) throw Error("diff needs two manifests: evgate diff <local.json> <runner.json>");
    const auto& local = files[0];
    const auto& runner = files[1];
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
