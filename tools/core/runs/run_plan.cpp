#include "runs/run_plan.hpp"

#include <algorithm>
#include <utility>

#include "inputs/evidence_layout.hpp"
#include "inputs/run_id.hpp"
#include "io/atomic_file.hpp"
#include "io/error.hpp"
#include "io/json_io.hpp"
#include "io/natural_order.hpp"

namespace fs = std::filesystem;

namespace evgate {

bool is_alone_pass(const RunPlan& plan) {
    const auto id = plan.id.local();
    return plan.column == Column::local && plan.order == kAloneOrder && id && id->is_first() && id->is_plain() &&
           plan.confirms.empty() && !plan.fresh;
}

fs::path records_file(const SuiteConfig& suite, const RunId& run) { return suite.runs_dir() / evidence::records_name(run.str()); }
fs::path plan_file(const SuiteConfig& suite, const RunId& run) { return suite.runs_dir() / evidence::plan_name(run.str()); }
fs::path log_file(const SuiteConfig& suite, const RunId& run) {
    return suite.evidence_dir / evidence::kLogs / evidence::log_name(run.str());
}

fs::path records_file(const SuiteConfig& suite, const RunPlan& plan) {
    return plan.runs_dir.empty() ? records_file(suite, plan.id) : plan.runs_dir / evidence::records_name(plan.id.str());
}

void write_plan(const fs::path& file, const RunPlan& plan) {
    JsonWriter json;
    auto& w = json.begin();
    w.StartObject();
    w.Key("id"), w.String(plan.id.str());
    w.Key("order"), w.String(plan.order);
    w.Key("seed"), w.Uint64(plan.seed);
    w.Key("column"), w.String(std::string(to_string(plan.column)));
    w.Key("environment"), w.StartArray();
    for (const auto& e : plan.environment) w.String(e);
    w.EndArray();
    if (!plan.cpus.empty()) {
        w.Key("cpus"), w.StartArray();
        for (int cpu : plan.cpus) w.Int(cpu);
        w.EndArray();
    }
    if (!plan.lease.empty()) w.Key("lease"), w.String(plan.lease);
    if (!plan.confirms.empty()) w.Key("confirms"), w.String(plan.confirms);
    if (plan.listed) w.Key("listed"), w.Bool(true);
    if (plan.fresh) w.Key("fresh"), w.Bool(true);
    w.Key("tests"), w.StartArray();
    for (const auto& t : plan.tests) w.String(t);
    w.EndArray();
    w.EndObject();
    write_file_atomic(file, std::string(json.text()) + "\n");
}

RunPlan plan_header(const rapidjson::Value& doc, const std::string& source) {
    RunPlan plan;
    const auto id = string_member(doc, "id", source);
    if (const auto run = RunId::parse_any(id)) plan.id = *run;
    else throw InputError(source, 0, "'id' is not a run id: " + quote(id));
    plan.order = string_member(doc, "order", source);
    const auto* seed = member(doc, "seed");
    if (seed == nullptr || !seed->IsUint64()) throw InputError(source, 0, "'seed' is not an unsigned integer");
    plan.seed = seed->GetUint64();
    plan.environment = string_array(doc, "environment", source);
    if (const auto* cpus = member(doc, "cpus"); cpus && cpus->IsArray())
        for (const auto& cpu : cpus->GetArray())
            if (cpu.IsInt()) plan.cpus.push_back(cpu.GetInt());
    plan.lease = optional_string(doc, "lease", source).value_or("");
    plan.confirms = optional_string(doc, "confirms", source).value_or("");
    for (auto [key, flag] : {std::pair{"listed", &plan.listed}, std::pair{"fresh", &plan.fresh}}) {
        if (const auto* value = member(doc, key)) {
            if (!value->IsBool()) throw InputError(source, 0, quote(key) + " is not true or false");
            *flag = value->GetBool();
        }
    }
    const auto column = optional_string(doc, "column", source).value_or("local");
    if (!parse_column(column, plan.column)) throw InputError(source, 0, "unknown column " + quote(column));
    return plan;
}

RunPlan read_plan(const fs::path& file) {
    const auto doc = read_json_file(file);
    auto plan = plan_header(doc, file.string());
    plan.tests = string_array(doc, "tests", file.string());
    return plan;
}

namespace {

constexpr std::size_t kPlanSuffixSize = sizeof evidence::kPlanSuffix - 1;

bool is_plan_file(const std::string& name) {
    return name.size() > kPlanSuffixSize && name.compare(name.size() - kPlanSuffixSize, kPlanSuffixSize, evidence::kPlanSuffix) == 0;
}

std::string run_id_of(const fs::path& plan_file) {
    const auto name = plan_file.filename().string();
    return name.substr(0, name.size() - kPlanSuffixSize);
}

// The run a plan file is named after: a file of a runs folder named after no run is not evidence
// of anything, and an error naming it.
RunId named_run(const fs::path& plan_file) {
    const auto name = run_id_of(plan_file);
    if (const auto run = RunId::parse_any(name)) return *run;
    throw InputError(plan_file.string(), 0, "not a run's plan: " + quote(name) + " is no run id");
}

}  // namespace

fs::path records_beside(const fs::path& plan_file) { return plan_file.parent_path() / evidence::records_name(run_id_of(plan_file)); }

std::vector<fs::path> run_plan_files(const fs::path& runs_dir) {
    std::vector<fs::path> plans;
    if (!fs::exists(runs_dir)) return plans;
    for (const auto& entry : fs::directory_iterator(runs_dir))
        if (is_plan_file(entry.path().filename().string())) plans.push_back(entry.path());
    std::sort(plans.begin(), plans.end(), [](const fs::path& a, const fs::path& b) {
        const auto x = run_id_of(a), y = run_id_of(b);
        const auto seeds = [](const std::string& id) {
            const auto run = RunId::parse(id);
            return run && run->is_seed();
        };
        const bool x_seed = seeds(x), y_seed = seeds(y);
        return x_seed != y_seed ? x_seed : natural_less(x, y);
    });
    return plans;
}

LoadedRun load_run(const fs::path& plan_file, const RunReader& read) {
    LoadedRun run;
    try {
        read(plan_file, run);
        if (run.plan.id.str() != run_id_of(plan_file)) throw Error("its plan names the run " + quote(run.plan.id.str()));
    } catch (const Error& e) {
        run.plan.id = named_run(plan_file);
        run.problem = std::string("its records cannot be read: ") + e.what();
    }
    return run;
}

void check_receipt(LoadedRun& run, const std::vector<std::string>& receipts) {
    if (run.problem.empty() && run.records.finished &&
        std::find(receipts.begin(), receipts.end(), run.records.receipt) == receipts.end())
        run.problem = "the run belongs to an earlier receipt (" + run.records.receipt + ")";
}

std::vector<LoadedRun> load_runs(const SuiteConfig& suite, const std::vector<std::string>& receipts) {
    return load_runs(suite.runs_dir(), receipts);
}

std::vector<LoadedRun> load_runs(const fs::path& runs_dir, const std::vector<std::string>& receipts) {
    std::vector<LoadedRun> runs;
    for (const auto& plan_file : run_plan_files(runs_dir)) {
        runs.push_back(load_run(plan_file, [](const fs::path& file, LoadedRun& run) {
            run.plan = read_plan(file);
            run.records = read_run_records(records_beside(file));
        }));
        check_receipt(runs.back(), receipts);
    }
    return runs;
}

std::vector<LoadedRun> load_plans(const fs::path& runs_dir) {
    std::vector<LoadedRun> runs;
    for (const auto& plan_file : run_plan_files(runs_dir))
        runs.push_back(load_run(plan_file, [](const fs::path& file, LoadedRun& run) { run.plan = read_plan(file); }));
    return runs;
}

}  // namespace evgate
