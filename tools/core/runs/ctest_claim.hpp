// One ctest at a time in a build tree. Every step ctest runs (its parent process is ctest)
// claims the suite's evidence directory for that ctest before it reads or writes anything:
// the steps of one invocation share the claim and go side by side under -j; a step of a second
// ctest fails at once, naming the first. A claim whose ctest is gone (killed, or finished) is
// taken over, unless a step it started is still running. Commands run by hand (their parent is
// not ctest) claim nothing. The claim is a file in the evidence directory, read and written
// under flock; processes are known by pid and start time (/proc), so a reused pid is no owner.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace evgate {

struct ProcessIdentity {
    int pid = 0;
    std::uint64_t start = 0;  // clock ticks after boot, field 22 of /proc/<pid>/stat
    bool operator==(const ProcessIdentity& o) const { return pid == o.pid && start == o.start; }
};

// The process as it is now; nullopt when it is gone or a zombie.
std::optional<ProcessIdentity> process_identity(int pid);

struct CtestClaim {
    std::optional<ProcessIdentity> ctest;  // the invocation that holds the build tree
    std::vector<ProcessIdentity> steps;    // its steps that were running when last written
};

std::string claim_text(const CtestClaim& claim);
CtestClaim parse_claim(const std::string& text);  // what it cannot read it leaves out

// `held` claimed by `ctest` for its step `step`: the new claim, or (in `refusal`) why not.
// `alive` says whether a recorded process still runs (same pid, same start time).
CtestClaim take_claim(const CtestClaim& held, const ProcessIdentity& ctest, const ProcessIdentity& step,
                      const std::function<bool(const ProcessIdentity&)>& alive, std::string& refusal);

// The ctest that runs this process (its parent), if ctest does.
std::optional<ProcessIdentity> ctest_parent();

// Claims `evidence_dir` for the ctest that runs this process, if ctest does; throws Error
// ("another ctest is running in this build tree (pid N)") when another one holds it.
void claim_for_ctest(const std::filesystem::path& evidence_dir);

}  // namespace evgate
