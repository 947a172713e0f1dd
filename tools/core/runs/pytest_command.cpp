#include "runs/pytest_command.hpp"

#include <algorithm>
#include <cstdlib>
#include <iterator>

#include <unistd.h>

#include "inputs/evidence_layout.hpp"
#include "runs/bytecode_cache.hpp"
#include "runs/sandbox.hpp"

namespace evgate {

namespace {

// The plugin's directory first (never displaced), then what the suite's ENVIRONMENT appends,
// then the inherited PYTHONPATH.
std::string python_path(const SuiteConfig& suite) {
    std::string path = suite.plugin_dir.string();
    for (const auto& e : suite.environment)
        if (e.rfind("PYTHONPATH=", 0) == 0 && e.size() > 11) path += ":" + e.substr(11);
    if (const char* old = std::getenv("PYTHONPATH"); old != nullptr && *old != '\0') path += ":" + std::string(old);
    return path;
}

}  // namespace

ProcessSpec pytest_process(const SuiteConfig& suite, const std::vector<std::string>& plugin_args,
                           const std::filesystem::path& log) {
    ProcessSpec spec;
    spec.argv = {suite.python, "-m", "pytest", "-p", "evidence_gate_pytest", "--rootdir=" + suite.root.string()};
    spec.argv.insert(spec.argv.end(), plugin_args.begin(), plugin_args.end());
    spec.argv.insert(spec.argv.end(), suite.pytest_args.begin(), suite.pytest_args.end());
    // Our order is the evidence, and no cache files go into the source tree. After the suite's
    // own arguments, where pytest takes the last -p of a name: a `-p randomly` there cannot undo
    // it (one in addopts or PYTEST_ADDOPTS comes before the command line anyway). What these
    // plugins' options in the suite's configuration become: evidence_gate_aside.py.
    for (const char* plugin : {"no:randomly", "no:random_order", "no:cacheprovider"}) {
        spec.argv.emplace_back("-p");
        spec.argv.emplace_back(plugin);
    }
    spec.argv.insert(spec.argv.end(), suite.tests.begin(), suite.tests.end());
    spec.cwd = suite.root;
    spec.output = log;
    spec.timeout = std::chrono::seconds(suite.timeout_seconds);

    // Bytecode goes to a cache in the build tree, never beside the sources: pytest caches its
    // rewritten test modules there too, so a run does not recompile the suite (with no
    // bytecode at all, every run would). PYTHONDONTWRITEBYTECODE is emptied for the same
    // reason; a suite that wants it sets it with ENVIRONMENT.
    const auto sandbox = sandbox_environment(suite, sandbox_of(suite, log));
    const auto pycache = bytecode_cache(suite);
    std::vector<std::string> overrides = {"PYTHONPATH=" + python_path(suite), "PYTHONDONTWRITEBYTECODE=",
                                          "PYTHONPYCACHEPREFIX=" + pycache.string()};
    overrides.insert(overrides.end(), sandbox.set.begin(), sandbox.set.end());
    for (const auto& e : suite.environment)
        if (e.rfind("PYTHONPATH=", 0) != 0) overrides.push_back(e);  // PYTHONPATH: appended above
    std::vector<std::string> inherited;
    for (char** e = environ; *e != nullptr; ++e) {
        const std::string entry = *e;
        const auto name = entry.substr(0, entry.find('='));
        if (std::find(sandbox.dropped.begin(), sandbox.dropped.end(), name) == sandbox.dropped.end()) inherited.push_back(entry);
    }
    spec.environment = environment_with(std::move(inherited), overrides);
    return spec;
}

std::string describe_pytest(const LaunchResult& result) {
    static const char* const meaning[] = {"all tests passed", "some tests failed", "interrupted or collection errors",
                                          "internal error", "usage error", "no tests collected"};
    const auto& ended = result.process;
    const bool known = ended.signal == 0 && !ended.timed_out && ended.exit_code >= 0 && ended.exit_code <= 5;
    return result.describe() + (known ? std::string(" (pytest: ") + meaning[ended.exit_code] + ")" : "");
}

std::string shell_quote(const std::string& word) {
    if (!word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+=/.,:@%") == std::string::npos)
        return word;
    std::string out = "'";
    for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

}  // namespace evgate
