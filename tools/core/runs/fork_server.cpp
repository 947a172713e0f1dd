#include "runs/fork_server.hpp"

#include <algorithm>
#include <chrono>
#include <csignal>

#include <sys/wait.h>
#include <unistd.h>

#include "fixtures/shared_tree.hpp"
#include "inputs/evidence_layout.hpp"
#include "io/error.hpp"
#include "io/file_identity.hpp"
#include "io/json_io.hpp"
#include "runs/fork_launcher.hpp"
#include "runs/protocol.hpp"
#include "runs/sandbox.hpp"

namespace fs = std::filesystem;

namespace evgate {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::chrono::seconds kAnswerTimeout{10};
// sun_path of struct sockaddr_un: 108 bytes with its NUL on Linux.
constexpr std::size_t kSocketPathMax = 107;
// A server nobody asks anything of for this long ends (a receipt taken by hand, a ctest whose
// other suites run long between this suite's steps: their runs then start processes).
constexpr int kIdleSeconds = 900;

std::string hash_seed_in(const std::vector<std::string>& environment) {
    for (auto it = environment.rbegin(); it != environment.rend(); ++it)
        if (it->rfind("PYTHONHASHSEED=", 0) == 0) return it->substr(std::string("PYTHONHASHSEED=").size());
    return "";
}

// A hash seed for the invocation: random, never 0 (which turns hash randomisation off).
std::string new_hash_seed() {
    std::random_device entropy;
    return std::to_string(std::uniform_int_distribution<std::uint32_t>(1, 4294967295u)(entropy));
}

rapidjson::Value isolation_record(const Isolation& isolation, rapidjson::Document::AllocatorType& alloc) {
    rapidjson::Value record(rapidjson::kObjectType);
    record.AddMember("runs", rapidjson::StringRef(isolation.forks ? "fork" : "process"), alloc);
    if (isolation.forks) {
        rapidjson::Value server(rapidjson::kObjectType);
        server.AddMember("pid", isolation.server->pid, alloc);
        server.AddMember("start", rapidjson::Value(static_cast<std::uint64_t>(isolation.server->start)), alloc);
        record.AddMember("server", server, alloc);
        record.AddMember("socket", rapidjson::Value(isolation.socket.string(), alloc), alloc);
        record.AddMember("collection_sandbox", rapidjson::Value(isolation.collection_sandbox, alloc), alloc);
    } else {
        record.AddMember("why", rapidjson::Value(isolation.why, alloc), alloc);
    }
    return record;
}

}  // namespace

fs::path fork_socket(const SuiteConfig& suite) {
    return state_dir() / ("fork-" + sha256_hex(fs::weakly_canonical(suite.evidence_dir).string()).substr(0, 16) + ".sock");
}

Isolation receipt_isolation(const SuiteConfig& suite, const Receipt& receipt) {
    Isolation isolation;
    isolation.why = "the receipt says nothing of a fork server";
    std::string storage;
    rapidjson::Document doc;
    try {
        doc = read_json_file_in_place(suite.receipt_file(), storage);
    } catch (const Error& e) {
        isolation.why = e.what();
        return isolation;
    }
    const auto source = suite.receipt_file().string();
    if (!doc.IsObject() || optional_string(doc, "receipt_id", source).value_or("") != receipt.id) {
        isolation.why = source + " is no longer the receipt this run was planned from";
        return isolation;
    }
    isolation.hash_seed = optional_string(doc, "hash_seed", source).value_or("");
    const auto* record = member(doc, "isolation");
    if (record == nullptr || !record->IsObject()) return isolation;
    isolation.why = optional_string(*record, "why", source).value_or("");
    if (optional_string(*record, "runs", source).value_or("") != "fork") return isolation;
    const auto* server = member(*record, "server");
    const auto* pid = server && server->IsObject() ? member(*server, "pid") : nullptr;
    const auto* start = server && server->IsObject() ? member(*server, "start") : nullptr;
    if (!pid || !pid->IsInt() || !start || !start->IsUint64()) {
        isolation.why = source + ": 'isolation' names no server";
        return isolation;
    }
    isolation.forks = true;
    isolation.server = ProcessIdentity{pid->GetInt(), start->GetUint64()};
    isolation.socket = optional_string(*record, "socket", source).value_or("");
    isolation.collection_sandbox = optional_string(*record, "collection_sandbox", source).value_or("");
    return isolation;
}

// ------------------------------------------------------------------ starting one

ForkServerStart::ForkServerStart(const SuiteConfig& suite) : suite_(suite) {
    status_ = suite.evidence_dir / evidence::kForkServer;
    fs::remove(status_);
    fs::remove(suite.evidence_dir / evidence::kForksDeclined);  // an earlier invocation's reason
    if (suite.isolation == "process") {
        isolation_.why = "ISOLATION process";
        return;
    }
    owner_ = ctest_parent();
    if (!owner_) {
        isolation_.why = "the receipt was taken outside ctest, so no ctest invocation owns a server";
        return;
    }
    try {
        socket_ = fork_socket(suite);
    } catch (const Error& e) {
        isolation_.why = e.what();
        return;
    }
    if (socket_.string().size() > kSocketPathMax) {
        isolation_.why = "the socket path is longer than a Unix socket allows: " + socket_.string() +
                         " (set EVIDENCE_GATE_STATE_DIR to a shorter directory)";
        return;
    }
    stop_fork_server(suite);  // an earlier receipt's: its runs are over
    fs::remove(socket_);      // a socket nobody answers at any more
    asking_ = true;
}

ForkServerStart::~ForkServerStart() {
    if (!asking_ || isolation_.forks) return;
    // Not bound (the receipt failed, or the server did not answer as it should): no run may use
    // it. Since the receipt's pytest ended it is our child; a pid that is not is nobody we know.
    const pid_t pid = started_ != 0 ? started_ : server_pid();
    if (pid > 0 && parent_of(pid) == ::getpid()) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
    }
    fs::remove(socket_);
    fs::remove(status_);
}

ReceiptHooks ForkServerStart::hooks() {
    ReceiptHooks hooks;
    hooks.prepare = [this](ProcessSpec& spec) { prepare(spec); };
    hooks.annotate = [this](rapidjson::Document& receipt) { annotate(receipt); };
    return hooks;
}

void ForkServerStart::prepare(ProcessSpec& spec) {
    // One hash seed for the collection, its forks and every process a run starts instead, so
    // that fork and process give the same results; a suite's own PYTHONHASHSEED stays.
    isolation_.hash_seed = hash_seed_in(spec.environment);
    if (isolation_.hash_seed.empty()) {
        isolation_.hash_seed = new_hash_seed();
        spec.environment.push_back("PYTHONHASHSEED=" + isolation_.hash_seed);
    }
    if (!asking_) return;
    const auto at = std::find_if(spec.argv.begin(), spec.argv.end(),
                                 [](const std::string& a) { return a.rfind(std::string(protocol::option::collect) + "=", 0) == 0; });
    spec.argv.insert(at == spec.argv.end() ? at : at + 1,
                     {std::string(protocol::option::serve) + "=" + socket_.string(),
                      std::string(protocol::option::serve_status) + "=" + status_.string(),
                      std::string(protocol::option::serve_owner) + "=" + std::to_string(owner_->pid) + ":" + std::to_string(owner_->start),
                      std::string(protocol::option::serve_idle) + "=" + std::to_string(kIdleSeconds)});
    spec.survivor = [this] { return server_pid(); };
    launch_python_ = spec.argv.front();
    launch_environment_ = spec.environment;
}

namespace {

std::string bind_request(const std::string& receipt_id, const std::string& python, const std::vector<std::string>& environment) {
    JsonWriter json;
    auto& w = json.begin();
    w.StartObject();
    w.Key(protocol::field::op), w.String(protocol::op::bind);
    w.Key(protocol::field::receipt), w.String(receipt_id);
    w.Key(protocol::field::python), w.String(python);
    w.Key(protocol::field::env);
    w.StartArray();
    for (const auto& entry : environment) w.String(entry);
    w.EndArray();
    w.EndObject();
    return std::string(json.text());
}

}  // namespace

pid_t ForkServerStart::server_pid() const {
    try {
        const auto status = read_json_file(status_);
        const auto* pid = status.IsObject() ? member(status, "pid") : nullptr;
        return pid && pid->IsInt() ? pid->GetInt() : 0;
    } catch (const Error&) {
        return 0;
    }
}

void ForkServerStart::annotate(rapidjson::Document& receipt) {
    const auto source = suite_.receipt_file().string();
    if (asking_) {
        const pid_t pid = server_pid();
        started_ = pid;
        try {
            const auto status = read_json_file(status_);
            if (pid == 0)
                throw Error(status.IsObject() ? optional_string(status, "why", status_.string()).value_or("no server and no reason")
                                              : "no server and no reason");
            const auto* tests = member(receipt, "tests");
            bind(string_member(receipt, "receipt_id", source), tests && tests->IsArray() ? tests->Size() : 0);
        } catch (const Stopped&) {
            throw;
        } catch (const Error& e) {
            isolation_.why = std::string("the collection left no fork server: ") + e.what();
        }
        fs::remove(status_);
    }
    auto& alloc = receipt.GetAllocator();
    receipt.AddMember("isolation", isolation_record(isolation_, alloc), alloc);
    receipt.AddMember("hash_seed", rapidjson::Value(isolation_.hash_seed, alloc), alloc);
}

// Binds the server the receipt's pytest forked to the receipt: it answers at the socket as the
// process it said it was, holds the tests the receipt lists and started with its hash seed.
void ForkServerStart::bind(const std::string& receipt_id, std::size_t tests) {
    const auto identity = process_identity(started_);
    if (!identity) throw Error("the server (pid " + std::to_string(started_) + ") is gone");
    ServerConnection server(socket_, identity);
    server.send(bind_request(receipt_id, launch_python_, launch_environment_));
    const auto answer = server.receive(Clock::now() + kAnswerTimeout);
    if (!answer) throw Error("the server ended before it answered");
    if (const auto* why = member(*answer, protocol::field::refused); why && why->IsString()) throw Error(why->GetString());
    const auto* count = member(*answer, protocol::field::tests);
    if (!count || !count->IsUint64() || count->GetUint64() != tests)
        throw Error("the server holds another collection than the receipt's " + std::to_string(tests) + " tests");
    const auto seed = member(*answer, protocol::field::hash_seed);
    if (!seed || !seed->IsString() || isolation_.hash_seed != seed->GetString())
        throw Error("the server did not start with the receipt's hash seed");
    isolation_.forks = true;
    isolation_.why.clear();
    isolation_.server = identity;
    isolation_.collection_sandbox = sandbox_fingerprint(collection_sandbox(suite_));
    isolation_.socket = socket_;  // bound: it ends when told, when its ctest is gone, or idle
}

// ------------------------------------------------------------------ stopping one

std::string stop_fork_server(const SuiteConfig& suite) {
    fs::path socket;
    try {
        socket = fork_socket(suite);
    } catch (const Error&) {
        return "";
    }
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(socket, ec))) return "";
    try {
        ServerConnection server(socket, std::nullopt);
        server.send(op_request(protocol::op::stop));
        const auto answer = server.receive(Clock::now() + kAnswerTimeout);
        const auto* served = answer ? member(*answer, protocol::field::served) : nullptr;
        // It closes the connection as it ends.
        while (server.receive(Clock::now() + kAnswerTimeout)) {
        }
        return "stopped the collected session (pid " + std::to_string(server.peer()) + ") after " +
               std::to_string(served && served->IsInt() ? served->GetInt() : 0) + " fork(s)";
    } catch (const Stopped&) {
        throw;
    } catch (const Error&) {
        return "";
    }
}

}  // namespace evgate
