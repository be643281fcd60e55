#!/usr/bin/env bash
# The third-party path, end to end, with nothing but the installed SDK:
#   1. install the SDK from the build tree into a fresh prefix;
#   2. configure and build sdk/template OUT OF TREE against that prefix
#      (find_package(UMLOS) + umlos_add_module);
#   3. check the module exports exactly umlos_module_entry;
#   4. `umlos hash` pins it, and the digest equals sha256sum's;
#   5. `umlos conformance` passes (loads it through the verified loader and
#      runs its test vectors under the kernel's contract checks);
#   6. `umlos modules inspect` shows its operators and declarations.
#
# usage: out_of_tree.sh BUILD_DIR UMLOS_EXE SOURCE_DIR
set -euo pipefail

build_dir=$1
umlos=$2
source_dir=$3
[[ -d $build_dir && -x $umlos && -d $source_dir/sdk/template ]] || {
  echo "usage: $0 BUILD_DIR UMLOS_EXE SOURCE_DIR" >&2
  exit 2
}

work=$(mktemp -d "${TMPDIR:-/tmp}/umlos-sdk-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

step() { printf '\n== %s\n' "$*"; }
fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }

step "install the SDK into $prefix"
cmake --install "$build_dir" --prefix "$prefix" --component sdk
for f in include/umlos/sdk.hpp include/umlos/abi/umlos_abi.h include/umlos/abi/umlos_philox.h \
         include/umlos/abi/umlos_driver.h include/umlos/abi/umlos_tmmu.h; do
  [[ -f $prefix/$f ]] || fail "installed SDK lacks $f"
done
config=$(find "$prefix" -name UMLOSConfig.cmake -print -quit)
[[ -n $config ]] || fail "installed SDK lacks UMLOSConfig.cmake"

step "copy sdk/template (as a third party would) and build it out of tree"
cp -r "$source_dir/sdk/template" "$work/my_module"
cmake -S "$work/my_module" -B "$work/my_module/build" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix"
cmake --build "$work/my_module/build"
module=$work/my_module/build/libexample_ops.so
[[ -f $module ]] || fail "the template did not produce $module"

step "the module exports exactly umlos_module_entry"
exports=$(nm -D --defined-only "$module" | awk '{print $3}' | sort | tr '\n' ' ')
[[ $exports == "umlos_module_entry " ]] || fail "exports are: $exports"

step "umlos hash"
hash_out=$("$umlos" hash "$module")
printf '%s\n' "$hash_out"
digest=$(sha256sum "$module" | cut -d' ' -f1)
grep -q "$digest" <<<"$hash_out" || fail "umlos hash does not print the file's SHA-256 $digest"

step "umlos conformance"
"$umlos" conformance "$module"

step "umlos modules inspect"
inspect_out=$("$umlos" modules inspect "$module")
printf '%s\n' "$inspect_out"
for want in Example.Math.Scale_v1 Example.Random.AddNoise_v1; do
  grep -q "$want" <<<"$inspect_out" || fail "inspect does not list $want"
done

echo
echo "PASS: out-of-tree module built against the installed SDK, pinned, inspected and conformant"
