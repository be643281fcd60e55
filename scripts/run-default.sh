#!/usr/bin/env bash
# The README's run command: installs what is missing, builds everything in
# ./build (Release, Ninja) and runs the default manifest, pinned by the build
# (build/manifests/ holds copies of manifests/*.yaml with each module's
# SHA-256 filled in).
#
#   bash scripts/run-default.sh [MANIFEST]     MANIFEST: a file name in manifests/
set -euo pipefail

# The manifest that is run when none is given.
default_manifest=digits.yaml

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo_root"
manifest=${1:-$default_manifest}
jobs=${JOBS:-2}

bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$jobs"

pinned=build/manifests/$manifest
if [[ ! -f $pinned ]]; then
  echo "run-default: $pinned does not exist; manifests available:" >&2
  ls build/manifests >&2 || true
  exit 1
fi
exec ./build/umlos run "$pinned"
