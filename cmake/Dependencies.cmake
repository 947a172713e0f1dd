# Every dependency comes from the system (Debian packages); nothing is downloaded or vendored.
find_package(Boost 1.74 REQUIRED COMPONENTS program_options)
find_package(Microsoft.GSL REQUIRED)
find_package(OpenSSL REQUIRED COMPONENTS Crypto)  # SHA-256 of fixture files and receipts
find_package(Threads REQUIRED)                     # reruns side by side

# Debian's RapidJSON config only sets RAPIDJSON_INCLUDE_DIRS: wrap it in a target.
find_package(RapidJSON REQUIRED)
add_library(evidence_gate_rapidjson INTERFACE)
target_include_directories(evidence_gate_rapidjson SYSTEM INTERFACE ${RAPIDJSON_INCLUDE_DIRS})
target_compile_definitions(evidence_gate_rapidjson INTERFACE RAPIDJSON_HAS_STDSTRING=1)
# Its SIMD string and whitespace scanning, with SSE2, which every x86-64 CPU has: the gate
# parses hundreds of MB of run records, a third faster so.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  target_compile_definitions(evidence_gate_rapidjson INTERFACE RAPIDJSON_SSE2)
endif()

# xxHash (XXH3) keys the shuffle: fast, and the same on every machine. No CMake config on Debian.
find_path(XXHASH_INCLUDE_DIR xxhash.h REQUIRED)
find_library(XXHASH_LIBRARY xxhash REQUIRED)
add_library(evidence_gate_xxhash INTERFACE)
target_include_directories(evidence_gate_xxhash SYSTEM INTERFACE ${XXHASH_INCLUDE_DIR})
target_link_libraries(evidence_gate_xxhash INTERFACE ${XXHASH_LIBRARY})

# tinyxml2 reads JUnit XML reports of other machines' plain pytest runs. Debian ships a CMake config.
find_package(tinyxml2 CONFIG REQUIRED)
add_library(evidence_gate_tinyxml2 INTERFACE)
target_link_libraries(evidence_gate_tinyxml2 INTERFACE tinyxml2::tinyxml2)
