#!/usr/bin/env bash
# Formats every C, C++ and CUDA file git tracks with .clang-format, or with
# --check says which files differ and fails (CI runs the check).
#
#   bash scripts/format.sh [--check]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
mapfile -t files < <(git ls-files '*.c' '*.h' '*.cpp' '*.hpp' '*.cu' '*.cuh' | grep -v '^tests/data/')
if [[ ${1:-} == --check ]]; then
  clang-format --dry-run --Werror "${files[@]}"
  echo "format: ${#files[@]} files follow .clang-format"
else
  clang-format -i "${files[@]}"
fi
