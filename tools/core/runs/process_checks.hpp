// What evgate checks of each pytest process it ran, against what it asked of it: the order the
// tests started in, the exit status it ended with, and who else wrote on its record channel.
// Pure functions: the seed runner writes what they find as records, the gate blocks on them.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runs/launcher.hpp"
#include "runs/record_channel.hpp"
#include "runs/run_records.hpp"

namespace evgate {

// "1st", "2nd", "3rd", "11th", "22nd".
std::string ordinal(std::size_t n);

// Where the tests a process started first differ from the order it was given, in words
// ("tests/a::t ran 3rd, planned 7th: ..."); nullopt when they are that order or a prefix of it
// (a process that died or stopped early is judged by the results it lacks, not here).
std::optional<std::string> order_divergence(const std::vector<std::string>& planned, const std::vector<std::string>& started);

// Whether pytest's exit status is the one its results call for: 0 when every test that ran
// passed, skipped or xfailed, 1 when one failed or errored; the `end` record's status, the
// status after every pytest_sessionfinish hook and the process's own must all be that. Not
// judged when no test ran or one has no result (the interpreter died or pytest stopped in it:
// that test is interrupted). The reason names the phase that changed it: a pytest_sessionfinish
// hook, a pytest_unconfigure hook, or something after the session. `records` are this process's alone.
std::optional<std::string> exit_status_problem(const RunRecords& records, const LaunchResult& ended);

// A `foreign` record for what `sender` wrote on the channel of the pytest process whose own
// records (before the sender's first bytes came) are `pytest_lines`: its pid, how many records,
// which events and tests, and a reason ("a process forked during tests/x::test_fork (pid 7)
// wrote a result and an end record: not evidence of this run").
std::string foreign_record(const ForeignSender& sender, std::string_view pytest_lines);

// An `order` or `status` record carrying `reason`.
std::string reason_record(std::string_view event, const std::string& reason);
// An `outside` record: groups changed in `phase` ("exit": after the session, found by the restore).
std::string outside_record(std::string_view phase, const std::vector<std::string>& groups);

}  // namespace evgate
