// The seed matrix split across CI jobs, pooled again: which runs a shard leaves out, and the
// merge job's side, which takes the shards' runs (EVIDENCE_GATE_SHARDS) as if one machine had
// run them all, checks that the shards agree, and makes a shard from another environment a
// runner column. Which shard a job is: inputs/shard_spec.hpp.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "inputs/shard_spec.hpp"
#include "inputs/suite_config.hpp"
#include "machines/manifest_diff.hpp"
#include "runs/receipt.hpp"

namespace evgate {

// Whether this job leaves out the run `run` because its order is one an earlier seed runs
// (the receipt's `orders`): always without shards, and in the merge job, which gates the orders
// once; in a shard only when that earlier seed is the shard's own too, so that every shard's
// gate has runs of its own (a one-test suite split in two has one order for two shards).
bool repeat_left_out(const Receipt& receipt, const RunId& run);

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
bool import_run(const SuiteConfig& suite, const Receipt& receipt, const RunId& run);

// What is wrong with the shards a merge pools: missing or duplicated shards, another suite,
// another commit, other sources (a receipt taken over another digest of the sources,
// runs/receipt_sources.hpp, naming the files that differ), another collection. Empty when they
// agree.
std::vector<std::pair<std::string, std::string>> shard_problems(const SuiteConfig& suite, const Receipt& receipt);

}  // namespace evgate
