#include "receipt.hpp"

#include <chrono>
#include <random>

#include <unistd.h>

#include "error.hpp"
#include "file_identity.hpp"
#include "json_io.hpp"
#include "pytest_command.hpp"

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
    if (const auto* errors = member(doc, "errors"); errors && errors->IsArray()) {
        for (const auto& e : errors->GetArray())
            receipt.errors.push_back(optional_string(e, "nodeid", source).value_or("") + ": " +
                                     optional_string(e, "message", source).value_or(""));
    }
    const auto* tests = member(doc, "tests");
    if (tests == nullptr || !tests->IsArray()) throw InputError(source, 0, "no 'tests' list");
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

}  // namespace

std::vector<CollectedTest> Receipt::collected() const {
    std::vector<CollectedTest> out;
    out.reserve(tests.size());
    for (const auto& t : tests) out.push_back({t.id, t.serial});
    return out;
}

Receipt take_receipt(const SuiteConfig& suite) {
    const auto collect_file = suite.evidence_dir / "collect.json";
    const auto log = suite.evidence_dir / "logs" / "receipt.log";
    fs::create_directories(log.parent_path());
    fs::remove(collect_file);
    fs::remove(log);
    auto spec = pytest_process(suite, {"--collect-only", "-q", "--evidence-gate-collect=" + collect_file.string()}, log);
    const auto result = run_process(spec);
    if (!fs::exists(collect_file)) {
        throw Error("pytest collection did not complete (" + result.describe() + "); its output is in " +
                    log.string() + ":\n" + read_file(log));
    }
    const std::string text = read_file(collect_file);
    auto doc = parse_json(text, collect_file.string());
    Receipt receipt = parse_receipt(doc, collect_file.string());
    receipt.id = new_receipt_id();

    // receipt.json: the collection document plus who took it, bound by a digest.
    auto& alloc = doc.GetAllocator();
    doc.AddMember("suite", rapidjson::Value(suite.name, alloc), alloc);
    doc.AddMember("root", rapidjson::Value(fs::weakly_canonical(suite.root).string(), alloc), alloc);
    doc.AddMember("cwd", rapidjson::Value(suite.root.string(), alloc), alloc);
    doc.AddMember("receipt_id", rapidjson::Value(receipt.id, alloc), alloc);
    doc.AddMember("collected", rapidjson::Value(static_cast<uint64_t>(receipt.tests.size())), alloc);
    doc.AddMember("digest", rapidjson::Value("sha256:" + sha256_hex(to_json(doc)), alloc), alloc);
    write_file_atomic(suite.receipt_file(), to_json(doc) + "\n");
    return receipt;
}

Receipt load_receipt(const fs::path& file) {
    const auto doc = read_json_file(file);
    return parse_receipt(doc, file.string());
}

std::vector<std::string> receipt_problems(const SuiteConfig& suite, const Receipt& receipt) {
    std::vector<std::string> problems;
    std::error_code ec;
    if (!fs::equivalent(receipt.rootdir, suite.root, ec))
        problems.push_back("pytest chose rootdir " + quote(receipt.rootdir) + ", not ROOT " + quote(suite.root.string()));
    if (receipt.tests.empty() && receipt.errors.empty())
        problems.push_back("pytest collected no tests from " + quote(suite.root.string()));
    return problems;
}

}  // namespace evgate
