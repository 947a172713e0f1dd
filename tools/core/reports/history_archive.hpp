// The EVIDENCE_GATE_HISTORY archive: the ledger step keeps each run's ledger.jsonl,
// receipt.json, manifest.json and junit.xml in <dir>/<suite>/<time>-<commit>-<receipt>/, the
// newest runs of each suite only. Entries appear whole or not at all (written aside and renamed
// into place), and two ctest invocations archiving into one directory at once cannot damage
// each other's entries: a reader never sees half of one.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "reports/history.hpp"

namespace evgate {

constexpr std::size_t kHistoryKeep = 50;  // runs per suite, unless EVIDENCE_GATE_HISTORY_KEEP says otherwise

// EVIDENCE_GATE_HISTORY_KEEP (a whole number >= 1) or kHistoryKeep; throws Error for another value.
std::size_t history_keep();

// Where a suite's runs are archived; throws Error for a suite name that is no directory name.
std::filesystem::path suite_archive(const std::filesystem::path& history, const std::string& suite);
// "20261201T142512.123456Z-5e2b34b3ac47-cbb9b0ecd9641176": sorts by time ("nogit" without a commit).
std::string archive_entry_name(const RunPlace& place);
// The archived runs of a suite, oldest first, without those of `except_receipt` (the run being judged).
std::vector<std::filesystem::path> archived_runs(const std::filesystem::path& suite_dir, const std::string& except_receipt = {});

struct Archived {
    std::filesystem::path entry;
    std::vector<std::filesystem::path> removed;  // older entries beyond `keep`, and the run's earlier copy
};

// Archives the evidence directory's run (placed as history reads it) below `history`; replaces
// an earlier copy of the same run (same receipt id) and removes the oldest entries beyond `keep`.
Archived archive_run(const std::filesystem::path& evidence_dir, const std::filesystem::path& history, std::size_t keep);

}  // namespace evgate
