#include <catch2/catch.hpp>

#include "runs/ctest_selection.hpp"
#include "runs/search_paths.hpp"

using namespace evgate;

namespace {
const std::vector<std::string> kLabels = {"evidence", "geo", "evidence-test"};
}

TEST_CASE("ctest's label options decide whether discovery collects", "[ctest_selection]") {
    CHECK(ctest_labels_select({"ctest"}, kLabels));
    CHECK(ctest_labels_select({"ctest", "-R", "geo"}, kLabels));
    CHECK(ctest_labels_select({"ctest", "-L", "evidence"}, kLabels));
    CHECK(ctest_labels_select({"ctest", "--label-regex", "^geo$"}, kLabels));
    CHECK(ctest_labels_select({"ctest", "-L", "unit", "-L", "evid"}, kLabels));
    // The C++ loop: no Python at all.
    CHECK_FALSE(ctest_labels_select({"ctest", "-LE", "evidence"}, kLabels));
    CHECK_FALSE(ctest_labels_select({"ctest", "--test-dir", "b", "--label-exclude", "evidence-test"}, kLabels));
    CHECK_FALSE(ctest_labels_select({"ctest", "-L", "unit"}, kLabels));
    CHECK_FALSE(ctest_labels_select({"ctest", "-L", "evidence", "-LE", "^geo$"}, kLabels));
    // A regex we cannot read never leaves the entries out: the price of a wrong guess is a collection.
    CHECK(ctest_labels_select({"ctest", "-L", "(unclosed"}, kLabels));
    CHECK(ctest_labels_select({"ctest", "-LE", "(unclosed"}, kLabels));
    CHECK(ctest_labels_select({"ctest", "-LE"}, kLabels));  // a dangling option: ctest itself refuses it
}

TEST_CASE("search paths go in front of what the variable held", "[ctest_selection]") {
    CHECK(prepended({"/b/py", "/b/lib"}, "/usr/lib/py") == "/b/py:/b/lib:/usr/lib/py");
    CHECK(prepended({"/b/py"}, "") == "/b/py");
    CHECK(prepended({"/b/py"}, nullptr) == "/b/py");
    CHECK(prepended({}, "/usr/lib/py") == "/usr/lib/py");
}
