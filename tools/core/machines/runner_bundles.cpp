#include "machines/runner_bundles.hpp"

#include <algorithm>
#include <cstdlib>
#include <set>

#include "inputs/evidence_layout.hpp"
#include "inputs/junit.hpp"
#include "io/error.hpp"
#include "io/json_io.hpp"
#include "io/natural_order.hpp"

namespace fs = std::filesystem;

namespace evgate {
namespace {

std::string host_of(const rapidjson::Value& manifest) {
    if (const auto* host = member(manifest, "host"))
        if (const auto* name = member(*host, "hostname"); name && name->IsString()) return name->GetString();
    return "";
}

// An evidence directory from another machine: its local runs become this runner's attempts.
std::vector<LoadedRun> bundle_runs(const fs::path& dir, const std::string& name) {
    const auto receipt = load_receipt(dir / evidence::kReceipt);
    std::vector<LoadedRun> runs;
    for (auto& run : load_runs(dir / evidence::kRuns, receipt.run_receipts())) {
        if (run.plan.column != Column::local || !run.problem.empty()) continue;
        run.plan.id = run.plan.id.on(name);
        run.plan.order = run.plan.id.str();
        run.plan.column = Column::runner;
        runs.push_back(std::move(run));
    }
    if (runs.empty()) throw Error("it holds no completed runs");
    return runs;
}

LoadedRun results_run(RunId id, const std::map<std::string, TestResult>& results) {
    LoadedRun run;
    run.plan.id = std::move(id);
    run.plan.order = run.plan.id.str();
    run.plan.column = Column::runner;
    for (const auto& [test, result] : results) run.plan.tests.push_back(test);
    run.records.results = results;
    run.records.finished = true;
    return run;
}

// A plain JUnit report is one run of the runner; evgate's own junit.xml gives each run it lists
// for a test, named as an evidence directory's runs are ("<host>:seed.0"; a name that is no run
// id, a plain report's runner that junit.xml lists, is kept as a name: "<host>:<name>").
std::vector<LoadedRun> junit_runs(const JUnitRun& junit) {
    std::vector<LoadedRun> runs;
    for (const auto& [id, results] : junit.attempts) {
        const auto run = RunId::parse_any(id);
        runs.push_back(results_run(run ? run->on(junit.name) : RunId::runner_run(junit.name + ":" + id), results));
    }
    if (!junit.results.empty() || runs.empty()) runs.push_back(results_run(RunId::runner_run(junit.name), junit.results));
    return runs;
}

}  // namespace

std::vector<std::string> bundle_paths(const std::vector<std::string>& configured) {
    std::vector<std::string> paths = configured;
    if (const char* extra = std::getenv("EVIDENCE_GATE_RUNNER_BUNDLES")) {
        std::string list = extra;
        for (std::size_t start = 0; start <= list.size();) {
            const auto end = std::min(list.find(';', start), list.size());
            if (end > start) paths.push_back(list.substr(start, end - start));
            start = end + 1;
        }
    }
    return paths;
}

RunnerBundles load_runner_bundles(const std::vector<std::string>& paths, const Receipt& receipt,
                                  const fs::path& local_manifest) {
    RunnerBundles bundles;
    if (paths.empty()) return bundles;
    const auto local = read_manifest(local_manifest);
    std::vector<std::string> ids;
    for (const auto& t : receipt.tests) ids.push_back(t.id);
    std::set<std::string> taken;
    for (const auto& path : paths) {
        try {
            std::string name;
            std::vector<LoadedRun> runs;
            rapidjson::Document manifest;
            if (fs::is_directory(path)) {
                if (!fs::exists(fs::path(path) / evidence::kManifest)) throw Error(std::string("the bundle has no ") + evidence::kManifest);
                manifest = read_manifest(fs::path(path) / evidence::kManifest);
                name = host_of(manifest);
                if (name.empty()) name = fs::path(path).filename().string();
                runs = bundle_runs(path, name);
            } else {
                const auto junit = read_junit(path, ids);
                name = junit.name;
                runs = junit_runs(junit);
                if (!junit.unmapped.empty()) bundles.unmapped[name] = junit.unmapped;
            }
            if (!taken.insert(name).second) throw Error("another bundle already claims the host " + quote(name));
            if (manifest.IsObject()) bundles.drift[name] = diff_manifests(local, manifest);
            bundles.names.push_back(name);
            for (auto& run : runs) bundles.runs.push_back(std::move(run));
        } catch (const Error& e) {
            bundles.left_out.emplace_back(path, e.what());
        }
    }
    // The same bundles in any order make the same columns, so the ledger is byte-identical.
    std::sort(bundles.names.begin(), bundles.names.end());
    std::sort(bundles.runs.begin(), bundles.runs.end(),
              [](const LoadedRun& a, const LoadedRun& b) { return natural_less(a.plan.id.str(), b.plan.id.str()); });
    std::sort(bundles.left_out.begin(), bundles.left_out.end());
    return bundles;
}

}  // namespace evgate
