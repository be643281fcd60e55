#!/usr/bin/env bash
# Copies what scripts/gpu-check.sh needs from a build here into .gpu/ (an
# ignored folder, which a device session names in its `carry` to take it to
# a GPU machine that lacks the build dependencies): the executables, the
# modules, the pinned manifests, and the shared libraries a stock CUDA image
# does not have. On that machine:
#   cp -a REPO /work/main (the tests hold absolute paths of this build),
#   cd /work/main && rm -rf build && mv .gpu/build build,
#   LD_LIBRARY_PATH=$PWD/.gpu/lib PREBUILT=1 BUILD_DIR=build bash scripts/gpu-check.sh
#
#   bash scripts/gpu-carry.sh [BUILD_DIR]
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$repo/build}
dest=$repo/.gpu
rm -rf "$dest"
mkdir -p "$dest/build/tests" "$dest/build/bench" "$dest/build/modules" "$dest/lib"
cp "$build/umlos" "$dest/build/"
cp "$build/tests/umlos_tests" "$dest/build/tests/"
cp "$build/bench/umlos_bench_cuda_driver" "$dest/build/bench/"
cp "$build"/modules/*.so "$dest/build/modules/"
cp -r "$build/manifests" "$dest/build/"
rm -rf "$dest/build/manifests/CMakeFiles"
# Gloo (cpu_driver's collectives) and what it links: the multi-rank bench.
for lib in libboost_program_options.so.1.74.0 libyaml-cpp.so.0.7 libprotobuf.so.32 libcrypto.so.3 libjemalloc.so.2 \
  libgloo.so.0 libhiredis.so.0.14 libibverbs.so.1 libnl-3.so.200 libnl-route-3.so.200 libsleef.so.3; do
  cp -L "$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ {print $NF; exit}')" "$dest/lib/"
done
du -sh "$dest"
