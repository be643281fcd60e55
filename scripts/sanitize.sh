#!/usr/bin/env bash
# The sanitizer stage of CI (stage 4 of scripts/test.sh): everything built
# with clang, -Werror, AddressSanitizer + UndefinedBehaviorSanitizer and the
# libFuzzer targets (UMLOS_FUZZ=ON, cmake/Sanitizers.cmake) in ./build-asan,
# the test suite run there (CTEST_ARGS="-LE slow" leaves out the slow
# tests, as CI does), then every fuzz target for FUZZ_SECONDS (default 15)
# each.
#
#   bash scripts/sanitize.sh
#
# A memory error, undefined behaviour or leak fails the test that hit it;
# a fuzz finding leaves its input in build-asan/fuzz/findings/<target>/.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo_root"
jobs=${JOBS:-2}
build=${BUILD_DIR:-build-asan}
export BUILD_DIR=$build

launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
# Warnings are errors here: this is also CI's clang build.
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DUMLOS_WERROR=ON -DUMLOS_BUILD_BENCH=OFF \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DUMLOS_FUZZ=ON "${launcher[@]}"
# The lock fuzz.sh takes too: never two builds in one folder at once.
flock "$build/.fuzz-build.lock" cmake --build "$build" -j"$jobs"

# Sanitizer reports end the process with a failure (UBSan: -fno-sanitize-
# recover); symbolized stacks when llvm-symbolizer is there.
# intercept_tls_get_addr=0: the interceptor of clang <= 16 takes a dynamic
# TLS block (our modules are dlopen'd and use thread_local) that malloc
# happened to place 16 bytes past a page boundary for a glibc 2.19 header
# and reads the words before it; LeakSanitizer's tracer then dies with
# "Tracer caught signal 11" at exit, now and then, reporting no leak.
export ASAN_OPTIONS="detect_leaks=1:intercept_tls_get_addr=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# CTEST_ARGS: e.g. "-LE slow" (CI) leaves out the tests labelled slow.
# shellcheck disable=SC2086
ctest --test-dir "$build" --output-on-failure -j"$jobs" ${CTEST_ARGS:-}

# FUZZ_SECONDS=0 skips the fuzz stage.
if ((${FUZZ_SECONDS:-15} > 0)); then
  bash scripts/fuzz.sh "${FUZZ_SECONDS:-15}"
fi
