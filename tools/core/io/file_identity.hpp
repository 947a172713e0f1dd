// What a path is right now, without following links or blocking: the fingerprint that
// fixture leases compare before and after each test.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace evgate {

// An owner not recorded (as chown(2) spells "leave it"): matches any.
constexpr unsigned kUnknownOwner = static_cast<unsigned>(-1);

struct FileState {
    std::string identity;  // "sha256:<hex>", "link:<target>" or "special"
    unsigned mode;         // permission bits, st_mode & 07777
    std::uintmax_t size;
    unsigned uid = kUnknownOwner, gid = kUnknownOwner;  // the owner: part of what a checkout is
};

// The state of `path` itself (lstat), nullopt if it does not exist. Regular files are
// hashed in bounded memory; FIFOs, devices, sockets and directories are never opened for
// reading. Throws Error naming the path on an I/O error.
std::optional<FileState> file_state(const std::filesystem::path& path);

// What lstat (or stat, with `follow`) says of a path, "absent" when it is not there: size,
// mtime, ctime, inode and mode, enough that an edit, a replacement or a removal changes it,
// without reading a byte. For fingerprints of what a tool or a build made.
std::string file_stamp(const std::filesystem::path& path, bool follow = false);

// Lowercase hex SHA-256 of `bytes`.
std::string sha256_hex(std::string_view bytes);

// File names are bytes, JSON text is UTF-8. A name is written as a JSON string literal (quoted)
// in which every byte that is not part of a valid UTF-8 sequence becomes a \udcXX escape:
// Python's surrogateescape, so the plugin's json.load and os.fsencode give back the same bytes.
std::string json_path_literal(std::string_view bytes);
// A name RapidJSON read back from such a literal, as the bytes it stands for: RapidJSON hands a
// lone \udcXX back as its three-byte encoding (ED B2 80 .. ED B3 BF), which no valid UTF-8 holds.
std::string path_from_json(std::string_view text);
// A name for a message: valid UTF-8, with every other byte as \xHH.
std::string printable_path(std::string_view bytes);

}  // namespace evgate
