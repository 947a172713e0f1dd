#include "verdicts/gate.hpp"

#include <algorithm>
#include <future>
#include <thread>

#include "verdicts/suite_checks.hpp"
#include "verdicts/test_rows.hpp"

namespace evgate {
namespace {

// A test's row depends on the test alone: large suites are cut into parts built side by side.
void add_test_rows(const GateInput& input, std::vector<LedgerRow>& rows) {
    const auto& tests = input.receipt.tests;
    const std::size_t parts = tests.size() < 4096 ? 1 : std::clamp(std::thread::hardware_concurrency(), 1u, 4u);
    const auto first = rows.size();
    rows.resize(first + tests.size());
    std::vector<std::future<void>> others;
    for (std::size_t part = 1; part <= parts; ++part) {
        const auto begin = tests.size() * (part - 1) / parts, end = tests.size() * part / parts;
        auto build = [&input, &rows, first, begin, end] { test_rows(input, begin, end, &rows[first + begin]); };
        if (part < parts) others.push_back(std::async(std::launch::async, build));
        else build();
    }
    for (auto& other : others) other.get();
}

}  // namespace

std::vector<LedgerRow> receipt_rows(const GateInput& input) { return collection_rows(input); }

std::vector<LedgerRow> build_ledger(const GateInput& input) {
    std::vector<LedgerRow> rows = collection_rows(input);
    for (auto* more : {&quarantine_rows, &env_sensitive_rows, &run_rows, &doubt_rows, &runner_rows}) {
        auto extra = (*more)(input);
        rows.insert(rows.end(), extra.begin(), extra.end());
    }
    const auto first = rows.size();
    add_test_rows(input, rows);
    // Rows about tests, made from the test rows, go before them.
    auto about_tests = unattributed_rows(rows, first);
    if (auto sandbox = sandbox_row(input, rows, first)) about_tests.push_back(std::move(*sandbox));
    if (auto forks = fork_sensitive_row(rows, first)) about_tests.push_back(std::move(*forks));
    if (auto beside = colliding_row(rows, first)) about_tests.push_back(std::move(*beside));
    rows.insert(rows.begin() + static_cast<std::ptrdiff_t>(first), std::make_move_iterator(about_tests.begin()),
                std::make_move_iterator(about_tests.end()));
    return rows;
}

}  // namespace evgate
