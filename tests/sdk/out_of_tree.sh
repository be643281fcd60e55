#!/usr/bin/env bash
# The third-party path, end to end, with nothing but the installed SDK:
#   1. install the SDK from the build tree into a fresh prefix;
#   2. configure and build sdk/template OUT OF TREE against that prefix
#      (find_package(UMLOS) + umlos_add_module);
#   3. check the module exports exactly umlos_module_entry;
#   4. `umlos hash` pins it, and the digest equals sha256sum's;
#   5. `umlos conformance` passes (loads it through the verified loader and
#      runs its test vectors under the kernel's contract checks);
#   6. `umlos modules inspect` shows its operators and declarations; a C-only
#      project builds tests/c_module/c_example.c against the same package,
#      and find_package(UMLOS 2) is refused (the version is the ABI's);
#   7. the installed driver template (share/umlos/template_driver) builds
#      out of tree the same way and passes `umlos conformance` on the eight
#      primitives it implements, the other 66 listed as missing;
#   8. an out-of-tree operator (tests/sdk/noise_module: Gaussian noise)
#      passes conformance and is wired between NextBatch_v1 and Encode_v1
#      on digits by manifest lines alone; two runs give the same state_fp
#      sequence, which differs from the unwired run's;
#   9. an out-of-tree primitive pack (tests/sdk/activation_module: swish
#      and its gradient) passes conformance, and a digits model body edited
#      to use swish in its encoder (model_ir, pinned) trains with it and the
#      noise operator; two runs give the same state_fp sequence;
#  10. a shipped pinned manifest with the module added (path + the digest
#      `umlos hash` printed) runs to completion with it loaded; the same
#      manifest pointing at a copy with one byte flipped is refused with
#      MODULE_HASH_MISMATCH (exit status 32) before anything runs.
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
# build_copy SRC NAME: copies a project to $work/NAME and builds it against
# the installed SDK, as a third party would.
build_copy() {
  cp -r "$1" "$work/$2"
  cmake -S "$work/$2" -B "$work/$2/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix"
  cmake --build "$work/$2/build"
}
fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }
# fps TRACE: the state_fp sequence of a trace, one line.
fps() { python3 -c 'import json,sys; print(" ".join(json.loads(l)["state_fp"] for l in open(sys.argv[1]) if "\"iter\"" in l))' "$1"; }
# run_twice MANIFEST TAG WHAT: runs into $work/TAG_a and $work/TAG_b, which
# must give the same state_fp sequence.
run_twice() {
  for r in "$2_a" "$2_b"; do
    "$umlos" run "$1" --run-dir "$work/$r" --quiet || fail "$3: run $r failed (exit $?)"
  done
  [[ $(fps "$work/$2_a/trace.jsonl") == "$(fps "$work/$2_b/trace.jsonl")" ]] || fail "$3: two runs differ"
}

step "install the SDK into $prefix"
cmake --install "$build_dir" --prefix "$prefix" --component sdk
for f in include/umlos/sdk.hpp include/umlos/abi/umlos_abi.h include/umlos/abi/umlos_philox.h \
         include/umlos/abi/umlos_driver.h include/umlos/abi/umlos_tmmu.h; do
  [[ -f $prefix/$f ]] || fail "installed SDK lacks $f"
done
config=$(find "$prefix" -name UMLOSConfig.cmake -print -quit)
[[ -n $config ]] || fail "installed SDK lacks UMLOSConfig.cmake"

[[ -f $prefix/share/umlos/template/CMakeLists.txt && -f $prefix/share/umlos/template_driver/CMakeLists.txt ]] ||
  fail "installed SDK lacks share/umlos/template or share/umlos/template_driver"
for doc in sdk abi primitives contracts exit-codes manifest training modelir model; do
  [[ -f $prefix/share/doc/UMLOS/$doc.md ]] || fail "installed SDK lacks share/doc/UMLOS/$doc.md"
done

step "copy the installed template (as a third party would) and build it out of tree"
build_copy "$prefix/share/umlos/template" my_module
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

step "a C-only project (LANGUAGES C) builds the C module against the same package"
mkdir -p "$work/c_module"
cp "$source_dir/tests/c_module/c_example.c" "$work/c_module/"
cat >"$work/c_module/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.18)
project(c_ops LANGUAGES C)
set(CMAKE_C_STANDARD 11)
find_package(UMLOS 1 REQUIRED)
umlos_add_module(c_ops SOURCES c_example.c)
CMAKE
cmake -S "$work/c_module" -B "$work/c_module/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix"
cmake --build "$work/c_module/build"
"$umlos" conformance "$work/c_module/build/libc_ops.so"

step "the installed driver template builds out of tree and conforms on the primitives it implements"
build_copy "$prefix/share/umlos/template_driver" my_driver
driver=$work/my_driver/build/libtemplate_driver.so
[[ -f $driver ]] || fail "the driver template did not produce $driver"
driver_report=$("$umlos" conformance "$driver") || fail "conformance of the driver template failed: $driver_report"
printf '%s\n' "$driver_report" | grep -v "MISSING *MISSING"
grep -q "implemented 8 of the catalogue's 78 primitives" <<<"$driver_report" ||
  fail "the driver template does not report 8 of 78 primitives"
grep -q "needed by the kernel and the shipped operators but missing (46)" <<<"$driver_report" ||
  fail "the driver template's report does not list the 46 primitives the shipped operators need"

step "an out-of-tree noise operator is wired between batching and encoding on digits by manifest lines alone"
build_copy "$source_dir/tests/sdk/noise_module" noise_module
noise=$work/noise_module/build/libacme_noise.so
"$umlos" conformance "$noise"
if [[ -f $build_dir/manifests/digits.yaml ]]; then
  noise_manifest=$build_dir/manifests/.sdk-test-$$-noise.yaml
  plain_manifest=$build_dir/manifests/.sdk-test-$$-plain.yaml
  trap 'rm -rf "$work" "$noise_manifest" "$plain_manifest"' EXIT
  "$umlos" manifest pin "$build_dir/manifests/digits.yaml" -o "$plain_manifest"
  python3 - "$plain_manifest" "$noise_manifest" "$noise" "$(sha256sum "$noise" | cut -d' ' -f1)" <<'PY'
import re, sys
plain, out, module, digest = sys.argv[1:5]
t = open(plain).read()
t = re.sub(r"max_steps: \d+", "max_steps: 200", t)
open(plain, "w").write(t)
t = t.replace("modules:", 'modules:\n  - path: "%s"\n    sha256: %s' % (module, digest), 1)
t, n = re.subn(r"  next_batch_op: UML_OS.Data.NextBatch_v1[^\n]*\n",
               "  next_batch_op:\n    - UML_OS.Data.NextBatch_v1\n"
               "    - {op: Acme.Augment.GaussianNoise_v1, inputs: {x: batch.x}, outputs: {y: batch.x},\n"
               "       config: {sigma: 0.05}}\n", t)
assert n == 1, "digits.yaml has no next_batch_op line"
open(out, "w").write(t)
PY
  run_twice "$noise_manifest" noise "the wired digits manifest"
  "$umlos" run "$plain_manifest" --run-dir "$work/plain" --quiet || fail "the plain digits run failed (exit $?)"
  [[ $(fps "$work/noise_a/trace.jsonl") != "$(fps "$work/plain/trace.jsonl")" ]] ||
    fail "the wired noise operator changed nothing"
  grep -q '"next_batch_op":\["UML_OS.Data.NextBatch_v1","Acme.Augment.GaussianNoise_v1"\]' "$work/noise_a/trace.jsonl" ||
    fail "the run_header does not list both next_batch_op operators"
  echo "digits with Acme.Augment.GaussianNoise_v1 after NextBatch_v1: 200 steps twice, identical state_fp sequences"
fi

step "an out-of-tree activation primitive is used by a manifest-declared model body"
build_copy "$source_dir/tests/sdk/activation_module" activation_module
swish=$work/activation_module/build/libacme_swish.so
"$umlos" conformance "$swish" | tee "$work/swish-conformance.txt"
grep -q "swish_grad" "$work/swish-conformance.txt" || fail "conformance did not check swish_grad"
if [[ -f $build_dir/manifests/digits.yaml ]]; then
  body=$work/swish_body.yaml
  sed 's/instr: relu, inputs: \[enc_h_pre\]/instr: swish, inputs: [enc_h_pre]/' \
    "$source_dir/manifests/models/digits_vae.yaml" >"$body"
  grep -q "instr: swish" "$body" || fail "the model body was not edited"
  swish_unpinned=$build_dir/manifests/.sdk-test-$$-swish-unpinned.yaml
  swish_manifest=$build_dir/manifests/.sdk-test-$$-swish.yaml
  trap 'rm -rf "$work" "$noise_manifest" "$plain_manifest" "$swish_unpinned" "$swish_manifest"' EXIT
  python3 - "$noise_manifest" "$swish_unpinned" "$swish" "$(sha256sum "$swish" | cut -d' ' -f1)" "$body" <<'PY'
import re, sys
noise, out, module, digest, body = sys.argv[1:6]
t = open(noise).read()
t = t.replace("modules:", 'modules:\n  - path: "%s"\n    sha256: %s' % (module, digest), 1)
t, n = re.subn(r'(model_ir:[^\n]*\n  path: )"[^"]*"([^\n]*\n  sha256: )[0-9a-f]{64}', r'\1"%s"\2unpinned' % body, t)
assert n == 1, "digits.yaml has no model_ir file entry"
open(out, "w").write(t)
PY
  "$umlos" manifest pin "$swish_unpinned" -o "$swish_manifest"
  grep -q "sha256: $(sha256sum "$body" | cut -d' ' -f1)" "$swish_manifest" || fail "pin did not write the body's digest"
  run_twice "$swish_manifest" swish "the digits manifest with a swish encoder"
  [[ $(fps "$work/swish_a/trace.jsonl") != "$(fps "$work/noise_a/trace.jsonl")" ]] ||
    fail "the swish body changed nothing"
  grep -q '"module_primitives":{"swish":"test_swish","swish_grad":"test_swish"}' "$work/swish_a/trace.jsonl" ||
    fail "the run_header does not say which module ran swish"
  echo "digits with a swish encoder from an out-of-tree primitive pack and the noise operator: 200 steps twice, identical"
fi

step "find_package refuses another ABI major"
mkdir -p "$work/major2"
cat >"$work/major2/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.18)
project(major2 LANGUAGES NONE)
find_package(UMLOS 2 QUIET)
if(UMLOS_FOUND)
  message(FATAL_ERROR "find_package(UMLOS 2) accepted SDK ${UMLOS_VERSION}")
endif()
find_package(UMLOS 1.0 REQUIRED)
message(STATUS "UMLOS ${UMLOS_VERSION}: ABI ${UMLOS_ABI_MAJOR}.${UMLOS_ABI_MINOR}")
CMAKE
cmake -S "$work/major2" -B "$work/major2/build" -DCMAKE_PREFIX_PATH="$prefix"

step "pin the module in a manifest, run it; a tampered copy is refused"
base=""
for name in default.yaml demo_walk.yaml; do
  if [[ -f $build_dir/manifests/$name ]]; then base=$build_dir/manifests/$name; break; fi
done
[[ -n $base ]] || fail "no pinned manifest (default.yaml, demo_walk.yaml) in $build_dir/manifests"
# Adds `- path: MODULE / sha256: DIGEST` as the first entry of `modules:`,
# with the indentation the file already uses for that list.
add_module() { # base out module digest
  python3 - "$@" <<'PY'
import re, sys
base, out, module, digest = sys.argv[1:5]
lines = open(base).read().split("\n")
start = next(i for i, l in enumerate(lines) if re.match(r"^modules:\s*(#.*)?$", l))
item = next(i for i in range(start + 1, len(lines)) if re.match(r"^\s*- ", lines[i]))
indent = re.match(r"^(\s*)- ", lines[item]).group(1)
entry = [f'{indent}- path: "{module}"', f"{indent}  sha256: {digest}"]
open(out, "w").write("\n".join(lines[:item] + entry + lines[item:]))
PY
}
# The copies live beside the base manifest: its relative paths are resolved
# against its own folder.
manifest_dir=$(dirname "$base")
pinned_manifest=$manifest_dir/.sdk-test-$$-pinned.yaml
tampered_manifest=$manifest_dir/.sdk-test-$$-tampered.yaml
trap 'rm -rf "$work" "$pinned_manifest" "$tampered_manifest"' EXIT
# Re-pin the shipped modules first, so that the test does not depend on the
# build having refreshed build/manifests after the last module change.
"$umlos" manifest pin "$base" -o "$pinned_manifest"
add_module "$pinned_manifest" "$pinned_manifest" "$module" "$digest"
"$umlos" run "$pinned_manifest" --run-dir "$work/run" --quiet ||
  fail "the manifest pinning the out-of-tree module did not run (exit $?)"
header=$(head -n1 "$work/run/trace.jsonl")
grep -q '"record":"run_header"' <<<"$header" || fail "the run wrote no run_header"
grep -q "\"name\":\"example_ops\",\"sha256\":\"$digest\"" <<<"$header" ||
  fail "the run_header does not list example_ops with sha256 $digest: $header"
echo "ran $(basename "$base") with the out-of-tree module loaded and pinned at $digest"

tampered=$work/tampered.so
cp "$module" "$tampered"
offset=$(($(stat -c %s "$tampered") / 2))
byte=$(od -An -tu1 -j "$offset" -N1 "$tampered" | tr -d ' ')
printf "\\$(printf '%03o' $((byte ^ 0xff)))" | dd of="$tampered" bs=1 seek="$offset" conv=notrunc status=none
cmp -s "$module" "$tampered" && fail "flipping a byte did not change the copy"
"$umlos" manifest pin "$base" -o "$tampered_manifest"
add_module "$tampered_manifest" "$tampered_manifest" "$tampered" "$digest"
set +e
"$umlos" run "$tampered_manifest" --run-dir "$work/run-tampered" --quiet 2>"$work/tampered.err"
status=$?
set -e
cat "$work/tampered.err"
((status == 32)) || fail "tampered module: expected exit status 32 (MODULE_HASH_MISMATCH), got $status"
grep -q "MODULE_HASH_MISMATCH" "$work/tampered.err" || fail "tampered module: message does not name MODULE_HASH_MISMATCH"
if [[ -e $work/run-tampered/trace.jsonl ]] && grep -q '"record":"iter"' "$work/run-tampered/trace.jsonl"; then
  fail "tampered module: the procedure ran iterations"
fi

echo
echo "PASS: out-of-tree module built against the installed SDK, pinned, inspected and conformant"
