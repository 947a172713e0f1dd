// What one run is to run (its plan), where its files go in a runs folder, and the runs of an
// evidence directory read back: a plan file and the records beside it per run.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <rapidjson/document.h>

#include "fixtures/shared_tree.hpp"
#include "inputs/run_id.hpp"
#include "inputs/suite_config.hpp"
#include "runs/column.hpp"
#include "runs/run_records.hpp"

namespace evgate {

struct RunPlan {
    RunId id;           // seed.3, seed.3.rerun.1, alone.2, <runner>:seed.0
    std::string order;  // the order it replays: "seed.3" for the seed and its reruns
    std::uint64_t seed = 0;
    std::vector<std::string> tests;  // in the order they are to run
    Column column = Column::local;
    std::vector<std::string> environment;       // VAR=value on top of the suite's (the perturbed run's)
    std::vector<int> cpus;                      // CPUs it may use; empty: all
    std::filesystem::path runs_dir;             // where its records go; empty: the suite's runs/ (evidence)
    TreeAccess access = TreeAccess::exclusive;  // how it holds the fixture groups (not written)
    std::string lease;                          // the lease token it ran under, in the plan file
    std::string confirms;                       // the run it does again alone (that run went beside others); "" for none
    bool listed = false;                        // its order is its tests as listed, which no seed makes (a sweep and its reruns)
    bool fresh = false;                         // a fresh process of its own, never a fork: it confirms what forks showed (confirm_fresh.hpp)
};

// A run of the alone pass: first.<n> itself (no rerun, redo or fresh replay of it), this
// machine's, which ran the n-th collected test alone, first after the collection (cmd_alone).
bool is_alone_pass(const RunPlan& plan);

std::filesystem::path records_file(const SuiteConfig& suite, const RunId& run);
std::filesystem::path plan_file(const SuiteConfig& suite, const RunId& run);
std::filesystem::path log_file(const SuiteConfig& suite, const RunId& run);
std::filesystem::path records_file(const SuiteConfig& suite, const RunPlan& plan);

void write_plan(const std::filesystem::path& file, const RunPlan& plan);
RunPlan read_plan(const std::filesystem::path& file);
// A plan document's every field but its tests, for readers that keep the tests their own way.
RunPlan plan_header(const rapidjson::Value& doc, const std::string& source);

struct LoadedRun {
    RunPlan plan;
    RunRecords records;
    std::string problem;  // records that could not be read, or a run planned from another receipt
};

// Every run in the evidence directory, in natural order of their ids (seed.2 before seed.10).
// `receipts`: the receipts whose runs are evidence (Receipt::run_receipts): a run finished under
// any other gets that as its problem.
std::vector<LoadedRun> load_runs(const SuiteConfig& suite, const std::vector<std::string>& receipts);
std::vector<LoadedRun> load_runs(const std::filesystem::path& runs_dir, const std::vector<std::string>& receipts);
// The same runs with their plans alone (no records read): for what needs only to know which runs there are.
std::vector<LoadedRun> load_plans(const std::filesystem::path& runs_dir);

// The plan files in `runs_dir` in that order: seeds and their reruns first, then the runs that
// check a test alone. A run's id is its plan file's name (<id>.plan.json).
std::vector<std::filesystem::path> run_plan_files(const std::filesystem::path& runs_dir);

// One run: `read` fills it from its plan file and its records (<id>.jsonl beside it). A run that
// cannot be read comes back with its problem.
using RunReader = std::function<void(const std::filesystem::path& plan_file, LoadedRun& run)>;
LoadedRun load_run(const std::filesystem::path& plan_file, const RunReader& read);
// A run that finished under none of `receipts` gets that as its problem.
void check_receipt(LoadedRun& run, const std::vector<std::string>& receipts);
std::filesystem::path records_beside(const std::filesystem::path& plan_file);

}  // namespace evgate
