// JUnit XML from any CI's plain `pytest --junitxml` run, read back into pytest node ids, so that
// a machine that never ran evgate can still fill a runner column; and the junit.xml evgate
// itself writes (junit_writer.hpp), read back attempt by attempt.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "inputs/outcome.hpp"

namespace evgate {

struct JUnitRun {
    std::string name;                           // the report's hostname, else the file's stem
    std::string hostname;                       // "" when no <testsuite> names one
    std::map<std::string, TestResult> results;  // node id -> passed failed error skipped xfailed
    // From evgate's own junit.xml (a testcase with an "outcomes" property): run id -> node id ->
    // that attempt's outcome, for the runs the writing machine ran itself; such a test has no
    // entry in `results`. Its blocking suite rows (property scope=suite) are no tests: skipped.
    std::map<std::string, std::map<std::string, TestResult>> attempts;
    std::vector<std::string> unmapped;  // "classname::name" matching no collected id, or several; sorted
};

// Where pytest's junitxml files a node id: its <testcase classname=... name=...>.
struct JUnitAddress {
    std::string classname;  // "tests.test_x.TestY": the path with '/' -> '.' and ".py" dropped, then classes
    std::string name;       // "test_z[1]", characters XML cannot hold written as "#xNN"
};
JUnitAddress junit_address(std::string_view node_id);

// Appends `text` as XML character data (`quote` '\0') or as an attribute value between `quote`s
// ('"' or '\''): what XML cannot hold as pytest's bin_xml_escape writes it ("#x1B"; a byte that
// is not UTF-8 the same way), then & < > (and in attributes the quote and line breaks) as references.
void append_xml_text(std::string& out, std::string_view text, char quote);

// Throws InputError naming the file (and the line, where the XML parser knows it) for a file
// that is not XML or holds no <testsuite>.
JUnitRun read_junit(const std::filesystem::path& file, const std::vector<std::string>& collected_ids);
JUnitRun parse_junit(std::string_view xml, const std::string& source, const std::vector<std::string>& collected_ids);

}  // namespace evgate
