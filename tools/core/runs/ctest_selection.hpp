// Whether the ctest that runs `evgate discover` can select any per-test entry at all, from its
// label options. ctest includes the generated file that runs discovery whatever it was asked
// to run, so `ctest -LE evidence` (the C++ loop) would otherwise pay for a pytest collection
// whose entries it then leaves out.
#pragma once

#include <string>
#include <vector>

namespace evgate {

// Can ctest's arguments `args` select a test carrying all of `labels`? -L (--label-regex)
// selects a test one of whose labels one of the regexes finds; -LE (--label-exclude) leaves out
// a test one of whose labels one regex finds. ctest's regexes are read as POSIX extended ones;
// one that does not parse counts as selecting, never as leaving out: the cost of a wrong guess
// is one collection, not a missing entry.
bool ctest_labels_select(const std::vector<std::string>& args, const std::vector<std::string>& labels);

// The arguments of this process's parent when it is ctest (from /proc), else none.
std::vector<std::string> parent_ctest_arguments();

}  // namespace evgate
