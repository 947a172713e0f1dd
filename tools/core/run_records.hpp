// Run records: the JSON Lines a run leaves behind. The plugin appends session/start/result/end
// records; the harness appends interrupted/torn/finished. Append-only, one record a line.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace evgate {

struct SessionInfo {
    std::string rootdir;
    std::optional<std::string> configfile;
    std::vector<std::string> conftests;
    long collected = 0;
    std::vector<std::string> unlisted;  // collected but not in the order we asked for
    std::vector<std::string> absent;    // asked for but not collected
};

struct TestResult {
    std::string outcome;  // passed failed error skipped xfailed xpassed
    std::vector<std::string> dirty;
    std::string message;
};

struct RunRecords {
    std::vector<SessionInfo> sessions;  // one per pytest process of the run
    std::vector<std::string> started;   // every start, in order
    std::map<std::string, TestResult> results;
    std::map<std::string, std::string> interrupted;  // test -> why the interpreter died
    int processes_ended = 0;                         // end records
    std::vector<int> exit_statuses;                  // pytest's, from each end record
    int torn = 0;                                    // torn tails the harness cut off
    std::optional<bool> finished;                    // the harness's verdict on the run
    std::string finish_note;
    std::string receipt;  // the receipt the run was planned from
};

RunRecords read_run_records(const std::filesystem::path& file);

// Appending: the harness's own records, and repairing a tail a dead writer tore.
void append_record(const std::filesystem::path& file, const std::string& json_object);
// Cuts an unterminated last line off; returns the bytes removed (0 when the file was whole).
std::uintmax_t cut_torn_tail(const std::filesystem::path& file);

}  // namespace evgate
