// One CTest entry per pytest test, mirroring its ledger row: discovered at ctest time (like
// CMake's gtest_discover_tests in PRE_TEST mode), so new tests appear without re-running CMake.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "inputs/suite_config.hpp"
#include "verdicts/gate.hpp"

namespace evgate {

// The entry's name: "<suite>/<node id>", control characters written as \xHH.
std::string ctest_name(const std::string& suite, const std::string& test_id);

// The CMake code (CTestTestfile syntax) that registers one entry per id; each entry runs
// `verdict_tool <store> <id>` (evgate-verdict), which prints its verdict, and passes, fails or
// is skipped as its row says.
std::string ctest_entries(const SuiteConfig& suite, const std::vector<std::string>& ids, const std::string& verdict_tool);

// The exit status of the entry of a test skipped in every run (its SKIP_RETURN_CODE).
constexpr int kSkippedEntry = 77;

// The verdict store of the test rows, what each entry prints: "<verdict>: <reason>" (the
// ledger's), "gate: block|defer|pass", then the outcomes and <CTestDetails>; the entry fails
// when the row blocks and is skipped when the test was skipped in every run.
void write_verdict_store(const SuiteConfig& suite, const std::vector<LedgerRow>& rows);
std::filesystem::path verdict_store_file(const SuiteConfig& suite);

}  // namespace evgate
