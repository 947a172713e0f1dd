// What a path is right now, without following links or blocking: the fingerprint that
// fixture leases compare before and after each test.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace evgate {

struct FileState {
    std::string identity;  // "sha256:<hex>", "link:<target>" or "special"
    unsigned mode;         // permission bits, st_mode & 07777
    std::uintmax_t size;
};

// The state of `path` itself (lstat), nullopt if it does not exist. Regular files are
// hashed in bounded memory; FIFOs, devices, sockets and directories are never opened for
// reading. Throws Error naming the path on an I/O error.
std::optional<FileState> file_state(const std::filesystem::path& path);

// Lowercase hex SHA-256 of `bytes`.
std::string sha256_hex(std::string_view bytes);

}  // namespace evgate
