// Which share of a split seed matrix this job is, as the environment hands it over: the seed
// matrix split across CI jobs (EVIDENCE_GATE_SHARD=k/n) and the shards' evidence directories a
// merge job pools (EVIDENCE_GATE_SHARDS=<dir>;<dir>...). Seed s belongs to shard (s mod n) + 1;
// the perturbed run to shard 1; reruns and localisation run where the gate runs (the merge job).
// Pooling the shards' runs is machines/shards.hpp.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "inputs/run_id.hpp"

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
bool runs_here(const ShardSpec& shard, const RunId& run, std::uint64_t seed);

}  // namespace evgate
