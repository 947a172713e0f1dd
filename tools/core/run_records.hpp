// Run records: the JSON Lines a run leaves behind. The plugin appends session/start/result/end
// records; the harness appends interrupted/torn/finished. Append-only, one record a line.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace evgate {

struct SessionInfo {
    std::string rootdir;
    std::optional<std::string> configfile;
    std::vector<std::string> conftests;
    long collected = 0;
    std::vector<std::string> unlisted;  // collected but not in the order we asked for
    std::vector<std::string> absent;    // asked for but not collected
    std::string lease;                  // how the plugin watched the groups: "inotify", "scan", "" (none)
};

struct TestResult {
    std::string outcome;  // passed failed error skipped xfailed xpassed
    std::vector<std::string> dirty;    // groups it changed without declaring them
    std::string message;
    std::vector<std::string> changed;  // every group it changed, declared or not
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

// One record as read: checked, with views into the file's bytes that stay valid while the
// callback runs. Fields an event does not have are empty.
struct RunRecord {
    enum class Event { session, start, result, end, interrupted, torn, finished };
    Event event = Event::torn;
    int line = 0;
    std::string_view test;     // start, result, interrupted
    std::string_view outcome;  // result
    std::string_view message;  // result
    const std::vector<std::string_view>* dirty = nullptr;    // result
    const std::vector<std::string_view>* changed = nullptr;  // result
    std::string_view reason;   // interrupted
    std::string_view rootdir;  // session
    std::optional<std::string_view> configfile;
    const std::vector<std::string_view>* conftests = nullptr;
    const std::vector<std::string_view>* unlisted = nullptr;
    const std::vector<std::string_view>* absent = nullptr;
    long collected = 0;
    std::string_view lease;         // session
    std::optional<int> exitstatus;  // end
    bool complete = false;          // finished
    std::string_view note, receipt;
};

// Adds a record to what is known of its run (as read_run_records does for each).
void add_record(RunRecords& run, const RunRecord& record);

// Every record of a run file in order, without a document per record: what the gate streams.
// The file's bytes are read into `storage`, and the records' strings point into it. A file
// that does not exist has none; a line that is not a record, or a torn last line, throws
// InputError naming file and line.
void read_records(const std::filesystem::path& file, std::string& storage, const std::function<void(const RunRecord&)>& each);

// Appending: the harness's own records, and repairing a tail a dead writer tore.
void append_record(const std::filesystem::path& file, const std::string& json_object);
// Cuts an unterminated last line off; returns the bytes removed (0 when the file was whole).
std::uintmax_t cut_torn_tail(const std::filesystem::path& file);

}  // namespace evgate
