// fixtures.manifest: the fixture groups a suite leases to its tests, one `name: glob` a line.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace evgate {

struct FixtureGroup {
    std::string name;
    std::string pattern;  // a glob relative to ROOT, checked by compile_glob
    int line;             // where it was defined, for later messages
};

// Whole-line '#' comments and blank lines are skipped; surrounding whitespace is trimmed.
// Throws InputError naming `source`, the line and the value at fault. No groups is valid.
std::vector<FixtureGroup> parse_fixture_manifest(std::istream& in, const std::string& source);

}  // namespace evgate
