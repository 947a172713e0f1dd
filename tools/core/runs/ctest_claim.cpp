#include "runs/ctest_claim.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include "inputs/evidence_layout.hpp"
#include "io/error.hpp"

namespace fs = std::filesystem;

namespace evgate {
namespace {

std::string read_proc(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// Is `pid` a ctest? By the name the kernel keeps for it (ctest, or a versioned ctest3).
bool is_ctest(int pid) {
    const auto comm = read_proc("/proc/" + std::to_string(pid) + "/comm");
    return comm.rfind("ctest", 0) == 0;
}

bool alive(const ProcessIdentity& process) { return process_identity(process.pid) == std::optional(process); }

// A file descriptor that is closed (and its flock released) however the scope ends.
class LockedFile {
public:
    explicit LockedFile(const fs::path& path) : path_(path) {
        fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd_ < 0) throw Error("cannot open " + path.string() + ": " + std::strerror(errno));
        while (::flock(fd_, LOCK_EX) != 0) {
            if (errno == EINTR) continue;
            const auto why = std::string(std::strerror(errno));
            ::close(fd_);
            throw Error("cannot lock " + path.string() + ": " + why);
        }
    }
    ~LockedFile() { ::close(fd_); }
    LockedFile(const LockedFile&) = delete;
    LockedFile& operator=(const LockedFile&) = delete;

    std::string read() const {
        std::string text;
        char buffer[4096];
        for (off_t at = 0;;) {
            const auto n = ::pread(fd_, buffer, sizeof buffer, at);
            if (n <= 0) return text;
            text.append(buffer, static_cast<std::size_t>(n));
            at += n;
        }
    }
    void write(const std::string& text) const {
        if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size()))
            throw Error("cannot write " + path_.string() + ": " + std::strerror(errno));
    }

private:
    fs::path path_;
    int fd_ = -1;
};

}  // namespace

std::optional<ProcessIdentity> process_identity(int pid) {
    if (pid <= 0) return std::nullopt;
    const auto stat = read_proc("/proc/" + std::to_string(pid) + "/stat");
    const auto close = stat.rfind(')');  // the name before it may hold spaces and parentheses
    if (close == std::string::npos) return std::nullopt;
    std::istringstream fields(stat.substr(close + 1));
    std::string state;
    fields >> state;  // field 3
    if (state == "Z" || state == "X") return std::nullopt;
    std::string skip;
    for (int field = 4; field < 22; ++field) fields >> skip;
    ProcessIdentity process{pid, 0};
    if (!(fields >> process.start)) return std::nullopt;
    return process;
}

std::string claim_text(const CtestClaim& claim) {
    std::string text;
    if (claim.ctest) text += "ctest " + std::to_string(claim.ctest->pid) + " " + std::to_string(claim.ctest->start) + "\n";
    for (const auto& step : claim.steps) text += "step " + std::to_string(step.pid) + " " + std::to_string(step.start) + "\n";
    return text;
}

CtestClaim parse_claim(const std::string& text) {
    CtestClaim claim;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
        std::istringstream words(line);
        std::string kind;
        ProcessIdentity process;
        if (!(words >> kind >> process.pid >> process.start)) continue;
        if (kind == "ctest") claim.ctest = process;
        if (kind == "step") claim.steps.push_back(process);
    }
    return claim;
}

CtestClaim take_claim(const CtestClaim& held, const ProcessIdentity& ctest, const ProcessIdentity& step,
                      const std::function<bool(const ProcessIdentity&)>& alive, std::string& refusal) {
    refusal.clear();
    CtestClaim claim{ctest, {}};
    for (const auto& s : held.steps)
        if (!(s == step) && alive(s)) claim.steps.push_back(s);
    if (held.ctest && !(*held.ctest == ctest)) {
        if (alive(*held.ctest)) {
            refusal = "another ctest is running in this build tree (pid " + std::to_string(held.ctest->pid) + ")";
            return held;
        }
        if (!claim.steps.empty()) {  // its ctest was killed, its step was not
            refusal = "a step of an earlier ctest (pid " + std::to_string(held.ctest->pid) +
                      ", gone) is still running in this build tree (pid " + std::to_string(claim.steps.front().pid) +
                      "); wait for it to end, or end it";
            return held;
        }
    }
    claim.steps.push_back(step);
    return claim;
}

std::optional<ProcessIdentity> ctest_parent() {
    const int parent = static_cast<int>(::getppid());
    if (!is_ctest(parent)) return std::nullopt;  // by hand, or by cmake at configure time
    return process_identity(parent);
}

void claim_for_ctest(const fs::path& evidence_dir) {
    const auto ctest = ctest_parent();
    const auto self = process_identity(static_cast<int>(::getpid()));
    if (!ctest || !self) return;
    fs::create_directories(evidence_dir);
    const LockedFile file(evidence_dir / evidence::kCtestClaim);
    std::string refusal;
    const auto claim = take_claim(parse_claim(file.read()), *ctest, *self, alive, refusal);
    if (!refusal.empty()) throw Error(refusal);
    file.write(claim_text(claim));
}

}  // namespace evgate
