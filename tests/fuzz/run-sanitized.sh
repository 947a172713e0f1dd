#!/usr/bin/env bash
# The sanitizer configuration: a separate clang build with ASan + UBSan on the tool, the core
# and the unit tests (EVIDENCE_GATE_SANITIZE) and the libFuzzer targets (EVIDENCE_GATE_FUZZ),
# then the unit tests and a bounded fuzzing run of every parser.
#
#   tests/fuzz/run-sanitized.sh [build-dir]      (default: build/sanitized, ignored by git)
#
# Needs clang and libFuzzer from Debian (clang, libclang-rt-14-dev).
set -euo pipefail
source_dir="$(cd "$(dirname "$0")/../.." && pwd)"
build_dir="${1:-${source_dir}/build/sanitized}"
jobs="$(nproc)"

generator=()
command -v ninja > /dev/null && generator=(-G Ninja)
CXX="${CXX:-clang++}" cmake -S "$source_dir" -B "$build_dir" "${generator[@]}" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEVIDENCE_GATE_SANITIZE=ON -DEVIDENCE_GATE_FUZZ=ON
cmake --build "$build_dir" --parallel "$jobs"
# Abort at the first report, with a stack trace; leaks fail too.
export ASAN_OPTIONS="abort_on_error=1:detect_leaks=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
ctest --test-dir "$build_dir" -L 'unit|fuzz' --output-on-failure -j "$jobs"
