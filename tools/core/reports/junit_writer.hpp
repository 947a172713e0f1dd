// junit.xml in the evidence directory: the ledger as the test-analytics services read JUnit
// (Jenkins, GitLab, Trunk, BuildPulse, Datadog). One <testcase> per collected test, under the
// classname and name pytest's own --junitxml gives it (so it merges with a plain pytest JUnit
// history); the gate's decision as its status; every attempt that did not pass as a Surefire
// <flakyFailure>/<rerunFailure> (<flakyError>/<rerunError>); <properties> with what the ledger
// knows. Blocking suite rows are testcases of the pseudo class "evidence-gate.<suite>".
// tests/junit/evidence-gate-junit.xsd is the structure, checked by the tests.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "io/timestamp.hpp"
#include "runs/run_matrix.hpp"
#include "verdicts/gate.hpp"

namespace evgate {

// What the ledger does not say about the run.
struct JUnitContext {
    std::string suite;
    std::string host, commit, branch, receipt;  // "" when unknown
    TimePoint time;                             // the <testsuite timestamp>: when the ledger was built
};

// The pseudo class of suite rows: a dash keeps it apart from any Python module path.
std::string junit_suite_class(const std::string& suite);

// The document: `rows` is the ledger, `runs` the runs it was built from (orders, seeds, messages).
std::string junit_xml(const std::vector<LedgerRow>& rows, const RunMatrix& runs, const JUnitContext& context);
// The same into `file`, atomically, a piece at a time.
void write_junit(const std::filesystem::path& file, const std::vector<LedgerRow>& rows, const RunMatrix& runs,
                 const JUnitContext& context);

// What a junit.xml this writer wrote says about its run before the first testcase: the
// <testsuite>'s timestamp and hostname and its own properties (suite, commit, branch, receipt,
// decision, local_runs). Only the file's first bytes are read; nullopt when there is no such
// file or its head is not this writer's form.
struct JUnitHead {
    std::optional<TimePoint> timestamp;
    std::string hostname;
    std::map<std::string, std::string> properties;
};
std::optional<JUnitHead> read_junit_head(const std::filesystem::path& file);

}  // namespace evgate
