#include "receipt.hpp"

#include <chrono>
#include <cstdlib>
#include <random>

#include <sys/utsname.h>
#include <unistd.h>

#include "error.hpp"
#include "file_identity.hpp"
#include "git_state.hpp"
#include "json_io.hpp"
#include "pytest_command.hpp"
#include "pytest_config.hpp"

namespace fs = std::filesystem;

namespace evgate {
namespace {

std::string new_receipt_id() {
    std::random_device entropy;
    const auto now = std::chrono::system_clock::now().time_since_epoch().count();
    return sha256_hex(std::to_string(now) + ":" + std::to_string(::getpid()) + ":" + std::to_string(entropy()))
        .substr(0, 16);
}

Receipt parse_receipt(const rapidjson::Value& doc, const std::string& source) {
    Receipt receipt;
    receipt.id = optional_string(doc, "receipt_id", source).value_or("");
    receipt.rootdir = string_member(doc, "rootdir", source);
    receipt.configfile = optional_string(doc, "configfile", source);
    receipt.conftests = string_array(doc, "conftests", source);
    if (const auto* status = member(doc, "exitstatus"); status && status->IsInt()) receipt.exitstatus = status->GetInt();
    receipt.expected_configfile = optional_string(doc, "expected_configfile", source);
    receipt.stray_configs = string_array(doc, "stray_configs", source);
    receipt.thinning = string_array(doc, "thinning", source);
    if (const auto* git = member(doc, "git"); git && git->IsObject()) receipt.git_head = optional_string(*git, "head", source).value_or("");
    receipt.shard = optional_string(doc, "shard", source).value_or("");
    receipt.suite = optional_string(doc, "suite", source).value_or("");
    if (const auto* errors = member(doc, "errors"); errors && errors->IsArray()) {
        for (const auto& e : errors->GetArray())
            receipt.errors.push_back(optional_string(e, "nodeid", source).value_or("") + ": " +
                                     optional_string(e, "message", source).value_or(""));
    }
    const auto* tests = member(doc, "tests");
    if (tests == nullptr || !tests->IsArray()) throw InputError(source, 0, "no 'tests' list");
    receipt.tests.reserve(tests->Size());
    for (const auto& t : tests->GetArray()) {
        ReceiptTest test;
        test.id = string_member(t, "id", source);
        const auto* serial = member(t, "serial");
        test.serial = serial != nullptr && serial->IsBool() && serial->GetBool();
        test.writes = string_array(t, "writes", source);
        if (const auto* env = member(t, "env_sensitive"); env && env->IsObject()) {
            test.env_sensitive = EnvSensitive{optional_string(*env, "until", source).value_or(""),
                                              optional_string(*env, "owner", source).value_or(""),
                                              optional_string(*env, "reason", source).value_or("")};
        }
        receipt.tests.push_back(std::move(test));
    }
    return receipt;
}

rapidjson::Value string_list(const std::vector<std::string>& items, rapidjson::Document::AllocatorType& alloc) {
    rapidjson::Value list(rapidjson::kArrayType);
    for (const auto& item : items) list.PushBack(rapidjson::Value(item, alloc), alloc);
    return list;
}

// What pytest cannot tell about itself: who took the receipt, where, at which commit, and
// which config files lie around that could have re-rooted it.
void add_workspace(rapidjson::Document& doc, const SuiteConfig& suite, const fs::path& scratch) {
    auto& alloc = doc.GetAllocator();
    const auto source = suite.receipt_file().string();
    struct utsname host {};
    ::uname(&host);
    doc.AddMember("suite", rapidjson::Value(suite.name, alloc), alloc);
    doc.AddMember("receipt_id", rapidjson::Value(new_receipt_id(), alloc), alloc);
    doc.AddMember("hostname", rapidjson::Value(host.nodename, alloc), alloc);
    doc.AddMember("root", rapidjson::Value(fs::weakly_canonical(suite.root).string(), alloc), alloc);
    doc.AddMember("cwd", rapidjson::Value(suite.root.string(), alloc), alloc);
    const auto expected = expected_config(suite.root);
    doc.AddMember("expected_configfile", expected ? rapidjson::Value(expected->string(), alloc) : rapidjson::Value(), alloc);
    doc.AddMember("stray_configs", string_list(stray_configs(suite.root), alloc), alloc);
    doc.AddMember("thinning", string_list(thinning_options(string_array(doc, "addopts", source)), alloc), alloc);
    rapidjson::Value git(rapidjson::kNullType);
    if (auto state = read_git_state(suite.root, scratch)) {
        git.SetObject();
        git.AddMember("head", rapidjson::Value(state->head, alloc), alloc);
        git.AddMember("branch", rapidjson::Value(state->branch, alloc), alloc);
        git.AddMember("dirty", string_list(state->dirty, alloc), alloc);
    }
    doc.AddMember("git", git, alloc);  // null: ROOT is not in a git work tree
    if (const char* shard = std::getenv("EVIDENCE_GATE_SHARD"); shard && *shard)
        doc.AddMember("shard", rapidjson::Value(shard, alloc), alloc);
    const auto* tests = member(doc, "tests");
    doc.AddMember("collected", rapidjson::Value(static_cast<uint64_t>(tests && tests->IsArray() ? tests->Size() : 0)), alloc);
}

}  // namespace

std::vector<CollectedTest> Receipt::collected() const {
    std::vector<CollectedTest> out;
    out.reserve(tests.size());
    for (const auto& t : tests) out.push_back({t.id, t.serial});
    return out;
}

namespace {

// One --collect-only run with the suite's command line and environment.
rapidjson::Document collect(const SuiteConfig& suite, const std::string& purpose) {
    const auto collect_file = suite.evidence_dir / (purpose + ".collect.json");
    const auto log = suite.evidence_dir / "logs" / (purpose + ".log");
    fs::create_directories(log.parent_path());
    fs::remove(collect_file);
    fs::remove(log);
    auto spec = pytest_process(suite, {"--collect-only", "-q", "--evidence-gate-collect=" + collect_file.string()}, log);
    const auto result = run_process(spec);
    if (!fs::exists(collect_file)) {
        throw Error("pytest collection did not complete (" + result.describe() + "); its output is in " +
                    log.string() + ":\n" + read_file(log));
    }
    auto doc = parse_json(read_file(collect_file), collect_file.string());
    fs::remove(collect_file);
    return doc;
}

}  // namespace

Receipt take_receipt(const SuiteConfig& suite) {
    auto doc = collect(suite, "receipt");
    add_workspace(doc, suite, suite.evidence_dir / "git.out");
    // The digest binds the canonical JSON of everything above it.
    auto& alloc = doc.GetAllocator();
    doc.AddMember("digest", rapidjson::Value("sha256:" + sha256_hex(to_json(doc)), alloc), alloc);
    write_file_atomic(suite.receipt_file(), to_json(doc) + "\n");
    return parse_receipt(doc, suite.receipt_file().string());
}

std::vector<std::string> collected_ids(const SuiteConfig& suite) {
    const auto doc = collect(suite, "discover");
    std::vector<std::string> ids;
    for (const auto& test : parse_receipt(doc, suite.name).tests) ids.push_back(test.id);
    return ids;
}

Receipt load_receipt(const fs::path& file) {
    const auto doc = read_json_file(file);
    return parse_receipt(doc, file.string());
}

bool same_config(const std::optional<std::string>& a, const std::optional<std::string>& b) {
    if (!a || !b) return !a && !b;
    std::error_code ec;
    return *a == *b || fs::equivalent(*a, *b, ec);
}

std::vector<std::string> receipt_problems(const SuiteConfig& suite, const Receipt& receipt) {
    std::vector<std::string> problems;
    std::error_code ec;
    if (!fs::equivalent(receipt.rootdir, suite.root, ec))
        problems.push_back("pytest chose rootdir " + quote(receipt.rootdir) + ", not ROOT " + quote(suite.root.string()));
    if (!same_config(receipt.configfile, receipt.expected_configfile))
        problems.push_back("pytest read its configuration from " + quote(receipt.configfile.value_or("(none)")) +
                           ", but the project's is " + quote(receipt.expected_configfile.value_or("(none)")));
    // 0: collected; 2: collection errors (ledger rows name them); 5: nothing collected (below).
    if (receipt.exitstatus != 0 && receipt.exitstatus != 2 && receipt.exitstatus != 5)
        problems.push_back("pytest's collection ended with exit status " + std::to_string(receipt.exitstatus) +
                           (receipt.exitstatus == 3 ? " (an internal error: INTERNALERROR in " : " (see ") +
                           (suite.evidence_dir / "logs" / "receipt.log").string() + ")");
    if (receipt.tests.empty() && receipt.errors.empty())
        problems.push_back("pytest collected no tests from " + quote(suite.root.string()) + " (configfile " +
                           quote(receipt.configfile.value_or("(none)")) + ")");
    return problems;
}

}  // namespace evgate
