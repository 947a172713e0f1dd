#include "fixture_store.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <set>

#include <sys/stat.h>
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

// A path below ROOT whose directories are all real directories (no link leads out of ROOT).
bool safe_below_root(const fs::path& root, const std::string& relative) {
    fs::path at = root;
    const fs::path rel(relative);
    for (auto it = rel.begin(); it != rel.end() && std::next(it) != rel.end(); ++it) {
        at /= *it;
        std::error_code ec;
        auto status = fs::symlink_status(at, ec);
        if (ec) return !fs::exists(status);  // missing: will be created as a directory
        if (fs::is_symlink(status) || !fs::is_directory(status)) return false;
    }
    return true;
}

// Replaces `target` (never writing through a link at its place) with the pristine `file`.
void put_back(const fs::path& root, const fs::path& pristine, const FixtureFile& file) {
    if (!safe_below_root(root, file.path))
        throw Error("cannot restore " + (root / file.path).string() + ": a directory on its path is now a link or a file");
    const fs::path target = root / file.path;
    fs::create_directories(target.parent_path());
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

}  // namespace

FixtureStore::FixtureStore(const SuiteConfig& suite) : root_(suite.root), dir_(suite.fixtures_dir()) {
    if (!suite.fixtures) return;
    std::ifstream in(*suite.fixtures);
    if (!in) throw InputError(suite.fixtures->string(), 0, "cannot read the fixture manifest");
    groups_ = parse_fixture_manifest(in, suite.fixtures->string());
}

void FixtureStore::snapshot() {
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
}

void FixtureStore::begin_run(const std::string& run_id) {
    if (fs::exists(lease_file())) write_file_atomic(pending_marker(), run_id + "\n");
}

std::vector<std::string> FixtureStore::restore() {
    std::vector<std::string> changed;
    if (!fs::exists(lease_file())) return changed;  // never snapshotted: nothing can be dirty
    for (const auto& group : load_pristine()) {
        std::set<std::string> pristine;
        for (const auto& f : group.files) {
            pristine.insert(f.path);
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
    fs::remove(pending_marker());
    return changed;
}

bool FixtureStore::restore_if_pending() {
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
