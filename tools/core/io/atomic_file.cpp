#include "io/atomic_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include <fcntl.h>
#include <unistd.h>

#include <gsl/gsl>

#include "io/error.hpp"

namespace evgate {

AtomicFile::AtomicFile(std::filesystem::path path) : path_(std::move(path)), temp_(path_) {
    temp_ += ".tmp." + std::to_string(::getpid());
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) throw Error("cannot write " + temp_.string() + ": " + std::strerror(errno));
}

AtomicFile::~AtomicFile() {
    if (fd_ < 0) return;
    ::close(fd_);
    ::unlink(temp_.c_str());
}

void AtomicFile::write(std::string_view bytes) {
    Expects(fd_ >= 0);
    for (std::size_t done = 0; done < bytes.size();) {
        auto n = ::write(fd_, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw Error("cannot write " + temp_.string() + ": " + std::strerror(errno));
        done += static_cast<std::size_t>(n);
    }
}

void AtomicFile::commit() {
    Expects(fd_ >= 0);
    ::fsync(fd_);
    ::close(fd_);
    fd_ = -1;
    if (std::rename(temp_.c_str(), path_.c_str()) != 0) {
        int saved = errno;
        ::unlink(temp_.c_str());
        throw Error("cannot replace " + path_.string() + ": " + std::strerror(saved));
    }
}

void write_file_atomic(const std::filesystem::path& path, std::string_view content) {
    AtomicFile file(path);
    file.write(content);
    file.commit();
}

}  // namespace evgate
