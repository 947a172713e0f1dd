// The ledger for people: report.html, one self-contained page a browser shows offline (the
// verdict, the rows that block or defer, a heat map of tests x runs, manifest drift, the
// receipt), and report.md, a summary short enough for a pull-request comment. Both print the
// gate's own summary (summary.hpp), computed once by whoever builds the ledger.
// Both are pure functions of their input: the same ledger gives byte-identical reports.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "machines/manifest_diff.hpp"
#include "runs/receipt.hpp"
#include "runs/run_plan.hpp"
#include "verdicts/gate.hpp"

namespace evgate {

struct ReportExtras;  // report_extras.hpp: what the run's history and a compared ledger add

// Where the environment behind one column differs from the local one.
struct ColumnDrift {
    std::string column;               // "perturbed", a runner's name
    std::vector<DriftEntry> entries;  // as diff_manifests() returns them: most suspicious first
};

struct ReportInput {
    std::string suite;
    const std::vector<LedgerRow>* rows = nullptr;  // the ledger, suite rows first
    std::vector<std::string> columns;              // run ids in heat-map order: see report_columns()
    const Receipt* receipt = nullptr;
    std::vector<ColumnDrift> drift;
    const ReportExtras* extras = nullptr;  // none: the reports say what this run's ledger says
    const GateSummary* summary = nullptr;  // summarize(*rows), as the gate prints it
};

// Run ids in heat-map order: seeds, reruns, alone runs, perturbed runs, runners; load order within each.
std::vector<std::string> report_columns(const std::vector<LoadedRun>& runs);

std::string report_html(const ReportInput& input);
std::string report_markdown(const ReportInput& input);

// Writes report.html and report.md into `dir`, each atomically; returns the path of report.html.
std::filesystem::path write_reports(const std::filesystem::path& dir, const ReportInput& input);

}  // namespace evgate
