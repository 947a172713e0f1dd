#include "shared_tree.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>
#include <random>
#include <sstream>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "error.hpp"
#include "file_identity.hpp"
#include "json_io.hpp"

namespace fs = std::filesystem;

namespace evgate {
namespace {

[[noreturn]] void distrust(const fs::path& dir, const std::string& what, const char* remedy) {
    throw Error("the state directory " + quote(dir.string()) + " " + what +
                ": refusing to trust it (another user could have planted it); " + remedy);
}

std::string octal(unsigned mode) {
    std::ostringstream out;
    out << '0' << std::oct << (mode & 07777u);
    return out.str();
}

// Shared by every build tree of the same sources: named after ROOT's canonical path.
fs::path beside_lock(const fs::path& root, const char* suffix) {
    const auto key = sha256_hex(fs::weakly_canonical(root).string()).substr(0, 16);
    return state_dir() / (key + suffix);
}

// Files in the state directory are opened with O_NOFOLLOW: a link planted there is refused,
// never followed.
int open_state_file(const fs::path& file, int flags) {
    return ::open(file.c_str(), flags | O_CLOEXEC | O_NOFOLLOW, 0600);
}

std::string read_state_file(const fs::path& file) {
    const int fd = open_state_file(file, O_RDONLY);
    if (fd < 0) {
        if (errno == ENOENT) return "";
        throw Error("cannot read " + file.string() + ": " + std::strerror(errno));
    }
    std::string text;
    char chunk[65536];
    for (;;) {
        const auto n = ::read(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        text.append(chunk, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return text;
}

// Temp file (created, never opened through a link) + rename.
void replace_state_file(const fs::path& file, const std::string& text) {
    auto temp = file;
    temp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(std::random_device{}());
    const int fd = open_state_file(temp, O_WRONLY | O_CREAT | O_EXCL);
    if (fd < 0) throw Error("cannot write " + temp.string() + ": " + std::strerror(errno));
    const auto written = ::write(fd, text.data(), text.size());
    ::close(fd);
    if (written != static_cast<ssize_t>(text.size()) || std::rename(temp.c_str(), file.c_str()) != 0) {
        const int saved = errno;
        ::unlink(temp.c_str());
        throw Error("cannot write " + file.string() + ": " + std::strerror(saved));
    }
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
    const int fd = open_state_file(file, O_WRONLY | O_CREAT | O_APPEND);
    if (fd < 0) throw Error("cannot append to " + file.string() + ": " + std::strerror(errno));
    const auto written = ::write(fd, line.data(), line.size());
    ::close(fd);
    if (written != static_cast<ssize_t>(line.size())) throw Error("cannot append to " + file.string() + ": short write");
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        if (!line.empty()) lines.push_back(line);
    return lines;
}

}  // namespace

fs::path temp_dir() {
    const char* tmpdir = std::getenv("TMPDIR");
    if (tmpdir == nullptr || *tmpdir == '\0') return "/tmp";
    struct stat st {};
    if (::stat(tmpdir, &st) == 0 && S_ISDIR(st.st_mode)) return tmpdir;
    static std::once_flag said;
    std::call_once(said, [&] { std::cerr << "evgate: note: TMPDIR '" << tmpdir << "' is not a directory; using /tmp\n"; });
    return "/tmp";
}

void verify_state_dir(const fs::path& dir) {
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0)
        throw Error("cannot use the state directory " + quote(dir.string()) + ": " + std::strerror(errno));
    if (S_ISLNK(st.st_mode)) distrust(dir, "is a symbolic link", "remove it or set EVIDENCE_GATE_STATE_DIR");
    if (!S_ISDIR(st.st_mode)) distrust(dir, "is not a directory", "remove it or set EVIDENCE_GATE_STATE_DIR");
    const auto me = ::geteuid();
    if (st.st_uid != me)
        distrust(dir, "is owned by uid " + std::to_string(st.st_uid) + ", not by you (uid " + std::to_string(me) + ")",
                 "remove it or set EVIDENCE_GATE_STATE_DIR");
    if ((st.st_mode & 077) != 0)
        distrust(dir, "has mode " + octal(st.st_mode) + " (group or other permission bits)",
                 "chmod 700 it, remove it, or set EVIDENCE_GATE_STATE_DIR");
}

fs::path state_dir() {
    fs::path dir;
    if (const char* set = std::getenv("EVIDENCE_GATE_STATE_DIR"); set != nullptr && *set != '\0') {
        dir = fs::absolute(set);
        std::error_code ignored;  // a parent that cannot be made shows as the mkdir below failing
        fs::create_directories(dir.parent_path(), ignored);
    } else if (const char* runtime = std::getenv("XDG_RUNTIME_DIR"); runtime != nullptr && *runtime == '/' &&
                                                                       fs::is_directory(runtime)) {
        dir = fs::path(runtime) / "evidence-gate";
    } else {
        dir = temp_dir() / ("evidence-gate-" + std::to_string(::geteuid()));
    }
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
        throw Error("cannot create the state directory " + quote(dir.string()) + ": " + std::strerror(errno));
    verify_state_dir(dir);
    return dir;
}

TreeLock::TreeLock(const fs::path& root, TreeAccess access) : file_(beside_lock(root, ".lock").string()), access_(access) {
    fd_ = open_state_file(file_, O_RDWR | O_CREAT);
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
    for (const auto& line : lines_of(read_state_file(beside_lock(root, ".spans")))) spans.push_back(parse_span(line));
    return spans;
}

void prune_spans(const fs::path& root) {
    const auto file = beside_lock(root, ".spans");
    if (!fs::exists(fs::symlink_status(file))) return;
    const auto oldest = wall_clock_ns() - kDayNs;
    std::string kept;
    for (const auto& span : read_spans(root))
        if (!span.token.empty() && span.end_ns >= oldest) kept += span_line(span);
    replace_state_file(file, kept);
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
    for (const auto& line : lines_of(read_state_file(beside_lock(root, ".stores"))))
        if (std::find(stores.begin(), stores.end(), fs::path(line)) == stores.end()) stores.emplace_back(line);
    return stores;
}

void prune_stores(const fs::path& root) {
    const auto file = beside_lock(root, ".stores");
    if (!fs::exists(fs::symlink_status(file))) return;
    std::string kept;
    for (const auto& store : registered_stores(root))
        if (fs::is_directory(store)) kept += store.string() + "\n";
    replace_state_file(file, kept);
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
