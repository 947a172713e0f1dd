#include "runs/env_manifest.hpp"

#include <filesystem>

#include <sys/utsname.h>

#include "inputs/evidence_layout.hpp"
#include "io/atomic_file.hpp"
#include "io/error.hpp"
#include "io/json_io.hpp"
#include "runs/pytest_command.hpp"
#include "runs/sandbox.hpp"

namespace fs = std::filesystem;

namespace evgate {

void write_env_manifest(const SuiteConfig& suite, const fs::path& out, const std::vector<std::string>& environment,
                        const std::vector<int>& cpus) {
    auto from_python = out;
    from_python += evidence::kFromPythonSuffix;
    const auto log = suite.evidence_dir / evidence::kLogs / evidence::log_name(out.stem().string());
    fs::create_directories(log.parent_path());
    fs::remove(from_python);
    empty_sandbox(suite, log);
    // Same interpreter and environment as the runs; the manifest module beside the plugin.
    auto spec = pytest_process(suite, {}, log);
    spec.argv = {suite.python, "-m", "evidence_gate_manifest", from_python.string(),
                 "--root", suite.root.string()};
    spec.environment = environment_with(std::move(spec.environment), environment);
    spec.cpus = cpus;
    const auto result = run_process(spec);
    remove_sandbox(suite, log);
    if (!result.exited_with(0) || !fs::exists(from_python))
        throw Error("the manifest could not be taken with " + suite.python + " (" + result.describe() + "):\n" + read_file(log));

    auto doc = read_json_file(from_python);
    auto& alloc = doc.GetAllocator();
    struct utsname host {};
    ::uname(&host);
    rapidjson::Value tool(rapidjson::kObjectType);
    tool.AddMember("name", "evgate", alloc);
    tool.AddMember("hostname", rapidjson::Value(host.nodename, alloc), alloc);
    tool.AddMember("kernel", rapidjson::Value(std::string(host.sysname) + " " + host.release, alloc), alloc);
    tool.AddMember("suite", rapidjson::Value(suite.name, alloc), alloc);
    doc.AddMember("host", tool, alloc);
    write_file_atomic(out, to_json(doc) + "\n");
    fs::remove(from_python);
}

}  // namespace evgate
