#!/usr/bin/env bash
# Prints the results a refactoring must leave bit-identical: for every
# shipped manifest, the run_end record's fingerprints (state_fp,
# functional_fp, rng_fingerprint, tape_digest); `umlos plan`'s plan_hash on
# each benchmark instance under tests/data/memory-planning-bench; and the
# executor's execution_fp for each example graph in every mode. Module
# digests (and so manifest_hash, job_id and replay_token) are left out: they
# change with any edit of a module's code.
#
#   bash scripts/fingerprints.sh [BUILD_DIR] > before.txt   # then diff
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(cd "${1:-$repo/build}" && pwd)
umlos=$build/umlos
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$repo"

# The pinned copies of the shipped manifests (not the tests' variants that
# ctest leaves beside them).
for src in manifests/*.yaml; do
  m=$build/manifests/$(basename "$src")
  root=$work/$(basename "$m" .yaml)
  mkdir -p "$root"
  UML_OS_ROOT=$root "$umlos" run "$m" >"$root.log" 2>&1 || { echo "run $m failed"; cat "$root.log"; exit 1; }
  trace=$(sed -n 's/^trace: //p' "$root.log")
  tail -n 1 "$trace" | python3 -c '
import json, sys
r = json.loads(sys.stdin.read())
print(sys.argv[1], *(f"{k}={r.get(k)}" for k in ("t", "state_fp", "functional_fp", "rng_fingerprint", "tape_digest")))' "$(basename "$m")"
done

# No shipped manifest reaches its clip_norm: digits with a bound every step
# passes, so the clipped update (the norm summed again after scaling) is
# covered too.
# (Beside the shipped ones in the build folder: their paths are relative.)
clip=$work/digits_clip
mkdir -p "$clip"
sed 's/clip_norm: 5.0 /clip_norm: 0.05/; s/max_steps: 1500 /max_steps: 100  /' \
  "$build/manifests/digits.unpinned.yaml" >"$build/manifests/digits_clip.fp.unpinned.yaml"
"$umlos" manifest pin "$build/manifests/digits_clip.fp.unpinned.yaml" -o "$build/manifests/digits_clip.fp.yaml" >/dev/null
UML_OS_ROOT=$clip "$umlos" run -q "$build/manifests/digits_clip.fp.yaml" --run-dir "$clip/run" >/dev/null 2>&1 ||
  { echo "run of digits with clip_norm 0.05 failed"; exit 1; }
tail -n 1 "$clip/run/trace.jsonl" | python3 -c '
import json, sys
r = json.loads(sys.stdin.read())
print("digits clip_norm 0.05", *(f"{k}={r.get(k)}" for k in ("t", "state_fp", "functional_fp", "rng_fingerprint", "tape_digest")))'

for f in tests/data/memory-planning-bench/*/*.csv; do
  printf '%s %s\n' "$f" "$("$umlos" plan "$f" | sed -n 's/^plan_hash //p')"
done

for ir in examples/ir/*.yaml examples/ir/*.json; do
  for mode in forward backward inference; do
    printf '%s %s %s\n' "$ir" "$mode" "$("$umlos" exec "$ir" --mode "$mode" --json |
      python3 -c 'import json,sys; print(json.load(sys.stdin)["execution_fp"])')"
  done
done
