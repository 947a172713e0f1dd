#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rapidjson/document.h>

#include "io/error.hpp"
#include "io/file_identity.hpp"
#include "support.hpp"

namespace fs = std::filesystem;
using evgate::file_state;
using evgate::test::AsNobody;
using evgate::test::TempDir;

namespace {

long max_rss_kib() {
    rusage usage{};
    ::getrusage(RUSAGE_SELF, &usage);
    return usage.ru_maxrss;
}

constexpr const char* hello_sha = "sha256:5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03";

}  // namespace

TEST_CASE("sha256_hex of known texts", "[file_identity]") {
    CHECK(evgate::sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    CHECK(evgate::sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_CASE("a regular file is known by the hash of its content", "[file_identity]") {
    TempDir dir;
    auto file = dir.path / "hello.txt";
    std::ofstream(file) << "hello\n";
    fs::permissions(file, fs::perms(0640));
    auto state = file_state(file);
    REQUIRE(state);
    CHECK(state->identity == hello_sha);
    CHECK(state->mode == 0640u);
    CHECK(state->size == 6u);

    fs::permissions(file, fs::perms(0600));
    CHECK(file_state(file)->mode == 0600u);  // mode changes are seen apart from content
    CHECK(file_state(file)->identity == hello_sha);
}

TEST_CASE("a symlink is known by its target and never followed", "[file_identity]") {
    TempDir dir;
    std::ofstream(dir.path / "hello.txt") << "hello\n";
    fs::create_symlink("hello.txt", dir.path / "link");
    fs::create_symlink("does/not/exist", dir.path / "dangling");
    CHECK(file_state(dir.path / "link")->identity == "link:hello.txt");
    CHECK(file_state(dir.path / "link")->size == 9u);
    CHECK(file_state(dir.path / "dangling")->identity == "link:does/not/exist");
}

TEST_CASE("FIFOs and directories are special and never read", "[file_identity]") {
    TempDir dir;
    auto fifo = dir.path / "pipe";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    auto state = file_state(fifo);  // opening it for reading would block here
    REQUIRE(state);
    CHECK(state->identity == "special");
    CHECK(state->mode == 0600u);
    CHECK(file_state(dir.path)->identity == "special");
    CHECK(file_state("/dev/null")->identity == "special");
}

TEST_CASE("a missing path has no state", "[file_identity]") {
    TempDir dir;
    CHECK_FALSE(file_state(dir.path / "missing"));
    std::ofstream(dir.path / "file") << "x";
    CHECK_FALSE(file_state(dir.path / "file" / "below"));  // ENOTDIR: cannot exist either
}

TEST_CASE("an unreadable file is an error naming it", "[file_identity]") {
    TempDir dir;
    auto file = dir.path / "secret";
    std::ofstream(file) << "x";
    fs::permissions(file, fs::perms::none);
    AsNobody nobody;
    CHECK_THROWS_WITH(file_state(file), "cannot open " + file.string() + ": Permission denied");
}

namespace {

// Hash a sparse file of `size` bytes of zeros; memory must stay far below its size.
void check_sparse(std::uintmax_t size, const std::string& identity) {
    TempDir dir;
    auto file = dir.path / "sparse.bin";
    int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    REQUIRE(fd >= 0);
    REQUIRE(::ftruncate(fd, static_cast<off_t>(size)) == 0);
    ::close(fd);
    auto before = max_rss_kib();
    auto start = std::chrono::steady_clock::now();
    auto state = file_state(file);
    auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    REQUIRE(state);
    CHECK(state->identity == identity);
    CHECK(state->size == size);
    CHECK(max_rss_kib() - before < 64L * 1024);
    WARN("hashed " << (size >> 20) << " MiB in " << seconds << " s");
}

}  // namespace

TEST_CASE("a 256 MiB sparse file is hashed in bounded memory", "[file_identity][slow]") {
    check_sparse(std::uintmax_t{1} << 28,
                 "sha256:a6d72ac7690f53be6ae46ba88506bd97302a093f7108472bd9efc3cefda06484");
}

// Reading 2 GiB of holes takes ~9 s of kernel time on a small VM: run it with "[.slow]".
TEST_CASE("a 2 GiB sparse file is hashed in bounded memory", "[file_identity][.slow]") {
    check_sparse(std::uintmax_t{1} << 31,
                 "sha256:a7c744c13cc101ed66c29f672f92455547889cc586ce6d44fe76ae824958ea51");
}

TEST_CASE("a file name that is not UTF-8 goes into JSON as \\udcXX escapes and comes back as the same bytes", "[file_identity]") {
    std::string every_byte;
    for (int b = 1; b < 256; ++b) every_byte += static_cast<char>(b);
    const std::vector<std::string> names = {"caf\xe9.txt", "caf\xc3\xa9.txt", "\xed\xa0\x80 surrogate bytes", "\xf0\x9f\x98\x80",
                                            "quote \" back\\slash\ttab", "\xc3 cut", "\xe2\x82", every_byte};
    for (const auto& name : names) {
        const auto literal = evgate::json_path_literal(name);
        // Strict UTF-8 everywhere (what Python's json reads): no byte outside a valid sequence.
        rapidjson::Document doc;
        doc.Parse<rapidjson::kParseValidateEncodingFlag>(literal.c_str(), literal.size());
        REQUIRE_FALSE(doc.HasParseError());
        REQUIRE(doc.IsString());
        CHECK(evgate::path_from_json({doc.GetString(), doc.GetStringLength()}) == name);
    }
    CHECK(evgate::json_path_literal("caf\xe9.txt") == "\"caf\\udce9.txt\"");
    CHECK(evgate::json_path_literal("caf\xc3\xa9.txt") == "\"caf\xc3\xa9.txt\"");  // valid UTF-8 stays as it is
    CHECK(evgate::printable_path("caf\xe9.txt") == "caf\\xe9.txt");
}
