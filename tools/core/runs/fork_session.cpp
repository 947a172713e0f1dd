#include "runs/fork_session.hpp"

#include "runs/fork_launcher.hpp"

#include "inputs/evidence_layout.hpp"
#include "io/atomic_file.hpp"
#include "io/error.hpp"
#include "io/json_io.hpp"
#include "runs/sandbox.hpp"

namespace fs = std::filesystem;

namespace evgate {

ForkSession::ForkSession(const SuiteConfig& suite, const Receipt& receipt) : ForkSession(suite, receipt, receipt_isolation(suite, receipt)) {}

ForkSession::ForkSession(const SuiteConfig& suite, const Receipt& receipt, const Isolation& isolation)
    : ForkSession(suite, isolation, std::make_unique<ForkLauncher>(isolation.socket, isolation.server, receipt.id), std::make_unique<ProcessLauncher>()) {}

ForkSession::ForkSession(const SuiteConfig& suite, const Isolation& isolation, std::unique_ptr<Launcher> fork, std::unique_ptr<Launcher> process)
    : fork_(std::move(fork)), process_(std::move(process)) {
    forking_ = isolation.forks;
    why_ = isolation.why;
    hash_seed_ = isolation.hash_seed;
    declined_file_ = suite.evidence_dir / evidence::kForksDeclined;
    if (forking_) {
        collection_sandbox_ = collection_sandbox(suite);
        sandbox_fingerprint_ = isolation.collection_sandbox;
        declined_elsewhere();
    }
}

bool ForkSession::declined_elsewhere() {
    std::error_code ec;
    if (!fs::exists(declined_file_, ec)) return false;
    std::string why;
    try {
        why = read_file(declined_file_);
    } catch (const Error&) {
        why = "another run of this invocation stopped forking";
    }
    decline(why);
    return true;
}

void ForkSession::decline_for_all(const std::string& why) {
    decline(why);
    write_file_atomic(declined_file_, why);
}

void ForkSession::decline(std::string why) {
    if (!forking_) return;
    forking_ = false;
    why_ = std::move(why);
}

std::string ForkSession::isolation(int processes) const {
    if (forks_ == 0) return "process";
    return forks_ == processes ? "fork" : "fork, then process";
}

void ForkSession::lost(const std::string& why) {
    forking_ = false;
    why_ = "the fork server: " + why;
}

LaunchResult ForkSession::run(const LaunchSpec& spec) {
    shared_ = false;
    auto forked = fork(spec);
    forked_ = forked.has_value();
    return forked ? *std::move(forked) : *process_->run(spec);
}

// A fork while the server serves this run; then whether it shared the collection's sandbox.
std::optional<LaunchResult> ForkSession::fork(const LaunchSpec& spec) {
    if (!forking_ || declined_elsewhere()) return std::nullopt;
    const auto before = sandbox_fingerprint(collection_sandbox_);
    auto result = fork_->run(spec);
    if (!fork_->serving()) lost(fork_->why_not());
    if (!result) return std::nullopt;
    ++forks_;
    if (!sandbox_fingerprint_.empty() && (before != sandbox_fingerprint_ || sandbox_fingerprint(collection_sandbox_) != before)) {
        shared_ = true;
        decline_for_all("a test wrote in the collection's HOME or TMPDIR (" + collection_sandbox_.string() +
                        "), through a path its module took at import (tempfile.gettempdir(), Path.home()): every fork "
                        "shares it, where each run must start with its own, empty; from then on every run starts processes");
    }
    return result;
}

}  // namespace evgate
