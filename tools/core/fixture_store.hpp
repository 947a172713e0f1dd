// What a run may not leave changed in ROOT, on disk: the fixture groups (their files and the
// modes of their directories) and the rest of the source tree (the guarded files and the modes
// of their directories); the pristine copy of both in the build tree; the lease file the plugin
// checks every test against; and restoring after every pytest process, after a collection and
// after a kill. How runs share the tree with each other is shared_tree.hpp.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "file_identity.hpp"
#include "fixture_manifest.hpp"
#include "glob.hpp"
#include "shared_tree.hpp"
#include "suite_config.hpp"

namespace evgate {

struct FixtureFile {
    std::string path;  // relative to ROOT, '/'-separated
    FileState state;
};

struct FixtureDirectory {
    std::string path;  // relative to ROOT; "" is ROOT itself
    unsigned mode = 0;  // permission bits
};

struct GroupSnapshot {
    FixtureGroup group;
    GlobPattern glob;
    std::vector<FixtureFile> files;
    std::vector<FixtureDirectory> directories;  // the way down to the base (ROOT excluded) and the tree below it
};

// The source tree outside the groups: the guarded files are ROOT's git-tracked and untracked
// files git does not ignore (when ROOT is in a git work tree), else every regular file and link
// outside hidden directories; never a build tree, the evidence directory, .git or a group member.
struct TreeDirectory {
    std::string path;  // relative to ROOT; "" is ROOT itself
    unsigned mode = 0;
    std::int64_t mtime_ns = 0;
    std::vector<std::string> entries;  // its names at the snapshot, sorted: a name not among them is new
};

struct GuardedTree {
    bool git = false;  // listed by git: new files it ignores are not reported
    std::vector<FixtureFile> files;
    std::vector<TreeDirectory> directories;  // parents before children
    std::vector<std::string> excluded;       // build trees and the evidence directory, when inside ROOT
};

struct Receipt;

// What a restore had to put back in one group: "restored x", "removed y".
struct FixtureChange {
    std::string group;
    std::string what;
};

// What one check of the tree found (and, when it wrote, put back).
struct TreeReport {
    std::vector<FixtureChange> groups;  // in the fixture groups
    std::vector<std::string> restored;  // guarded files and directory modes: "README.txt", "mode of docs/"
    std::vector<std::string> left;      // new files under ROOT outside the groups: never removed
    bool moved = false;                 // entries came and went outside the groups (directory mtimes)
    std::filesystem::path kept;         // where what the restore replaced in the source tree is kept
    bool changed() const { return !groups.empty() || !restored.empty(); }
};

// What the gate turns into a blocking suite row: a phase (a collection, a run) that left the
// tree changed.
struct TreeFinding {
    std::string check;  // "tree:discovery", "tree:receipt", "tree:seed.3", "tree:left"
    std::string reason;
    std::vector<std::string> dirty;  // the groups, and "(source tree)"
};

// What completing the restore of a killed run did. Its files are put back or removed (the
// run is gone, nobody else would), but what they held is kept in the build tree: a user may
// have edited them since.
struct InterruptedRestore {
    bool completed = false;
    std::filesystem::path kept;  // empty: the groups were already as pristine
    explicit operator bool() const { return completed; }
};

// The entries of `dir` (relative to ROOT) and their mtime, as a lease last saw them.
using DirectoryStamps = std::map<std::string, std::int64_t>;

class FixtureStore {
public:
    // Parses the suite's fixture manifest (none: a store without groups).
    explicit FixtureStore(const SuiteConfig& suite);

    // Nothing to lease: no groups, and no snapshot of the source tree yet.
    bool empty() const;
    const std::vector<FixtureGroup>& groups() const { return groups_; }
    std::filesystem::path lease_file() const { return dir_ / "groups.json"; }

    // Alone on the tree: completes pending restores, then records the groups and the source
    // tree as they are now as pristine. The start of an invocation: its runs may go side by side
    // again. Returns one line per glob that reached into a build tree, the evidence directory or
    // .git (never leased).
    std::vector<std::string> snapshot();
    // Alone on the tree: brings the groups and the source tree back to pristine; returns what it
    // had to change ("restored x", "removed y").
    std::vector<std::string> restore();
    // Runs killed mid-run left their marker: restores before anything reads the fixtures.
    InterruptedRestore restore_if_pending();

    // A pytest process outside any run (a collection), alone on the tree: pending restores
    // completed and a snapshot taken before `collect`; afterwards whatever it changed is put
    // back (what it replaced kept in the build tree) and reported, new files named.
    // Recorded for the gate under `key` ("discovery", "receipt"; `phase` is how its row names
    // it), replacing what an earlier collection of that kind recorded. The tree is put back and
    // the record written even when `collect` throws.
    TreeReport guard_collection(const std::string& key, const std::string& phase, const std::function<void()>& collect);
    // Every finding the gate blocks on: the collections' records, the source-tree changes of the
    // runs whose lease tokens are in `runs` (token -> run id: executions redone since do not
    // count), and the new files runs left that are still there.
    std::vector<TreeFinding> findings(const std::map<std::string, std::string>& runs) const;

    // How the runs of this receipt hold the groups: side by side, unless a test declares
    // writes or a run of this invocation already changed them.
    TreeAccess access_for(const Receipt& receipt) const;
    // Whether the run holding the lease `token` ran while another run changed the groups.
    bool overlapped_a_change(const std::string& token) const;

    // One run's hold on the tree, from before its first pytest process to its last restore.
    class Lease {
    public:
        // `run`: the run's id, for what it records.
        Lease(FixtureStore& store, TreeAccess access, std::string run = "");
        ~Lease();
        Lease(const Lease&) = delete;
        Lease& operator=(const Lease&) = delete;

        const std::string& token() const { return span_.token; }
        // After each pytest process: the groups and the source tree back to pristine. Reads
        // only, unless something changed: then it takes the tree alone (for the rest of the run)
        // and writes. Returns what it put back in the groups; what it found in the source tree
        // is recorded for the gate.
        std::vector<FixtureChange> restore();
        // The run's tests changed the groups or the tree: runs beside it cannot be trusted.
        void touched() { span_.touched = true; }

    private:
        void record(const TreeReport& report) const;

        FixtureStore& store_;
        std::optional<TreeLock> lock_;
        int marker_fd_ = -1;
        std::filesystem::path marker_;
        RunSpan span_;
        std::string run_;
        DirectoryStamps seen_;  // directory mtimes after the last check
    };

private:
    // The store of another build tree over the same ROOT, to complete a restore it owes.
    FixtureStore(std::filesystem::path root, std::filesystem::path dir);

    // What differs from pristine; with `write`, puts it back (the tree held alone), keeping what
    // it replaces under `keep` (a killed run's groups) and what it replaces in the source tree
    // under replaced/. `since`: directory mtimes to find new entries against (nullptr: the
    // snapshot's).
    TreeReport sync(bool write, const std::filesystem::path& keep = {}, const DirectoryStamps* since = nullptr);
    // The start of an invocation (the tree held alone): pending restores completed, the last
    // invocation's turn-taking and change records dropped.
    void begin_invocation();
    std::vector<std::string> take_snapshot();  // the tree held alone
    // Whether the last snapshot still describes the tree: same groups, nothing differs from
    // pristine, no directory's entries moved (the tree held alone).
    bool snapshot_holds();
    // Completes every restore owed by a build tree over ROOT (the tree held alone).
    InterruptedRestore restore_pending_locked();
    std::vector<GroupSnapshot> load_pristine() const;
    std::shared_ptr<const GuardedTree> guarded() const;  // read once per store
    DirectoryStamps directory_stamps() const;
    bool excluded(const std::string& relative, bool directory) const;
    void collect_new(const std::string& relative, const std::function<bool(const std::string&)>& member,
                     std::vector<std::string>& found) const;
    std::vector<std::string> left_in_place(std::vector<std::string> candidates, bool git) const;
    void record_collection(const std::string& key, const std::string& phase, const TreeReport& report) const;
    std::filesystem::path pristine_path(const std::string& relative) const { return dir_ / "pristine" / relative; }
    std::filesystem::path pending_dir() const { return dir_ / "pending"; }
    std::filesystem::path exclusive_marker() const { return dir_ / "exclusive"; }
    std::filesystem::path stamps_file() const { return dir_ / "stamps.json"; }
    std::filesystem::path tree_file() const { return dir_ / "tree.json"; }
    std::filesystem::path changes_file() const { return dir_ / "tree-changes.jsonl"; }
    std::filesystem::path collection_file(const std::string& key) const { return dir_ / ("collection." + key + ".json"); }

    std::filesystem::path root_;
    std::filesystem::path dir_;
    std::filesystem::path evidence_dir_;
    std::vector<FixtureGroup> groups_;
    mutable std::mutex guarded_mutex_;  // runs of one rerun step check side by side
    mutable std::shared_ptr<const GuardedTree> guarded_;
};

}  // namespace evgate
