#include "io/stop.hpp"

#include <cerrno>
#include <cstring>
#include <string>

#include <fcntl.h>
#include <sys/prctl.h>
#include <unistd.h>

namespace evgate {
namespace {

std::string signal_name(int signal) {
    const char* name = ::sigabbrev_np(signal);
    return name ? std::string("SIG") + name : "signal " + std::to_string(signal);
}

StopPipe evgate_stop;

extern "C" void on_stop_signal(int signal) { evgate_stop.ask(signal); }

}  // namespace

Stopped::Stopped(int signal)
    : Error("stopped by " + signal_name(signal) + ": no pytest process is left running, and the fixture groups are restored"),
      signal_(signal) {}

void StopSource::throw_if_asked() const {
    if (const int asked = signal(); asked != 0) throw Stopped(asked);
}

StopPipe::~StopPipe() {
    for (int fd : fds_)
        if (fd >= 0) ::close(fd);
}

void StopPipe::open() {
    if (fds_[0] >= 0) return;
    if (::pipe2(fds_, O_CLOEXEC | O_NONBLOCK) != 0) throw Error(std::string("pipe2 failed: ") + std::strerror(errno));
    if (signal_ != 0) (void)!::write(fds_[1], "x", 1);
}

void StopPipe::ask(int signal) noexcept {
    if (signal_ == 0) signal_ = signal;
    const int saved = errno;
    if (fds_[1] >= 0) (void)!::write(fds_[1], "x", 1);
    errno = saved;
}

const StopSource& stop_requests() { return evgate_stop; }

void install_stop_handlers() {
    if (evgate_stop.fd() >= 0) return;
    evgate_stop.open();
    struct sigaction action {};
    action.sa_handler = on_stop_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;  // calls under way finish; the loops that start work look at the flag
    for (int s : {SIGINT, SIGTERM, SIGHUP}) {
        struct sigaction before {};
        // Ignored when evgate started (nohup, a background job): the caller meant it so.
        if (::sigaction(s, nullptr, &before) == 0 && before.sa_handler == SIG_IGN) continue;
        ::sigaction(s, &action, nullptr);
    }
    // ctest killed alone (SIGKILL) leaves us running with nobody to wait for us: stop as on
    // SIGTERM. If it died before the call, getppid() already names someone else.
    const pid_t parent = ::getppid();
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) on_stop_signal(SIGTERM);
}

void throw_if_stopped() { evgate_stop.throw_if_asked(); }

}  // namespace evgate
