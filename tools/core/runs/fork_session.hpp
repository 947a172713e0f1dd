// The launcher of a run's pytest processes (launcher.hpp): forks of the suite's collected
// session (ForkLauncher) while its server serves the run, else fresh processes (ProcessLauncher),
// and says which and why. A run whose environment is not the collection's declines forks; a
// server that refuses, is gone or misbehaves is asked no more, and the run goes on in processes;
// a fork that shares the collection's sandbox stops forks for the whole invocation.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "inputs/suite_config.hpp"
#include "runs/fork_server.hpp"
#include "runs/launcher.hpp"
#include "runs/receipt.hpp"

namespace evgate {

class ForkSession {
public:
    // For a run of `receipt`: forks when the receipt says a server serves its runs.
    ForkSession(const SuiteConfig& suite, const Receipt& receipt);
    // With `fork` for the forks (ForkLauncher; a fake in unit tests) and `process` for the rest.
    ForkSession(const SuiteConfig& suite, const Isolation& isolation, std::unique_ptr<Launcher> fork, std::unique_ptr<Launcher> process);

    // No forks for this run (a perturbed run: a fresh interpreter), saying why.
    void decline(std::string why);
    // `spec` (a pytest process as pytest_command.hpp makes it, with its record channel) as a
    // fork while the server serves this run, else as a process. Throws Stopped as run_process does.
    LaunchResult run(const LaunchSpec& spec);
    // Whether the last run() was a fork.
    bool forked() const { return forked_; }

    bool forking() const { return forking_; }
    // The collection's PYTHONHASHSEED, which every process of the run gets ("" when the receipt
    // fixed none).
    const std::string& hash_seed() const { return hash_seed_; }
    int forks() const { return forks_; }
    // The run starts over: the forks so far are no evidence of it.
    void start_over() { forks_ = 0; }
    // "fork", "process" or "fork, then process": how the run's processes were started.
    std::string isolation(int processes) const;
    // Why processes were started ("" when every one was a fork).
    const std::string& why() const { return why_; }
    // Whether the last fork wrote in, or ran while another fork had written in, the collection's
    // HOME or TMPDIR: a path a module took at import points there in every fork, so forks share
    // what each run should have fresh. The fork's records are no evidence then: the run starts
    // over in a process, and no run of the invocation forks from then on (evidence/forks.declined).
    bool shared_the_collection_sandbox() const { return shared_; }

private:
    ForkSession(const SuiteConfig& suite, const Receipt& receipt, const Isolation& isolation);
    std::optional<LaunchResult> fork(const LaunchSpec& spec);
    void lost(const std::string& why);

    // Forks declined from now on, and why, for every run of the invocation.
    void decline_for_all(const std::string& why);
    bool declined_elsewhere();

    std::unique_ptr<Launcher> fork_, process_;
    std::filesystem::path collection_sandbox_, declined_file_;
    std::string sandbox_fingerprint_;  // the collection's sandbox as the collection left it
    bool shared_ = false;
    std::string hash_seed_;
    bool forking_ = false;
    bool forked_ = false;
    int forks_ = 0;
    std::string why_;
};

}  // namespace evgate
