#include "io/file_identity.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <memory>
#include <sstream>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "io/error.hpp"

namespace evgate {
namespace {

constexpr std::size_t chunk_size = std::size_t{1} << 20;

[[noreturn]] void fail(const char* action, const std::filesystem::path& path, int error) {
    throw Error(std::string("cannot ") + action + " " + path.string() + ": " + std::strerror(error));
}

class Sha256 {
public:
    Sha256() : ctx_(EVP_MD_CTX_new(), EVP_MD_CTX_free) {
        if (!ctx_ || EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) != 1) {
            throw Error("SHA-256 unavailable");
        }
    }

    void update(const void* data, std::size_t size) {
        if (EVP_DigestUpdate(ctx_.get(), data, size) != 1) throw Error("SHA-256 update failed");
    }

    std::string hex() {
        std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
        unsigned int length = 0;
        if (EVP_DigestFinal_ex(ctx_.get(), digest.data(), &length) != 1) throw Error("SHA-256 failed");
        static constexpr char digits[] = "0123456789abcdef";
        std::string text;
        for (unsigned int i = 0; i < length; ++i) {
            text += digits[digest[i] >> 4];
            text += digits[digest[i] & 0xf];
        }
        return text;
    }

private:
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx_;
};

class Fd {
public:
    explicit Fd(int fd) : fd_(fd) {}
    ~Fd() { ::close(fd_); }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    int get() const { return fd_; }

private:
    int fd_;
};

FileState make_state(std::string identity, const struct stat& st) {
    return {std::move(identity), static_cast<unsigned>(st.st_mode) & 07777u, static_cast<std::uintmax_t>(st.st_size),
            static_cast<unsigned>(st.st_uid), static_cast<unsigned>(st.st_gid)};
}

FileState link_state(const std::filesystem::path& path, const struct stat& st) {
    std::vector<char> target(static_cast<std::size_t>(st.st_size) + 1);
    for (;;) {  // the link may be replaced by a longer one between lstat and readlink
        auto n = ::readlink(path.c_str(), target.data(), target.size());
        if (n < 0) fail("read link", path, errno);
        auto length = static_cast<std::size_t>(n);
        if (length < target.size()) return make_state("link:" + std::string(target.data(), length), st);
        target.resize(target.size() * 2);
    }
}

std::string hash_fd(int fd, const std::filesystem::path& path) {
    Sha256 sha;
    std::vector<unsigned char> chunk(chunk_size);
    for (;;) {
        auto n = ::read(fd, chunk.data(), chunk.size());
        if (n == 0) return "sha256:" + sha.hex();
        if (n < 0) {
            if (errno == EINTR) continue;
            fail("read", path, errno);
        }
        sha.update(chunk.data(), static_cast<std::size_t>(n));
    }
}

// lstat said regular, but the path may have been swapped since: O_NOFOLLOW refuses a
// link, O_NONBLOCK keeps a FIFO from blocking, and fstat decides what was opened.
std::optional<FileState> regular_state(const std::filesystem::path& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ENOENT) return std::nullopt;
        // swapped for a link (ELOOP) or a socket (ENXIO) since lstat: describe what is there now
        if (errno == ELOOP || errno == ENXIO) return file_state(path);
        fail("open", path, errno);
    }
    Fd file(fd);
    struct stat opened {};
    if (::fstat(fd, &opened) != 0) fail("stat", path, errno);
    if (!S_ISREG(opened.st_mode)) return make_state("special", opened);
    return make_state(hash_fd(fd, path), opened);
}

}  // namespace

std::optional<FileState> file_state(const std::filesystem::path& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) {
        if (errno == ENOENT || errno == ENOTDIR) return std::nullopt;
        fail("stat", path, errno);
    }
    if (S_ISREG(st.st_mode)) return regular_state(path);
    if (S_ISLNK(st.st_mode)) return link_state(path, st);
    return make_state("special", st);
}

namespace {

// The length of the valid UTF-8 sequence at bytes[i] (Unicode's table of well-formed byte
// sequences, as Python's strict decoder reads them), or 0.
std::size_t utf8_sequence(std::string_view bytes, std::size_t i) {
    const auto at = [&](std::size_t k) { return i + k < bytes.size() ? static_cast<unsigned char>(bytes[i + k]) : 0u; };
    const auto in = [](unsigned c, unsigned lo, unsigned hi) { return c >= lo && c <= hi; };
    const unsigned c = at(0);
    if (c < 0x80) return 1;
    if (in(c, 0xC2, 0xDF)) return in(at(1), 0x80, 0xBF) ? 2 : 0;
    if (in(c, 0xE0, 0xEF)) {
        const unsigned lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;  // no overlongs, no surrogates
        return in(at(1), lo, hi) && in(at(2), 0x80, 0xBF) ? 3 : 0;
    }
    if (in(c, 0xF0, 0xF4)) {
        const unsigned lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;  // U+10000 .. U+10FFFF
        return in(at(1), lo, hi) && in(at(2), 0x80, 0xBF) && in(at(3), 0x80, 0xBF) ? 4 : 0;
    }
    return 0;
}

std::string hex_escape(const char* prefix, unsigned byte) {
    static constexpr char digits[] = "0123456789abcdef";
    return std::string(prefix) + digits[byte >> 4] + digits[byte & 0xf];
}

}  // namespace

std::string json_path_literal(std::string_view bytes) {
    std::string out = "\"";
    const auto plain = [](char c) { return c >= 0x20 && c != '"' && c != '\\'; };        // ASCII that needs no escape
    if (std::all_of(bytes.begin(), bytes.end(), plain)) return out.append(bytes) + '"';  // most names
    out.reserve(bytes.size() + 2);
    for (std::size_t i = 0; i < bytes.size();) {
        const auto c = static_cast<unsigned char>(bytes[i]);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
            ++i;
        } else if (c < 0x20) {
            out += hex_escape("\\u00", c);
            ++i;
        } else if (const auto n = utf8_sequence(bytes, i)) {
            out.append(bytes.substr(i, n));
            i += n;
        } else {
            out += hex_escape("\\udc", c);
            ++i;
        }
    }
    return out + '"';
}

std::string path_from_json(std::string_view text) {
    if (text.find('\xED') == std::string_view::npos) return std::string(text);  // no escaped byte: most names
    std::string bytes;
    bytes.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        const auto next = i + 2 < text.size() ? static_cast<unsigned char>(text[i + 1]) : 0u;
        if (c == 0xED && (next == 0xB2 || next == 0xB3)) {  // U+DC80 .. U+DCFF: the byte 0x80 .. 0xFF
            const auto last = static_cast<unsigned char>(text[i + 2]);
            bytes += static_cast<char>(((next & 0x1u) << 6) | (last & 0x3Fu) | 0x80u);
            i += 2;
        } else {
            bytes += static_cast<char>(c);
        }
    }
    return bytes;
}

std::string printable_path(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size());
    for (std::size_t i = 0; i < bytes.size();) {
        if (const auto n = utf8_sequence(bytes, i)) {
            out.append(bytes.substr(i, n));
            i += n;
        } else {
            out += hex_escape("\\x", static_cast<unsigned char>(bytes[i++]));
        }
    }
    return out;
}

std::string sha256_hex(std::string_view bytes) {
    Sha256 sha;
    sha.update(bytes.data(), bytes.size());
    return sha.hex();
}

std::string file_stamp(const std::filesystem::path& path, bool follow) {
    struct stat st {};
    if ((follow ? ::stat(path.c_str(), &st) : ::lstat(path.c_str(), &st)) != 0) return "absent";
    std::ostringstream out;
    out << st.st_size << ' ' << st.st_mtim.tv_sec << '.' << st.st_mtim.tv_nsec << ' ' << st.st_ctim.tv_sec << '.'
        << st.st_ctim.tv_nsec << ' ' << st.st_ino << ' ' << st.st_mode;
    return out.str();
}

}  // namespace evgate
