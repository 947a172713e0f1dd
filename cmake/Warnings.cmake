# evidence_gate_warnings: the warning flags every target of ours builds with.
add_library(evidence_gate_warnings INTERFACE)
if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  target_compile_options(evidence_gate_warnings INTERFACE
    -Wall -Wextra -Wpedantic -Wconversion -Wsign-conversion -Wshadow
    $<$<BOOL:${EVIDENCE_GATE_WERROR}>:-Werror>)
endif()

# EVIDENCE_GATE_SANITIZE: AddressSanitizer and UndefinedBehaviorSanitizer on everything that
# links the warnings target (evgate_core, evgate, the unit tests); any UB report aborts.
# tests/fuzz/run-sanitized.sh configures a clang build with it; the fuzz targets reuse the flags.
option(EVIDENCE_GATE_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
set(EVIDENCE_GATE_SANITIZER_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  # RapidJSON 1.1.0 (Debian) adds an offset to its null stack pointer in internal::Stack, which
  # UBSan reports on the first parse. It is RapidJSON's own code, so its functions are skipped.
  file(WRITE "${PROJECT_BINARY_DIR}/ubsan-ignorelist.txt" "[undefined]\nfun:_ZN9rapidjson*\n")
  list(APPEND EVIDENCE_GATE_SANITIZER_FLAGS "-fsanitize-ignorelist=${PROJECT_BINARY_DIR}/ubsan-ignorelist.txt")
endif()
if(EVIDENCE_GATE_SANITIZE)
  target_compile_options(evidence_gate_warnings INTERFACE ${EVIDENCE_GATE_SANITIZER_FLAGS})
  target_link_options(evidence_gate_warnings INTERFACE -fsanitize=address,undefined)
endif()
