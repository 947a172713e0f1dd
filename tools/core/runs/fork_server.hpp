// The collected session the receipt step leaves serving forks (templates/pytest/evidence_gate_fork.py):
// one per evidence directory and ctest invocation, reached through a Unix socket in the per-user
// state directory (fixtures/shared_tree.hpp), named by a hash of the evidence directory (two build
// trees never share one). The receipt's own pytest forks it once it has collected; the receipt
// binds it to the receipt's id and records it (and the hash seed every run gets); the release
// step stops it. It also ends when its ctest is gone or it has been idle too long. A run's
// requests are fork_launcher.hpp; which runs fork, fork_session.hpp.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "inputs/suite_config.hpp"
#include "runs/ctest_claim.hpp"
#include "runs/receipt.hpp"

namespace evgate {

// How the runs of a receipt are isolated, as its receipt says.
struct Isolation {
    bool forks = false;  // a server serves this receipt's runs
    std::string why;     // why every run starts processes, when it does
    std::optional<ProcessIdentity> server;
    std::filesystem::path socket;
    std::string hash_seed;           // PYTHONHASHSEED of the collection: every run of the receipt gets it
    std::string collection_sandbox;  // sandbox_fingerprint() of the collection's sandbox once it ended
};

// The suite's socket: <state dir>/fork-<16 hex digits of SHA-256 of the evidence dir>.sock.
std::filesystem::path fork_socket(const SuiteConfig& suite);

// What `receipt` (the receipt the run loaded) says in receipt.json; processes, saying why, when
// receipt.json is not that receipt or says nothing.
Isolation receipt_isolation(const SuiteConfig& suite, const Receipt& receipt);

// The receipt step's side. Decides whether to ask for a server (ISOLATION fork, a ctest to own
// it, a socket path that fits), stopping one an earlier receipt left; its hooks() fix the hash
// seed of the receipt's pytest, ask it to fork the server, spare that server when the
// collection ends, bind it to the receipt and record it there. A server started but not bound
// is stopped when this object goes.
class ForkServerStart {
public:
    explicit ForkServerStart(const SuiteConfig& suite);
    ~ForkServerStart();
    ForkServerStart(const ForkServerStart&) = delete;
    ForkServerStart& operator=(const ForkServerStart&) = delete;

    ReceiptHooks hooks();
    // After take_receipt: what the receipt says.
    const Isolation& isolation() const { return isolation_; }

private:
    void prepare(ProcessSpec& spec);
    void annotate(rapidjson::Document& receipt);
    void bind(const std::string& receipt_id, std::size_t tests);
    pid_t server_pid() const;  // from the status the receipt's pytest wrote; 0: none

    const SuiteConfig& suite_;
    bool asking_ = false;
    std::optional<ProcessIdentity> owner_;
    std::filesystem::path socket_, status_;
    Isolation isolation_;
    pid_t started_ = 0;  // the server the receipt's pytest said it forked
    // How evgate started the collection: the server compares each run's request with it (not with
    // what the interpreter saw at start-up, which a wrapper such as a pyenv shim may have changed).
    std::string launch_python_;
    std::vector<std::string> launch_environment_;
};

// Stops the suite's server if one answers at its socket (the release step, and every receipt
// before its own): one line saying what it stopped, "" when nothing answered.
std::string stop_fork_server(const SuiteConfig& suite);

}  // namespace evgate
