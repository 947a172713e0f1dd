#include "inputs/shards.hpp"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <map>
#include <regex>

#include "inputs/evidence_layout.hpp"
#include "io/error.hpp"
#include "io/git_state.hpp"
#include "io/atomic_file.hpp"
#include "io/json_io.hpp"
#include "runs/run_records.hpp"
#include "runs/run_plan.hpp"

namespace fs = std::filesystem;

namespace evgate {
namespace {

fs::path runs_of(const fs::path& shard) { return shard / evidence::kRuns; }

std::vector<std::string> ids(const Receipt& receipt) {
    std::vector<std::string> out;
    for (const auto& t : receipt.tests) out.push_back(t.id);
    return out;
}

// The records, with the harness's `finished` record bound to this job's receipt instead of
// the shard's (the shard's receipt was checked against this one by shard_problems()).
std::string rebind(const fs::path& records, const std::string& receipt_id) {
    std::string text = read_file(records);
    const std::regex finished(R"re("event":"finished"(.*)"receipt":"[0-9a-f]*")re");
    return std::regex_replace(text, finished, "\"event\":\"finished\"$1\"receipt\":\"" + receipt_id + "\"");
}

// Files in `a` and not in `b`, quoted, a few of them.
std::string only_in(const std::vector<std::string>& a, const std::vector<std::string>& b) {
    std::vector<std::string> only;
    std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(only));
    std::string text;
    for (std::size_t i = 0; i < only.size() && i < 5; ++i) text += (i ? ", " : "") + quote(only[i]);
    if (only.size() > 5) text += " and " + std::to_string(only.size() - 5) + " more";
    return text.empty() ? "none" : text;
}

// The same commit is not the same sources: an uncommitted edit between the shard's run and
// the merge changes what was tested. "" when the uncommitted files and their content agree.
std::string worktree_difference(const Receipt& theirs, const Receipt& ours) {
    const auto there = dirty_paths(theirs.git_dirty), here = dirty_paths(ours.git_dirty);
    if (there != here)
        return "the shard ran over other uncommitted changes: dirty only there: " + only_in(there, here) +
               "; dirty only here: " + only_in(here, there);
    if (theirs.git_digest != ours.git_digest)
        return "the shard ran over other content in the uncommitted files (" + only_in(here, {}) +
               "): digest " + (theirs.git_digest.empty() ? "(none recorded)" : theirs.git_digest) + " there, " +
               (ours.git_digest.empty() ? "(none recorded)" : ours.git_digest) + " here";
    return "";
}

}  // namespace

ShardSpec parse_shard_spec(const std::string& text, const std::string& variable) {
    static const std::regex form(R"(([0-9]{1,6})/([0-9]{1,6}))");
    std::smatch m;
    if (std::regex_match(text, m, form)) {
        ShardSpec spec{std::stoi(m[1]), std::stoi(m[2])};
        if (spec.index >= 1 && spec.index <= spec.count) return spec;
    }
    throw Error(variable + " must be k/n with 1 <= k <= n, not " + quote(text));
}

std::optional<ShardSpec> this_shard() {
    const char* value = std::getenv("EVIDENCE_GATE_SHARD");
    if (value == nullptr || *value == '\0') return std::nullopt;
    return parse_shard_spec(value, "EVIDENCE_GATE_SHARD");
}

std::vector<fs::path> merged_shards() {
    std::vector<fs::path> dirs;
    const char* value = std::getenv("EVIDENCE_GATE_SHARDS");
    if (value == nullptr) return dirs;
    const std::string list = value;
    for (std::size_t start = 0; start <= list.size();) {
        const auto end = std::min(list.find(';', start), list.size());
        if (end > start) dirs.emplace_back(list.substr(start, end - start));
        start = end + 1;
    }
    return dirs;
}

bool runs_here(const ShardSpec& shard, const std::string& run_id, std::uint64_t seed) {
    if (run_id == "perturbed") return shard.index == 1;
    return static_cast<int>(seed % static_cast<std::uint64_t>(shard.count)) + 1 == shard.index;
}

std::vector<ForeignShard> foreign_shards(const SuiteConfig& suite) {
    std::vector<ForeignShard> foreign;
    if (!fs::exists(suite.manifest_file())) return foreign;
    const auto local = read_manifest(suite.manifest_file());
    for (const auto& dir : merged_shards()) {
        if (!fs::exists(dir / evidence::kManifest)) continue;
        const auto theirs = read_manifest(dir / evidence::kManifest);
        auto drift = diff_manifests(local, theirs);
        const bool differs = std::any_of(drift.begin(), drift.end(), [](const DriftEntry& e) {
            return e.rank <= drift_rank::filesystem_case || e.rank == drift_rank::python_minor;
        });
        if (!differs) continue;
        std::string host = "shard";
        if (const auto* h = member(theirs, "host"))
            host = optional_string(*h, "hostname", dir.string()).value_or(host);
        const auto spec = parse_shard_spec(load_receipt(dir / evidence::kReceipt).shard, (dir / evidence::kReceipt).string());
        // A column name is part of run ids, and so of file names: no '/'.
        const auto column = host + "-shard-" + std::to_string(spec.index) + "-of-" + std::to_string(spec.count);
        foreign.push_back({dir, spec.text(), column, std::move(drift)});
    }
    return foreign;
}

bool import_run(const SuiteConfig& suite, const Receipt& receipt, const std::string& run_id) {
    const auto foreign = foreign_shards(suite);
    for (const auto& shard : merged_shards()) {
        const auto plan = runs_of(shard) / evidence::plan_name(run_id);
        const auto records = runs_of(shard) / evidence::records_name(run_id);
        if (!fs::exists(plan) || !fs::exists(records)) continue;
        fs::create_directories(suite.runs_dir());
        auto imported = read_plan(plan);
        for (const auto& f : foreign) {
            if (!fs::equivalent(f.dir, shard)) continue;
            imported.id = imported.order = f.column + ":" + run_id;
            imported.column = Column::runner;
        }
        write_plan(plan_file(suite, imported.id), imported);
        write_file_atomic(records_file(suite, imported.id), rebind(records, receipt.id));
        for (const char* manifest : {evidence::kPerturbedManifest})
            if (run_id == "perturbed" && fs::exists(shard / manifest))
                fs::copy_file(shard / manifest, suite.evidence_dir / manifest, fs::copy_options::overwrite_existing);
        return true;
    }
    return false;
}

std::vector<std::pair<std::string, std::string>> shard_problems(const SuiteConfig& suite, const Receipt& receipt) {
    std::vector<std::pair<std::string, std::string>> problems;
    std::map<std::string, fs::path> seen;  // shard spec -> directory
    std::optional<int> count;
    for (const auto& dir : merged_shards()) {
        const std::string name = dir.string();
        Receipt theirs;
        try {
            theirs = load_receipt(dir / evidence::kReceipt);
        } catch (const Error& e) {
            problems.emplace_back(name, std::string("not a shard evidence directory: ") + e.what());
            continue;
        }
        if (theirs.shard.empty()) {
            problems.emplace_back(name, "its receipt names no shard (EVIDENCE_GATE_SHARD was not set there)");
            continue;
        }
        const auto spec = parse_shard_spec(theirs.shard, name + "/" + evidence::kReceipt + " 'shard'");
        if (count && *count != spec.count) problems.emplace_back(name, "shard " + spec.text() + " of another split");
        count = spec.count;
        if (auto [it, fresh] = seen.emplace(spec.text(), dir); !fresh)
            problems.emplace_back(name, "shard " + spec.text() + " is also " + it->second.string());
        if (theirs.suite != suite.name) problems.emplace_back(name, "a shard of suite " + quote(theirs.suite) + ", not " + quote(suite.name));
        if (theirs.git_head != receipt.git_head)
            problems.emplace_back(name, "a shard of commit " + quote(theirs.git_head) + ", this job is at " + quote(receipt.git_head));
        else if (auto differs = worktree_difference(theirs, receipt); !differs.empty())
            problems.emplace_back(name, differs);
        if (ids(theirs) != ids(receipt)) problems.emplace_back(name, "the shard collected other tests than this job");
        if (!same_config(theirs.configfile ? std::optional(fs::path(*theirs.configfile).filename().string()) : std::nullopt,
                         receipt.configfile ? std::optional(fs::path(*receipt.configfile).filename().string()) : std::nullopt))
            problems.emplace_back(name, "the shard read another config file");
    }
    for (int k = 1; count && k <= *count; ++k) {
        const auto spec = std::to_string(k) + "/" + std::to_string(*count);
        if (!seen.count(spec)) problems.emplace_back("shard " + spec, "no directory in EVIDENCE_GATE_SHARDS holds it");
    }
    return problems;
}

}  // namespace evgate
