// The fixture groups of one ROOT as a resource that runs share: every build tree over the same
// sources, every ctest invocation, every run. Runs that only read go side by side under a
// shared lock; whoever writes the groups (a snapshot, a restore, a run of tests that declare
// writes) holds the lock alone. A run that changed the groups while others read them logs its
// span, and the runs it overlapped are run again alone: optimistic, then validated.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace evgate {

enum class TreeAccess { shared, exclusive };

// Where evgate keeps the state that decides what is written into a source tree and outlives a
// build tree: the lock, the span log and the store registry of each ROOT. Per user:
// EVIDENCE_GATE_STATE_DIR if set, else $XDG_RUNTIME_DIR/evidence-gate, else
// <temp dir>/evidence-gate-<uid>. Created with mode 0700 and, before it is trusted, checked with
// lstat: a directory, not a link, owned by the effective uid, no group or other permission bits
// (another local user must not be able to plant a registry that makes a restore write their
// content into this user's tree, nor a lock that denies the suite). Throws Error saying what is
// wrong and what to do.
std::filesystem::path state_dir();
// The checks state_dir() makes, on `dir`.
void verify_state_dir(const std::filesystem::path& dir);
// The temp directory: TMPDIR when it names a directory, else /tmp (saying so once on stderr).
std::filesystem::path temp_dir();

// flock(2) on a lock file per ROOT in the state directory. Each object has its own open file,
// so two threads of one process exclude each other like two processes do. Not re-entrant.
class TreeLock {
public:
    TreeLock(const std::filesystem::path& root, TreeAccess access);
    ~TreeLock();
    TreeLock(const TreeLock&) = delete;
    TreeLock& operator=(const TreeLock&) = delete;

    TreeAccess access() const { return access_; }
    // Shared to exclusive. flock drops the shared lock before it waits, so two readers that
    // both want to write never deadlock; whatever was read under the shared lock must be
    // read again.
    void make_exclusive();

private:
    void take(TreeAccess access);

    std::string file_;
    int fd_ = -1;
    TreeAccess access_;
};

// One execution of a run, as the span log keeps it.
struct RunSpan {
    std::string token;  // unique per execution: a run done again gets a new one
    std::int64_t start_ns = 0;
    std::int64_t end_ns = 0;
    bool touched = false;  // its tests, or the restore after it, changed the groups
};

std::string new_run_token();
std::int64_t wall_clock_ns();

// The span log of a ROOT, beside its lock file in the state directory. Append while holding the lock, so that an
// exclusive holder may prune it.
void log_span(const std::filesystem::path& root, const RunSpan& span);
std::vector<RunSpan> read_spans(const std::filesystem::path& root);
// Drops spans older than a day; only with the lock held exclusively.
void prune_spans(const std::filesystem::path& root);

// The fixture directories (one per build tree) that lease ROOT's groups, so that whoever holds
// the tree alone can complete a restore that any of them owes. Register while holding the lock;
// only an exclusive holder prunes (directories that are gone).
void register_store(const std::filesystem::path& root, const std::filesystem::path& store_dir);
// How the registry spells a fixture directory: absolute, links resolved, no trailing '/'.
std::filesystem::path registry_path(const std::filesystem::path& store_dir);
std::vector<std::filesystem::path> registered_stores(const std::filesystem::path& root);
void prune_stores(const std::filesystem::path& root);

// Whether the run with `token` ran while another run changed the groups. A run without a
// span (never leased, or killed before it logged one) overlapped nothing that is known.
bool overlapped_a_change(const std::vector<RunSpan>& spans, const std::string& token);
// Whether the run with `token` changed the groups while another run went beside it: what its
// leases saw may be the other run's doing (a file it made and removed again, which that run's
// own restore never sees), so its blame is not certain until it runs alone.
bool changed_beside_another(const std::vector<RunSpan>& spans, const std::string& token);

}  // namespace evgate
