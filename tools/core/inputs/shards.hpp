// Past one machine: the seed matrix split across CI jobs (EVIDENCE_GATE_SHARD=k/n) and the
// shards' runs pooled by a merge job (EVIDENCE_GATE_SHARDS=<dir>;<dir>...) as if one
// machine had run them all. Seed s belongs to shard (s mod n) + 1; the perturbed run to
// shard 1; reruns and localisation run where the gate runs (the merge job).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "inputs/suite_config.hpp"
#include "runs/receipt.hpp"
#include "verdicts/manifest_diff.hpp"

namespace evgate {

struct ShardSpec {
    int index = 1;  // k, 1-based
    int count = 1;  // n
    std::string text() const { return std::to_string(index) + "/" + std::to_string(count); }
};

// "k/n" with 1 <= k <= n; throws Error naming the variable and the value otherwise.
ShardSpec parse_shard_spec(const std::string& text, const std::string& variable);
// EVIDENCE_GATE_SHARD, when set.
std::optional<ShardSpec> this_shard();
// EVIDENCE_GATE_SHARDS, when set: the shard evidence directories a merge job pools.
std::vector<std::filesystem::path> merged_shards();

// What the environment hands this job as evidence, not as sources: the shards
// (EVIDENCE_GATE_SHARDS), runner bundles (EVIDENCE_GATE_RUNNER_BUNDLES), the history and the
// compared run (EVIDENCE_GATE_HISTORY, EVIDENCE_GATE_COMPARE). A CI job downloads them into its
// checkout; the receipt's digest of the sources leaves them out.
std::vector<std::filesystem::path> handed_evidence();

// Does the run (seed.s, perturbed) belong to `shard`?
bool runs_here(const ShardSpec& shard, const std::string& run_id, std::uint64_t seed);

// Whether this job leaves out the run `run_id` because its order is one an earlier seed runs
// (the receipt's `orders`): always without shards, and in the merge job, which gates the orders
// once; in a shard only when that earlier seed is the shard's own too, so that every shard's
// gate has runs of its own (a one-test suite split in two has one order for two shards).
bool repeat_left_out(const Receipt& receipt, const std::string& run_id);

// A shard whose environment differs from this job's where it matters (packages, locale and
// timezone, filesystem case, Python minor version) is not pooled as local runs: its runs
// become a runner column named after its host, and the gate says so.
struct ForeignShard {
    std::filesystem::path dir;
    std::string spec;    // "2/3"
    std::string column;  // the runner column its runs become
    std::vector<DriftEntry> drift;
};
std::vector<ForeignShard> foreign_shards(const SuiteConfig& suite);

// The merge job's side of a run: copies the run's plan and records from the shard that holds
// it, bound to this job's receipt (under the runner column's name for a foreign shard).
// False when no shard holds it (the gate then blocks).
bool import_run(const SuiteConfig& suite, const Receipt& receipt, const std::string& run_id);

// What is wrong with the shards a merge pools: missing or duplicated shards, another suite,
// another commit, other sources (a receipt taken over another digest of the sources,
// runs/receipt_sources.hpp, naming the files that differ), another collection. Empty when they
// agree.
std::vector<std::pair<std::string, std::string>> shard_problems(const SuiteConfig& suite, const Receipt& receipt);

}  // namespace evgate
