// Run records: the JSON Lines a run leaves behind. The plugin sends session/start/result/
// outside/end records through the record channel; evgate writes them, and its own
// interrupted/torn/foreign/outside/order/status records, and closes the file with a `finished`
// record that carries the length and digest of everything before it: a file anyone else
// appended to or edited is not evidence. One record a line.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "inputs/outcome.hpp"

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

// Something a run's records say that makes the run no evidence of what it ran, as a suite
// row says it: a group changed outside any test, a change nobody can be blamed for, records
// sent by another process, tests run in another order than planned, an exit status the
// results do not explain.
struct RunDoubt {
    std::string check;   // outside, uncertain, foreign, order, exit-status, channel
    std::string reason;  // one sentence, without the run's name
    int process = 0;     // the pytest process of the run it concerns, from 1; 0: not known
};

struct RunRecords {
    std::vector<SessionInfo> sessions;  // one per pytest process of the run
    std::vector<std::string> started;   // every start, in order
    std::map<std::string, TestResult> results;
    std::map<std::string, std::string> interrupted;  // test -> why the interpreter died
    int processes_ended = 0;                         // end records
    std::vector<int> exit_statuses;                  // pytest's, from each end record
    std::vector<int> finish_statuses;                // the same after every pytest_sessionfinish hook
    std::vector<int> final_statuses;                 // and after every pytest_unconfigure hook before the plugin's
    std::vector<RunDoubt> doubts;
    std::vector<std::string> changed_outside;  // groups its `outside` records name
    int torn = 0;                              // torn tails the harness cut off
    std::optional<bool> finished;              // the harness's verdict on the run
    std::string finish_note;
    std::string receipt;    // the receipt the run was planned from
    std::string isolation;  // how its processes started: "fork", "process", "fork, then process"
};

RunRecords read_run_records(const std::filesystem::path& file);

// One record as read: checked, with views into the file's bytes that stay valid while the
// callback runs. Fields an event does not have are empty.
struct RunRecord {
    enum class Event { session,
                       start,
                       result,
                       end,
                       interrupted,
                       torn,
                       finished,
                       outside,
                       foreign,
                       order,
                       status,
                       noise };
    Event event = Event::torn;
    int line = 0;
    std::string_view test;                                    // start, result, interrupted; outside: the test a fixture's change was made in
    Outcome outcome = Outcome::missing;                       // result
    std::string_view message;                                 // result
    const std::vector<std::string_view>* dirty = nullptr;     // result
    const std::vector<std::string_view>* changed = nullptr;   // result
    const std::vector<std::string_view>* unblamed = nullptr;  // result: undeclared changes made while another test's leftovers ran
    std::string_view leftover;                                // result: what those leftovers were
    double seconds = -1;                                      // result: its duration (setup, call and teardown); -1 when the record has none
    std::string_view reason;                                  // interrupted, foreign, order, status; noise: the line, cut short
    std::string_view phase;                                   // outside: "collection", "session end", "fixture setup", "fixture teardown"
    std::string_view fixture, scope, location;                // outside, made by a fixture wider than a test: its name, scope, file:line
    std::string_view rootdir;                                 // session
    std::optional<std::string_view> configfile;
    const std::vector<std::string_view>* conftests = nullptr;
    const std::vector<std::string_view>* unlisted = nullptr;
    const std::vector<std::string_view>* absent = nullptr;
    long collected = 0;
    std::string_view lease;                     // session
    std::optional<int> exitstatus;              // end
    std::optional<int> finish;                  // end: session.exitstatus after every pytest_sessionfinish hook
    std::optional<int> final;                   // end: the same at the plugin's pytest_unconfigure (after the conftests')
    bool complete = false;                      // finished
    std::string_view note, receipt, isolation;  // finished
};

// Adds a record to what is known of its run (as read_run_records does for each).
void add_record(RunRecords& run, const RunRecord& record);

// Every record of a run file in order, without a document per record: what the gate streams.
// The file's bytes are read into `storage`, and the records' strings point into it. A file
// that does not exist has none; a line that is not a record, a torn last line, a record after
// the `finished` record, or a `finished` record whose length or digest is not that of the
// bytes before it throws InputError naming file and line.
void read_records(const std::filesystem::path& file, std::string& storage, const std::function<void(const RunRecord&)>& each);
// The same over bytes in memory (parsed in place: `text` is changed); `source` names them.
void parse_records(std::string& text, const std::string& source, const std::function<void(const RunRecord&)>& each);
RunRecords parse_run_records(std::string text, const std::string& source);

// What one line pytest sent on its record channel is: a record (its event, and the test a
// `start` or `result` names), or not a record at all — text a test wrote on the channel's
// descriptor — when `record` is false. Reuses one parser per thread.
struct ChannelLine {
    bool record = false;
    RunRecord::Event event = RunRecord::Event::torn;
    std::string test;
};
ChannelLine check_channel_line(std::string_view line);
// The event a record's `event` names (evidence_gate_protocol.json); nullopt for a name it does not list.
std::optional<RunRecord::Event> record_event(std::string_view name);
std::string_view record_event_name(RunRecord::Event event);
// The `noise` record evgate writes in place of such a line: its length, its first bytes, and the
// test that was running (none between tests).
std::string noise_record(std::string_view line, const std::string& running);

// The digest a `finished` record carries of everything before it: XXH3-64, 16 hex digits.
std::string records_digest(std::string_view bytes);

// A run's records file as evgate writes it: whole lines, each appended as it comes, and all of
// them kept in memory, which is what the run is judged on while it runs (the file's path is in
// the build tree, where a test can reach it). finish() closes it with the `finished` record.
class RecordsFile {
public:
    explicit RecordsFile(std::filesystem::path file);  // created empty
    ~RecordsFile();
    RecordsFile(const RecordsFile&) = delete;
    RecordsFile& operator=(const RecordsFile&) = delete;

    void append(std::string_view lines);  // one or more whole lines
    void append_record(std::string_view json_object);
    // The `finished` record: `json_object` (without its closing brace) gets the length and
    // digest of everything written before it.
    void finish(std::string json_object);
    void clear();  // empty again: the order runs again from its start
    const std::string& text() const { return text_; }
    const std::filesystem::path& path() const { return file_; }

private:
    void write(std::string_view bytes);

    std::filesystem::path file_;
    int fd_ = -1;
    std::string text_;
};

// Cuts an unterminated last line off; returns the bytes removed (0 when the file was whole).
std::uintmax_t cut_torn_tail(const std::filesystem::path& file);

}  // namespace evgate
