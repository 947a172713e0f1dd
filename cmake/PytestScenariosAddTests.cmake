# Included by ctest (TEST_INCLUDE_FILES) once per pytest file that tests/CMakeLists.txt
# registers with _evidence_gate_test_scenarios(): adds one CTest entry per scenario of the file,
# as gtest_discover_tests(... DISCOVERY_MODE PRE_TEST) does for a GoogleTest binary. The file's
# scenarios are collected (pytest --collect-only, with cmake/pytest_scenarios.py writing the
# entries) when the file, its conftest or the harness is newer than the list, so that editing a
# test needs no reconfigure and an unchanged tree collects nothing.
#
# Set by the includer: scenario_prefix, scenario_file, scenario_dir, scenario_command (the
# entry's pytest command, without file or node ids), scenario_environment, scenario_inputs
# (files whose change means collecting again), scenario_tests (the generated list), scenario_cmake.

set(stale FALSE)
if(NOT EXISTS "${scenario_tests}")
  set(stale TRUE)
endif()
foreach(input IN LISTS scenario_inputs)
  if(NOT stale AND EXISTS "${input}" AND "${input}" IS_NEWER_THAN "${scenario_tests}")
    set(stale TRUE)
  endif()
endforeach()

set(collect_log "${scenario_tests}.log")
if(stale)
  file(REMOVE "${scenario_tests}")
  execute_process(
    COMMAND "${scenario_cmake}" -E env ${scenario_environment}
            "PYTHONPATH=${CMAKE_CURRENT_LIST_DIR}"
            "EVIDENCE_GATE_SCENARIOS=${scenario_tests}.new"
            "EVIDENCE_GATE_SCENARIOS_PREFIX=${scenario_prefix}"
            ${scenario_command} --collect-only -p pytest_scenarios "${scenario_file}"
    WORKING_DIRECTORY "${scenario_dir}"
    RESULT_VARIABLE status
    OUTPUT_VARIABLE output
    ERROR_VARIABLE output)
  if(status EQUAL 0 AND EXISTS "${scenario_tests}.new")
    file(RENAME "${scenario_tests}.new" "${scenario_tests}")
    file(REMOVE "${collect_log}")
  else()
    file(WRITE "${collect_log}" "Error collecting the scenarios of ${scenario_file} (exit ${status}):\n${output}")
  endif()
endif()

set(scenario_names "")
if(EXISTS "${scenario_tests}")
  include("${scenario_tests}")
else()
  # A file that does not collect is a failing entry, never a silent gap.
  set(scenario_names "${scenario_prefix}_NOT_COLLECTED")
  add_test("${scenario_names}" /bin/sh -c "cat \"$0\" >&2; exit 1" "${collect_log}")
endif()
