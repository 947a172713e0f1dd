#include "shared_tree.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>

#include <fcntl.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "error.hpp"
#include "file_identity.hpp"
#include "json_io.hpp"

namespace fs = std::filesystem;

namespace evgate {
namespace {

// Shared by every build tree of the same sources: named after ROOT's canonical path.
fs::path beside_lock(const fs::path& root, const char* suffix) {
    const auto key = sha256_hex(fs::weakly_canonical(root).string()).substr(0, 16);
    return fs::temp_directory_path() / ("evidence-gate-" + key + suffix);
}

constexpr std::int64_t kDayNs = 24LL * 3600 * 1'000'000'000;

std::string span_line(const RunSpan& span) {
    JsonWriter json;
    auto& w = json.begin();
    w.StartObject();
    w.Key("token"), w.String(span.token);
    w.Key("start"), w.Int64(span.start_ns);
    w.Key("end"), w.Int64(span.end_ns);
    w.Key("touched"), w.Bool(span.touched);
    w.EndObject();
    return std::string(json.text()) + "\n";
}

// A line that is not a span cannot say which runs it overlapped: it counts as a change that
// overlapped every run, until the next snapshot prunes it.
RunSpan parse_span(const std::string& line) {
    rapidjson::Document doc;
    doc.Parse(line.c_str(), line.size());
    const auto* token = doc.HasParseError() || !doc.IsObject() ? nullptr : member(doc, "token");
    const auto* start = token ? member(doc, "start") : nullptr;
    const auto* end = token ? member(doc, "end") : nullptr;
    const auto* touched = token ? member(doc, "touched") : nullptr;
    if (!token || !token->IsString() || !start || !start->IsInt64() || !end || !end->IsInt64() || !touched ||
        !touched->IsBool())
        return RunSpan{"", INT64_MIN, INT64_MAX, true};
    return RunSpan{token->GetString(), start->GetInt64(), end->GetInt64(), touched->GetBool()};
}

// One write with O_APPEND: the line is whole or absent, whoever else appends.
void append_line(const fs::path& file, const std::string& line) {
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
    if (fd < 0) throw Error("cannot append to " + file.string() + ": " + std::strerror(errno));
    const auto written = ::write(fd, line.data(), line.size());
    ::close(fd);
    if (written != static_cast<ssize_t>(line.size())) throw Error("cannot append to " + file.string() + ": short write");
}

}  // namespace

TreeLock::TreeLock(const fs::path& root, TreeAccess access) : file_(beside_lock(root, ".lock").string()), access_(access) {
    fd_ = ::open(file_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd_ < 0)
        throw Error("cannot open " + file_ + " to lock the fixture groups of " + root.string() + ": " + std::strerror(errno));
    try {
        take(access);
    } catch (...) {
        ::close(fd_);
        throw;
    }
}

TreeLock::~TreeLock() { ::close(fd_); }  // releases the flock

void TreeLock::take(TreeAccess access) {
    while (::flock(fd_, access == TreeAccess::shared ? LOCK_SH : LOCK_EX) != 0) {
        if (errno != EINTR) throw Error("cannot lock " + file_ + ": " + std::strerror(errno));
    }
    access_ = access;
}

void TreeLock::make_exclusive() {
    if (access_ != TreeAccess::exclusive) take(TreeAccess::exclusive);
}

std::string new_run_token() {
    std::random_device entropy;
    return std::to_string(::getpid()) + "-" + std::to_string(wall_clock_ns()) + "-" + std::to_string(entropy());
}

std::int64_t wall_clock_ns() {
    timespec ts{};
    ::clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void log_span(const fs::path& root, const RunSpan& span) { append_line(beside_lock(root, ".spans"), span_line(span)); }

std::vector<RunSpan> read_spans(const fs::path& root) {
    std::vector<RunSpan> spans;
    std::ifstream in(beside_lock(root, ".spans"), std::ios::binary);
    for (std::string line; std::getline(in, line);)
        if (!line.empty()) spans.push_back(parse_span(line));
    return spans;
}

void prune_spans(const fs::path& root) {
    const auto file = beside_lock(root, ".spans");
    if (!fs::exists(file)) return;
    const auto oldest = wall_clock_ns() - kDayNs;
    std::string kept;
    for (const auto& span : read_spans(root))
        if (!span.token.empty() && span.end_ns >= oldest) kept += span_line(span);
    write_file_atomic(file, kept);
}

fs::path registry_path(const fs::path& store_dir) {
    auto dir = fs::weakly_canonical(fs::absolute(store_dir));
    return dir.has_filename() ? dir : dir.parent_path();
}

void register_store(const fs::path& root, const fs::path& store_dir) {
    const auto dir = registry_path(store_dir);
    const auto known = registered_stores(root);
    if (std::find(known.begin(), known.end(), dir) != known.end()) return;
    append_line(beside_lock(root, ".stores"), dir.string() + "\n");
}

std::vector<fs::path> registered_stores(const fs::path& root) {
    std::vector<fs::path> stores;
    std::ifstream in(beside_lock(root, ".stores"), std::ios::binary);
    for (std::string line; std::getline(in, line);)
        if (!line.empty() && std::find(stores.begin(), stores.end(), fs::path(line)) == stores.end())
            stores.emplace_back(line);
    return stores;
}

void prune_stores(const fs::path& root) {
    const auto file = beside_lock(root, ".stores");
    if (!fs::exists(file)) return;
    std::string kept;
    for (const auto& store : registered_stores(root))
        if (fs::is_directory(store)) kept += store.string() + "\n";
    write_file_atomic(file, kept);
}

bool overlapped_a_change(const std::vector<RunSpan>& spans, const std::string& token) {
    if (token.empty()) return false;
    for (const auto& own : spans) {
        if (own.token != token) continue;
        for (const auto& other : spans)
            if (other.touched && other.token != token && other.start_ns < own.end_ns && own.start_ns < other.end_ns)
                return true;
    }
    return false;
}

bool changed_beside_another(const std::vector<RunSpan>& spans, const std::string& token) {
    if (token.empty()) return false;
    for (const auto& own : spans) {
        if (own.token != token || !own.touched) continue;
        for (const auto& other : spans)
            if (other.token != token && other.start_ns < own.end_ns && own.start_ns < other.end_ns) return true;
    }
    return false;
}

}  // namespace evgate
