// What every fuzz target shares: evgate::Error is the expected answer to bad input and is
// swallowed; any other exception escapes and libFuzzer reports it as a crash, as it does
// for sanitizer reports, leaks and timeouts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

#include <sys/mman.h>
#include <unistd.h>

#include "io/error.hpp"

namespace evgate_fuzz {

inline std::string_view text(const std::uint8_t* data, std::size_t size) {
    return {reinterpret_cast<const char*>(data), size};
}

// Runs `parse`; bad input may throw evgate::Error, nothing else.
template <class Parse>
void expect_only_input_errors(Parse&& parse) {
    try {
        parse();
    } catch (const evgate::Error&) {
    }
}

// A property of the product broke: crash so libFuzzer keeps the input.
[[noreturn]] inline void violated(const char* property) {
    std::fprintf(stderr, "fuzz: property violated: %s\n", property);
    std::abort();
}

// The input as a file for parsers that only read paths: an anonymous memory file, named
// through /proc/self/fd, so nothing touches the disk.
class MemoryFile {
public:
    MemoryFile(const std::uint8_t* data, std::size_t size) : fd_(::memfd_create("evgate-fuzz", MFD_CLOEXEC)) {
        if (fd_ < 0) violated("memfd_create works");
        for (std::size_t done = 0; done < size;) {
            auto n = ::write(fd_, data + done, size - done);
            if (n <= 0) violated("writing the memory file works");
            done += static_cast<std::size_t>(n);
        }
    }
    ~MemoryFile() { ::close(fd_); }
    MemoryFile(const MemoryFile&) = delete;
    MemoryFile& operator=(const MemoryFile&) = delete;

    std::filesystem::path path() const { return "/proc/self/fd/" + std::to_string(fd_); }
    int fd() const { return fd_; }

private:
    int fd_;
};

}  // namespace evgate_fuzz
