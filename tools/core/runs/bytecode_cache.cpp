#include "runs/bytecode_cache.hpp"

#include <chrono>
#include <fstream>
#include <system_error>

#include <fcntl.h>
#include <sys/stat.h>

#include "inputs/evidence_layout.hpp"
#include "io/process.hpp"

namespace fs = std::filesystem;

namespace evgate {
namespace {

std::int64_t mtime_ns(const struct stat& st) {
    return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

// A .pyc below `dir` modified at `since` or later (links not followed).
bool written_since(const fs::path& dir, std::int64_t since) {
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (it->path().extension() != ".pyc") continue;
        struct stat st {};
        if (::lstat(it->path().c_str(), &st) == 0 && S_ISREG(st.st_mode) && mtime_ns(st) >= since) return true;
    }
    return false;
}

}  // namespace

fs::path bytecode_cache(const SuiteConfig& suite) {
    auto dir = suite.evidence_dir / evidence::kPycache;
    const auto stamp = dir / evidence::kBytecodeStamp;
    std::error_code ec;
    if (fs::exists(stamp, ec)) return dir;
    fs::create_directories(dir, ec);
    const timespec epoch[2] = {{0, 0}, {0, 0}};
    if (std::ofstream(stamp).good()) ::utimensat(AT_FDCWD, stamp.c_str(), epoch, 0);
    return dir;
}

void check_bytecode_cache(const SuiteConfig& suite) {
    const auto dir = bytecode_cache(suite);
    struct stat stamp {};
    if (::stat((dir / evidence::kBytecodeStamp).c_str(), &stamp) != 0 || !written_since(dir, mtime_ns(stamp))) return;
    ProcessSpec spec;
    spec.argv = {suite.python, "-I", "-B", (suite.plugin_dir / "evidence_gate_bytecode.py").string(), dir.string()};
    spec.cwd = suite.evidence_dir;
    spec.environment = environment_with({});
    spec.output = suite.evidence_dir / evidence::kLogs / evidence::log_name("bytecode");
    spec.timeout = std::chrono::seconds(suite.timeout_seconds);
    fs::create_directories(spec.output.parent_path());
    run_process(spec);  // a checker that fails leaves the cache as it was: the plugin's own check still runs
}

}  // namespace evgate
