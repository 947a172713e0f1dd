#include <catch2/catch.hpp>

#include <array>
#include <cstdio>
#include <string>

#include "runs/pytest_command.hpp"
#include "runs/replay.hpp"

using evgate::shell_quote;

namespace {

// What /bin/sh makes of one quoted word.
std::string through_the_shell(const std::string& word) {
    const std::string command = "printf %s " + shell_quote(word);
    FILE* pipe = ::popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    std::string out;
    std::array<char, 256> buffer{};
    for (std::size_t n; (n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0;) out.append(buffer.data(), n);
    ::pclose(pipe);
    return out;
}

}  // namespace

TEST_CASE("shell_quote leaves plain words alone and survives the shell with anything else", "[replay]") {
    CHECK(shell_quote("tests/test_x.py::test_a") == "tests/test_x.py::test_a");
    for (const std::string word : {"a b", "it's", "say \"hi\"", "$HOME", "`id`", "a;b|c&d", "t[x]*?", "", "caf\u00e9 \u6f22"})
        CHECK(through_the_shell(word) == word);
}

TEST_CASE("a reproduce command names the suite, the order, the repeats and the environment", "[replay]") {
    evgate::ReplayRequest request;
    request.through = "tests/t.py::test_v[it's]";
    request.seed = 3;
    request.repeat = 5;
    request.environment = {"TZ=EGT3:30"};
    CHECK(evgate::replay_command("/opt/eg/bin/evgate", "/b/evidence/s/suite.json", request) ==
          "/opt/eg/bin/evgate replay --suite /b/evidence/s/suite.json --seed 3 --through 'tests/t.py::test_v[it'\\''s]'"
          " --repeat 5 --env TZ=EGT3:30");
}
