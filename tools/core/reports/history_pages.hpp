// What `evgate history` writes: history.json (every test's verdicts over time, for tools),
// history.md (the tests that flip most often, suites, runners, hosts, inputs left out, runs)
// and history.html (the same as one self-contained page, nothing loaded from anywhere).
// Pure functions of the history: the same inputs give byte-identical files.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

#include "reports/history.hpp"

namespace evgate {

// history.json, handed to `flush` a piece at a time (a history of 10,000 tests x 1,000 runs is
// written without being held whole).
void history_json(const History& history, const std::function<void(std::string_view)>& flush);
std::string history_json(const History& history);
std::string history_markdown(const History& history);
std::string history_html(const History& history);

// Writes the three files into `dir` (created if needed), each atomically.
void write_history_pages(const std::filesystem::path& dir, const History& history);

// "2026-12-01 14:25 UTC": a run's time as the pages show it.
std::string short_time(TimePoint time);
// A commit as the pages show it: its first 12 characters.
std::string short_commit(const std::string& commit);

}  // namespace evgate
