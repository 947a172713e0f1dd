// Run ids: the name of every run of a suite, in its plan and records files, the ledger, the
// reports and shards handed back by other machines. A run id is a kind with its number
// (`seed.<k>`, `first.<n>`, `alone.<n>`, `sweep.<n>`) or `perturbed` (or `probe`, the partner
// search's, or `replay`, `evgate replay`'s), then the runs made from it,
// each a suffix: `.rerun.<j>` (its order again), `.apart` (done again alone, away from the runs
// it went beside), `.fresh.<j>` (a fresh process confirming what forks showed). Another machine's
// run is its id there under the runner's name, `<runner>:<id>` (a runner bundle's, a foreign
// shard's), or the runner's name alone (a plain JUnit report: one run). Spelled here once: every
// other file builds ids with RunId and asks RunId what an id is.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace evgate {

class RunId {
public:
    enum class Kind { seed,
                      first,
                      alone,
                      sweep,
                      perturbed,
                      probe,
                      replay,
                      none };  // no id of this machine: a runner's one run, or a run not named yet
    enum class Step { rerun,
                      apart,
                      fresh };
    struct Suffix {
        Step step;
        std::uint64_t number;  // 0 for apart
        bool operator==(const Suffix& other) const { return step == other.step && number == other.number; }
    };

    static RunId seed(std::uint64_t k) { return RunId(Kind::seed, k); }
    static RunId first(std::uint64_t n) { return RunId(Kind::first, n); }
    static RunId alone(std::uint64_t n) { return RunId(Kind::alone, n); }
    static RunId sweep(std::uint64_t n) { return RunId(Kind::sweep, n); }
    static RunId perturbed() { return RunId(Kind::perturbed, 0); }
    static RunId probe() { return RunId(Kind::probe, 0); }    // one run of the partner search (in localise/)
    static RunId replay() { return RunId(Kind::replay, 0); }  // one run of `evgate replay` (in replay/)
    // The one run of a runner that handed over a plain JUnit report: its name.
    static RunId runner_run(std::string runner);

    RunId() : RunId(Kind::none, 0) {}  // no run named yet: str() is ""

    // The id of this machine's run `text` spells, or nullopt for anything else (a runner's run, a
    // number with a sign or a leading zero, an unknown suffix): str() gives `text` back byte for byte.
    static std::optional<RunId> parse(std::string_view text);
    // The same, for an id evgate wrote itself (a plan's): anything else is an Error naming it.
    static RunId of(std::string_view text);
    // Any run's id as a plan file names it: this machine's, or `<runner>:<id>`.
    static std::optional<RunId> parse_any(std::string_view text);
    std::string str() const;

    // This machine's run `id` as run by `runner` ("<runner>:<id>"); on a runner's run, the runner
    // that handed it over comes first.
    RunId on(const std::string& runner) const;
    const std::string& runner() const { return runner_; }  // "" for this machine's runs
    // This id, when it names a run of this machine: what RunId::parse(str()) gives.
    std::optional<RunId> local() const;

    Kind kind() const { return kind_; }
    std::uint64_t number() const { return number_; }  // the kind's number (0 for perturbed, probe and replay)
    const std::vector<Suffix>& suffixes() const { return suffixes_; }

    // By kind, whatever the suffixes: seed.3.rerun.1 is a seed's run.
    bool is_seed() const { return kind_ == Kind::seed; }
    bool is_first() const { return kind_ == Kind::first; }
    bool is_alone() const { return kind_ == Kind::alone; }
    bool is_sweep() const { return kind_ == Kind::sweep; }
    bool is_perturbed() const { return kind_ == Kind::perturbed; }
    bool is_plain() const { return suffixes_.empty(); }                                           // the kind's own run: no suffix
    bool has(Step step) const;                                                                    // one of its suffixes is a `step`
    bool is_apart() const { return !suffixes_.empty() && suffixes_.back().step == Step::apart; }  // a redo alone
    bool is_fresh() const { return !suffixes_.empty() && suffixes_.back().step == Step::fresh; }  // a fresh replay

    RunId base() const;  // without its suffixes
    // The run its last `step` was made from (seed.1.fresh.2.apart: seed.1 for fresh); nullopt without one.
    std::optional<RunId> before_last(Step step) const;
    RunId rerun(std::uint64_t j) const { return with({Step::rerun, j}); }
    RunId apart() const { return with({Step::apart, 0}); }
    RunId fresh(std::uint64_t j) const { return with({Step::fresh, j}); }

    bool operator==(const RunId& other) const {
        return kind_ == other.kind_ && number_ == other.number_ && suffixes_ == other.suffixes_ && runner_ == other.runner_;
    }
    bool operator!=(const RunId& other) const { return !(*this == other); }

private:
    RunId(Kind kind, std::uint64_t number) : kind_(kind), number_(number) {}
    RunId with(Suffix suffix) const;

    Kind kind_;
    std::uint64_t number_;
    std::vector<Suffix> suffixes_;
    std::string runner_;
};

std::ostream& operator<<(std::ostream& out, const RunId& id);

// The order of the alone pass and of the runs that replay one test by itself (a run's `order`:
// the other runs name theirs by the plain id of the run that set it, `seed.<k>` or `sweep.<n>`).
constexpr std::string_view kAloneOrder = "alone";

}  // namespace evgate
