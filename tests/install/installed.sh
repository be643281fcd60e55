#!/usr/bin/env bash
# usage: installed.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" > /dev/null
for m in libumlos_core.so libumlos_cpu_driver.so libumlos_tmmu.so; do
  test -f "$prefix/lib/umlos/modules/$m" || { echo "missing installed module $m"; exit 1; }
done
# Run from elsewhere so nothing of the build tree is found by accident.
cd "$prefix"
"$prefix/bin/umlos" conformance "$prefix"/lib/umlos/modules/libumlos_*.so | tail -1 | grep -qx "conformance: PASS"
"$prefix/bin/umlos" plan "$src/tests/data/memory-planning-bench/synthetic/pisarchyk_lee_fig_example.csv" --json > plan.json
grep -q '"lower_bound_bytes"' plan.json
echo "installed umlos: conformance PASS, plan ok"
