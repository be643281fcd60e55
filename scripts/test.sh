#!/usr/bin/env bash
# The README's test command (and .ci/run): installs what is missing, builds
# everything in ./build (Release, Ninja) and runs every test.
#
#   bash scripts/test.sh
#
# JOBS (default 2) sets build and test parallelism; the CI machine has 2 cores.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo_root"
jobs=${JOBS:-2}

bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs"
