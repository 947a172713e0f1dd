#include "runs/sandbox.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <system_error>

#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "fixtures/shared_tree.hpp"
#include "inputs/evidence_layout.hpp"
#include "io/file_identity.hpp"

namespace fs = std::filesystem;

namespace evgate {
namespace {

constexpr char kRole[] = "the sandbox directory";
constexpr char kVariable[] = "EVIDENCE_GATE_SANDBOX_DIR";
constexpr std::size_t kKeyDigits = 8;

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
    for (const auto& e : suite.environment)
        if (e.rfind(name + "=", 0) == 0) return true;
    return false;
}

std::string key_of(const std::string& text) { return sha256_hex(text).substr(0, kKeyDigits); }

// What a test may have left: directories it made unreadable or unwritable are opened up first.
void remove_tree(const fs::path& dir) noexcept {
    std::error_code ec;
    fs::remove_all(dir, ec);
    if (!ec) return;
    for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        std::error_code ignored;
        if (it->is_directory(ignored) && !it->is_symlink(ignored))
            fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ignored);
    }
    fs::permissions(dir, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(dir, ec);
}

}  // namespace

fs::path sandbox_root() {
    fs::path base = "/tmp";
    if (const char* set = std::getenv(kVariable); set != nullptr && *set != '\0') {
        const auto dir = fs::absolute(set);
        std::error_code ignored;  // a parent that cannot be made shows as private_dir failing
        fs::create_directories(dir.parent_path(), ignored);
        return private_dir(dir, kRole, kVariable);
    }
    if (const auto tmp = temp_dir(); tmp.string().size() <= kShortTmpdir) base = tmp;
    return private_dir(base / ("evgate-" + std::to_string(::geteuid())), kRole, kVariable);
}

fs::path suite_sandboxes(const SuiteConfig& suite) {
    auto dir = sandbox_root() / key_of(fs::weakly_canonical(suite.evidence_dir).string());
    fs::create_directories(dir);
    return dir;
}

fs::path sandbox_of(const SuiteConfig& suite, const fs::path& log) {
    auto dir = suite_sandboxes(suite) / key_of(log.lexically_relative(suite.evidence_dir).string());
    fs::create_directories(dir / evidence::kHome);
    fs::create_directories(dir / evidence::kTmp);
    return dir;
}

void empty_sandbox(const SuiteConfig& suite, const fs::path& log) {
    const auto sandbox = sandbox_of(suite, log);
    for (const char* name : {evidence::kHome, evidence::kTmp}) {
        const auto dir = sandbox / name;
        if (fs::is_symlink(dir) || !fs::is_directory(dir)) {  // a test swapped it: start over
            remove_tree(dir);
            fs::create_directory(dir);
            continue;
        }
        // Only the entries go: dropping the directories themselves costs more than a run's restore.
        fs::permissions(dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                 fs::perms::others_read | fs::perms::others_exec);
        for (const auto& entry : fs::directory_iterator(dir)) remove_tree(entry.path());
    }
}

void remove_sandbox(const SuiteConfig& suite, const fs::path& log) noexcept {
    try {
        remove_tree(suite_sandboxes(suite) / key_of(log.lexically_relative(suite.evidence_dir).string()));
    } catch (...) {  // the root is not usable: nothing of ours is in it
    }
}

void remove_suite_sandboxes(const SuiteConfig& suite) noexcept {
    try {
        remove_tree(suite_sandboxes(suite));
    } catch (...) {
    }
}

fs::path collection_sandbox(const SuiteConfig& suite) {
    return sandbox_of(suite, suite.evidence_dir / evidence::kLogs / evidence::log_name("receipt"));
}

std::string sandbox_fingerprint(const fs::path& sandbox) {
    XXH3_state_t* state = XXH3_createState();
    XXH3_64bits_reset(state);
    const auto add = [&](const fs::path& path) {
        struct stat st {};
        if (::lstat(path.c_str(), &st) != 0) return;
        const auto name = path.lexically_relative(sandbox).string();
        const std::int64_t fields[] = {static_cast<std::int64_t>(st.st_mode), static_cast<std::int64_t>(st.st_size),
                                       static_cast<std::int64_t>(st.st_mtim.tv_sec), static_cast<std::int64_t>(st.st_mtim.tv_nsec)};
        XXH3_64bits_update(state, name.c_str(), name.size() + 1);
        XXH3_64bits_update(state, fields, sizeof fields);
    };
    std::error_code ec;
    for (const char* name : {evidence::kHome, evidence::kTmp}) {
        add(sandbox / name);
        for (auto it = fs::recursive_directory_iterator(sandbox / name, fs::directory_options::skip_permission_denied, ec);
             !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
            add(it->path());
    }
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(XXH3_64bits_digest(state)));
    XXH3_freeState(state);
    return hex;
}

SandboxEnvironment sandbox_environment(const SuiteConfig& suite, const fs::path& sandbox) {
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

}  // namespace evgate
