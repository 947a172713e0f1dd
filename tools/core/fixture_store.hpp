// Fixture groups on disk: the pristine copy in the build tree, the lease file the plugin
// checks every test against, and restoring the groups after every run (and after a kill).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "file_identity.hpp"
#include "fixture_manifest.hpp"
#include "glob.hpp"
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

// Held while fixture groups may be written: other evgate processes over the same ROOT (another
// build tree of the same sources, another ctest) wait. Re-entrant within one process.
class FixtureLock {
public:
    explicit FixtureLock(const std::filesystem::path& root);
    ~FixtureLock();
    FixtureLock(const FixtureLock&) = delete;
    FixtureLock& operator=(const FixtureLock&) = delete;
};

class FixtureStore {
public:
    // Parses the suite's fixture manifest (none: a store without groups).
    explicit FixtureStore(const SuiteConfig& suite);

    bool empty() const { return groups_.empty(); }
    const std::vector<FixtureGroup>& groups() const { return groups_; }
    std::filesystem::path lease_file() const { return dir_ / "groups.json"; }

    // The ROOT-wide lock a run holds from before its first process until its last restore
    // (nothing to hold without groups).
    std::optional<FixtureLock> hold() const;
    // Completes a pending restore, then records the groups as they are now as pristine.
    void snapshot();
    // Marks the tree as possibly dirty until restore() completes.
    void begin_run(const std::string& run_id);
    // Brings every group back to pristine; returns what it had to change ("restored x").
    std::vector<std::string> restore();
    // A run that was killed left the marker: restore before anything reads the fixtures.
    bool restore_if_pending();

private:
    std::vector<GroupSnapshot> load_pristine() const;
    std::filesystem::path pristine_path(const std::string& relative) const { return dir_ / "pristine" / relative; }
    std::filesystem::path pending_marker() const { return dir_ / "restore.pending"; }
    std::filesystem::path stamps_file() const { return dir_ / "stamps.json"; }

    std::filesystem::path root_;
    std::filesystem::path dir_;
    std::vector<FixtureGroup> groups_;
};

}  // namespace evgate
