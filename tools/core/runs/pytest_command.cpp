#include "runs/pytest_command.hpp"

#include <cstdlib>

#include "inputs/evidence_layout.hpp"

namespace evgate {

ProcessSpec pytest_process(const SuiteConfig& suite, const std::vector<std::string>& plugin_args,
                           const std::filesystem::path& log) {
    ProcessSpec spec;
    spec.argv = {suite.python, "-m", "pytest",
                 "-p", "evidence_gate_pytest",
                 // our order is the evidence; no cache files in the source tree
                 "-p", "no:randomly", "-p", "no:random_order", "-p", "no:cacheprovider",
                 "--rootdir=" + suite.root.string()};
    spec.argv.insert(spec.argv.end(), plugin_args.begin(), plugin_args.end());
    spec.argv.insert(spec.argv.end(), suite.pytest_args.begin(), suite.pytest_args.end());
    spec.argv.insert(spec.argv.end(), suite.tests.begin(), suite.tests.end());
    spec.cwd = suite.root;
    spec.output = log;
    spec.timeout = std::chrono::seconds(suite.timeout_seconds);

    std::string python_path = suite.plugin_dir.string();
    if (const char* old = std::getenv("PYTHONPATH"); old != nullptr && *old != '\0') python_path += ":" + std::string(old);
    // Bytecode goes to a cache in the build tree, never beside the sources: pytest caches its
    // rewritten test modules there too, so a run does not recompile the suite (with no
    // bytecode at all, every run would). PYTHONDONTWRITEBYTECODE is emptied for the same
    // reason; a suite that wants it sets it with ENVIRONMENT.
    const auto sandbox = sandbox_of(suite, log);
    std::vector<std::string> overrides = {"PYTHONPATH=" + python_path, "PYTHONDONTWRITEBYTECODE=",
                                          "PYTHONPYCACHEPREFIX=" + (suite.evidence_dir / evidence::kPycache).string(),
                                          "HOME=" + (sandbox / evidence::kHome).string(), "TMPDIR=" + (sandbox / evidence::kTmp).string()};
    overrides.insert(overrides.end(), suite.environment.begin(), suite.environment.end());
    spec.environment = environment_with(overrides);
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
