#include "fixture_store.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <iostream>
#include <set>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "error.hpp"
#include "json_io.hpp"
#include "receipt.hpp"

namespace fs = std::filesystem;

namespace evgate {
namespace {

// The groups as they are now. `known` gives the state of a file whose metadata has not moved
// since it was last hashed (nullptr when it must be read again).
template <typename Known>
std::vector<GroupSnapshot> scan(const fs::path& root, const std::vector<FixtureGroup>& groups, Known known) {
    std::vector<GroupSnapshot> snapshots;
    for (const auto& group : groups) {
        GroupSnapshot snapshot{group, compile_glob(group.pattern), {}};
        for (auto& path : expand_glob(root, snapshot.glob)) {
            if (const FileState* state = known(path)) {
                snapshot.files.push_back({std::move(path), *state});
            } else if (auto now = file_state(root / path)) {
                snapshot.files.push_back({std::move(path), std::move(*now)});
            }
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
    w.Key("taken_ns"), w.Int64(wall_clock_ns());
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

}  // namespace

FixtureStore::FixtureStore(fs::path root, fs::path dir) : root_(std::move(root)), dir_(std::move(dir)) {}

FixtureStore::FixtureStore(const SuiteConfig& suite) : root_(suite.root), dir_(suite.fixtures_dir()) {
    if (!suite.fixtures) return;
    std::ifstream in(*suite.fixtures);
    if (!in) throw InputError(suite.fixtures->string(), 0, "cannot read the fixture manifest");
    groups_ = parse_fixture_manifest(in, suite.fixtures->string());
}

void FixtureStore::snapshot() {
    fs::create_directories(dir_);
    const TreeLock alone(root_, TreeAccess::exclusive);
    restore_pending_locked();
    prune_spans(root_);
    prune_stores(root_);
    register_store(root_, dir_);
    fs::remove(exclusive_marker());
    // The pristine copy and its stamps from last time: a file whose lstat metadata has not
    // moved since is not read again (at 1 GB of fixtures, that is the whole cost).
    std::map<std::string, FileState> kept;
    if (fs::exists(lease_file())) {
        for (auto& group : load_pristine())
            for (auto& f : group.files) kept.emplace(std::move(f.path), std::move(f.state));
    }
    const auto stamps = load_stamps(stamps_file());
    const auto snapshots = scan(root_, groups_, [&](const std::string& path) -> const FileState* {
        const auto it = kept.find(path);
        const auto stamp = it == kept.end() ? std::nullopt : stamp_of(root_ / path);
        return stamp && stamps.unchanged(path, *stamp) ? &it->second : nullptr;
    });
    for (const auto& group : snapshots) {
        for (const auto& f : group.files) {
            const auto it = kept.find(f.path);
            if (f.state.identity.rfind("sha256:", 0) != 0 || (it != kept.end() && it->second.identity == f.state.identity))
                continue;
            const auto copy = pristine_path(f.path);
            fs::create_directories(copy.parent_path());
            fs::copy_file(root_ / f.path, copy, fs::copy_options::overwrite_existing);
        }
    }
    write_file_atomic(lease_file(), lease_json(root_, snapshots));
    save_stamps(stamps_file(), root_, snapshots);
}

namespace {

// A copy of `relative` (a file or a link, never followed) under `keep`, before it is replaced.
void keep_copy(const fs::path& root, const std::string& relative, const fs::path& keep) {
    std::error_code ec;
    const auto status = fs::symlink_status(root / relative, ec);
    if (!fs::is_regular_file(status) && !fs::is_symlink(status)) return;
    fs::create_directories((keep / relative).parent_path());
    fs::copy(root / relative, keep / relative, fs::copy_options::copy_symlinks | fs::copy_options::overwrite_existing);
}

}  // namespace

std::vector<FixtureChange> FixtureStore::sync(bool write, const fs::path& keep) {
    std::vector<FixtureChange> changed;
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
            if (write && !keep.empty()) keep_copy(root_, f.path, keep);
            if (write) put_back(root_, pristine_path(f.path), f);
            changed.push_back({group.group.name, "restored " + f.path});
        }
        for (const auto& path : expand_glob(root_, group.glob)) {
            if (pristine.count(path) != 0) continue;
            if (write && !keep.empty()) keep_copy(root_, path, keep);
            if (write) fs::remove(root_ / path);
            changed.push_back({group.group.name, "removed " + path});
        }
    }
    if (write) save_stamps(stamps_file(), root_, groups);
    return changed;
}

std::vector<std::string> FixtureStore::restore() {
    const TreeLock alone(root_, TreeAccess::exclusive);
    std::vector<std::string> changed;
    for (auto& change : sync(true)) changed.push_back(std::move(change.what));
    return changed;
}

namespace {

// A run's pending marker: created (and flock-held) when its lease starts; "dirty" written into
// it while its tests' changes wait for a restore.
enum class Marker { gone, live, dirty, abandoned };

// Whether a restore is owed for `marker`. An abandoned marker (its run is gone: the kernel
// dropped the flock with the process) is removed while we hold it, so that it is handled once.
Marker claim_marker(const fs::path& marker) {
    const int fd = ::open(marker.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Marker::gone;  // its run finished meanwhile
    Marker state = Marker::live;
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
        state = Marker::abandoned;
        fs::remove(marker);
    } else {
        char text[8] = {};
        if (::pread(fd, text, sizeof text - 1, 0) > 0 && std::string(text).rfind("dirty", 0) == 0) state = Marker::dirty;
    }
    ::close(fd);
    return state;
}

bool any_abandoned(const fs::path& dir) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        const int fd = ::open(entry.path().c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        const bool abandoned = ::flock(fd, LOCK_SH | LOCK_NB) == 0;
        ::close(fd);
        if (abandoned) return true;
    }
    return false;
}

}  // namespace

// Every build tree over ROOT keeps its markers in its own fixture directory (they outlive a
// reboot that empties the temp directory); the registry beside the tree lock says where. A
// live run that is dirty waits for the tree: it restores itself, unless someone holding the
// tree first (a snapshot of another build tree) does it for it: no snapshot ever takes a
// run's changes for pristine.
InterruptedRestore FixtureStore::restore_pending_locked() {
    auto stores = registered_stores(root_);
    const auto own = registry_path(dir_);
    if (std::find(stores.begin(), stores.end(), own) == stores.end()) stores.push_back(own);
    InterruptedRestore interrupted;
    for (const auto& dir : stores) {
        bool dirty = false, abandoned = false;
        std::error_code ec;
        for (const auto& entry : fs::directory_iterator(dir / "pending", ec)) {
            const auto state = claim_marker(entry.path());
            dirty = dirty || state == Marker::dirty;
            abandoned = abandoned || state == Marker::abandoned;
        }
        if (!dirty && !abandoned) continue;
        // A live run's changes are its tests': nothing to keep. A killed run's may be old.
        const auto keep = abandoned ? dir_ / "interrupted" / std::to_string(wall_clock_ns()) : fs::path();
        const auto changed = dir == own ? sync(true, keep) : FixtureStore(root_, dir).sync(true, keep);
        if (!abandoned) continue;
        interrupted.completed = true;
        if (!changed.empty() && fs::exists(keep)) interrupted.kept = keep;
    }
    return interrupted;
}

InterruptedRestore FixtureStore::restore_if_pending() {
    // Checked without the tree lock first: runs going side by side must not wait for it.
    bool any = false;
    for (const auto& dir : registered_stores(root_)) any = any || any_abandoned(dir / "pending");
    if (!any && !any_abandoned(pending_dir())) return {};
    const TreeLock alone(root_, TreeAccess::exclusive);
    return restore_pending_locked();
}

TreeAccess FixtureStore::access_for(const Receipt& receipt) const {
    if (fs::exists(exclusive_marker())) return TreeAccess::exclusive;
    const bool writers = std::any_of(receipt.tests.begin(), receipt.tests.end(),
                                     [](const ReceiptTest& t) { return !t.writes.empty(); });
    return writers ? TreeAccess::exclusive : TreeAccess::shared;
}

bool FixtureStore::overlapped_a_change(const std::string& token) const {
    return evgate::overlapped_a_change(read_spans(root_), token);
}

FixtureStore::Lease::Lease(FixtureStore& store, TreeAccess access) : store_(store) {
    if (store.empty() && !fs::exists(store.lease_file())) return;  // no groups: nothing to hold
    store.restore_if_pending();
    lock_.emplace(store.root_, access);
    register_store(store.root_, store.dir_);
    span_.token = new_run_token();
    span_.start_ns = wall_clock_ns();
    // The marker is locked before it is in place, so nobody ever sees it unheld while we run.
    fs::create_directories(store.pending_dir());
    const auto temp = store.dir_ / ("pending." + span_.token);
    marker_fd_ = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (marker_fd_ < 0 || ::flock(marker_fd_, LOCK_EX) != 0)
        throw Error("cannot create the pending-restore marker " + temp.string() + ": " + std::strerror(errno));
    marker_ = store.pending_dir() / span_.token;
    fs::rename(temp, marker_);
}

std::vector<FixtureChange> FixtureStore::Lease::restore() {
    if (!lock_) return {};
    auto seen = store_.sync(false);
    if (seen.empty()) return seen;
    // Said before the shared lock is dropped to wait for the tree alone: whoever gets it
    // first restores for us, rather than taking our changes for pristine.
    span_.touched = true;
    if (lock_->access() == TreeAccess::shared && ::pwrite(marker_fd_, "dirty\n", 6, 0) != 6)
        throw Error("cannot mark " + marker_.string() + " dirty: " + std::strerror(errno));
    lock_->make_exclusive();
    auto put_back = store_.sync(true);
    if (::ftruncate(marker_fd_, 0) != 0)
        throw Error("cannot clear " + marker_.string() + ": " + std::strerror(errno));
    return put_back.empty() ? seen : put_back;  // empty: someone restored it while we waited
}

FixtureStore::Lease::~Lease() {
    if (!lock_) return;
    try {
        span_.end_ns = wall_clock_ns();
        log_span(store_.root_, span_);
        if (span_.touched) write_file_atomic(store_.exclusive_marker(), span_.token + "\n");
    } catch (const std::exception& e) {
        std::cerr << "evgate: warning: " << e.what() << '\n';
    }
    std::error_code ignored;
    fs::remove(marker_, ignored);
    ::close(marker_fd_);
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
            if (const auto* size = member(f, "size"); size && size->IsUint64()) file.state.size = size->GetUint64();
            snapshot.files.push_back(std::move(file));
        }
        snapshots.push_back(std::move(snapshot));
    }
    return snapshots;
}

}  // namespace evgate
