#include "runs/replay.hpp"

#include <algorithm>
#include <ostream>

#include <unistd.h>

#include "fixtures/fixture_store.hpp"
#include "inputs/evidence_layout.hpp"
#include "inputs/outcome.hpp"
#include "io/error.hpp"
#include "io/json_io.hpp"
#include "runs/order_run.hpp"
#include "runs/pytest_command.hpp"
#include "runs/receipt.hpp"
#include "runs/shuffle.hpp"

namespace fs = std::filesystem;

namespace evgate {
namespace {

std::vector<std::string> order_of(const SuiteConfig& suite, const ReplayRequest& request) {
    if (request.through.empty()) return request.tests;
    const auto receipt = load_receipt(suite.receipt_file());
    auto order = seed_order(receipt.collected(), request.seed.value_or(0), suite.orders);
    auto end = std::find(order.begin(), order.end(), request.through);
    if (end == order.end()) throw Error("the test " + quote(request.through) + " is not in the receipt");
    order.erase(std::next(end), order.end());
    return order;
}

// What one replay showed: "" when the failure did not reproduce.
std::string reproduced(const RunRecords& records, const std::vector<std::string>& order) {
    auto it = records.results.find(order.back());
    if (it == records.results.end()) return order.back() + " gave no result (the interpreter died or hung)";
    if (outcome_class(it->second.outcome) == OutcomeClass::fail) return order.back() + " " + std::string(to_string(it->second.outcome)) + ": " + it->second.message;
    for (const auto& [test, result] : records.results)
        if (!result.dirty.empty()) return test + " changed fixture group '" + result.dirty.front() + "' without declaring it";
    return "";
}

}  // namespace

std::string self_path() {
    std::string path(4096, '\0');
    const auto n = ::readlink("/proc/self/exe", path.data(), path.size());
    if (n <= 0) return "evgate";
    path.resize(static_cast<std::size_t>(n));
    return path;
}

std::string replay_command(const std::string& evgate, const fs::path& suite_file, const ReplayRequest& request) {
    std::string line = shell_quote(evgate) + " replay --suite " + shell_quote(suite_file.string());
    for (const auto& test : request.tests) line += " --test " + shell_quote(test);
    if (request.seed) line += " --seed " + std::to_string(*request.seed);
    if (!request.through.empty()) line += " --through " + shell_quote(request.through);
    if (request.repeat > 1) line += " --repeat " + std::to_string(request.repeat);
    for (const auto& e : request.environment) line += " --env " + shell_quote(e);
    return line;
}

int replay(const SuiteConfig& suite, const ReplayRequest& request, std::ostream& out) {
    const auto order = order_of(suite, request);
    if (order.empty()) throw Error("nothing to replay: give --test, or --seed with --through");
    Receipt receipt;  // a replay belongs to no receipt
    FixtureStore store(suite);
    store.snapshot();  // the tree as the user has it now (they may have edited a test since ctest) is what the replay puts back
    std::string seen;
    for (int i = 1; i <= std::max(1, request.repeat) && seen.empty(); ++i) {
        RunPlan plan;
        plan.id = RunId::replay();
        plan.order = plan.id.str();
        plan.seed = request.seed.value_or(0);
        plan.tests = order;
        plan.environment = request.environment;
        plan.runs_dir = suite.evidence_dir / evidence::kReplay;
        run_order(suite, receipt, store, plan);
        out << read_file(log_file(suite, plan.id));
        seen = reproduced(read_run_records(records_file(suite, plan)), order);
        out << "evgate: replay " << i << " of " << request.repeat << ": " << (seen.empty() ? "did not reproduce" : "reproduced: " + seen) << '\n';
    }
    return seen.empty() ? 0 : 1;
}

}  // namespace evgate
