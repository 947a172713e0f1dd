// evgate_report_fixture <dir> [tests] [runs]: writes report.html and report.md for a synthetic
// ledger (default 10,000 tests x 20 runs) so the browser test can time a large page. The mix
// is fixed: mostly stable, a few of every other verdict, partners, reproduce commands, and ids
// that try to break out of the markup.
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "reports/report.hpp"

namespace {

using namespace evgate;

std::vector<std::string> columns_for(int runs) {
    std::vector<std::string> columns;
    const int seeds = std::max(1, runs / 2);
    for (int k = 0; k < seeds; ++k) columns.push_back("seed." + std::to_string(k));
    for (int k = 0; static_cast<int>(columns.size()) < runs - 1; ++k)
        for (int r = 1; r <= 2 && static_cast<int>(columns.size()) < runs - 1; ++r)
            columns.push_back("seed." + std::to_string(k) + ".rerun." + std::to_string(r));
    if (static_cast<int>(columns.size()) < runs) columns.push_back("alone.1");
    return columns;
}

std::string test_id(int i) {
    if (i == 3) return "tests/test_hostile.py::test_id[<script>alert(\"x\")</script>&'y'\n\xC3\xBC\xE2\x9C\x93]";
    return "tests/test_mod_" + std::to_string(i / 100) + ".py::test_case[" + std::to_string(i) + "]";
}

// Every run's outcome for test `i` under `verdict`; reruns only cover the first seeds.
void fill_outcomes(LedgerRow& row, int i, const std::vector<std::string>& columns) {
    for (std::size_t c = 0; c < columns.size(); ++c) {
        if (columns[c].find(".rerun.") != std::string::npos && row.verdict == Verdict::stable && (i + static_cast<int>(c)) % 3)
            continue;  // not in this rerun's plan
        std::string outcome = "passed";
        if (row.verdict == Verdict::order_dependent) outcome = c % 3 == 0 ? "failed" : "passed";
        if (row.verdict == Verdict::flaky) outcome = (c * 7 + static_cast<std::size_t>(i)) % 5 == 0 ? "failed" : "passed";
        if (row.verdict == Verdict::failing) outcome = c == 2 ? "error" : "failed";
        if (row.verdict == Verdict::interrupted) outcome = c == 4 ? "interrupted" : c > 4 ? "missing"
                                                                                          : "passed";
        if (row.verdict == Verdict::skipped) outcome = "skipped";
        row.outcomes.emplace_back(columns[c], parse_outcome(outcome).value());
    }
}

LedgerRow test_row(int i, const std::vector<std::string>& columns) {
    LedgerRow row;
    row.test = test_id(i);
    row.verdict = i % 97 == 3 ? Verdict::order_dependent : i % 89 == 5 ? Verdict::flaky
                                                       : i % 53 == 7   ? Verdict::failing
                                                       : i % 211 == 11 ? Verdict::interrupted
                                                       : i % 31 == 13  ? Verdict::skipped
                                                                       : Verdict::stable;
    row.gate = info(row.verdict).gate == Gate::pass ? Gate::pass : row.verdict == Verdict::flaky ? Gate::defer
                                                                                                 : Gate::block;
    row.reason = row.verdict == Verdict::stable ? "passes in every run"
                                                : "synthetic " + std::string(to_string(row.verdict)) + " row " + std::to_string(i);
    if (row.verdict == Verdict::order_dependent) {
        row.partner = test_id(i + 1);
        row.partners = {test_id(i + 1)};
        row.partner_role = "polluter";
        row.reproduce = "cd /src && python3 -m pytest -p no:cacheprovider '" + test_id(i + 1) + "' '" + row.test + "'";
    }
    if (row.gate == Gate::defer) {
        row.until = "2026-12-31";
        row.owner = "team-" + std::to_string(i % 7);
    }
    fill_outcomes(row, i, columns);
    return row;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::cerr << "usage: evgate_report_fixture <dir> [tests] [runs]\n";
        return 2;
    }
    const int tests = argc > 2 ? std::atoi(argv[2]) : 10000;
    const int runs = argc > 3 ? std::atoi(argv[3]) : 20;
    const auto columns = columns_for(runs);

    std::vector<LedgerRow> rows;
    LedgerRow collection;
    collection.test = "collection";
    collection.suite_scope = true;
    collection.verdict = Verdict::stable;
    collection.gate = Gate::pass;
    collection.reason = std::to_string(tests) + " tests collected";
    rows.push_back(collection);
    for (int i = 0; i < tests; ++i) rows.push_back(test_row(i, columns));

    Receipt receipt;
    receipt.id = "synthetic";
    receipt.rootdir = "/src";
    receipt.configfile = "/src/pytest.ini";
    receipt.conftests = {"/src/conftest.py", "/src/tests/conftest.py"};
    for (int i = 0; i < tests; ++i) receipt.tests.push_back({test_id(i), i % 500 == 0, {}, std::nullopt});

    ReportInput input;
    input.suite = "synthetic";
    input.rows = &rows;
    input.columns = columns;
    input.receipt = &receipt;
    const auto summary = summarize(rows);
    input.summary = &summary;
    input.drift = {{"perturbed",
                    {{"timezone.TZ", std::nullopt, std::string("\"Asia/Kolkata\""), drift_rank::locale_timezone},
                     {"locale.env.LANG", std::string("\"C.UTF-8\""), std::string("\"de_DE.UTF-8\""), drift_rank::locale_timezone},
                     {"cpu_count", std::string("8"), std::string("1"), drift_rank::cpu_count},
                     {"env_names.HOME", std::string("\"present\""), std::nullopt, drift_rank::env_names}}}};
    std::cout << write_reports(argv[1], input).string() << '\n';
    return 0;
}
