#include "runs/pytest_command.hpp"

#include <algorithm>
#include <cstdlib>
#include <iterator>

#include <unistd.h>

#include "inputs/evidence_layout.hpp"

namespace evgate {

namespace {

// The variables every pytest process gets pointed into its sandbox: HOME and TMPDIR, and the XDG
// base directories where their specification puts them below HOME (a desktop session sets them
// to the user's own, and a test that saves its settings there would write the user's config).
struct Sandboxed {
    const char* name;
    const char* below;  // below the sandbox directory
};
constexpr Sandboxed kSandboxed[] = {
    {"HOME", evidence::kHome},
    {"TMPDIR", evidence::kTmp},
    {"XDG_CONFIG_HOME", "home/.config"},
    {"XDG_CACHE_HOME", "home/.cache"},
    {"XDG_DATA_HOME", "home/.local/share"},
    {"XDG_STATE_HOME", "home/.local/state"},
};
constexpr std::size_t kXdgFirst = 2;  // kSandboxed[2...]: below HOME

// Variables that point a tool's per-user configuration, data or cache past HOME and XDG: dropped,
// so that the tool falls back to the sandboxed home.
constexpr const char* kUserDirectories[] = {"IPYTHONDIR", "MPLCONFIGDIR", "JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR",
                                           "GNUPGHOME", "PIP_CACHE_DIR"};

bool pinned(const SuiteConfig& suite, const std::string& name) {
    return std::any_of(suite.environment.begin(), suite.environment.end(),
                       [&](const std::string& e) { return e.rfind(name + "=", 0) == 0; });
}

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

SandboxEnvironment sandbox_environment(const SuiteConfig& suite, const std::filesystem::path& sandbox) {
    SandboxEnvironment env;
    const bool home_pinned = pinned(suite, "HOME");
    for (std::size_t i = 0; i < std::size(kSandboxed); ++i) {
        const std::string name = kSandboxed[i].name;
        if (pinned(suite, name)) {
            env.pinned.push_back(name);
        } else if (i >= kXdgFirst && home_pinned) {  // below the suite's own HOME, as their specification says
            if (std::getenv(name.c_str()) != nullptr) env.dropped.push_back(name);
        } else {
            env.set.push_back(name + "=" + (sandbox / kSandboxed[i].below).string());
            env.fresh.push_back(name);
        }
    }
    for (const char* name : kUserDirectories)
        if (!pinned(suite, name) && std::getenv(name) != nullptr) env.dropped.emplace_back(name);
    return env;
}

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
    std::vector<std::string> overrides = {"PYTHONPATH=" + python_path(suite), "PYTHONDONTWRITEBYTECODE=",
                                          "PYTHONPYCACHEPREFIX=" + (suite.evidence_dir / evidence::kPycache).string()};
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

std::filesystem::path sandbox_of(const SuiteConfig& suite, const std::filesystem::path& log) {
    const auto dir = suite.evidence_dir / evidence::kSandbox / log.stem();
    std::filesystem::create_directories(dir / evidence::kHome);
    std::filesystem::create_directories(dir / evidence::kTmp);
    return dir;
}

void empty_sandbox(const SuiteConfig& suite, const std::filesystem::path& log) {
    namespace fs = std::filesystem;
    const auto sandbox = sandbox_of(suite, log);
    for (const char* name : {evidence::kHome, evidence::kTmp}) {
        const auto dir = sandbox / name;
        if (fs::is_symlink(dir) || !fs::is_directory(dir)) {  // a test swapped it: start over
            fs::remove_all(dir);
            fs::create_directory(dir);
            continue;
        }
        // Only the entries go: dropping the directories themselves costs more than a run's restore.
        fs::permissions(dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                 fs::perms::others_read | fs::perms::others_exec);
        for (const auto& entry : fs::directory_iterator(dir)) fs::remove_all(entry.path());
    }
}

std::string describe_pytest(const ProcessResult& result) {
    static const char* const meaning[] = {"all tests passed", "some tests failed", "interrupted or collection errors",
                                          "internal error", "usage error", "no tests collected"};
    const bool known = result.signal == 0 && !result.timed_out && result.exit_code >= 0 && result.exit_code <= 5;
    return result.describe() + (known ? std::string(" (pytest: ") + meaning[result.exit_code] + ")" : "");
}

std::string shell_quote(const std::string& word) {
    if (!word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+=/.,:@%") == std::string::npos)
        return word;
    std::string out = "'";
    for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

}  // namespace evgate
