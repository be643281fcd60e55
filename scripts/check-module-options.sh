#!/usr/bin/env bash
# Every module option builds on its own: for each UMLOS_MODULE_<NAME>, a
# configure and build with that one module switched off, in its own build
# folder (build-no<name>, beside the source tree unless BUILD_ROOT is set).
# Tests that need a module the build leaves out are not compiled
# (tests/CMakeLists.txt), so each build compiles only what it can run.
#
#   bash scripts/check-module-options.sh [extra cmake arguments...]
#
# Environment: BUILD_ROOT (where the build folders go), JOBS (default 2),
# OPTIONS (the modules to switch off, default all four), CTEST=1 to also run
# each build's ctest.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
root=${BUILD_ROOT:-$repo}
jobs=${JOBS:-2}
options=${OPTIONS:-CORE CPU_DRIVER SYMBOLIC CUDA_DRIVER}
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi

failed=()
for opt in $options; do
  name=$(echo "$opt" | tr 'A-Z' 'a-z' | tr -d '_')
  dir=$root/build-no$name
  echo "== UMLOS_MODULE_$opt=OFF ($dir)"
  if cmake -S "$repo" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" \
       -DUMLOS_BUILD_BENCH=OFF "-DUMLOS_MODULE_$opt=OFF" "$@" &&
     cmake --build "$dir" -j "$jobs" &&
     { [ "${CTEST:-0}" != 1 ] || ctest --test-dir "$dir" -j "$jobs" --output-on-failure; }; then
    echo "== UMLOS_MODULE_$opt=OFF: ok"
  else
    echo "== UMLOS_MODULE_$opt=OFF: FAILED"
    failed+=("$opt")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "module options that do not build on their own: ${failed[*]}" >&2
  exit 1
fi
echo "every module option builds on its own"
