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

# What `python` is, asked once per path (a global property keeps the answer): <prefix>_PYTEST
# (pytest's version; empty when it cannot import pytest), <prefix>_VERSION and <prefix>_EXT_SUFFIX
# (the file-name suffix of the extension modules it imports, ".cpython-311-x86_64-linux-gnu.so").
function(_evidence_gate_probe_python prefix python)
  get_property(known GLOBAL PROPERTY "_EVIDENCE_GATE_PROBE:${python}" SET)
  if(NOT known)
    # One marked line, whatever else the interpreter prints (a sitecustomize, a plugin on import);
    # the part after the second '|' only once pytest imported.
    execute_process(COMMAND "${python}" -c
                    "import platform, sysconfig; print('evidence-gate-probe|%s|%s|' % (platform.python_version(), sysconfig.get_config_var('EXT_SUFFIX') or ''), end=''); import pytest; print(pytest.__version__)"
                    OUTPUT_VARIABLE output ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
    set(answer "" "" "")
    if(output MATCHES "evidence-gate-probe\\|([^|\n]*)\\|([^|\n]*)\\|([^|\n]*)")
      set(answer "${CMAKE_MATCH_1}" "${CMAKE_MATCH_2}" "${CMAKE_MATCH_3}")
    endif()
    set_property(GLOBAL PROPERTY "_EVIDENCE_GATE_PROBE:${python}" "${answer}")
  endif()
  get_property(answer GLOBAL PROPERTY "_EVIDENCE_GATE_PROBE:${python}")
  list(LENGTH answer count)
  if(NOT count EQUAL 3)
    set(answer "" "" "")
  endif()
  list(GET answer 0 version)
  list(GET answer 1 suffix)
  list(GET answer 2 pytest)
  set(${prefix}_VERSION "${version}" PARENT_SCOPE)
  set(${prefix}_EXT_SUFFIX "${suffix}" PARENT_SCOPE)
  set(${prefix}_PYTEST "${pytest}" PARENT_SCOPE)
endfunction()

# Interpreters a search finds when nothing names one: the first `python3` (or `python`) on PATH,
# then Debian's and a local install's (on Debian the first python3 on PATH may lack pytest).
function(_evidence_gate_python_candidates out)
  find_program(on_path NAMES python3 python NO_CACHE)
  set(candidates ${on_path} /usr/bin/python3 /usr/local/bin/python3)
  list(REMOVE_DUPLICATES candidates)
  set(${out} "${candidates}" PARENT_SCOPE)
endfunction()

# The interpreter for a suite (`who` says whose, for the message): PYTHON; else the one the project
# found, Python3_EXECUTABLE, Python_EXECUTABLE or PYTHON_EXECUTABLE (FindPython3, FindPython and
# pybind11's or FindPythonInterp's: an extension module the project builds is built for it); else
# the first candidate that can import pytest. A named interpreter is taken or refused, never
# swapped for another: a module built for it would not import elsewhere. Configuration says
# which was taken and why. Sets <out> to it and <ext_suffix> to its extension modules' suffix, or
# <out> to "" and <problem> to what was tried and what to do.
function(_evidence_gate_search_python out ext_suffix problem who explicit)
  set(why "")
  if(explicit)
    set(candidates "${explicit}")
    set(why "PYTHON names it")
  else()
    foreach(variable IN ITEMS Python3_EXECUTABLE Python_EXECUTABLE PYTHON_EXECUTABLE)
      if(${variable})
        set(candidates "${${variable}}")
        set(why "${variable}, the interpreter this project found")
        break()
      endif()
    endforeach()
  endif()
  set(searched FALSE)
  if(NOT why)
    set(searched TRUE)
    _evidence_gate_python_candidates(candidates)
  endif()
  set(able "")
  foreach(python IN LISTS candidates)
    _evidence_gate_probe_python(probe "${python}")
    if(probe_PYTEST)
      list(APPEND able "${python}")
    endif()
  endforeach()
  if(able)
    list(GET able 0 python)
    _evidence_gate_probe_python(probe "${python}")
    if(searched)
      list(JOIN candidates "', '" tried)
      set(why "the first of '${tried}' that imports pytest")
      list(REMOVE_AT able 0)
      if(able)
        list(JOIN able "', '" others)
        string(APPEND why "; '${others}' can too: choose one with PYTHON or Python3_EXECUTABLE")
      endif()
    endif()
    message(STATUS "EvidenceGate: ${who} runs pytest with '${python}' (Python ${probe_VERSION}, pytest ${probe_PYTEST}): ${why}")
    set(${out} "${python}" PARENT_SCOPE)
    set(${ext_suffix} "${probe_EXT_SUFFIX}" PARENT_SCOPE)
    return()
  endif()
  list(JOIN candidates "', '" tried)
  string(CONCAT text
    "EvidenceGate: no Python interpreter that can import pytest.\n"
    "  Tried: '${tried}'")
  if(NOT searched)
    string(APPEND text " (${why})")
    # What would work instead, to name with PYTHON (the module must then be built for it too).
    _evidence_gate_python_candidates(others)
    foreach(other IN LISTS others)
      _evidence_gate_probe_python(probe "${other}")
      if(probe_PYTEST)
        string(APPEND text "\n  Can: '${other}' (Python ${probe_VERSION}, pytest ${probe_PYTEST})")
      endif()
    endforeach()
  endif()
  string(APPEND text "\n  Install pytest for one of them (on Debian: apt-get install python3-pytest), "
                     "or name one with PYTHON or Python3_EXECUTABLE.")
  set(${out} "" PARENT_SCOPE)
  set(${problem} "${text}" PARENT_SCOPE)
endfunction()

# As _evidence_gate_search_python, where an interpreter is a must (this project's own tests).
function(_evidence_gate_find_python out explicit)
  _evidence_gate_search_python(python ignored problem "Evidence Gate's own tests" "${explicit}")
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

# What can only be checked once the whole project is configured (enable_testing() may come after
# the call, a DEPENDS target may be defined later): each suite is remembered here, and one
# deferred call at the end of the top-level directory checks them all.
function(_evidence_gate_check_later name python ext_suffix depends)
  get_property(suites GLOBAL PROPERTY _EVIDENCE_GATE_WIRING)
  list(LENGTH suites index)
  set_property(GLOBAL APPEND PROPERTY _EVIDENCE_GATE_WIRING "${index}")
  set_property(GLOBAL PROPERTY "_EVIDENCE_GATE_WIRING_${index}_NAME" "${name}")
  set_property(GLOBAL PROPERTY "_EVIDENCE_GATE_WIRING_${index}_DIR" "${CMAKE_CURRENT_SOURCE_DIR}")
  set_property(GLOBAL PROPERTY "_EVIDENCE_GATE_WIRING_${index}_FILE" "${CMAKE_CURRENT_LIST_FILE}")
  set_property(GLOBAL PROPERTY "_EVIDENCE_GATE_WIRING_${index}_PYTHON" "${python}")
  set_property(GLOBAL PROPERTY "_EVIDENCE_GATE_WIRING_${index}_EXT_SUFFIX" "${ext_suffix}")
  set_property(GLOBAL PROPERTY "_EVIDENCE_GATE_WIRING_${index}_DEPENDS" "${depends}")
  if(index EQUAL 0)
    cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _evidence_gate_check_wiring)
  endif()
endfunction()

function(_evidence_gate_check_wiring)
  get_property(suites GLOBAL PROPERTY _EVIDENCE_GATE_WIRING)
  foreach(index IN LISTS suites)
    foreach(key IN ITEMS NAME DIR FILE PYTHON EXT_SUFFIX DEPENDS)
      get_property(${key} GLOBAL PROPERTY "_EVIDENCE_GATE_WIRING_${index}_${key}")
    endforeach()
    _evidence_gate_check_testing("${NAME}" "${DIR}" "${FILE}")
    if(EXT_SUFFIX)
      foreach(target IN LISTS DEPENDS)
        _evidence_gate_check_module("${NAME}" "${PYTHON}" "${EXT_SUFFIX}" "${target}")
      endforeach()
    endif()
  endforeach()
endfunction()

# ctest in the top build directory reaches a directory's tests only when testing is enabled there
# and in every directory above it (each CTestTestfile.cmake names its subdirectories'); without
# enable_testing() none is written and ctest says "Total Tests: 0", with no word of why.
function(_evidence_gate_check_testing name dir list_file)
  set(reached "")
  set(current "${dir}")
  while(current)
    get_directory_property(enabled DIRECTORY "${current}" DEFINITION CMAKE_TESTING_ENABLED)
    if(NOT enabled)
      break()
    endif()
    set(reached "${current}")
    get_directory_property(current DIRECTORY "${current}" PARENT_DIRECTORY)
  endwhile()
  if(NOT current)
    return()  # enabled from the top down to the suite
  endif()
  if(DEFINED CACHE{BUILD_TESTING} AND NOT "$CACHE{BUILD_TESTING}")  # include(CTest)'s switch, turned off
    message(STATUS "EvidenceGate: suite '${name}' is not registered with ctest: BUILD_TESTING is OFF")
    return()
  endif()
  string(CONCAT fix "call enable_testing() (or include(CTest)) in the top-level CMakeLists.txt, before any add_subdirectory():\n"
          "  Path: '${CMAKE_SOURCE_DIR}/CMakeLists.txt'")
  if(NOT reached)
    message(WARNING "EvidenceGate: ctest runs no step of suite '${name}' (\"Total Tests: 0\"): testing is not "
      "enabled in the directory that declares it.\n"
      "  Path: '${list_file}'\n"
      "To fix, ${fix}")
    return()
  endif()
  get_directory_property(reached_binary DIRECTORY "${reached}" BINARY_DIR)
  message(WARNING "EvidenceGate: ctest in '${CMAKE_BINARY_DIR}' does not reach suite '${name}': testing is not "
    "enabled in '${current}'.\n"
    "  Path: '${list_file}'\n"
    "Run ctest in the suite's build directory:\n"
    "  ctest --test-dir '${reached_binary}'\n"
    "or ${fix}")
endfunction()

# A DEPENDS target that is an extension module names the interpreter it is built for in its file
# name (".cpython-312-x86_64-linux-gnu.so"): another interpreter cannot import it, and every run
# of the suite would fail on its import.
function(_evidence_gate_check_module name python ext_suffix target)
  if(NOT TARGET "${target}")
    return()  # the DEPENDS check at ctest time names it
  endif()
  get_target_property(imported "${target}" IMPORTED)
  if(imported)
    get_target_property(file "${target}" IMPORTED_LOCATION)
    if(NOT file)
      get_target_property(configs "${target}" IMPORTED_CONFIGURATIONS)
      if(configs)
        list(GET configs 0 config)
        get_target_property(file "${target}" IMPORTED_LOCATION_${config})
      endif()
    endif()
    if(NOT file)
      return()
    endif()
    cmake_path(GET file FILENAME file_name)
  else()
    get_target_property(suffix "${target}" SUFFIX)  # pybind11, nanobind and Python_add_library set it
    if(NOT suffix)
      return()
    endif()
    set(file_name "${target}${suffix}")
  endif()
  if(file_name MATCHES "\\$<")
    return()
  endif()
  if(NOT file_name MATCHES "(\\.(cpython-[^.]+|cp[0-9]+-[^.]+|pypy[^.]+|graalpy[^.]+)\\.(so|pyd))$")
    return()  # not tagged for one interpreter (a plain library, or the stable ABI's .abi3.so)
  endif()
  set(module_suffix "${CMAKE_MATCH_1}")
  if(module_suffix STREQUAL ext_suffix)
    return()
  endif()
  message(WARNING "EvidenceGate: suite '${name}' runs pytest with an interpreter that cannot import "
    "DEPENDS target '${target}': it is built for another one.\n"
    "  Module: '${file_name}' (built for '${module_suffix}')\n"
    "  Interpreter: '${python}' (imports '${ext_suffix}')\n"
    "Build the module for the suite's interpreter, or name the one it is built for with PYTHON "
    "(or Python3_EXECUTABLE).")
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
