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
# that can import pytest (on Debian the first python3 on PATH may lack it).
function(_evidence_gate_find_python out explicit)
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
  message(FATAL_ERROR
    "EvidenceGate: no Python interpreter that can import pytest.\n"
    "  Tried: '${tried}'\n"
    "  Install pytest for one of them (on Debian: apt-get install python3-pytest), "
    "or name one with PYTHON or Python3_EXECUTABLE.")
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

# One CTest entry per pytest test, registered by ctest itself before it runs (as
# gtest_discover_tests does in PRE_TEST mode), so new tests appear without re-running CMake.
# `evgate discover` collects only when what collection depends on changed since it last did;
# each entry runs evgate-verdict, which prints the test's row from the ledger step's store.
function(_evidence_gate_discover_tests name suite_file evidence_dir)
  set(entries "${evidence_dir}/ctest-entries.cmake")
  set(include_file "${CMAKE_CURRENT_BINARY_DIR}/${name}_evidence_entries.cmake")
  file(GENERATE OUTPUT "${include_file}" CONTENT "\
set(tool [==[$<TARGET_FILE:EvidenceGate::evgate>]==])
if(NOT EXISTS \"\${tool}\")
  add_test([==[${name}_NOT_BUILT]==] [==[${name}_NOT_BUILT]==])
  set_tests_properties([==[${name}_NOT_BUILT]==] PROPERTIES TIMEOUT 60)
  return()
endif()
execute_process(COMMAND \"\${tool}\" discover [==[--suite=${suite_file}]==] [==[--output=${entries}]==]
                RESULT_VARIABLE failed OUTPUT_VARIABLE output ERROR_VARIABLE output)
if(failed)
  add_test([==[${name}.discover]==] [==[${CMAKE_COMMAND}]==] -E echo \"\${output}\")
  set_tests_properties([==[${name}.discover]==] PROPERTIES WILL_FAIL TRUE LABELS [==[evidence;${name}]==] TIMEOUT 60)
else()
  include([==[${entries}]==])
endif()
")
  _evidence_gate_list_item(include_item "${include_file}")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${include_item}")
endfunction()
