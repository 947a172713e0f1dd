// What the history tests share: evidence directories as a run leaves them, written small.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <sys/stat.h>
#include <utime.h>

#include "io/atomic_file.hpp"
#include "io/json_io.hpp"

namespace evgate::test {

// One ledger row: (test, verdict); a name starting with "run:" is a suite row. The gate is the
// one the verdict has without quarantine.
inline std::string ledger_line(const std::string& test, const std::string& verdict) {
    const bool suite = test.rfind("run:", 0) == 0;
    const bool pass = verdict == "stable" || verdict == "skipped";
    return std::string("{\"test\":") + json_string(test) + (suite ? ",\"scope\":\"suite\"" : "") + ",\"verdict\":\"" + verdict +
           "\",\"gate\":\"" + (pass ? "pass" : "block") + "\",\"reason\":\"because\",\"outcomes\":{\"seed.0\":\"" +
           (pass ? "passed" : "failed") + "\",\"seed.1\":\"passed\"}}\n";
}

inline std::string ledger_text(const std::vector<std::pair<std::string, std::string>>& rows) {
    std::string text;
    for (const auto& [test, verdict] : rows) text += ledger_line(test, verdict);
    return text;
}

struct RunSpec {
    std::string suite = "billing";
    std::string receipt = "r1";
    std::string commit = "c1";
    std::string branch = "main";
    std::string host = "ci-1";
    std::string timestamp;  // junit.xml's; "" writes no junit.xml (the receipt's mtime places the run)
    std::vector<std::pair<std::string, std::string>> rows;
};

// A receipt as take_receipt writes it (the tests list first, the workspace after it).
inline std::string receipt_text(const RunSpec& run) {
    return R"({"tests":[{"id":"t::a","serial":false,"writes":[]}],"suite":")" + run.suite + R"(","receipt_id":")" +
           run.receipt + R"(","hostname":")" + run.host + R"(","git":{"head":")" + run.commit + R"(","branch":")" + run.branch +
           R"(","dirty":[]},"collected":1})" + "\n";
}

// The head of junit.xml as the ledger step writes it, no testcases.
inline std::string junit_head(const RunSpec& run) {
    return "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<testsuites>\n<testsuite name=\"" + run.suite +
           "\" errors=\"0\" failures=\"0\" skipped=\"0\" tests=\"0\" time=\"0.000\" timestamp=\"" + run.timestamp +
           "\" hostname=\"" + run.host + "\">\n<properties>\n<property name=\"suite\" value=\"" + run.suite +
           "\"/>\n<property name=\"commit\" value=\"" + run.commit + "\"/>\n<property name=\"branch\" value=\"" + run.branch +
           "\"/>\n<property name=\"receipt\" value=\"" + run.receipt + "\"/>\n</properties>\n</testsuite>\n</testsuites>\n";
}

inline void write_evidence(const std::filesystem::path& dir, const RunSpec& run) {
    std::filesystem::create_directories(dir);
    write_file_atomic(dir / "ledger.jsonl", ledger_text(run.rows));
    write_file_atomic(dir / "receipt.json", receipt_text(run));
    write_file_atomic(dir / "manifest.json", "{\"host\":{\"hostname\":\"" + run.host + "\"}}\n");
    if (!run.timestamp.empty()) write_file_atomic(dir / "junit.xml", junit_head(run));
}

// Sets a file's modification time to `seconds` since the epoch.
inline void set_mtime(const std::filesystem::path& file, long seconds) {
    struct utimbuf times {};
    times.actime = times.modtime = seconds;
    ::utime(file.c_str(), &times);
}

}  // namespace evgate::test
