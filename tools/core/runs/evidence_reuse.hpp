// Evidence that accumulates: the runs of a `ctest` stay evidence for the next one when nothing
// they depend on has changed, and the next one adds orders instead of running the same again.
//
// What the runs depend on is one key, a SHA-256 digest of: evgate and the plugin (their files'
// stamps), the suite as configured (suite.json), the environment manifest, every value of the
// environment but the shell's own bookkeeping (`_`, `OLDPWD`, `PWD`, `SHLVL`) and the variables
// EVIDENCE_GATE_REUSE_IGNORE names (only the digest is written, never a value), and the receipt
// but its per-invocation fields (its id, the server's pid, git's HEAD): the collected ids, the
// options, the conftests and configs, the sources digest (tests, conftests, configs, imported
// project modules, built extension modules, DEPENDS files) and the hash seed.
//
// The ledger step writes reuse.json once a ledger stands on the runs: the key, the receipts
// whose runs are kept, and the next seed. The receipt step of the next `ctest` removes it (a
// `ctest` cut short leaves none: the one after starts over), takes its receipt, and keeps the
// runs when the keys agree; else it clears them. A kept run is never run again: the seed steps
// run the seeds after the last one kept, the alone pass the tests not yet run alone, the
// perturbed run and the localisation only what is missing. EVIDENCE_GATE_REUSE=0 turns reuse
// off; a shard's receipt never reuses (a merge job reads each shard's own runs).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <rapidjson/document.h>

#include "inputs/suite_config.hpp"

namespace evgate {

// An earlier `ctest` whose runs are kept: its receipt, when it was taken, the seeds it ran.
struct KeptReceipt {
    std::string id;
    std::string at;  // ISO 8601, UTC
    std::uint64_t first_seed = 0;
    std::uint64_t last_seed = 0;  // inclusive
};

// reuse.json: what the next `ctest` may keep.
struct KeptEvidence {
    std::string key;
    std::map<std::string, std::string> parts;  // the key's parts, each a digest: what changed is said by name
    std::string hash_seed;                     // PYTHONHASHSEED of the kept runs: the next collection takes it again
    std::vector<KeptReceipt> receipts;         // oldest first; the last is the invocation that wrote it
    std::uint64_t next_seed = 0;               // the first seed the next `ctest` runs
};

// reuse.json as the last ledger step left it, then removed; nullopt when there is none, when
// reuse is off (EVIDENCE_GATE_REUSE=0, a shard), or when it does not parse (said on stderr: the
// runs then start over, which is never wrong).
std::optional<KeptEvidence> take_kept_evidence(const SuiteConfig& suite);

// The key of the runs a receipt document (complete but for its digest) stands for, and its
// parts: "evgate and the plugin", "the suite's configuration", "the environment manifest",
// "the environment's values", "the collection and its sources".
struct EvidenceKey {
    std::string key;
    std::map<std::string, std::string> parts;
};
EvidenceKey evidence_key(const SuiteConfig& suite, const rapidjson::Value& receipt);

// What add_reuse decided: the runs are kept, or why not ("" for a first run).
struct ReuseDecision {
    bool keeps = false;
    std::string why_not;  // "the environment manifest and the collection and its sources changed"
};

// Adds `reuse` to the receipt document: its key and parts, and the receipts whose runs it keeps
// (those of `kept` when the keys agree, else none).
ReuseDecision add_reuse(rapidjson::Document& receipt, const SuiteConfig& suite, const std::optional<KeptEvidence>& kept);

// Written by the ledger step: this invocation's receipt and the seeds it ran added to what it kept.
void write_kept_evidence(const SuiteConfig& suite, const KeptEvidence& evidence);

}  // namespace evgate
