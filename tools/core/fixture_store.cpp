#include "fixture_store.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <set>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "error.hpp"
#include "json_io.hpp"

namespace fs = std::filesystem;

namespace evgate {
namespace {

std::vector<GroupSnapshot> scan(const fs::path& root, const std::vector<FixtureGroup>& groups) {
    std::vector<GroupSnapshot> snapshots;
    for (const auto& group : groups) {
        GroupSnapshot snapshot{group, compile_glob(group.pattern), {}};
        for (auto& path : expand_glob(root, snapshot.glob)) {
            if (auto state = file_state(root / path)) snapshot.files.push_back({std::move(path), std::move(*state)});
        }
        snapshots.push_back(std::move(snapshot));
    }
    return snapshots;
}

std::string lease_json(const fs::path& root, const std::vector<GroupSnapshot>& snapshots) {
    JsonWriter json;
    auto& w = json.begin();
    w.StartObject();
    w.Key("schema"), w.Int(1);
    w.Key("root"), w.String(root.string());
    w.Key("groups"), w.StartArray();
    for (const auto& s : snapshots) {
        w.StartObject();
        w.Key("name"), w.String(s.group.name);
        w.Key("pattern"), w.String(s.group.pattern);
        w.Key("regex"), w.String(s.glob.regex);
        w.Key("base"), w.String(s.glob.base);
        w.Key("max_depth"), w.Int(s.glob.max_depth);
        w.Key("files"), w.StartArray();
        for (const auto& f : s.files) {
            w.StartObject();
            w.Key("path"), w.String(f.path);
            w.Key("identity"), w.String(f.state.identity);
            w.Key("mode"), w.Uint(f.state.mode);
            w.Key("size"), w.Uint64(f.state.size);
            w.EndObject();
        }
        w.EndArray();
        w.EndObject();
    }
    w.EndArray();
    w.EndObject();
    return std::string(json.text()) + "\n";
}

// Makes every directory on the way to `relative` a real directory again: a test may have
// replaced one with a link (possibly out of ROOT) or a file. The intruder is unlinked —
// never followed, never written through — and the directory recreated.
void reclaim_directories(const fs::path& root, const std::string& relative) {
    fs::path at = root;
    const fs::path rel(relative);
    for (auto it = rel.begin(); it != rel.end() && std::next(it) != rel.end(); ++it) {
        at /= *it;
        std::error_code ec;
        const auto status = fs::symlink_status(at, ec);
        if (fs::is_directory(status) && !fs::is_symlink(status)) continue;
        if (fs::exists(status) || fs::is_symlink(status)) {
            if (::unlink(at.c_str()) != 0)
                throw Error("cannot restore " + (root / relative).string() + ": " + at.string() +
                            " is no longer a directory and cannot be removed: " + std::strerror(errno));
        }
        fs::create_directory(at);
    }
}

// Replaces `target` (never writing through a link at its place) with the pristine `file`.
void put_back(const fs::path& root, const fs::path& pristine, const FixtureFile& file) {
    reclaim_directories(root, file.path);
    const fs::path target = root / file.path;
    fs::path temp = target;
    temp += ".evgate-restore." + std::to_string(::getpid());
    fs::remove(temp);
    const auto& id = file.state.identity;
    if (id.rfind("link:", 0) == 0) {
        fs::create_symlink(id.substr(5), temp);
    } else if (id.rfind("sha256:", 0) == 0) {
        fs::copy_file(pristine, temp);
        fs::permissions(temp, static_cast<fs::perms>(file.state.mode));
    } else {
        throw Error("cannot restore " + target.string() + ": it is not a regular file or a link");
    }
    if (std::rename(temp.c_str(), target.c_str()) != 0) {
        int saved = errno;
        fs::remove(temp);
        throw Error("cannot restore " + target.string() + ": " + std::strerror(saved));
    }
}

// lstat metadata of a fixture file: when it is what a restore recorded (and was not
// "racy" then, git's rule against coarse timestamps), the content is what it was.
struct Stamp {
    std::uintmax_t size = 0, inode = 0;
    std::int64_t mtime_ns = 0, ctime_ns = 0;
    unsigned mode = 0;
    bool operator==(const Stamp& o) const {
        return size == o.size && inode == o.inode && mtime_ns == o.mtime_ns && ctime_ns == o.ctime_ns && mode == o.mode;
    }
};

constexpr std::int64_t kRacyNs = 50'000'000;

std::int64_t now_ns() {
    timespec ts{};
    ::clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::optional<Stamp> stamp_of(const fs::path& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return std::nullopt;
    Stamp s;
    s.size = static_cast<std::uintmax_t>(st.st_size);
    s.inode = st.st_ino;
    s.mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
    s.ctime_ns = static_cast<std::int64_t>(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec;
    s.mode = st.st_mode;
    return s;
}

struct Stamps {
    std::int64_t taken_ns = 0;
    std::map<std::string, Stamp> files;

    bool unchanged(const std::string& path, const Stamp& now) const {
        auto it = files.find(path);
        if (it == files.end() || !(it->second == now)) return false;
        return it->second.ctime_ns < taken_ns - kRacyNs && it->second.mtime_ns < taken_ns - kRacyNs;
    }
};

Stamps load_stamps(const fs::path& file) {
    Stamps stamps;
    if (!fs::exists(file)) return stamps;
    const auto doc = read_json_file(file);
    const auto* taken = member(doc, "taken_ns");
    const auto* files = member(doc, "files");
    if (taken == nullptr || !taken->IsInt64() || files == nullptr || !files->IsObject()) return stamps;  // rebuilt below
    stamps.taken_ns = taken->GetInt64();
    for (const auto& m : files->GetObject()) {
        const auto& v = m.value;
        if (!v.IsArray() || v.Size() != 5) continue;
        Stamp s;
        s.size = v[0].GetUint64();
        s.inode = v[1].GetUint64();
        s.mtime_ns = v[2].GetInt64();
        s.ctime_ns = v[3].GetInt64();
        s.mode = v[4].GetUint();
        stamps.files[m.name.GetString()] = s;
    }
    return stamps;
}

// Records the metadata of every pristine file as it is now, after a snapshot or a restore.
void save_stamps(const fs::path& file, const fs::path& root, const std::vector<GroupSnapshot>& groups) {
    JsonWriter json;
    auto& w = json.begin();
    w.StartObject();
    w.Key("taken_ns"), w.Int64(now_ns());
    w.Key("files"), w.StartObject();
    for (const auto& g : groups) {
        for (const auto& f : g.files) {
            const auto s = stamp_of(root / f.path);
            if (!s) continue;
            w.Key(f.path.c_str(), static_cast<rapidjson::SizeType>(f.path.size()));
            w.StartArray();
            w.Uint64(s->size), w.Uint64(s->inode), w.Int64(s->mtime_ns), w.Int64(s->ctime_ns), w.Uint(s->mode);
            w.EndArray();
        }
    }
    w.EndObject();
    w.EndObject();
    write_file_atomic(file, std::string(json.text()) + "\n");
}

std::mutex lock_mutex;
int lock_depth = 0;
int lock_fd = -1;

}  // namespace

FixtureLock::FixtureLock(const fs::path& root) {
    const std::lock_guard<std::mutex> guard(lock_mutex);
    if (lock_depth++ > 0) return;
    const auto file = fs::temp_directory_path() / ("evidence-gate-" + sha256_hex(fs::weakly_canonical(root).string()).substr(0, 16) + ".lock");
    lock_fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (lock_fd < 0 || ::flock(lock_fd, LOCK_EX) != 0) {
        const int saved = errno;
        if (lock_fd >= 0) ::close(lock_fd);
        lock_fd = -1;
        lock_depth = 0;
        throw Error("cannot lock " + file.string() + " for the fixture groups of " + root.string() + ": " + std::strerror(saved));
    }
}

FixtureLock::~FixtureLock() {
    const std::lock_guard<std::mutex> guard(lock_mutex);
    if (--lock_depth > 0 || lock_fd < 0) return;
    ::close(lock_fd);  // releases the flock
    lock_fd = -1;
}

std::optional<FixtureLock> FixtureStore::hold() const {
    if (empty() && !fs::exists(lease_file())) return std::nullopt;
    return std::optional<FixtureLock>(std::in_place, root_);
}

FixtureStore::FixtureStore(const SuiteConfig& suite) : root_(suite.root), dir_(suite.fixtures_dir()) {
    if (!suite.fixtures) return;
    std::ifstream in(*suite.fixtures);
    if (!in) throw InputError(suite.fixtures->string(), 0, "cannot read the fixture manifest");
    groups_ = parse_fixture_manifest(in, suite.fixtures->string());
}

void FixtureStore::snapshot() {
    const auto held = hold();
    fs::create_directories(dir_);
    restore_if_pending();
    std::map<std::string, std::string> kept;  // path -> identity already in the pristine copy
    if (fs::exists(lease_file())) {
        for (const auto& group : load_pristine())
            for (const auto& f : group.files) kept[f.path] = f.state.identity;
    }
    const auto snapshots = scan(root_, groups_);
    for (const auto& group : snapshots) {
        for (const auto& f : group.files) {
            if (f.state.identity.rfind("sha256:", 0) != 0 || kept[f.path] == f.state.identity) continue;
            const auto copy = pristine_path(f.path);
            fs::create_directories(copy.parent_path());
            fs::copy_file(root_ / f.path, copy, fs::copy_options::overwrite_existing);
        }
    }
    write_file_atomic(lease_file(), lease_json(root_, snapshots));
    save_stamps(stamps_file(), root_, snapshots);
}

void FixtureStore::begin_run(const std::string& run_id) {
    if (fs::exists(lease_file())) write_file_atomic(pending_marker(), run_id + "\n");
}

std::vector<std::string> FixtureStore::restore() {
    std::vector<std::string> changed;
    if (!fs::exists(lease_file())) return changed;  // never snapshotted: nothing can be dirty
    const auto stamps = load_stamps(stamps_file());
    const auto groups = load_pristine();
    for (const auto& group : groups) {
        std::set<std::string> pristine;
        for (const auto& f : group.files) {
            pristine.insert(f.path);
            // Content is read only where metadata says it may have changed.
            if (auto stamp = stamp_of(root_ / f.path); stamp && stamps.unchanged(f.path, *stamp)) continue;
            auto now = file_state(root_ / f.path);
            if (now && now->identity == f.state.identity && now->mode == f.state.mode) continue;
            put_back(root_, pristine_path(f.path), f);
            changed.push_back("restored " + f.path);
        }
        for (const auto& path : expand_glob(root_, group.glob)) {
            if (pristine.count(path) != 0) continue;
            fs::remove(root_ / path);
            changed.push_back("removed " + path);
        }
    }
    save_stamps(stamps_file(), root_, groups);
    fs::remove(pending_marker());
    return changed;
}

bool FixtureStore::restore_if_pending() {
    const auto held = hold();
    if (!fs::exists(pending_marker())) return false;
    restore();
    return true;
}

std::vector<GroupSnapshot> FixtureStore::load_pristine() const {
    const auto doc = read_json_file(lease_file());
    const std::string source = lease_file().string();
    std::vector<GroupSnapshot> snapshots;
    const auto* groups = member(doc, "groups");
    if (groups == nullptr || !groups->IsArray()) throw InputError(source, 0, "no 'groups' list");
    for (const auto& g : groups->GetArray()) {
        GroupSnapshot snapshot;
        snapshot.group.name = string_member(g, "name", source);
        snapshot.group.pattern = string_member(g, "pattern", source);
        snapshot.glob = compile_glob(snapshot.group.pattern);
        for (const auto& f : member(g, "files")->GetArray()) {
            FixtureFile file;
            file.path = string_member(f, "path", source);
            file.state.identity = string_member(f, "identity", source);
            file.state.mode = member(f, "mode")->GetUint();
            snapshot.files.push_back(std::move(file));
        }
        snapshots.push_back(std::move(snapshot));
    }
    return snapshots;
}

}  // namespace evgate
