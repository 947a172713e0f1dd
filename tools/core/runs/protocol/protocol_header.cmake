# cmake -DINPUT=evidence_gate_protocol.json -DOUTPUT=protocol.hpp -P protocol_header.cmake
# Writes the C++ names of the protocol file (protocol.cmake says why), only when they changed.
cmake_minimum_required(VERSION 3.21)
file(READ "${INPUT}" json)

set(fields "")  # every member name a record, request or answer has, once
set(body "")

# A C++ identifier for a protocol name: "verified_ns", "hash_seed"; "--evidence-gate-..." never.
function(_identifier out name)
  string(MAKE_C_IDENTIFIER "${name}" id)
  set(${out} "${id}" PARENT_SCOPE)
endfunction()

# `inline constexpr char <id>[] = "<value>";` lines, and an array `all` of the values.
function(_names out namespace comment)
  set(text "// ${comment}\nnamespace ${namespace} {\n")
  set(values "")
  list(LENGTH ARGN count)
  math(EXPR last "${count} - 1")
  foreach(i RANGE 0 ${last} 2)
    math(EXPR j "${i} + 1")
    list(GET ARGN ${i} id)
    list(GET ARGN ${j} value)
    string(APPEND text "inline constexpr char ${id}[] = \"${value}\";\n")
    list(APPEND values "\"${value}\"")
  endforeach()
  math(EXPR n "${count} / 2")
  list(JOIN values ", " values)
  string(APPEND text "inline constexpr std::array<std::string_view, ${n}> all = {${values}};\n}  // namespace ${namespace}\n\n")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

# "{"a", "b"}" for a JSON array of strings at <path...>.
function(_array out)
  string(JSON length LENGTH "${json}" ${ARGN})
  set(values "")
  if(length GREATER 0)
    math(EXPR last "${length} - 1")
    foreach(i RANGE ${last})
      string(JSON value GET "${json}" ${ARGN} ${i})
      list(APPEND values "\"${value}\"")
    endforeach()
  endif()
  list(JOIN values ", " values)
  set(${out} "${values}" PARENT_SCOPE)
  set(_length ${length} PARENT_SCOPE)
endfunction()

# Members of an object at <path...>, as a list.
function(_members out)
  string(JSON length LENGTH "${json}" ${ARGN})
  set(names "")
  math(EXPR last "${length} - 1")
  foreach(i RANGE ${last})
    string(JSON name MEMBER "${json}" ${ARGN} ${i})
    list(APPEND names "${name}")
  endforeach()
  set(${out} "${names}" PARENT_SCOPE)
endfunction()

# Options: option::channel = "--evidence-gate-channel".
string(JSON prefix GET "${json}" option_prefix)
_members(options options)
set(pairs "")
foreach(name IN LISTS options)
  string(JSON flag GET "${json}" options ${name})
  if(NOT flag MATCHES "^${prefix}")
    message(FATAL_ERROR "${INPUT}: option '${name}' (${flag}) does not start with ${prefix}")
  endif()
  _identifier(id "${name}")
  list(APPEND pairs ${id} ${flag})
endforeach()
_names(text option "the plugin's options (evgate passes them; --evidence-gate-records is by hand)" ${pairs})
string(APPEND body "inline constexpr char kOptionPrefix[] = \"${prefix}\";\n\n${text}")

# Record events: event::session = "session"; who sends each; the fields each may have.
set(pairs "")
set(per_event "")
foreach(sender IN ITEMS plugin evgate)
  _members(events records ${sender})
  set(sent "")
  foreach(event IN LISTS events)
    _identifier(id "${event}")
    list(APPEND pairs ${id} ${event})
    list(APPEND sent "\"${event}\"")
    _array(values records ${sender} ${event})
    string(APPEND per_event "inline constexpr std::array<std::string_view, ${_length}> ${id} = {${values}};\n")
    string(JSON length LENGTH "${json}" records ${sender} ${event})
    math(EXPR last "${length} - 1")
    foreach(i RANGE ${last})
      string(JSON field GET "${json}" records ${sender} ${event} ${i})
      list(APPEND fields "${field}")
    endforeach()
  endforeach()
  list(LENGTH sent n)
  list(JOIN sent ", " sent)
  set(senders_${sender} "inline constexpr std::array<std::string_view, ${n}> from_${sender} = {${sent}};\n")
endforeach()
_names(text event "record events, in the run's records file (runs/run_records.hpp)" ${pairs})
string(REPLACE "}  // namespace event" "${senders_plugin}${senders_evgate}}  // namespace event" text "${text}")
string(APPEND body "${text}// The members each event's record may have.\nnamespace fields_of {\n${per_event}}  // namespace fields_of\n\n")

# Fork-server requests: op::bind = "bind", and their members; the members of its answers.
_members(ops fork requests)
set(pairs "")
set(per_op "")
foreach(op IN LISTS ops)
  _identifier(id "${op}")
  list(APPEND pairs ${id} ${op})
  _array(values fork requests ${op})
  string(APPEND per_op "inline constexpr std::array<std::string_view, ${_length}> ${id} = {${values}};\n")
  string(JSON length LENGTH "${json}" fork requests ${op})
  math(EXPR last "${length} - 1")
  foreach(i RANGE ${last})
    string(JSON field GET "${json}" fork requests ${op} ${i})
    list(APPEND fields "${field}")
  endforeach()
endforeach()
_names(text op "fork-server requests (runs/fork_server.hpp, runs/fork_launcher.hpp)" ${pairs})
string(APPEND body "${text}// The members each request has.\nnamespace request_fields {\n${per_op}}  // namespace request_fields\n\n")
_array(answers fork answers)
string(APPEND body "// The members of the fork server's answers.\ninline constexpr std::array<std::string_view, ${_length}> kAnswerFields = {${answers}};\n\n")
string(JSON length LENGTH "${json}" fork answers)
math(EXPR last "${length} - 1")
foreach(i RANGE ${last})
  string(JSON field GET "${json}" fork answers ${i})
  list(APPEND fields "${field}")
endforeach()

# Every member name: field::test = "test".
list(REMOVE_DUPLICATES fields)
list(SORT fields)
set(pairs "")
foreach(field IN LISTS fields)
  _identifier(id "${field}")
  list(APPEND pairs ${id} ${field})
endforeach()
_names(text field "every member of a record, request or answer" ${pairs})
string(APPEND body "${text}")

cmake_path(GET INPUT FILENAME source)
set(header "// Generated from templates/pytest/${source} by tools/core/runs/protocol/protocol_header.cmake:
// edit that file, not this one. The names evgate and the pytest plugin share.
#pragma once

#include <array>
#include <string_view>

namespace evgate::protocol {

${body}}  // namespace evgate::protocol
")
file(CONFIGURE OUTPUT "${OUTPUT}" CONTENT "${header}" @ONLY)
