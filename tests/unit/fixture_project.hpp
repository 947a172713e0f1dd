// What the fixture-store tests share: a scratch project (a ROOT with a fixture manifest and a
// suite whose evidence directory is beside it), removed at the end of the test.
#pragma once

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include <sys/stat.h>

#include "inputs/suite_config.hpp"

namespace evgate::test {

namespace fs = std::filesystem;

struct Project {
    fs::path top = fs::temp_directory_path() / ("evgate-store-" + std::to_string(std::random_device{}()));
    fs::path root = top / "src";
    SuiteConfig suite;

    explicit Project(const std::string& manifest) {
        fs::create_directories(root);
        write("fixtures.manifest", manifest);
        suite.name = "s";
        suite.root = root;
        suite.evidence_dir = top / "build" / "evidence" / "s";
        suite.fixtures = root / "fixtures.manifest";
    }
    ~Project() { fs::remove_all(top); }

    void write(const std::string& relative, const std::string& text) const {
        fs::create_directories((root / relative).parent_path());
        std::ofstream(root / relative, std::ios::binary) << text;
    }
    std::string read(const std::string& relative) const { return slurp(root / relative); }
    static std::string slurp(const fs::path& file) {
        std::ifstream in(file, std::ios::binary);
        std::stringstream text;
        text << in.rdbuf();
        return text.str();
    }
};

// A path's permission bits as "0755".
inline std::string mode_of(const fs::path& path) {
    struct stat st {};
    ::lstat(path.c_str(), &st);
    char text[8];
    std::snprintf(text, sizeof text, "%04o", st.st_mode & 07777);
    return text;
}

}  // namespace evgate::test
