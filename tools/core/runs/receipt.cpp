#include "runs/receipt.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <random>
#include <unordered_map>

#include <sys/utsname.h>
#include <unistd.h>

#include "inputs/evidence_layout.hpp"
#include "inputs/pytest_config.hpp"
#include "inputs/run_id.hpp"
#include "inputs/shard_spec.hpp"
#include "io/atomic_file.hpp"
#include "io/error.hpp"
#include "io/file_identity.hpp"
#include "io/git_state.hpp"
#include "io/json_io.hpp"
#include "io/json_paths.hpp"
#include "runs/protocol.hpp"
#include "runs/pytest_command.hpp"
#include "runs/receipt_sources.hpp"
#include "runs/sandbox.hpp"

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
    receipt.stray_configs_ignored = string_array(doc, "stray_configs_ignored", source);
    receipt.stray_configs_in_submodules = string_array(doc, "stray_configs_in_submodules", source);
    receipt.thinning = string_array(doc, "thinning", source);
    receipt.hollow = string_array(doc, "hollow", source);
    receipt.set_aside = string_array(doc, "set_aside", source);
    if (const auto* git = member(doc, "git"); git && git->IsObject()) {
        receipt.git_head = optional_string(*git, "head", source).value_or("");
        receipt.git_dirty = string_array(*git, "dirty", source);
        receipt.git_digest = optional_string(*git, "digest", source).value_or("");
    }
    if (const auto* sources = member(doc, "sources"); sources && sources->IsObject()) {
        receipt.sources_digest = optional_string(*sources, "digest", source).value_or("");
        receipt.sources_outside = paths_member(*sources, "outside");
    }
    if (const auto* built = member(doc, "built"); built && built->IsArray()) {
        for (const auto& b : built->GetArray()) {
            const auto* size = member(b, "size");
            receipt.built.push_back({optional_string(b, "path", source).value_or(""), optional_string(b, "target", source).value_or(""),
                                     size && size->IsUint64() ? size->GetUint64() : 0,
                                     optional_string(b, "digest", source).value_or("")});
        }
    }
    if (const auto* sandbox = member(doc, "sandbox"); sandbox && sandbox->IsObject()) {
        receipt.sandbox_dir = optional_string(*sandbox, "dir", source).value_or("");
        receipt.sandboxed = string_array(*sandbox, "fresh", source);
    }
    if (const auto* lost = member(doc, "deselected"); lost && lost->IsArray()) {
        for (const auto& t : lost->GetArray())
            receipt.deselected.push_back({string_member(t, "id", source), optional_string(t, "by", source).value_or("")});
    }
    receipt.pytest_plugins = string_array(doc, "pytest_plugins_env", source);
    if (const auto* orders = member(doc, "orders"); orders && orders->IsObject()) {
        const auto count = [&](const char* key) {
            const auto* n = member(*orders, key);
            return n != nullptr && n->IsUint64() ? static_cast<std::size_t>(n->GetUint64()) : std::size_t{0};
        };
        receipt.orders.first = count("first");
        receipt.orders.seeds = count("seeds");
        receipt.orders.distinct = count("distinct");
        // run id -> the seed run it repeats ("seed.3" -> "seed.1"): a shard parses the number.
        const auto numbered = [](const std::string& text, RunId::Kind kind) {
            const auto id = RunId::parse(text);
            return id && id->kind() == kind && id->is_plain() && id->number() <= 999999999;  // nine digits at most
        };
        if (const auto* repeats = member(*orders, "repeats"); repeats && repeats->IsObject()) {
            for (const auto& r : repeats->GetObject()) {
                const std::string run = r.name.GetString(), earlier = r.value.IsString() ? r.value.GetString() : "";
                if (!(numbered(run, RunId::Kind::seed) || numbered(run, RunId::Kind::first)) || !numbered(earlier, RunId::Kind::seed))
                    throw InputError(source, 0, "'orders' holds a repeat that is not a run of a seed: " + quote(run) + " -> " + quote(earlier));
                receipt.orders.repeats.emplace(run, earlier);
            }
        }
    }
    if (const auto* reuse = member(doc, "reuse"); reuse && reuse->IsObject()) {
        receipt.key = optional_string(*reuse, "key", source).value_or("");
        if (const auto* kept = member(*reuse, "kept"); kept && kept->IsArray()) {
            for (const auto& k : kept->GetArray()) {
                const auto* first = member(k, "first_seed");
                const auto* last = member(k, "last_seed");
                receipt.kept.push_back({string_member(k, "receipt", source), optional_string(k, "at", source).value_or(""),
                                        first && first->IsUint64() ? first->GetUint64() : 0,
                                        last && last->IsUint64() ? last->GetUint64() : 0});
            }
        }
    }
    receipt.hash_seed = optional_string(doc, "hash_seed", source).value_or("");
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

// The options that thin the run, or void it, each with where it came from: the ini file's
// addopts (where pytest ignores -o), PYTEST_ADDOPTS, and the suite's PYTEST_ARGS.
void add_options(rapidjson::Document& doc, const SuiteConfig& suite) {
    auto& alloc = doc.GetAllocator();
    const auto source = suite.receipt_file().string();
    std::vector<std::string> thinning, hollow;
    const auto scan = [&](const std::vector<std::string>& args, const std::string& from, bool overrides_apply) {
        for (const auto& option : thinning_options(args, overrides_apply)) thinning.push_back(option + " (" + from + ")");
        for (const auto& option : hollow_options(args, overrides_apply)) hollow.push_back(option + " (" + from + ")");
    };
    if (member(doc, "addopts_ini") != nullptr) {
        scan(string_array(doc, "addopts_ini", source), "addopts", false);
        scan(string_array(doc, "addopts_env", source), "PYTEST_ADDOPTS", true);
    } else {  // a plugin that does not say which is which
        scan(string_array(doc, "addopts", source), "addopts or PYTEST_ADDOPTS", true);
    }
    scan(suite.pytest_args, "PYTEST_ARGS", true);
    doc.AddMember("thinning", string_list(thinning, alloc), alloc);
    doc.AddMember("hollow", string_list(hollow, alloc), alloc);
}

// Every pytest process gets a HOME and TMPDIR of its own, emptied before each run, and the XDG
// base directories below that HOME (pytest_command.hpp): said here, since a test that looks for
// something in the user's home sees none of it. A variable the suite sets with ENVIRONMENT is
// pinned instead; user-directory variables inherited from the user are dropped (names only).
rapidjson::Value sandbox_record(const SuiteConfig& suite, rapidjson::Document::AllocatorType& alloc) {
    const auto dir = suite_sandboxes(suite);
    const auto env = sandbox_environment(suite, dir / "<run>");
    rapidjson::Value sandbox(rapidjson::kObjectType);
    for (const auto& entry : env.set) {
        const auto equals = entry.find('=');
        sandbox.AddMember(rapidjson::Value(entry.substr(0, equals), alloc), rapidjson::Value(entry.substr(equals + 1), alloc), alloc);
    }
    sandbox.AddMember("dir", rapidjson::Value(dir.string(), alloc), alloc);
    sandbox.AddMember("fresh", string_list(env.fresh, alloc), alloc);
    sandbox.AddMember("pinned", string_list(env.pinned, alloc), alloc);
    sandbox.AddMember("dropped", string_list(env.dropped, alloc), alloc);
    sandbox.AddMember("why", rapidjson::Value("every pytest process (collection, each run, each probe) has its own HOME and "
                                              "TMPDIR, empty when its run starts and removed when it ends, at a short path "
                                              "of the same length for every kind of run (room for a Unix socket below it), "
                                              "and the XDG base directories below that HOME: runs never meet there, and no "
                                              "directory evgate hands a test is in the user's home; pin one with ENVIRONMENT",
                                              alloc),
                      alloc);
    return sandbox;
}

// Config files below ROOT that would re-root pytest started in their directory: those at or
// above a collected test's file could re-root this suite's collection; the others are listed
// apart, to be said once (pytest_config.hpp).
void add_stray_configs(rapidjson::Document& doc, const fs::path& root) {
    auto& alloc = doc.GetAllocator();
    std::vector<std::string> files;
    const auto file_of = [](const std::string& nodeid) { return nodeid.substr(0, nodeid.find("::")); };
    if (const auto* tests = member(doc, "tests"); tests && tests->IsArray())
        for (const auto& t : tests->GetArray())
            if (const auto* id = member(t, "id"); id && id->IsString()) files.push_back(file_of(id->GetString()));
    if (const auto* errors = member(doc, "errors"); errors && errors->IsArray())
        for (const auto& e : errors->GetArray())
            if (const auto* id = member(e, "nodeid"); id && id->IsString()) files.push_back(file_of(id->GetString()));
    const auto strays = sort_stray_configs(root, stray_configs(root), files);
    doc.AddMember("stray_configs", string_list(strays.rerooting, alloc), alloc);
    doc.AddMember("stray_configs_ignored", string_list(strays.ignored, alloc), alloc);
    doc.AddMember("stray_configs_in_submodules", string_list(strays.in_submodules, alloc), alloc);
}

// Which seed runs would repeat an order an earlier one runs (distinct_orders.hpp), from the
// collection just taken.
void add_orders(rapidjson::Document& doc, const SuiteConfig& suite) {
    auto& alloc = doc.GetAllocator();
    std::vector<CollectedTest> collected;
    if (const auto* tests = member(doc, "tests"); tests && tests->IsArray()) {
        for (const auto& t : tests->GetArray()) {
            const auto* id = member(t, "id");
            const auto* serial = member(t, "serial");
            if (id && id->IsString()) collected.push_back({id->GetString(), serial && serial->IsBool() && serial->GetBool()});
        }
    }
    const auto* reuse = member(doc, "reuse");
    const auto* first = reuse ? member(*reuse, "first_seed") : nullptr;
    const auto orders = distinct_orders(collected, first && first->IsUint64() ? first->GetUint64() : 0, suite.seeds, suite.orders);
    rapidjson::Value record(rapidjson::kObjectType), repeats(rapidjson::kObjectType);
    for (const auto& [run, earlier] : orders.repeats)
        repeats.AddMember(rapidjson::Value(run, alloc), rapidjson::Value(earlier, alloc), alloc);
    record.AddMember("first", rapidjson::Value(static_cast<uint64_t>(orders.first)), alloc);
    record.AddMember("seeds", rapidjson::Value(static_cast<uint64_t>(orders.seeds)), alloc);
    record.AddMember("distinct", rapidjson::Value(static_cast<uint64_t>(orders.distinct)), alloc);
    record.AddMember("repeats", repeats, alloc);
    doc.AddMember("orders", record, alloc);
}

// What pytest cannot tell about itself: who took the receipt, where, at which commit, and
// which config files lie around that could have re-rooted it. Returns the top of the git work
// tree ROOT is in ("" outside git).
std::string add_workspace(rapidjson::Document& doc, const SuiteConfig& suite, const fs::path& scratch) {
    auto& alloc = doc.GetAllocator();
    struct utsname host {};
    ::uname(&host);
    doc.AddMember("suite", rapidjson::Value(suite.name, alloc), alloc);
    doc.AddMember("receipt_id", rapidjson::Value(new_receipt_id(), alloc), alloc);
    doc.AddMember("hostname", rapidjson::Value(host.nodename, alloc), alloc);
    doc.AddMember("root", rapidjson::Value(fs::weakly_canonical(suite.root).string(), alloc), alloc);
    doc.AddMember("cwd", rapidjson::Value(suite.root.string(), alloc), alloc);
    const auto expected = expected_config(suite.root, takes_bare_pyproject(optional_string(doc, "pytest_version", "receipt").value_or("")));
    doc.AddMember("expected_configfile", expected ? rapidjson::Value(expected->string(), alloc) : rapidjson::Value(), alloc);
    add_stray_configs(doc, suite.root);
    add_options(doc, suite);
    rapidjson::Value git(rapidjson::kNullType);
    std::string top;
    if (auto state = read_git_state(suite.root, scratch)) {
        top = state->top;
        git.SetObject();
        git.AddMember("head", rapidjson::Value(state->head, alloc), alloc);
        git.AddMember("branch", rapidjson::Value(state->branch, alloc), alloc);
        git.AddMember("dirty", string_list(state->dirty, alloc), alloc);
        git.AddMember("digest", rapidjson::Value(state->digest, alloc), alloc);
    }
    doc.AddMember("git", git, alloc);  // null: ROOT is not in a git work tree
    doc.AddMember("sandbox", sandbox_record(suite, alloc), alloc);
    if (const char* shard = std::getenv("EVIDENCE_GATE_SHARD"); shard && *shard)
        doc.AddMember("shard", rapidjson::Value(shard, alloc), alloc);
    const auto* tests = member(doc, "tests");
    doc.AddMember("collected", rapidjson::Value(static_cast<uint64_t>(tests && tests->IsArray() ? tests->Size() : 0)), alloc);
    return top;
}

// The sources this receipt was taken over (receipt_sources.hpp): the digest here, the listing in
// sources.json. The files pytest imported come from the plugin ("imported": absolute paths).
void add_sources(rapidjson::Document& doc, const SuiteConfig& suite, const std::string& top,
                 const std::vector<FixtureFile>& pristine) {
    auto& alloc = doc.GetAllocator();
    SourceRoots roots{suite.root, top, handed_evidence()};
    roots.left_out.push_back(suite.evidence_dir);
    roots.left_out.push_back(suite.plugin_dir);
    std::vector<DependsFile> depends;
    for (const auto& d : suite.depends) depends.push_back({d.target, d.file});
    const auto sources = list_sources(roots, pristine, paths_member(doc, "imported"), depends);
    write_file_atomic(suite.evidence_dir / evidence::kSources, sources_json(sources));
    rapidjson::Value record(rapidjson::kObjectType);
    record.AddMember("digest", rapidjson::Value(sources.digest, alloc), alloc);
    record.AddMember("files", rapidjson::Value(static_cast<uint64_t>(sources.files.size())), alloc);
    record.AddMember("outside", string_list(sources.outside, alloc), alloc);
    record.AddMember("listing", rapidjson::Value(evidence::kSources, alloc), alloc);
    doc.AddMember("sources", record, alloc);
    rapidjson::Value built(rapidjson::kArrayType);  // the binaries under test, each in the listing too
    for (const auto& file : sources.built) {
        rapidjson::Value entry(rapidjson::kObjectType);
        entry.AddMember("path", rapidjson::Value(file.path, alloc), alloc);
        if (!file.target.empty()) entry.AddMember("target", rapidjson::Value(file.target, alloc), alloc);
        entry.AddMember("size", rapidjson::Value(static_cast<uint64_t>(file.size)), alloc);
        entry.AddMember("digest", rapidjson::Value(file.digest, alloc), alloc);
        built.PushBack(entry, alloc);
    }
    doc.AddMember("built", built, alloc);
}

}  // namespace

std::vector<std::string> Receipt::run_receipts() const {
    std::vector<std::string> ids;
    for (const auto& k : kept) ids.push_back(k.id);
    ids.push_back(id);
    return ids;
}

bool Receipt::declares_writes() const {
    return std::any_of(tests.begin(), tests.end(), [](const ReceiptTest& t) { return !t.writes.empty(); });
}

std::vector<CollectedTest> Receipt::collected() const {
    std::vector<CollectedTest> out;
    out.reserve(tests.size());
    for (const auto& t : tests) out.push_back({t.id, t.serial});
    return out;
}

namespace {

// One --collect-only run with the suite's command line and environment. Its sandbox goes with
// it, unless the collected session stays to serve forks (`serving`): then the release step's.
rapidjson::Document collect(const SuiteConfig& suite, const std::string& purpose,
                            const std::function<void(ProcessSpec&)>& prepare = {}, bool serving = false) {
    const auto collect_file = suite.evidence_dir / evidence::collection_name(purpose);
    const auto log = suite.evidence_dir / evidence::kLogs / evidence::log_name(purpose);
    fs::create_directories(log.parent_path());
    fs::remove(collect_file);
    fs::remove(log);
    empty_sandbox(suite, log);
    auto spec = pytest_process(suite, {"--collect-only", "-q", std::string(protocol::option::collect) + "=" + collect_file.string()}, log);
    if (prepare) prepare(spec);
    const auto result = run_process(spec);
    if (!serving) remove_sandbox(suite, log);
    if (!fs::exists(collect_file)) {
        throw Error("pytest collection did not complete (" + result.describe() + "); its output is in " +
                    log.string() + ":\n" + read_file(log));
    }
    auto doc = parse_json(read_file(collect_file), collect_file.string());
    fs::remove(collect_file);
    return doc;
}

}  // namespace

Receipt take_receipt(const SuiteConfig& suite, const std::vector<FixtureFile>* pristine, const ReceiptHooks& hooks) {
    auto doc = collect(suite, "receipt", hooks.prepare, /*serving=*/true);
    const auto top = add_workspace(doc, suite, suite.evidence_dir / evidence::kGitScratch);
    fs::remove(suite.evidence_dir / evidence::kSources);  // an earlier receipt's listing is not this one's
    if (pristine != nullptr) add_sources(doc, suite, top, *pristine);
    doc.RemoveMember("imported");  // the sources hold what counts of it
    if (hooks.annotate) hooks.annotate(doc);
    add_orders(doc, suite);  // after `reuse`, which an annotation adds: the seeds continue after the kept ones
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

Receipt collection_now(const SuiteConfig& suite) { return parse_receipt(collect(suite, "discover"), suite.name); }

Receipt load_receipt(const fs::path& file) {
    const auto doc = read_json_file(file);
    return parse_receipt(doc, file.string());
}

bool same_config(const std::optional<std::string>& a, const std::optional<std::string>& b) {
    if (!a || !b) return !a && !b;
    std::error_code ec;
    return *a == *b || fs::equivalent(*a, *b, ec);
}

std::vector<std::pair<std::string, int>> duplicate_ids(const Receipt& receipt) {
    std::unordered_map<std::string, int> count;
    for (const auto& t : receipt.tests) ++count[t.id];
    std::vector<std::pair<std::string, int>> duplicates;
    for (const auto& t : receipt.tests) {
        auto it = count.find(t.id);
        if (it == count.end() || it->second < 2) continue;
        duplicates.emplace_back(t.id, it->second);
        count.erase(it);  // once, at its first place
    }
    return duplicates;
}

std::string describe_duplicates(const std::vector<std::pair<std::string, int>>& duplicates) {
    std::string text;
    for (const auto& [id, times] : duplicates)
        text += (text.empty() ? "" : ", ") + quote(id) + " (" + std::to_string(times) + " times)";
    return text;
}

std::vector<std::string> receipt_problems(const SuiteConfig& suite, const Receipt& receipt) {
    std::vector<std::string> problems;
    std::error_code ec;
    if (!fs::equivalent(receipt.rootdir, suite.root, ec))
        problems.push_back("pytest chose rootdir " + quote(receipt.rootdir) + ", not ROOT " + quote(suite.root.string()));
    if (!same_config(receipt.configfile, receipt.expected_configfile))
        problems.push_back("pytest read its configuration from " + quote(receipt.configfile.value_or("(none)")) +
                           ", but the project's is " + quote(receipt.expected_configfile.value_or("(none)")));
    // 0: collected; 2: collection errors and 5: nothing collected (both below).
    if (receipt.exitstatus != 0 && receipt.exitstatus != 2 && receipt.exitstatus != 5)
        problems.push_back("pytest's collection ended with exit status " + std::to_string(receipt.exitstatus) +
                           (receipt.exitstatus == 3 ? " (an internal error: INTERNALERROR in " : " (see ") +
                           (suite.evidence_dir / evidence::kLogs / evidence::log_name("receipt")).string() + ")");
    if (const auto duplicates = duplicate_ids(receipt); !duplicates.empty())
        problems.push_back("pytest collected " + std::to_string(duplicates.size()) +
                           " node id(s) more than once (a custom collector that names two items alike?), so no run "
                           "could tell their results apart: " +
                           describe_duplicates(duplicates));
    // Runs of what did collect would be a smaller suite passing for the whole (a module not
    // built yet fails to import): no run starts, and the ledger's collection row names them.
    if (!receipt.errors.empty())
        problems.push_back("pytest's collection ended in " + std::to_string(receipt.errors.size()) +
                           " collection error(s), first " + quote(receipt.errors.front()));
    if (receipt.tests.empty())
        problems.push_back("pytest collected no tests from " + quote(suite.root.string()) + " (configfile " +
                           quote(receipt.configfile.value_or("(none)")) + ")");
    return problems;
}

}  // namespace evgate
