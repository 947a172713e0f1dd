#include "runs/evidence_reuse.hpp"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <set>
#include <sstream>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "inputs/evidence_layout.hpp"
#include "inputs/shard_spec.hpp"
#include "io/atomic_file.hpp"
#include "io/error.hpp"
#include "io/file_identity.hpp"
#include "io/json_io.hpp"
#include "io/process.hpp"

namespace fs = std::filesystem;

namespace evgate {
namespace {

fs::path reuse_file(const SuiteConfig& suite) { return suite.evidence_dir / evidence::kReuse; }

// Receipt fields that differ between two collections of the same tree: who took it, the
// server it left, git's view of a commit (the sources digest holds the content), what the
// receipt step works out from the key (orders, reuse) and the digest over all of it.
constexpr const char* kPerInvocation[] = {"receipt_id", "isolation", "git", "orders", "reuse", "digest", "sandbox"};

// The key's parts, as a message names them when they changed.
constexpr char kTools[] = "evgate and the plugin";
constexpr char kSuitePart[] = "the suite's configuration";
constexpr char kManifestPart[] = "the environment manifest";
constexpr char kEnvironmentPart[] = "the environment's values";
constexpr char kCollectionPart[] = "the collection and its sources";

// The shell's bookkeeping, which differs between two commands typed in one terminal.
constexpr const char* kShellVariables[] = {"_", "OLDPWD", "PWD", "SHLVL"};

// A length-prefixed field: no two different lists of fields make the same material.
void field(std::string& material, std::string_view text) {
    material += std::to_string(text.size());
    material += ':';
    material += text;
}

std::string file_or_absent(const fs::path& path) {
    std::error_code ec;
    return fs::exists(path, ec) ? read_file(path) : std::string("absent");
}

std::set<std::string> ignored_variables() {
    std::set<std::string> names(std::begin(kShellVariables), std::end(kShellVariables));
    if (const char* listed = std::getenv("EVIDENCE_GATE_REUSE_IGNORE")) {
        std::istringstream in(listed);
        for (std::string name; std::getline(in, name, ';');)
            if (!name.empty()) names.insert(name);
    }
    return names;
}

// Every VAR=value of this process but the ignored ones, sorted: values count, and only the
// key's digest of them is ever written.
std::vector<std::string> environment_material() {
    const auto ignored = ignored_variables();
    std::vector<std::string> entries;
    for (auto& entry : environment_with({})) {
        const auto name = entry.substr(0, entry.find('='));
        const bool prefix_ignored = std::any_of(ignored.begin(), ignored.end(), [&](const std::string& i) {
            return i.size() > 1 && i.back() == '*' && name.compare(0, i.size() - 1, i, 0, i.size() - 1) == 0;
        });
        if (!ignored.count(name) && !prefix_ignored) entries.push_back(std::move(entry));
    }
    std::sort(entries.begin(), entries.end());
    return entries;
}

bool reuse_off() {
    const char* reuse = std::getenv("EVIDENCE_GATE_REUSE");
    return (reuse != nullptr && std::string(reuse) == "0") || this_shard() || !merged_shards().empty();
}

std::uint64_t uint_member(const rapidjson::Value& object, const char* key, const std::string& source) {
    const auto* value = member(object, key);
    if (value == nullptr || !value->IsUint64()) throw InputError(source, 0, std::string("'") + key + "' is not a count");
    return value->GetUint64();
}

KeptEvidence parse_kept(const rapidjson::Value& doc, const std::string& source) {
    KeptEvidence kept;
    kept.key = string_member(doc, "key", source);
    if (const auto* parts = member(doc, "parts"); parts && parts->IsObject())
        for (const auto& part : parts->GetObject())
            if (part.value.IsString()) kept.parts[part.name.GetString()] = part.value.GetString();
    kept.hash_seed = optional_string(doc, "hash_seed", source).value_or("");
    kept.next_seed = uint_member(doc, "next_seed", source);
    const auto* receipts = member(doc, "receipts");
    if (receipts == nullptr || !receipts->IsArray()) throw InputError(source, 0, "no 'receipts' list");
    for (const auto& r : receipts->GetArray())
        kept.receipts.push_back({string_member(r, "receipt", source), string_member(r, "at", source),
                                 uint_member(r, "first_seed", source), uint_member(r, "last_seed", source)});
    return kept;
}

void write_parts(rapidjson::Writer<rapidjson::StringBuffer>& w, const std::map<std::string, std::string>& parts) {
    w.Key("parts");
    w.StartObject();
    for (const auto& [name, value] : parts) w.Key(name.c_str()), w.String(value);
    w.EndObject();
}

void write_receipts(rapidjson::Writer<rapidjson::StringBuffer>& w, const std::vector<KeptReceipt>& receipts) {
    w.StartArray();
    for (const auto& r : receipts) {
        w.StartObject();
        w.Key("receipt"), w.String(r.id);
        w.Key("at"), w.String(r.at);
        w.Key("first_seed"), w.Uint64(r.first_seed);
        w.Key("last_seed"), w.Uint64(r.last_seed);
        w.EndObject();
    }
    w.EndArray();
}

}  // namespace

std::optional<KeptEvidence> take_kept_evidence(const SuiteConfig& suite) {
    const auto file = reuse_file(suite);
    std::error_code ec;
    if (!fs::exists(file, ec)) return std::nullopt;
    std::optional<KeptEvidence> kept;
    try {
        if (!reuse_off()) kept = parse_kept(read_json_file(file), file.string());
    } catch (const Error& e) {
        std::cerr << "evgate: " << suite.name << ": " << e.what() << "; the runs start over\n";
    }
    fs::remove(file);  // a ctest cut short leaves none: the next one starts over
    return kept;
}

EvidenceKey evidence_key(const SuiteConfig& suite, const rapidjson::Value& receipt) {
    EvidenceKey key;
    const auto digest = [](const std::vector<std::string>& fields) {
        std::string material;
        field(material, std::to_string(fields.size()));
        for (const auto& f : fields) field(material, f);
        return "sha256:" + sha256_hex(material);
    };
    std::vector<std::string> tools{file_stamp("/proc/self/exe", /*follow=*/true)};
    for (const auto& file : fs::directory_iterator(suite.plugin_dir))
        tools.push_back(file.path().filename().string() + " " + file_stamp(file.path(), true));
    std::sort(tools.begin() + 1, tools.end());
    key.parts[kTools] = digest(tools);
    key.parts[kSuitePart] = digest({file_or_absent(suite.source)});
    key.parts[kManifestPart] = digest({file_or_absent(suite.manifest_file())});
    key.parts[kEnvironmentPart] = digest(environment_material());
    rapidjson::Document collection;
    collection.CopyFrom(receipt, collection.GetAllocator());
    for (const char* name : kPerInvocation) collection.RemoveMember(name);
    key.parts[kCollectionPart] = digest({to_json(collection)});
    std::vector<std::string> parts{"evgate evidence key 1"};
    for (const auto& [name, value] : key.parts) parts.push_back(name + " " + value);
    key.key = digest(parts);
    return key;
}

ReuseDecision add_reuse(rapidjson::Document& receipt, const SuiteConfig& suite, const std::optional<KeptEvidence>& kept) {
    const auto key = evidence_key(suite, receipt);
    ReuseDecision decision;
    decision.keeps = kept && kept->key == key.key;
    if (kept && !decision.keeps) {
        std::vector<std::string> changed;
        for (const auto& [name, value] : key.parts)
            if (const auto was = kept->parts.find(name); was == kept->parts.end() || was->second != value) changed.push_back(name);
        for (std::size_t i = 0; i < changed.size(); ++i)
            decision.why_not += (i == 0 ? "" : i + 1 == changed.size() ? " and "
                                                                       : ", ") +
                                changed[i];
        decision.why_not = changed.empty() ? "the key changed" : decision.why_not + " changed";
    }
    rapidjson::StringBuffer text;
    rapidjson::Writer<rapidjson::StringBuffer> w(text);
    w.StartObject();
    w.Key("key"), w.String(key.key);
    write_parts(w, key.parts);
    w.Key("kept");
    write_receipts(w, decision.keeps ? kept->receipts : std::vector<KeptReceipt>{});
    w.Key("first_seed"), w.Uint64(decision.keeps ? kept->next_seed : 0);
    w.EndObject();
    auto& alloc = receipt.GetAllocator();
    receipt.RemoveMember("reuse");
    rapidjson::Value value;
    value.CopyFrom(parse_json(text.GetString(), "reuse"), alloc);
    receipt.AddMember("reuse", value, alloc);
    return decision;
}

void write_kept_evidence(const SuiteConfig& suite, const KeptEvidence& evidence) {
    rapidjson::StringBuffer text;
    rapidjson::Writer<rapidjson::StringBuffer> w(text);
    w.StartObject();
    w.Key("key"), w.String(evidence.key);
    write_parts(w, evidence.parts);
    w.Key("hash_seed"), w.String(evidence.hash_seed);
    w.Key("next_seed"), w.Uint64(evidence.next_seed);
    w.Key("receipts");
    write_receipts(w, evidence.receipts);
    w.EndObject();
    write_file_atomic(reuse_file(suite), std::string(text.GetString()) + "\n");
}

}  // namespace evgate
