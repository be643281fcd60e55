#!/usr/bin/env bash
# The README's test command (and .ci/run): installs what is missing, then
# builds and tests in stages, stopping at the first failure:
#
#   1. format     every C, C++ and CUDA file follows .clang-format
#   2. release    gcc, Release, ./build: the whole suite
#   3. options    each UMLOS_MODULE_* switched off in turn builds on its own
#                 (scripts/check-module-options.sh, without the tests;
#                 ccache makes these mostly links)
#   4. sanitize   clang with -Wall -Wextra -Werror, AddressSanitizer +
#                 UndefinedBehaviorSanitizer and the libFuzzer targets,
#                 ./build-asan: the suite without the tests labelled slow,
#                 then every fuzz target for FUZZ_SECONDS (default 15) each
#
#   bash scripts/test.sh [--quick] [--full-sanitize]
#
# --quick runs stages 1 and 2 only (a developer's loop). --full-sanitize
# runs the slow tests under the sanitizers too (about 25 more minutes on
# two cores). JOBS (default 2) sets build and test parallelism; the CI
# machine has 2 cores. Each stage prints its wall time.
#
# From a fresh clone (no compiler cache) on two cores of a Zen 3 EPYC, at
# 2026-11-28: format 4 s, release 815 s, options 41 s, sanitize 1,363 s
# (its build 790 s, its tests about 360, the fuzz targets about 85): 37
# minutes in all, above the 30 the project aims at for CI's two cores.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo_root"
jobs=${JOBS:-2}
quick=0
full_sanitize=0
for a in "$@"; do
  case $a in
    --quick) quick=1 ;;
    --full-sanitize) full_sanitize=1 ;;
    *)
      echo "usage: bash scripts/test.sh [--quick] [--full-sanitize]" >&2
      exit 2
      ;;
  esac
done

stage() {
  local name=$1
  shift
  local start=$SECONDS
  echo "==== stage $name"
  "$@"
  echo "==== stage $name: ok ($((SECONDS - start)) s)"
}

bash scripts/install-deps.sh

# One compiler cache for every stage's builds, inside the tree (ignored by git).
export CCACHE_DIR=${CCACHE_DIR:-$repo_root/.ccache}
export CCACHE_BASEDIR=$repo_root CCACHE_NOHASHDIR=true
launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)

release() {
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}"
  cmake --build build -j"$jobs"
  ctest --test-dir build --output-on-failure -j"$jobs"
}

sanitize() {
  local labels=(-LE slow)
  ((full_sanitize)) && labels=()
  BUILD_DIR=build-asan FUZZ_SECONDS=${FUZZ_SECONDS:-15} CTEST_ARGS="${labels[*]}" bash scripts/sanitize.sh
}

stage format bash scripts/format.sh --check
stage release release
if ((quick)); then
  exit 0
fi
# Without the tests: their objects embed the build folder's path, so ccache
# would compile them again for every option (about 5 minutes each here).
# `bash scripts/check-module-options.sh` alone builds the tests too.
stage options env JOBS="$jobs" BUILD_ROOT="$repo_root" bash scripts/check-module-options.sh -DUMLOS_BUILD_TESTS=OFF
stage sanitize sanitize
