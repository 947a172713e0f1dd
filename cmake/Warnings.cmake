# evidence_gate_warnings: the warning flags every target of ours builds with.
add_library(evidence_gate_warnings INTERFACE)
if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  target_compile_options(evidence_gate_warnings INTERFACE
    -Wall -Wextra -Wpedantic -Wconversion -Wsign-conversion -Wshadow
    $<$<BOOL:${EVIDENCE_GATE_WERROR}>:-Werror>)
endif()
