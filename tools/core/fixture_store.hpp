// Fixture groups on disk: the pristine copy in the build tree, the lease file the plugin
// checks every test against, and restoring the groups after every run (and after a kill).
// How runs share the groups with each other is shared_tree.hpp.
#pragma once

#include <filesystem>
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

struct GroupSnapshot {
    FixtureGroup group;
    GlobPattern glob;
    std::vector<FixtureFile> files;
};

struct Receipt;

// What a restore had to put back in one group: "restored x", "removed y".
struct FixtureChange {
    std::string group;
    std::string what;
};

// What completing the restore of a killed run did. Its files are put back or removed (the
// run is gone, nobody else would), but what they held is kept in the build tree: a user may
// have edited them since.
struct InterruptedRestore {
    bool completed = false;
    std::filesystem::path kept;  // empty: the groups were already as pristine
    explicit operator bool() const { return completed; }
};

class FixtureStore {
public:
    // Parses the suite's fixture manifest (none: a store without groups).
    explicit FixtureStore(const SuiteConfig& suite);

    bool empty() const { return groups_.empty(); }
    const std::vector<FixtureGroup>& groups() const { return groups_; }
    std::filesystem::path lease_file() const { return dir_ / "groups.json"; }

    // Alone on the tree: completes pending restores, then records the groups as they are now
    // as pristine. The start of an invocation: its runs may go side by side again.
    void snapshot();
    // Alone on the tree: brings every group back to pristine; returns what it had to change
    // ("restored x", "removed y").
    std::vector<std::string> restore();
    // Runs killed mid-run left their marker: restores before anything reads the fixtures.
    InterruptedRestore restore_if_pending();

    // How the runs of this receipt hold the groups: side by side, unless a test declares
    // writes or a run of this invocation already changed them.
    TreeAccess access_for(const Receipt& receipt) const;
    // Whether the run holding the lease `token` ran while another run changed the groups.
    bool overlapped_a_change(const std::string& token) const;

    // One run's hold on the groups, from before its first pytest process to its last restore.
    class Lease {
    public:
        Lease(FixtureStore& store, TreeAccess access);
        ~Lease();
        Lease(const Lease&) = delete;
        Lease& operator=(const Lease&) = delete;

        const std::string& token() const { return span_.token; }
        // After each pytest process: the groups back to pristine. Reads only, unless something
        // changed: then it takes the tree alone (for the rest of the run) and writes. Returns
        // what it put back.
        std::vector<FixtureChange> restore();
        // The run's tests changed the groups: runs beside it cannot be trusted.
        void touched() { span_.touched = true; }

    private:
        FixtureStore& store_;
        std::optional<TreeLock> lock_;
        int marker_fd_ = -1;
        std::filesystem::path marker_;
        RunSpan span_;
    };

private:
    // The store of another build tree over the same ROOT, to complete a restore it owes.
    FixtureStore(std::filesystem::path root, std::filesystem::path dir);

    // What differs from pristine; with `write`, puts it back (the tree held alone), keeping
    // what it replaces or removes under `keep` when there is one.
    std::vector<FixtureChange> sync(bool write, const std::filesystem::path& keep = {});
    // Completes every restore owed by a build tree over ROOT (the tree held alone).
    InterruptedRestore restore_pending_locked();
    std::vector<GroupSnapshot> load_pristine() const;
    std::filesystem::path pristine_path(const std::string& relative) const { return dir_ / "pristine" / relative; }
    std::filesystem::path pending_dir() const { return dir_ / "pending"; }
    std::filesystem::path exclusive_marker() const { return dir_ / "exclusive"; }
    std::filesystem::path stamps_file() const { return dir_ / "stamps.json"; }

    std::filesystem::path root_;
    std::filesystem::path dir_;
    std::vector<FixtureGroup> groups_;
};

}  // namespace evgate
