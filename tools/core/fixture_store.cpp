#include "fixture_store.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <mutex>
#include <regex>
#include <set>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "error.hpp"
#include "git_state.hpp"
#include "json_io.hpp"
#include "receipt.hpp"

namespace fs = std::filesystem;

namespace evgate {
namespace {

using JsonOut = rapidjson::Writer<rapidjson::StringBuffer>;

const std::string kSourceTree = "(source tree)";

// A file name into JSON: valid UTF-8 whatever its bytes (see json_path_literal).
void write_path(JsonOut& w, std::string_view path) {
    const auto literal = json_path_literal(path);
    w.RawValue(literal.data(), literal.size(), rapidjson::kStringType);
}

std::string path_of(const rapidjson::Value& value) {
    return value.IsString() ? path_from_json({value.GetString(), value.GetStringLength()}) : std::string();
}

std::string path_member(const rapidjson::Value& object, const char* key, const std::string& source) {
    return path_from_json(string_member(object, key, source));
}

void write_paths(JsonOut& w, const char* key, const std::vector<std::string>& paths) {
    w.Key(key), w.StartArray();
    for (const auto& p : paths) write_path(w, p);
    w.EndArray();
}

std::vector<std::string> paths_member(const rapidjson::Value& object, const char* key) {
    std::vector<std::string> paths;
    if (const auto* list = member(object, key); list && list->IsArray())
        for (const auto& p : list->GetArray()) paths.push_back(path_of(p));
    return paths;
}

std::string parent_of(const std::string& relative) {
    const auto slash = relative.rfind('/');
    return slash == std::string::npos ? "" : relative.substr(0, slash);
}

std::string name_of(const std::string& relative) { return relative.substr(relative.rfind('/') + 1); }

std::string joined(const std::string& dir, const std::string& name) { return dir.empty() ? name : dir + "/" + name; }

std::string list_some(const std::vector<std::string>& items, std::size_t shown = 5) {
    std::string out;
    for (std::size_t i = 0; i < items.size() && i < shown; ++i) out += (i ? ", " : "") + printable_path(items[i]);
    if (items.size() > shown) out += " and " + std::to_string(items.size() - shown) + " more";
    return out;
}

std::optional<struct stat> lstat_of(const fs::path& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return std::nullopt;
    return st;
}

std::int64_t mtime_of(const struct stat& st) {
    return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

unsigned mode_of(const struct stat& st) { return static_cast<unsigned>(st.st_mode) & 07777u; }

// The names in a directory, sorted; nullopt when it cannot be listed.
std::optional<std::vector<std::string>> names_in(const fs::path& dir) {
    std::error_code error;
    fs::directory_iterator it(dir, error);
    if (error) return std::nullopt;
    std::vector<std::string> names;
    for (; !error && it != fs::directory_iterator(); it.increment(error)) names.push_back(it->path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
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

// A directory's mode back as it was (before anything below it is read: a test may have made it
// unreadable). False when it already was, or is no longer a directory (the files restore that).
bool put_back_mode(const fs::path& root, const std::string& relative, unsigned mode, bool write) {
    const auto st = lstat_of(root / relative);
    if (!st || !S_ISDIR(st->st_mode) || mode_of(*st) == mode) return false;
    if (write && ::chmod((root / relative).c_str(), mode) != 0)
        throw Error("cannot restore the mode of " + (root / relative).string() + ": " + std::strerror(errno));
    return true;
}

// A copy of `relative` (a file or a link, never followed) under `keep`, before it is replaced;
// a file a test made unreadable is made readable for it (it is replaced next).
void keep_copy(const fs::path& root, const std::string& relative, const fs::path& keep) {
    std::error_code ec;
    const auto status = fs::symlink_status(root / relative, ec);
    if (!fs::is_regular_file(status) && !fs::is_symlink(status)) return;
    fs::create_directories((keep / relative).parent_path());
    const auto options = fs::copy_options::copy_symlinks | fs::copy_options::overwrite_existing;
    if (fs::copy(root / relative, keep / relative, options, ec), !ec) return;
    if (fs::is_regular_file(status)) fs::permissions(root / relative, fs::perms::owner_read, fs::perm_options::add);
    fs::copy(root / relative, keep / relative, options);
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
    const auto st = lstat_of(path);
    if (!st) return std::nullopt;
    Stamp s;
    s.size = static_cast<std::uintmax_t>(st->st_size);
    s.inode = st->st_ino;
    s.mtime_ns = mtime_of(*st);
    s.ctime_ns = static_cast<std::int64_t>(st->st_ctim.tv_sec) * 1'000'000'000 + st->st_ctim.tv_nsec;
    s.mode = st->st_mode;
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

// stamps.json: {"taken_ns": t, "files": [[path, size, inode, mtime, ctime, mode], ...]}.
Stamps load_stamps(const fs::path& file) {
    Stamps stamps;
    if (!fs::exists(file)) return stamps;
    const auto doc = read_json_file(file);
    const auto* taken = member(doc, "taken_ns");
    const auto* files = member(doc, "files");
    if (taken == nullptr || !taken->IsInt64() || files == nullptr || !files->IsArray()) return stamps;  // rebuilt below
    stamps.taken_ns = taken->GetInt64();
    for (const auto& v : files->GetArray()) {
        if (!v.IsArray() || v.Size() != 6 || !v[0].IsString() || !v[1].IsUint64() || !v[2].IsUint64() || !v[3].IsInt64() ||
            !v[4].IsInt64() || !v[5].IsUint())
            continue;
        Stamp s;
        s.size = v[1].GetUint64();
        s.inode = v[2].GetUint64();
        s.mtime_ns = v[3].GetInt64();
        s.ctime_ns = v[4].GetInt64();
        s.mode = v[5].GetUint();
        stamps.files[path_of(v[0])] = s;
    }
    return stamps;
}

// Records the metadata of every pristine file as it is now, after a snapshot or a restore.
void save_stamps(const fs::path& file, const fs::path& root, const std::vector<GroupSnapshot>& groups,
                 const std::vector<FixtureFile>& guarded) {
    JsonWriter json;
    auto& w = json.begin();
    w.StartObject();
    w.Key("taken_ns"), w.Int64(wall_clock_ns());
    w.Key("files"), w.StartArray();
    const auto add = [&](const FixtureFile& f) {
        const auto s = stamp_of(root / f.path);
        if (!s) return;
        w.StartArray();
        write_path(w, f.path);
        w.Uint64(s->size), w.Uint64(s->inode), w.Int64(s->mtime_ns), w.Int64(s->ctime_ns), w.Uint(s->mode);
        w.EndArray();
    };
    for (const auto& g : groups)
        for (const auto& f : g.files) add(f);
    for (const auto& f : guarded) add(f);
    w.EndArray();
    w.EndObject();
    write_file_atomic(file, std::string(json.text()) + "\n");
}

void write_file_entry(JsonOut& w, const FixtureFile& f) {
    w.StartObject();
    w.Key("path"), write_path(w, f.path);
    w.Key("identity"), write_path(w, f.state.identity);  // a link's target is a name too
    w.Key("mode"), w.Uint(f.state.mode);
    w.Key("size"), w.Uint64(f.state.size);
    w.EndObject();
}

FixtureFile read_file_entry(const rapidjson::Value& f, const std::string& source) {
    FixtureFile file;
    file.path = path_member(f, "path", source);
    file.state.identity = path_member(f, "identity", source);
    const auto* mode = member(f, "mode");
    if (mode == nullptr || !mode->IsUint()) throw InputError(source, 0, "a file without a 'mode'");
    file.state.mode = mode->GetUint();
    if (const auto* size = member(f, "size"); size && size->IsUint64()) file.state.size = size->GetUint64();
    return file;
}

// groups.json: what the plugin leases (and evgate restores) per group, with the directories no
// walk may enter and where the guarded source tree is described.
std::string lease_json(const fs::path& root, const std::vector<GroupSnapshot>& snapshots, const GuardedTree& tree,
                       const fs::path& tree_file) {
    JsonWriter json;
    auto& w = json.begin();
    w.StartObject();
    w.Key("schema"), w.Int(1);
    w.Key("root"), write_path(w, root.string());
    w.Key("groups"), w.StartArray();
    for (const auto& s : snapshots) {
        w.StartObject();
        w.Key("name"), w.String(s.group.name);
        w.Key("pattern"), w.String(s.group.pattern);
        w.Key("regex"), w.String(s.glob.regex);
        w.Key("base"), w.String(s.glob.base);
        w.Key("max_depth"), w.Int(s.glob.max_depth);
        w.Key("files"), w.StartArray();
        for (const auto& f : s.files) write_file_entry(w, f);
        w.EndArray();
        w.Key("directories"), w.StartArray();
        for (const auto& d : s.directories) {
            w.StartObject();
            w.Key("path"), write_path(w, d.path);
            w.Key("mode"), w.Uint(d.mode);
            w.EndObject();
        }
        w.EndArray();
        w.EndObject();
    }
    w.EndArray();
    write_paths(w, "exclude", tree.excluded);
    w.Key("tree"), write_path(w, tree_file.string());
    w.EndObject();
    return std::string(json.text()) + "\n";
}

// tree.json: the guarded source tree.
std::string tree_json(const GuardedTree& tree) {
    JsonWriter json;
    auto& w = json.begin();
    w.StartObject();
    w.Key("schema"), w.Int(1);
    w.Key("git"), w.Bool(tree.git);
    w.Key("files"), w.StartArray();
    for (const auto& f : tree.files) write_file_entry(w, f);
    w.EndArray();
    w.Key("directories"), w.StartArray();
    for (const auto& d : tree.directories) {
        w.StartObject();
        w.Key("path"), write_path(w, d.path);
        w.Key("mode"), w.Uint(d.mode);
        w.Key("mtime_ns"), w.Int64(d.mtime_ns);
        write_paths(w, "entries", d.entries);
        w.EndObject();
    }
    w.EndArray();
    write_paths(w, "excluded", tree.excluded);
    w.EndObject();
    return std::string(json.text()) + "\n";
}

GuardedTree parse_tree(const fs::path& file) {
    GuardedTree tree;
    if (!fs::exists(file)) return tree;
    const auto doc = read_json_file(file);
    const std::string source = file.string();
    const auto* git = member(doc, "git");
    tree.git = git != nullptr && git->IsBool() && git->GetBool();
    if (const auto* files = member(doc, "files"); files && files->IsArray())
        for (const auto& f : files->GetArray()) tree.files.push_back(read_file_entry(f, source));
    if (const auto* dirs = member(doc, "directories"); dirs && dirs->IsArray()) {
        for (const auto& d : dirs->GetArray()) {
            TreeDirectory dir;
            dir.path = path_member(d, "path", source);
            const auto* mode = member(d, "mode");
            const auto* mtime = member(d, "mtime_ns");
            if (mode == nullptr || !mode->IsUint() || mtime == nullptr || !mtime->IsInt64())
                throw InputError(source, 0, "a directory without 'mode' or 'mtime_ns'");
            dir.mode = mode->GetUint();
            dir.mtime_ns = mtime->GetInt64();
            dir.entries = paths_member(d, "entries");
            tree.directories.push_back(std::move(dir));
        }
    }
    tree.excluded = paths_member(doc, "excluded");
    return tree;
}

// A scratch file for git's output, one per call (runs of one build tree check side by side).
fs::path git_scratch(const fs::path& dir) {
    static std::atomic<unsigned> calls{0};
    fs::create_directories(dir);
    return dir / ("git." + std::to_string(::getpid()) + "." + std::to_string(calls++) + ".out");
}

// Whether git could see ROOT as part of a work tree: a .git on the way up (or GIT_DIR). Saves
// starting git where it would only say no.
bool maybe_in_git(const fs::path& root) {
    if (const char* git_dir = std::getenv("GIT_DIR"); git_dir != nullptr && *git_dir != '\0') return true;
    for (auto dir = fs::absolute(root); ; dir = dir.parent_path()) {
        if (lstat_of(dir / ".git")) return true;
        if (dir == dir.root_path()) return false;
    }
}

std::vector<std::string> split_nul(const std::string& text) {
    std::vector<std::string> items;
    std::size_t start = 0;
    for (std::size_t nul; (nul = text.find('\0', start)) != std::string::npos; start = nul + 1)
        if (nul > start) items.push_back(text.substr(start, nul - start));
    return items;
}

// Builds the guarded tree: which files, which directories (with their names, so that a new
// one shows), which build trees it kept out of.
class TreeLister {
public:
    using Known = std::function<const FileState*(const std::string&)>;  // a file hashed before and unmoved since

    TreeLister(const fs::path& root, std::function<bool(const std::string&, bool)> excluded,
               const std::set<std::string>& members, Known known)
        : root_(root), excluded_(std::move(excluded)), members_(members), known_(std::move(known)) {}

    GuardedTree list(const fs::path& scratch_dir) {
        // ROOT's own files as git sees them: tracked, and untracked but not ignored (untracked
        // directories as one "dir/" entry, walked below). Outside a work tree, the whole tree.
        const auto listed = maybe_in_git(root_) ? run_git(root_, git_scratch(scratch_dir),
                                                          {"ls-files", "-z", "--cached", "--others", "--exclude-standard", "--directory"})
                                                : std::nullopt;
        tree_.git = listed.has_value();
        directory("");
        if (!listed) {
            walk("", true);
        } else {
            for (const auto& path : split_nul(*listed)) {
                if (path.back() == '/') {
                    const auto dir = path.substr(0, path.size() - 1);
                    if (reachable(dir, true)) walk(dir, false);
                } else if (reachable(path, false)) {
                    file(path);
                }
            }
        }
        for (auto& [path, dir] : dirs_) tree_.directories.push_back(std::move(dir));  // a parent sorts before its children
        tree_.excluded.assign(excluded_seen_.begin(), excluded_seen_.end());
        std::sort(tree_.files.begin(), tree_.files.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
        return std::move(tree_);
    }

private:
    // Whether `path` is outside every excluded directory (recording the directories on its way).
    bool reachable(const std::string& path, bool is_directory) {
        std::string at;
        for (const auto& part : fs::path(parent_of(path))) {
            at = joined(at, part.string());
            if (!directory(at)) return false;
        }
        return is_directory ? directory(path) : !excluded(path, false);
    }

    bool excluded(const std::string& path, bool is_directory) {
        if (!excluded_(path, is_directory)) return false;
        if (is_directory) excluded_seen_.insert(path);
        return true;
    }

    // Records a directory of the tree; false when it is excluded or no directory.
    bool directory(const std::string& path) {
        if (dirs_.count(path)) return true;
        if (!path.empty() && excluded(path, true)) return false;
        const auto st = lstat_of(root_ / path);
        if (!st || !S_ISDIR(st->st_mode)) return false;
        TreeDirectory dir{path, mode_of(*st), mtime_of(*st), names_in(root_ / path).value_or(std::vector<std::string>{})};
        dirs_.emplace(path, std::move(dir));
        return true;
    }

    void file(const std::string& path) {
        if (members_.count(path)) return;
        const auto st = lstat_of(root_ / path);
        if (!st || !(S_ISREG(st->st_mode) || S_ISLNK(st->st_mode))) return;  // gone, a submodule, a FIFO
        if (const auto* state = known_(path)) tree_.files.push_back({path, *state});
        else if (auto now = file_state(root_ / path)) tree_.files.push_back({path, std::move(*now)});
    }

    // Every file below `top`; `skip_hidden`: hidden directories are not walked (outside git).
    void walk(const std::string& top, bool skip_hidden) {
        if (!directory(top)) return;
        for (const auto& name : dirs_.at(top).entries) {
            const auto path = joined(top, name);
            const auto st = lstat_of(root_ / path);
            if (!st) continue;
            if (S_ISDIR(st->st_mode)) {
                if (!(skip_hidden && name[0] == '.')) walk(path, skip_hidden);
            } else if (!excluded(path, false)) {
                file(path);
            }
        }
    }

    const fs::path& root_;
    std::function<bool(const std::string&, bool)> excluded_;
    const std::set<std::string>& members_;
    Known known_;
    std::map<std::string, TreeDirectory> dirs_;
    std::set<std::string> excluded_seen_;
    GuardedTree tree_;
};

}  // namespace

FixtureStore::FixtureStore(fs::path root, fs::path dir)
    : root_(std::move(root)), dir_(std::move(dir)), evidence_dir_(dir_.parent_path()) {}

FixtureStore::FixtureStore(const SuiteConfig& suite)
    : root_(suite.root), dir_(suite.fixtures_dir()), evidence_dir_(suite.evidence_dir) {
    if (!suite.fixtures) return;
    std::ifstream in(*suite.fixtures);
    if (!in) throw InputError(suite.fixtures->string(), 0, "cannot read the fixture manifest");
    groups_ = parse_fixture_manifest(in, suite.fixtures->string());
}

bool FixtureStore::empty() const { return groups_.empty() && !fs::exists(lease_file()); }

// What no group and no guarded file is ever taken from: version control, every build tree (a
// directory holding CMakeCache.txt: ours or another) and the evidence directory. A restore
// that took them for group members would delete the receipt and the lease file it runs on.
bool FixtureStore::excluded(const std::string& relative, bool directory) const {
    if (name_of(relative) == ".git") return true;
    if (!directory) return false;
    const auto at = root_ / relative;
    std::error_code ec;
    return lstat_of(at / "CMakeCache.txt").has_value() || fs::equivalent(at, evidence_dir_, ec);
}

namespace {

// The groups as they are now. `known` gives the state of a file whose metadata has not moved
// since it was last hashed (nullptr when it must be read again). Globs never reach into what
// `excluded` names; `notes` says where one tried.
template <typename Known>
std::vector<GroupSnapshot> scan(const fs::path& root, const std::vector<FixtureGroup>& groups, Known known,
                                const ExcludedEntry& excluded, std::vector<std::string>& notes) {
    std::vector<GroupSnapshot> snapshots;
    for (const auto& group : groups) {
        GroupSnapshot snapshot{group, compile_glob(group.pattern), {}, {}};
        auto found = expand_glob(root, snapshot.glob, excluded);
        for (auto& path : found.files) {
            if (const FileState* state = known(path)) {
                snapshot.files.push_back({std::move(path), *state});
            } else if (auto now = file_state(root / path)) {
                snapshot.files.push_back({std::move(path), std::move(*now)});
            }
        }
        // The directories: the way down to the base, then the tree the walk listed.
        std::vector<std::string> dirs;
        for (auto at = parent_of(snapshot.glob.base); !at.empty(); at = parent_of(at)) dirs.insert(dirs.begin(), at);
        for (auto& d : found.directories)
            if (!d.empty()) dirs.push_back(std::move(d));
        for (auto& d : dirs)
            if (const auto st = lstat_of(root / d); st && S_ISDIR(st->st_mode)) snapshot.directories.push_back({d, mode_of(*st)});
        if (!found.excluded.empty())
            notes.push_back("group '" + group.name + "' (" + quote(group.pattern) + ") reaches into " +
                            list_some(found.excluded, 3) +
                            " (a build tree, the evidence directory or .git): never leased, never restored");
        snapshots.push_back(std::move(snapshot));
    }
    return snapshots;
}

}  // namespace

std::vector<std::string> FixtureStore::snapshot() {
    fs::create_directories(dir_);
    const TreeLock alone(root_, TreeAccess::exclusive);
    begin_invocation();
    return take_snapshot();
}

void FixtureStore::begin_invocation() {
    restore_pending_locked();
    prune_spans(root_);
    prune_stores(root_);
    register_store(root_, dir_);
    fs::remove(exclusive_marker());
    fs::remove(changes_file());  // what the runs of the last invocation changed is in its ledger
}

bool FixtureStore::snapshot_holds() {
    if (!fs::exists(lease_file()) || !fs::exists(tree_file())) return false;
    const auto pristine = load_pristine();
    const bool same_groups = std::equal(pristine.begin(), pristine.end(), groups_.begin(), groups_.end(),
                                        [](const GroupSnapshot& s, const FixtureGroup& g) {
                                            return s.group.name == g.name && s.group.pattern == g.pattern;
                                        });
    if (!same_groups) return false;
    const auto report = sync(false);
    return !report.changed() && !report.moved;
}

std::vector<std::string> FixtureStore::take_snapshot() {
    // The pristine copy and its stamps from last time: a file whose lstat metadata has not
    // moved since is not read again (at 1 GB of fixtures, that is the whole cost).
    std::map<std::string, FileState> kept;
    if (fs::exists(lease_file())) {
        for (auto& group : load_pristine())
            for (auto& f : group.files) kept.emplace(std::move(f.path), std::move(f.state));
        for (const auto& f : guarded()->files) kept.emplace(f.path, f.state);
    }
    const auto stamps = load_stamps(stamps_file());
    const auto known = [&](const std::string& path) -> const FileState* {
        const auto it = kept.find(path);
        const auto stamp = it == kept.end() ? std::nullopt : stamp_of(root_ / path);
        return stamp && stamps.unchanged(path, *stamp) ? &it->second : nullptr;
    };
    const auto excluded = [this](const std::string& relative, bool directory) { return this->excluded(relative, directory); };
    std::vector<std::string> notes;
    const auto snapshots = scan(root_, groups_, known, excluded, notes);
    std::set<std::string> members;
    for (const auto& group : snapshots)
        for (const auto& f : group.files) members.insert(f.path);
    auto tree = TreeLister(root_, excluded, members, known).list(dir_);  // hashed once per change, as the groups' files
    const auto copy = [&](const FixtureFile& f) {
        const auto it = kept.find(f.path);
        if (f.state.identity.rfind("sha256:", 0) != 0 || (it != kept.end() && it->second.identity == f.state.identity)) return;
        const auto to = pristine_path(f.path);
        fs::create_directories(to.parent_path());
        fs::copy_file(root_ / f.path, to, fs::copy_options::overwrite_existing);
    };
    for (const auto& group : snapshots)
        for (const auto& f : group.files) copy(f);
    for (const auto& f : tree.files) copy(f);
    write_file_atomic(tree_file(), tree_json(tree));
    write_file_atomic(lease_file(), lease_json(root_, snapshots, tree, tree_file()));
    save_stamps(stamps_file(), root_, snapshots, tree.files);
    const std::lock_guard<std::mutex> lock(guarded_mutex_);
    guarded_ = std::make_shared<const GuardedTree>(std::move(tree));
    return notes;
}

namespace {

// The group (by glob) a path belongs to, if any: a new entry there is the group's business.
class Members {
public:
    explicit Members(const std::vector<GroupSnapshot>& groups) {
        for (const auto& g : groups) regexes_.emplace_back(g.glob.regex, std::regex::ECMAScript);
    }
    bool contains(const std::string& path) const {
        return std::any_of(regexes_.begin(), regexes_.end(), [&](const std::regex& r) { return std::regex_match(path, r); });
    }

private:
    std::vector<std::regex> regexes_;
};

}  // namespace

TreeReport FixtureStore::sync(bool write, const fs::path& keep, const DirectoryStamps* since) {
    TreeReport report;
    if (!fs::exists(lease_file())) return report;  // never snapshotted: nothing can be dirty
    const auto stamps = load_stamps(stamps_file());
    const auto groups = load_pristine();
    const auto tree = guarded();
    // Directory modes first: a test may have made a directory unreadable, and nothing below it
    // could be read (but by root) until its mode is back. A check that finds one says so at once.
    std::set<std::string> group_dirs;  // a directory of a group and of the tree is the group's
    for (const auto& group : groups)
        for (const auto& d : group.directories) group_dirs.insert(d.path);
    const auto modes = [&](bool record) {
        for (const auto& group : groups)
            for (const auto& d : group.directories)
                if (put_back_mode(root_, d.path, d.mode, write) && record)
                    report.groups.push_back({group.group.name, "restored the mode of " + d.path + "/"});
        for (const auto& d : tree->directories)
            if (!group_dirs.count(d.path) && put_back_mode(root_, d.path, d.mode, write) && record)
                report.restored.push_back("mode of " + (d.path.empty() ? "." : d.path) + "/");
    };
    modes(true);
    if (!write && report.changed()) return report;
    const auto excluded = [this](const std::string& relative, bool directory) { return this->excluded(relative, directory); };
    // Content is read only where metadata says it may have changed.
    const auto differs = [&](const FixtureFile& f) {
        if (auto stamp = stamp_of(root_ / f.path); stamp && stamps.unchanged(f.path, *stamp)) return false;
        const auto st = lstat_of(root_ / f.path);
        if (!st || mode_of(*st) != f.state.mode) return true;  // a file made unreadable is not read
        auto now = file_state(root_ / f.path);
        return !now || now->identity != f.state.identity;
    };
    for (const auto& group : groups) {
        std::set<std::string> pristine;
        for (const auto& f : group.files) {
            pristine.insert(f.path);
            if (!differs(f)) continue;
            if (write && !keep.empty()) keep_copy(root_, f.path, keep);
            if (write) put_back(root_, pristine_path(f.path), f);
            report.groups.push_back({group.group.name, "restored " + f.path});
        }
        for (const auto& path : expand_glob(root_, group.glob, excluded).files) {
            if (pristine.count(path) != 0) continue;
            if (write && !keep.empty()) keep_copy(root_, path, keep);
            if (write) fs::remove(root_ / path);
            report.groups.push_back({group.group.name, "removed " + path});
        }
    }
    // The source tree outside the groups. What a restore replaces there is kept: it may be a
    // user's edit made while the tests ran.
    for (const auto& f : tree->files) {
        if (!differs(f)) continue;
        if (write) {
            if (report.kept.empty()) report.kept = keep.empty() ? dir_ / "replaced" / std::to_string(wall_clock_ns()) : keep;
            keep_copy(root_, f.path, report.kept);
            put_back(root_, pristine_path(f.path), f);
        }
        report.restored.push_back(f.path);
    }
    if (write && report.changed()) modes(false);  // directories a file's restore had to make again
    // New entries, in the directories whose mtime moved: left in place (a user's editor may
    // have saved them), but named.
    std::optional<Members> members;  // compiled only when a directory moved
    const auto member = [&](const std::string& path) {
        if (!members) members.emplace(groups);
        return members->contains(path);
    };
    std::vector<std::string> candidates;
    for (const auto& d : tree->directories) {
        const auto st = lstat_of(root_ / d.path);
        if (!st || !S_ISDIR(st->st_mode)) continue;
        const auto at = since ? since->find(d.path) : DirectoryStamps::const_iterator();
        if (mtime_of(*st) == (since && at != since->end() ? at->second : d.mtime_ns)) continue;
        report.moved = true;
        for (const auto& name : names_in(root_ / d.path).value_or(std::vector<std::string>{}))
            if (!std::binary_search(d.entries.begin(), d.entries.end(), name)) collect_new(joined(d.path, name), member, candidates);
    }
    report.left = left_in_place(std::move(candidates), tree->git);
    if (write) save_stamps(stamps_file(), root_, groups, tree->files);
    return report;
}

// A new entry under ROOT, if it is one the tree guards: not a group's (the group restore removes
// those), not excluded, not inside a hidden directory; a new directory for the files in it.
void FixtureStore::collect_new(const std::string& relative, const std::function<bool(const std::string&)>& member,
                               std::vector<std::string>& found) const {
    const auto st = lstat_of(root_ / relative);
    if (!st || member(relative)) return;
    const bool directory = S_ISDIR(st->st_mode);
    if (excluded(relative, directory) || (directory && name_of(relative)[0] == '.')) return;
    if (!directory) {
        found.push_back(relative);
        return;
    }
    for (const auto& name : names_in(root_ / relative).value_or(std::vector<std::string>{}))
        collect_new(joined(relative, name), member, found);
}

// The new files git does not ignore (every one outside a work tree), sorted.
std::vector<std::string> FixtureStore::left_in_place(std::vector<std::string> candidates, bool git) const {
    std::sort(candidates.begin(), candidates.end());
    if (!git || candidates.empty()) return candidates;
    std::vector<std::string> args = {"--literal-pathspecs", "ls-files", "-z", "--others", "--exclude-standard", "--"};
    args.insert(args.end(), candidates.begin(), candidates.end());
    const auto listed = run_git(root_, git_scratch(dir_), args);
    if (!listed) return candidates;  // git went away: report them all
    auto kept = split_nul(*listed);
    std::sort(kept.begin(), kept.end());
    return kept;
}

std::vector<std::string> FixtureStore::restore() {
    const TreeLock alone(root_, TreeAccess::exclusive);
    const auto report = sync(true);
    std::vector<std::string> changed;
    for (const auto& change : report.groups) changed.push_back(change.what);
    for (const auto& path : report.restored) changed.push_back("restored " + path + " (source tree)");
    return changed;
}

namespace {

// A run's pending marker: created (and flock-held) when its lease starts; "dirty" written into
// it while its tests' changes wait for a restore.
enum class Marker { gone, live, dirty, abandoned };

// Whether a restore is owed for `marker`. An abandoned marker (its run is gone: the kernel
// dropped the flock with the process) is removed while we hold it, so that it is handled once.
Marker claim_marker(const fs::path& marker) {
    const int fd = ::open(marker.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
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
        const int fd = ::open(entry.path().c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0) continue;
        const bool abandoned = ::flock(fd, LOCK_SH | LOCK_NB) == 0;
        ::close(fd);
        if (abandoned) return true;
    }
    return false;
}

// A registered fixture directory decides what a restore writes into ROOT: it is used only when
// it and what it restores from are ours (not links, owned by the effective uid). Says why not.
std::string distrusted_store(const fs::path& dir) {
    const auto me = ::geteuid();
    for (const auto& path : {dir, dir / "pristine", dir / "groups.json", dir / "tree.json", dir / "pending"}) {
        const auto st = lstat_of(path);
        if (!st) continue;
        if (S_ISLNK(st->st_mode)) return path.string() + " is a symbolic link";
        if (st->st_uid != me)
            return path.string() + " is owned by uid " + std::to_string(st->st_uid) + ", not by you (uid " + std::to_string(me) + ")";
    }
    return "";
}

}  // namespace

// Every build tree over ROOT keeps its markers in its own fixture directory (they outlive a
// reboot that empties the temp directory); the registry in the state directory says where. A
// live run that is dirty waits for the tree: it restores itself, unless someone holding the
// tree first (a snapshot of another build tree) does it for it: no snapshot ever takes a run's
// changes for pristine.
InterruptedRestore FixtureStore::restore_pending_locked() {
    auto stores = registered_stores(root_);
    const auto own = registry_path(dir_);
    if (std::find(stores.begin(), stores.end(), own) == stores.end()) stores.push_back(own);
    InterruptedRestore interrupted;
    for (const auto& dir : stores) {
        if (!fs::exists(dir / "pending")) continue;
        if (const auto why = distrusted_store(dir); !why.empty()) {
            std::cerr << "evgate: warning: not restoring from " << dir.string() << ": " << why << '\n';
            continue;
        }
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
        const auto report = dir == own ? sync(true, keep) : FixtureStore(root_, dir).sync(true, keep);
        if (!abandoned) continue;
        interrupted.completed = true;
        if (report.changed() && fs::exists(keep)) interrupted.kept = keep;
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

TreeReport FixtureStore::guard_collection(const std::string& key, const std::string& phase,
                                          const std::function<void()>& collect) {
    fs::create_directories(dir_);
    const TreeLock alone(root_, TreeAccess::exclusive);
    begin_invocation();
    if (!snapshot_holds()) take_snapshot();  // (the fixtures step has just taken one, or nothing changed since)
    std::exception_ptr failed;
    try {
        collect();
    } catch (...) {
        failed = std::current_exception();
    }
    auto report = sync(false);  // only reads, as after most collections
    if (report.changed()) report = sync(true);  // what the collection changed is never taken for pristine
    record_collection(key, phase, report);
    if (failed) std::rethrow_exception(failed);
    return report;
}

void FixtureStore::record_collection(const std::string& key, const std::string& phase, const TreeReport& report) const {
    const auto file = collection_file(key);
    if (!report.changed() && report.left.empty()) {
        std::error_code ignored;
        fs::remove(file, ignored);
        return;
    }
    JsonWriter json;
    auto& w = json.begin();
    w.StartObject();
    w.Key("phase"), w.String(phase);
    w.Key("groups"), w.StartArray();
    for (const auto& change : report.groups) {
        w.StartObject();
        w.Key("group"), w.String(change.group);
        w.Key("what"), write_path(w, change.what);
        w.EndObject();
    }
    w.EndArray();
    write_paths(w, "restored", report.restored);
    write_paths(w, "left", report.left);
    w.Key("kept"), write_path(w, report.kept.string());
    w.EndObject();
    write_file_atomic(file, std::string(json.text()) + "\n");
}

namespace {

// "README.txt in the source tree, outside every fixture group"
std::string in_the_tree(const std::vector<std::string>& restored) {
    return list_some(restored) + " in the source tree, outside every fixture group";
}

std::string kept_note(const std::string& kept) {
    return kept.empty() ? "" : " (what it replaced is kept in " + printable_path(kept) + ")";
}

}  // namespace

std::vector<TreeFinding> FixtureStore::findings(const std::map<std::string, std::string>& runs) const {
    std::vector<TreeFinding> found;
    std::map<std::string, std::string> left;  // path -> the run that first found it
    for (const char* key : {"discovery", "receipt"}) {
        if (!fs::exists(collection_file(key))) continue;
        const auto doc = read_json_file(collection_file(key));
        const auto source = collection_file(key).string();
        const auto phase = optional_string(doc, "phase", source).value_or(key);
        for (const auto& path : paths_member(doc, "left")) left.emplace(path, phase);
        std::set<std::string> groups;
        std::vector<std::string> files;
        if (const auto* changes = member(doc, "groups"); changes && changes->IsArray())
            for (const auto& c : changes->GetArray()) {
                groups.insert(string_member(c, "group", source));
                files.push_back(path_member(c, "what", source));
            }
        const auto restored = paths_member(doc, "restored");
        if (groups.empty() && restored.empty()) continue;
        TreeFinding f{std::string("tree:") + key, "", {groups.begin(), groups.end()}};
        std::string what;
        if (!groups.empty()) {
            for (const auto& g : groups) what += (what.empty() ? "fixture group '" : ", '") + g + "'";
            what += " (" + list_some(files) + ")";
        }
        if (!restored.empty()) {
            what += (what.empty() ? "" : " and ") + in_the_tree(restored);
            f.dirty.push_back(kSourceTree);
        }
        f.reason = phase + " changed " + what + ", outside any test; restored" +
                   kept_note(optional_string(doc, "kept", source).value_or(""));
        found.push_back(std::move(f));
    }
    std::map<std::string, std::pair<std::set<std::string>, std::string>> by_run;  // run -> restored, kept
    std::ifstream in(changes_file(), std::ios::binary);
    for (std::string line; std::getline(in, line);) {
        rapidjson::Document doc;
        doc.Parse(line.c_str(), line.size());
        if (doc.HasParseError() || !doc.IsObject()) continue;  // a torn line of a killed run
        const auto token = optional_string(doc, "token", "").value_or("");
        const auto run = optional_string(doc, "run", "").value_or("");
        for (const auto& path : paths_member(doc, "left")) left.emplace(path, run.empty() ? "a run" : run);
        const auto current = runs.find(token);
        auto restored = paths_member(doc, "restored");
        if (current == runs.end() || restored.empty()) continue;  // an execution done again since, or another invocation's
        auto& entry = by_run[current->second];
        for (auto& path : restored) entry.first.insert(std::move(path));
        if (const auto kept = optional_string(doc, "kept", "").value_or(""); !kept.empty()) entry.second = kept;
    }
    for (const auto& [run, entry] : by_run)
        found.push_back({"tree:" + run,
                         run + " changed " + in_the_tree({entry.first.begin(), entry.first.end()}) + "; restored" + kept_note(entry.second),
                         {kSourceTree}});
    std::vector<std::string> still;  // a file a later test deleted again was scratch after all
    for (const auto& [path, by] : left)
        if (lstat_of(root_ / path)) still.push_back(path + " (after " + by + ")");
    if (!still.empty())
        found.push_back({"tree:left", "new files under ROOT " + quote(printable_path(root_.string())) +
                                          " outside every fixture group, left there (never removed: a user's editor may have saved "
                                          "them): " + list_some(still, 10),
                         {kSourceTree}});
    return found;
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

std::shared_ptr<const GuardedTree> FixtureStore::guarded() const {
    const std::lock_guard<std::mutex> lock(guarded_mutex_);
    if (!guarded_) guarded_ = std::make_shared<const GuardedTree>(parse_tree(tree_file()));
    return guarded_;
}

DirectoryStamps FixtureStore::directory_stamps() const {
    DirectoryStamps stamps;
    for (const auto& d : guarded()->directories)
        if (const auto st = lstat_of(root_ / d.path)) stamps.emplace(d.path, mtime_of(*st));
    return stamps;
}

FixtureStore::Lease::Lease(FixtureStore& store, TreeAccess access, std::string run) : store_(store), run_(std::move(run)) {
    if (store.empty()) return;  // no groups, no snapshot: nothing to hold
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
    seen_ = store.directory_stamps();
}

std::vector<FixtureChange> FixtureStore::Lease::restore() {
    if (!lock_) return {};
    auto seen = store_.sync(false, {}, &seen_);
    // Entries came and went outside the groups (scratch files): runs beside this one may have
    // seen them. Notifications tell it per test; this is the check that never misses it.
    if (seen.moved) span_.touched = true;
    if (!seen.changed()) {
        record(seen);
        seen_ = store_.directory_stamps();
        return {};
    }
    // Said before the shared lock is dropped to wait for the tree alone: whoever gets it
    // first restores for us, rather than taking our changes for pristine.
    span_.touched = true;
    if (lock_->access() == TreeAccess::shared && ::pwrite(marker_fd_, "dirty\n", 6, 0) != 6)
        throw Error("cannot mark " + marker_.string() + " dirty: " + std::strerror(errno));
    lock_->make_exclusive();
    auto put_back = store_.sync(true, {}, &seen_);
    if (::ftruncate(marker_fd_, 0) != 0)
        throw Error("cannot clear " + marker_.string() + ": " + std::strerror(errno));
    put_back.left.insert(put_back.left.end(), seen.left.begin(), seen.left.end());
    record(put_back.changed() ? put_back : seen);
    seen_ = store_.directory_stamps();
    return put_back.changed() ? put_back.groups : seen.groups;  // unchanged: someone restored it while we waited
}

// What this run left changed in the source tree, for the gate (the groups' changes are the
// tests' records).
void FixtureStore::Lease::record(const TreeReport& report) const {
    if (report.restored.empty() && report.left.empty()) return;
    JsonWriter json;
    auto& w = json.begin();
    w.StartObject();
    w.Key("run"), w.String(run_);
    w.Key("token"), w.String(span_.token);
    write_paths(w, "restored", report.restored);
    write_paths(w, "left", report.left);
    w.Key("kept"), write_path(w, report.kept.string());
    w.EndObject();
    const auto line = std::string(json.text()) + "\n";
    // One write with O_APPEND: the line is whole or absent, whatever other runs append.
    const int fd = ::open(store_.changes_file().c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    const bool whole = fd >= 0 && ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
    if (fd >= 0) ::close(fd);
    if (!whole) throw Error("cannot append to " + store_.changes_file().string() + ": " + std::strerror(errno));
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
        if (const auto* files = member(g, "files"); files && files->IsArray())
            for (const auto& f : files->GetArray()) snapshot.files.push_back(read_file_entry(f, source));
        if (const auto* dirs = member(g, "directories"); dirs && dirs->IsArray())
            for (const auto& d : dirs->GetArray()) {
                const auto* mode = member(d, "mode");
                if (mode == nullptr || !mode->IsUint()) throw InputError(source, 0, "a directory without a 'mode'");
                snapshot.directories.push_back({path_member(d, "path", source), mode->GetUint()});
            }
        snapshots.push_back(std::move(snapshot));
    }
    return snapshots;
}

}  // namespace evgate
