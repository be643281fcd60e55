#!/usr/bin/env bash
# The README's test command (and .ci/run): installs what is missing, builds
# everything in ./build (Release, Ninja) and runs every test.
#
#   bash scripts/test.sh [--sanitize]
#
# JOBS (default 2) sets build and test parallelism; the CI machine has 2 cores.
# --sanitize (CI: .ci/run) then also runs scripts/sanitize.sh: the suite
# again under AddressSanitizer + UndefinedBehaviorSanitizer in ./build-asan,
# and every fuzz target for a few seconds.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo_root"
jobs=${JOBS:-2}
sanitize=0
for a in "$@"; do
  case $a in
    --sanitize) sanitize=1 ;;
    *) echo "usage: bash scripts/test.sh [--sanitize]" >&2; exit 2 ;;
  esac
done

bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs"
if ((sanitize)); then
  bash scripts/sanitize.sh
fi
