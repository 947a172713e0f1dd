#include "reports/history_archive.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

#include <fcntl.h>
#include <unistd.h>

#include <gsl/gsl>

#include "inputs/evidence_layout.hpp"
#include "io/atomic_file.hpp"
#include "io/error.hpp"
#include "io/json_io.hpp"

namespace fs = std::filesystem;

namespace evgate {
namespace {

constexpr const char* kFiles[] = {evidence::kLedger, evidence::kReceipt, evidence::kManifest, evidence::kJunit};
constexpr auto kStale = std::chrono::hours(1);  // a temporary or discarded entry older than this was left by a killed run

bool name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

// A receipt names the commit and the receipt id: whatever it holds, it never leaves the directory.
std::string name_part(const std::string& text) {
    std::string out = text;
    std::replace_if(
        out.begin(), out.end(), [](char c) { return !name_char(c); }, '_');
    return out;
}

std::string unique_suffix() {
    return std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}());
}

void sync_directory(const fs::path& dir) {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    ::fsync(fd);
    ::close(fd);
}

// Moves an entry out of the way (one rename, so that of two runs pruning at once only one
// takes it) and deletes it; false when another run took it first.
bool discard(const fs::path& entry) {
    const auto trash = entry.parent_path() / (".trash-" + entry.filename().string() + "-" + unique_suffix());
    if (std::rename(entry.c_str(), trash.c_str()) != 0) return false;
    std::error_code ec;
    fs::remove_all(trash, ec);
    return true;
}

// Temporary and discarded entries of runs that were killed while archiving.
void remove_stale(const fs::path& dir) {
    const auto now = fs::file_time_type::clock::now();
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        const auto name = entry.path().filename().string();
        if (name.rfind(".tmp-", 0) != 0 && name.rfind(".trash-", 0) != 0) continue;
        std::error_code stat_error;
        const auto written = fs::last_write_time(entry.path(), stat_error);
        if (!stat_error && now - written > kStale) fs::remove_all(entry.path(), stat_error);
    }
}

void copy_synced(const fs::path& from, const fs::path& to) {
    AtomicFile out(to);  // flushed before the entry is renamed into place
    out.write(read_file(from));
    out.commit();
}

}  // namespace

std::size_t history_keep() {
    const char* value = std::getenv("EVIDENCE_GATE_HISTORY_KEEP");
    if (value == nullptr || *value == '\0') return kHistoryKeep;
    char* end = nullptr;
    errno = 0;
    const auto keep = std::strtoull(value, &end, 10);
    if (*end != '\0' || errno != 0 || keep < 1 || value[0] == '-')
        throw Error("EVIDENCE_GATE_HISTORY_KEEP is not a whole number of runs (at least 1): " + quote(value));
    return static_cast<std::size_t>(keep);
}

fs::path suite_archive(const fs::path& history, const std::string& suite) {
    if (suite.empty() || suite == "." || suite == ".." || !std::all_of(suite.begin(), suite.end(), name_char))
        throw Error("the suite name " + quote(suite) + " cannot name a directory of the history");
    return history / suite;
}

std::string archive_entry_name(const RunPlace& place) {
    return compact_time(place.time) + "-" + (place.commit.empty() ? "nogit" : name_part(place.commit.substr(0, 12))) + "-" +
           name_part(place.receipt);
}

std::vector<fs::path> archived_runs(const fs::path& suite_dir, const std::string& except_receipt) {
    std::vector<fs::path> runs;
    std::error_code ec;
    const auto suffix = "-" + name_part(except_receipt);
    for (const auto& entry : fs::directory_iterator(suite_dir, ec)) {
        const auto name = entry.path().filename().string();
        if (name.empty() || name[0] == '.') continue;  // being written, or being removed
        if (!except_receipt.empty() && name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
            continue;
        std::error_code dir_error;
        if (entry.is_directory(dir_error)) runs.push_back(entry.path());
    }
    std::sort(runs.begin(), runs.end());
    return runs;
}

Archived archive_run(const fs::path& evidence_dir, const fs::path& history, std::size_t keep) {
    Expects(keep >= 1);
    auto place = place_run(evidence_dir);
    if (place.bare || place.receipt.empty()) throw Error(evidence_dir.string() + " has no receipt.json with a receipt id");
    const auto dir = suite_archive(history, place.suite.empty() ? evidence_dir.filename().string() : place.suite);
    fs::create_directories(dir);
    const auto name = archive_entry_name(place);
    const auto temporary = dir / (".tmp-" + name + "-" + unique_suffix());
    fs::create_directory(temporary);
    try {
        for (const char* file : kFiles) {
            std::error_code ec;
            if (fs::exists(evidence_dir / file, ec)) copy_synced(evidence_dir / file, temporary / file);
        }
        sync_directory(temporary);
        if (std::rename(temporary.c_str(), (dir / name).c_str()) != 0)
            throw Error("cannot rename " + temporary.string() + " to " + (dir / name).string() + ": " + std::strerror(errno));
    } catch (...) {
        std::error_code ec;
        fs::remove_all(temporary, ec);
        throw;
    }
    sync_directory(dir);
    Archived archived{dir / name, {}};
    // The same run archived before (the ledger step ran again): this copy replaces it.
    const auto all = archived_runs(dir), others = archived_runs(dir, place.receipt);
    for (const auto& entry : all)
        if (entry.filename() != name && !std::binary_search(others.begin(), others.end(), entry) && discard(entry))
            archived.removed.push_back(entry);
    const auto runs = archived_runs(dir);
    for (std::size_t i = 0; i + keep < runs.size(); ++i)
        if (discard(runs[i])) archived.removed.push_back(runs[i]);
    remove_stale(dir);
    return archived;
}

}  // namespace evgate
