# evgate_embed_assets(<target> <asset>...): compiles each asset (a path below this directory,
# e.g. report.css) into <target> as evgate::assets::<stem>_<extension> (report_css), declared in
# reports/assets.hpp. The generated sources are rebuilt when an asset or embed.cmake changes.
function(evgate_embed_assets target)
  set(dir "${CMAKE_CURRENT_FUNCTION_LIST_DIR}")
  foreach(asset IN LISTS ARGN)
    string(MAKE_C_IDENTIFIER "${asset}" name)
    set(output "${CMAKE_CURRENT_BINARY_DIR}/assets/${name}.cpp")
    add_custom_command(
      OUTPUT "${output}"
      COMMAND "${CMAKE_COMMAND}" "-DNAME=${name}" "-DINPUT=${dir}/${asset}" "-DOUTPUT=${output}" -P "${dir}/embed.cmake"
      DEPENDS "${dir}/${asset}" "${dir}/embed.cmake"
      COMMENT "Embedding ${asset}"
      VERBATIM)
    target_sources(${target} PRIVATE "${output}")
  endforeach()
endfunction()
