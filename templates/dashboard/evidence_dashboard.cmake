# A `ctest -S` dashboard script: configure, build, run the evidence label and, when a CDash
# URL is given, submit — the gate's ledger and report travel as attached files and its
# counts (tests, blocking, deferred, seeds, runners) as measurements CDash charts over time.
#
#   ctest -S evidence_dashboard.cmake -DSOURCE=<project> -DBUILD=<build dir>
#         [-DMODEL=Experimental|Continuous|Nightly] [-DSUBMIT_URL=https://cdash.example/submit.php?project=X]
#         [-DBUILD_NAME=...] [-DSITE=...] [-DLABEL=evidence]
#         [-DCONFIGURE_OPTIONS=-DEvidenceGate_DIR=/path;-DPython3_EXECUTABLE=/usr/bin/python3]
#
# It prints the gate's BLOCK, DEFER and summary lines (ctest -S shows no test output) and says
# whether it submitted. Exit status: non-zero when any evidence test fails, so a CI job fails
# with the gate.
cmake_minimum_required(VERSION 3.21)

foreach(required SOURCE BUILD)
  if(NOT DEFINED ${required})
    message(FATAL_ERROR "evidence_dashboard.cmake: pass -D${required}=<path>")
  endif()
endforeach()
if(NOT DEFINED MODEL)
  set(MODEL Experimental)
endif()
if(NOT DEFINED LABEL)
  set(LABEL evidence)
endif()
if(NOT DEFINED SITE)
  cmake_host_system_information(RESULT SITE QUERY HOSTNAME)
endif()
if(NOT DEFINED BUILD_NAME)
  set(BUILD_NAME "${CMAKE_SYSTEM_NAME}-evidence")
endif()

set(CTEST_SOURCE_DIRECTORY "${SOURCE}")
set(CTEST_BINARY_DIRECTORY "${BUILD}")
set(CTEST_SITE "${SITE}")
set(CTEST_BUILD_NAME "${BUILD_NAME}")
find_program(ninja NAMES ninja ninja-build)
if(ninja)
  set(CTEST_CMAKE_GENERATOR Ninja)
else()
  set(CTEST_CMAKE_GENERATOR "Unix Makefiles")
endif()
if(DEFINED SUBMIT_URL)
  set(CTEST_SUBMIT_URL "${SUBMIT_URL}")
endif()

ctest_start(${MODEL})
ctest_configure(OPTIONS "${CONFIGURE_OPTIONS}" RETURN_VALUE configure_failed)
if(configure_failed)
  message(FATAL_ERROR "evidence_dashboard.cmake: configuring ${SOURCE} failed")
endif()
ctest_build(RETURN_VALUE build_failed)
ctest_test(INCLUDE_LABEL "${LABEL}" RETURN_VALUE tests_failed)

# What the gate steps printed, from this run's test log: ctest -S shows no test's output.
file(GLOB logs "${CTEST_BINARY_DIRECTORY}/Testing/Temporary/LastTest.log" "${CTEST_BINARY_DIRECTORY}/Testing/Temporary/LastTest_*.log")
set(newest "")
set(newest_time 0)
foreach(log IN LISTS logs)
  file(TIMESTAMP "${log}" time "%s")
  if(time GREATER_EQUAL newest_time)
    set(newest "${log}")
    set(newest_time ${time})
  endif()
endforeach()
if(newest)
  file(STRINGS "${newest}" gate_lines REGEX "^(BLOCK|DEFER|WARN) |^evidence-gate [^ ]+: ")
  foreach(line IN LISTS gate_lines)
    message("${line}")
  endforeach()
endif()

if(DEFINED SUBMIT_URL)
  ctest_submit(RETURN_VALUE submit_failed)
  if(submit_failed)
    message(WARNING "evidence_dashboard.cmake: the submission to ${SUBMIT_URL} failed")
  else()
    message("evidence_dashboard.cmake: submitted to ${SUBMIT_URL}")
  endif()
else()
  message("evidence_dashboard.cmake: nothing was submitted (no -DSUBMIT_URL given); the results are in ${CTEST_BINARY_DIRECTORY}/Testing")
endif()
if(build_failed)
  message(FATAL_ERROR "evidence_dashboard.cmake: building ${SOURCE} failed")
endif()
if(tests_failed)
  message(FATAL_ERROR "evidence_dashboard.cmake: the evidence gate did not pass (the BLOCK lines above say why)")
endif()
