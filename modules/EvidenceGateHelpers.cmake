# Helpers of EvidenceGate.cmake (included by it, installed beside it): quoting for suite.json
# and for CMake lists, finding the interpreter, checking arguments, and the per-test entries
# ctest discovers. Private: names start with `_evidence_gate_`.

include_guard(GLOBAL)

# Quote `value` as a JSON string.
function(_evidence_gate_json_string out value)
  string(REPLACE "\\" "\\\\" value "${value}")
  string(REPLACE "\"" "\\\"" value "${value}")
  string(REPLACE "\n" "\\n" value "${value}")
  string(REPLACE "\r" "\\r" value "${value}")
  string(REPLACE "\t" "\\t" value "${value}")
  set(${out} "\"${value}\"" PARENT_SCOPE)
endfunction()

# `value` as one element of a CMake list: a ';' in a path must not split it.
function(_evidence_gate_list_item out value)
  string(REPLACE ";" "\\;" value "${value}")
  set(${out} "${value}" PARENT_SCOPE)
endfunction()

function(_evidence_gate_json_list out)
  set(items "")
  foreach(item IN LISTS ARGN)
    _evidence_gate_json_string(quoted "${item}")
    list(APPEND items "${quoted}")
  endforeach()
  list(JOIN items ", " joined)
  set(${out} "[${joined}]" PARENT_SCOPE)
endfunction()

# Does `python` import pytest? Sets <out> to pytest's version, or empty.
function(_evidence_gate_pytest_version out python)
  execute_process(COMMAND "${python}" -c "import pytest; print(pytest.__version__)"
                  RESULT_VARIABLE failed OUTPUT_VARIABLE version ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(failed)
    set(version "")
  endif()
  set(${out} "${version}" PARENT_SCOPE)
endfunction()

# The interpreter for a suite: PYTHON, then Python3_EXECUTABLE, then the first candidate
# that can import pytest (on Debian the first python3 on PATH may lack it). Sets <out> to it,
# or to "" and <problem> to what was tried and what to do.
function(_evidence_gate_search_python out problem explicit)
  if(explicit)
    set(candidates "${explicit}")
  elseif(Python3_EXECUTABLE)
    set(candidates "${Python3_EXECUTABLE}")
  else()
    get_property(known GLOBAL PROPERTY _EVIDENCE_GATE_PYTHON)
    if(known)
      set(${out} "${known}" PARENT_SCOPE)
      return()
    endif()
    find_program(on_path NAMES python3 python NO_CACHE)
    set(candidates ${on_path} /usr/bin/python3 /usr/local/bin/python3)
    list(REMOVE_DUPLICATES candidates)
  endif()
  foreach(python IN LISTS candidates)
    _evidence_gate_pytest_version(version "${python}")
    if(version)
      message(STATUS "EvidenceGate: using ${python} (pytest ${version})")
      if(NOT explicit AND NOT Python3_EXECUTABLE)
        set_property(GLOBAL PROPERTY _EVIDENCE_GATE_PYTHON "${python}")
      endif()
      set(${out} "${python}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  list(JOIN candidates "', '" tried)
  set(${out} "" PARENT_SCOPE)
  string(CONCAT text
    "EvidenceGate: no Python interpreter that can import pytest.\n"
    "  Tried: '${tried}'\n"
    "  Install pytest for one of them (on Debian: apt-get install python3-pytest), "
    "or name one with PYTHON or Python3_EXECUTABLE.")
  set(${problem} "${text}" PARENT_SCOPE)
endfunction()

# As _evidence_gate_search_python, where an interpreter is a must (this project's own tests).
function(_evidence_gate_find_python out explicit)
  _evidence_gate_search_python(python problem "${explicit}")
  if(NOT python)
    message(FATAL_ERROR "${problem}")
  endif()
  set(${out} "${python}" PARENT_SCOPE)
endfunction()

# A suite with no interpreter that imports pytest: a warning, and one failing test that says
# the same (so the rest of the project configures and its tests run), unless
# EVIDENCE_GATE_REQUIRE_PYTEST asks for a configure error.
function(_evidence_gate_without_python name problem)
  if(EVIDENCE_GATE_REQUIRE_PYTEST)
    message(FATAL_ERROR "${problem}")
  endif()
  message(WARNING "${problem}\n"
    "Until one can, the suite '${name}' is one failing test, ${name}_NO_PYTEST "
    "(-DEVIDENCE_GATE_REQUIRE_PYTEST=ON makes this a configure error).")
  set(text "${CMAKE_CURRENT_BINARY_DIR}/evidence/${name}/no-pytest.txt")
  file(WRITE "${text}" "${problem}\n")
  add_test(NAME ${name}_NO_PYTEST COMMAND "${CMAKE_COMMAND}" -E cat "${text}")
  set(labels evidence ${name} ${ARGN})  # ARGN: the suite's LABELS
  set_tests_properties(${name}_NO_PYTEST PROPERTIES WILL_FAIL TRUE LABELS "${labels}" TIMEOUT 60)
endfunction()

# A PYTHON_PATH_PREPEND or LIBRARY_PATH_PREPEND entry: absolute, relative to ROOT, or a
# generator expression (left as it is until generation, where it must give an absolute path).
function(_evidence_gate_search_path out keyword value root)
  if(NOT value MATCHES "^\\$<")
    cmake_path(ABSOLUTE_PATH value BASE_DIRECTORY "${root}" NORMALIZE OUTPUT_VARIABLE value)
    string(REGEX REPLACE "(.)/$" "\\1" value "${value}")
    if(value MATCHES ":")
      message(FATAL_ERROR "evidence_gate_add_suite(): a ${keyword} path may not hold ':', the search path's separator:\n"
                          "  Path: '${value}'")
    endif()
  endif()
  set(${out} "${value}" PARENT_SCOPE)
endfunction()

# Where suite.json goes: one per configuration with a multi-config generator (named by
# $<CONFIG>, which every step's command line and ctest's include file carry), else one.
function(_evidence_gate_suite_file out evidence_dir)
  get_property(multi GLOBAL PROPERTY GENERATOR_IS_MULTI_CONFIG)
  if(multi)
    set(${out} "${evidence_dir}/suite-$<CONFIG>.json" PARENT_SCOPE)
  else()
    set(${out} "${evidence_dir}/suite.json" PARENT_SCOPE)
  endif()
endfunction()

# A path argument relative to ROOT that must exist.
function(_evidence_gate_existing_path out keyword value root)
  cmake_path(ABSOLUTE_PATH value BASE_DIRECTORY "${root}" NORMALIZE OUTPUT_VARIABLE path)
  if(NOT EXISTS "${path}")
    message(FATAL_ERROR "evidence_gate_add_suite(): ${keyword} does not exist:\n  Path: '${path}'")
  endif()
  set(${out} "${path}" PARENT_SCOPE)
endfunction()

# At configure time, when the tool is already built (an installed package), validate the
# suite's input files now instead of at test time.
function(_evidence_gate_check_inputs suite_file)
  get_target_property(imported EvidenceGate::evgate IMPORTED)
  if(NOT imported)
    return()
  endif()
  get_target_property(configs EvidenceGate::evgate IMPORTED_CONFIGURATIONS)
  list(GET configs 0 config)
  get_target_property(tool EvidenceGate::evgate IMPORTED_LOCATION_${config})
  if(NOT EXISTS "${tool}")
    return()
  endif()
  execute_process(COMMAND "${tool}" check "--suite=${suite_file}"
                  RESULT_VARIABLE failed OUTPUT_QUIET ERROR_VARIABLE message)
  if(failed)
    string(STRIP "${message}" message)
    message(FATAL_ERROR "${message}")
  endif()
endfunction()

# What ctest decides for a suite each time it starts, in a file it includes before the tests
# of this directory (TEST_INCLUDE_FILES), generated per configuration:
# - when evgate or a DEPENDS target is not built, one failing entry <name>_NOT_BUILT names
#   each with its file; every step needs it (fixture <name>.built), so none runs, and no
#   collection is tried. Built, the entry is not there and the fixture needs nothing.
# - <name>.baseline-update, only when EVIDENCE_GATE_UPDATE_BASELINE is set: it writes into
#   the source tree, and a plain ctest should not list a step it skips;
# - the per-test entries (PER_TEST), as gtest_discover_tests does in PRE_TEST mode, so new
#   tests appear without re-running CMake. `evgate discover` collects only when what
#   collection depends on changed since it last did, and not at all when ctest's label
#   options leave out every entry (`ctest -LE evidence` runs no Python). Each entry runs
#   evgate-verdict, which prints the test's row from the ledger step's store.
function(_evidence_gate_ctest_time name suite_file evidence_dir labels run_fixtures timeout per_test depends)
  set(entries "${evidence_dir}/ctest-entries.cmake")
  set(tool "$<TARGET_FILE:EvidenceGate::evgate>")
  set(content "set(missing \"\")\n")
  set(built "evgate (EvidenceGate::evgate)" "${tool}")
  foreach(target IN LISTS depends)
    list(APPEND built "${target}" "$<TARGET_FILE:${target}>")
  endforeach()
  while(built)
    list(POP_FRONT built what file)
    string(APPEND content "\
if(NOT EXISTS [==[${file}]==])
  string(APPEND missing \"\\n  \" [==[${what}]==] \": '\" [==[${file}]==] \"' does not exist\")
endif()
")
  endwhile()
  set(label_args "")
  foreach(label IN LISTS labels ITEMS evidence-test)
    string(APPEND label_args " [==[--label=${label}]==]")
  endforeach()
  string(APPEND content "\
if(missing)
  string(CONCAT message \"${name}: not built yet, so no step of the suite can run; build first (cmake --build \"
         [==[${CMAKE_BINARY_DIR}]==] \"):\${missing}\")
  add_test([==[${name}_NOT_BUILT]==] [==[${CMAKE_COMMAND}]==] -E echo \"\${message}\")
  set_tests_properties([==[${name}_NOT_BUILT]==] PROPERTIES WILL_FAIL TRUE FIXTURES_SETUP [==[${name}.built]==]
                       LABELS [==[${labels}]==] TIMEOUT 60)
  return()
endif()
if(DEFINED ENV{EVIDENCE_GATE_UPDATE_BASELINE})
  add_test([==[${name}.baseline-update]==] [==[${tool}]==] baseline [==[--suite=${suite_file}]==] --when-requested)
  set_tests_properties([==[${name}.baseline-update]==] PROPERTIES LABELS baseline-update SKIP_RETURN_CODE 77
                       FIXTURES_REQUIRED [==[${run_fixtures};${name}.built]==] TIMEOUT ${timeout})
endif()
")
  if(per_test)
    string(APPEND content "\
execute_process(COMMAND [==[${tool}]==] discover [==[--suite=${suite_file}]==] [==[--output=${entries}]==]${label_args}
                RESULT_VARIABLE failed OUTPUT_VARIABLE output ERROR_VARIABLE output)
if(failed)
  add_test([==[${name}.discover]==] [==[${CMAKE_COMMAND}]==] -E echo \"\${output}\")
  set_tests_properties([==[${name}.discover]==] PROPERTIES WILL_FAIL TRUE LABELS [==[${labels}]==] TIMEOUT 60)
elseif(EXISTS [==[${entries}]==])
  include([==[${entries}]==])
endif()
")
  endif()
  set(include_base "${CMAKE_CURRENT_BINARY_DIR}/${name}_evidence_ctest")
  get_property(multi GLOBAL PROPERTY GENERATOR_IS_MULTI_CONFIG)
  if(multi)
    # One file per configuration; ctest includes the one of its -C.
    file(GENERATE OUTPUT "${include_base}-$<CONFIG>.cmake" CONTENT "${content}")
    file(WRITE "${include_base}.cmake" "\
if(NOT CTEST_CONFIGURATION_TYPE)
  add_test([==[${name}_NO_CONFIGURATION]==] [==[${CMAKE_COMMAND}]==] -E echo \"${name}: run ctest with -C <configuration>\")
  set_tests_properties([==[${name}_NO_CONFIGURATION]==] PROPERTIES WILL_FAIL TRUE FIXTURES_SETUP [==[${name}.built]==]
                       LABELS [==[${labels}]==])
  return()
endif()
include(\"${include_base}-\${CTEST_CONFIGURATION_TYPE}.cmake\")
")
  else()
    file(GENERATE OUTPUT "${include_base}.cmake" CONTENT "${content}")
  endif()
  _evidence_gate_list_item(include_item "${include_base}.cmake")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${include_item}")
endfunction()
