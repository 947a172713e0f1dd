// What several unit test files need: a scratch directory, and dropping root for a moment.
#pragma once

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>

#include <unistd.h>

#include "runs/run_records.hpp"

namespace evgate::test {

// `records` with its last line, a `finished` record, sealed as evgate seals it: the length and
// digest of everything before it (other text is returned as it is).
inline std::string sealed(const std::string& records) {
    const auto previous = records.size() < 2 ? std::string::npos : records.rfind('\n', records.size() - 2);
    const auto start = previous == std::string::npos ? 0 : previous + 1;
    if (records.find(R"("finished")", start) == std::string::npos || records.back() != '\n') return records;
    const std::string before = records.substr(0, start);
    const std::string last = records.substr(start, records.size() - start - 2);  // without "}\n"
    return before + last + R"(,"bytes":)" + std::to_string(before.size()) + R"(,"digest":")" + records_digest(before) + "\"}\n";
}

// `text` as the whole content of `file`, its directories made first.
inline void write_text(const std::filesystem::path& file, const std::string& text) {
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file) << text;
}

// A fresh directory below the temp dir, removed (whatever it holds) at the end of the test.
struct TempDir {
    std::filesystem::path path = std::filesystem::temp_directory_path() /
                                 ("evgate-test-" + std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}()));
    TempDir() { std::filesystem::create_directories(path); }
    ~TempDir() {
        std::error_code ignored;
        std::filesystem::remove_all(path, ignored);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
};

// An environment variable set (or, with nullopt, unset) for the length of a test, and put back.
class Env {
public:
    Env(const char* name, const std::optional<std::string>& value) : name_(name) {
        if (const char* old = std::getenv(name)) old_ = old;
        if (value) ::setenv(name, value->c_str(), 1);
        else ::unsetenv(name);
    }
    ~Env() {
        if (old_) ::setenv(name_, old_->c_str(), 1);
        else ::unsetenv(name_);
    }
    Env(const Env&) = delete;
    Env& operator=(const Env&) = delete;

private:
    const char* name_;
    std::optional<std::string> old_;
};

// Root reads anything; drop to `nobody` for a permission test and come back.
class AsNobody {
public:
    AsNobody() : was_root_(::geteuid() == 0) {
        if (was_root_) REQUIRE(::seteuid(65534) == 0);
    }
    ~AsNobody() {
        if (was_root_) (void)::seteuid(0);
    }
    AsNobody(const AsNobody&) = delete;
    AsNobody& operator=(const AsNobody&) = delete;

private:
    bool was_root_;
};

}  // namespace evgate::test
