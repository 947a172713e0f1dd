# evgate_generate_protocol(<target> <protocol.json>): generates runs/protocol.hpp, the names
# evgate and the pytest plugin share (options, record events and their fields, fork-server
# operations), from the one file the plugin reads too, and puts it on <target>'s include path.
# Regenerated when the file or the generator changes.
function(evgate_generate_protocol target protocol)
  set(dir "${CMAKE_CURRENT_FUNCTION_LIST_DIR}")
  set(output "${CMAKE_CURRENT_BINARY_DIR}/generated/runs/protocol.hpp")
  add_custom_command(
    OUTPUT "${output}"
    COMMAND "${CMAKE_COMMAND}" "-DINPUT=${protocol}" "-DOUTPUT=${output}" -P "${dir}/protocol_header.cmake"
    DEPENDS "${protocol}" "${dir}/protocol_header.cmake"
    COMMENT "Generating runs/protocol.hpp from ${protocol}"
    VERBATIM)
  target_sources(${target} PRIVATE "${output}")
  target_include_directories(${target} PUBLIC "${CMAKE_CURRENT_BINARY_DIR}/generated")
endfunction()
