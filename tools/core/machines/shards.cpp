#include "machines/shards.hpp"

#include <algorithm>
#include <map>
#include <regex>

#include "inputs/evidence_layout.hpp"
#include "inputs/run_id.hpp"
#include "io/atomic_file.hpp"
#include "io/error.hpp"
#include "io/json_io.hpp"
#include "runs/receipt_sources.hpp"
#include "runs/run_plan.hpp"
#include "runs/run_records.hpp"

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

// Some of `paths`, quoted, for a message.
std::string some_paths(const std::vector<std::string>& paths) {
    std::string text;
    for (std::size_t i = 0; i < paths.size() && i < 5; ++i) text += (i ? ", " : "") + quote(paths[i]);
    if (paths.size() > 5) text += " and " + std::to_string(paths.size() - 5) + " more";
    return text;
}

// The same commit is not the same sources: an edit between the shard's run and the merge (in
// the tree, or in a file outside it that pytest imported) changes what was tested. "" when the
// shard's receipt was taken over the sources this job's was.
std::string sources_difference(const fs::path& shard, const Receipt& theirs, const SuiteConfig& suite, const Receipt& ours) {
    if (theirs.sources_digest.empty())
        return "its receipt records no digest of the sources it ran over (taken by an older evgate?), so nothing "
               "says it tested this tree";
    if (theirs.sources_digest == ours.sources_digest) return "";
    const auto there = read_sources(shard / evidence::kSources), here = read_sources(suite.evidence_dir / evidence::kSources);
    std::string text = "the shard ran over other sources than this tree";
    if (!there || !here || there->digest != theirs.sources_digest || here->digest != ours.sources_digest)
        return text + " (sources digest " + theirs.sources_digest + " there, " +
               (ours.sources_digest.empty() ? "(none recorded)" : ours.sources_digest) + " here)";
    const auto diff = compare_sources(*there, *here);
    std::vector<std::string> parts;
    if (!diff.changed.empty()) parts.push_back("changed since: " + some_paths(diff.changed));
    if (!diff.only_here.empty()) parts.push_back("only here: " + some_paths(diff.only_here));
    if (!diff.only_there.empty()) parts.push_back("only there: " + some_paths(diff.only_there));
    for (std::size_t i = 0; i < parts.size(); ++i) text += (i ? "; " : ": ") + parts[i];
    return text;
}

}  // namespace

bool repeat_left_out(const Receipt& receipt, const RunId& run) {
    const auto repeat = receipt.orders.repeats.find(run.str());
    if (repeat == receipt.orders.repeats.end()) return false;
    const auto shard = merged_shards().empty() ? this_shard() : std::nullopt;
    if (!shard) return true;
    const auto earlier = RunId::of(repeat->second);  // a seed's run (the receipt checked it)
    return runs_here(*shard, earlier, earlier.number());
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

bool import_run(const SuiteConfig& suite, const Receipt& receipt, const RunId& run) {
    const auto foreign = foreign_shards(suite);
    for (const auto& shard : merged_shards()) {
        const auto plan = runs_of(shard) / evidence::plan_name(run.str());
        const auto records = runs_of(shard) / evidence::records_name(run.str());
        if (!fs::exists(plan) || !fs::exists(records)) continue;
        fs::create_directories(suite.runs_dir());
        auto imported = read_plan(plan);
        for (const auto& f : foreign) {
            if (!fs::equivalent(f.dir, shard)) continue;
            imported.id = run.on(f.column);
            imported.order = imported.id.str();
            imported.column = Column::runner;
        }
        write_plan(plan_file(suite, imported.id), imported);
        write_file_atomic(records_file(suite, imported.id), rebind(records, receipt.id));
        for (const char* manifest : {evidence::kPerturbedManifest})
            if (run == RunId::perturbed() && fs::exists(shard / manifest))
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
        else if (auto differs = sources_difference(dir, theirs, suite, receipt); !differs.empty())
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
