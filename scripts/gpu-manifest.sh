#!/usr/bin/env bash
# Swaps the driver of the shipped digits manifest to cuda_driver by editing
# its driver lines (plus the module pin), as a user would, and trains it for
# a few hundred steps: twice on the GPU, once on cpu_driver. Prints each
# run's wall time and final fingerprints, whether the two GPU runs are equal
# record for record, and at how many steps the GPU's state_fp equals the
# CPU's.
#
#   bash scripts/gpu-manifest.sh [BUILD_DIR] [STEPS]
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(cd "${1:-$repo/build}" && pwd)
steps=${2:-300}
src=$build/manifests/digits.yaml
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sha=$(sha256sum "$build/modules/libumlos_cuda_driver.so" | cut -d' ' -f1)

variant() {  # variant DRIVER CONFIG OUT: the shipped manifest with its driver swapped and max_steps cut
  python3 - "$src" "$1" "$2" "$3" "$sha" "$steps" <<'PY'
import re, sys
src, driver, config, out, sha, steps = sys.argv[1:]
t = open(src).read()
t = t.replace("modules:", 'modules:\n  - path: "../modules/libumlos_cuda_driver.so"\n    sha256: %s' % sha, 1)
t = re.sub(r"(driver:\n  name: )cpu_driver(.*\n  config: )\{threads: 1\}", r"\g<1>%s\g<2>%s" % (driver, config), t)
t = re.sub(r"max_steps: \d+", "max_steps: %s" % steps, t)
open(out, "w").write(t)
PY
}

variant cuda_driver "{device: 0}" "$build/manifests/gpu_digits_cuda.yaml"
variant cpu_driver "{threads: 1}" "$build/manifests/gpu_digits_cpu.yaml"
grep -A2 "^driver:" "$build/manifests/gpu_digits_cuda.yaml"

run() {  # run NAME MANIFEST: trains into its own UML_OS_ROOT, prints time and final record
  local root=$work/$1
  mkdir -p "$root"
  local start=$(date +%s.%N) rc=0
  UML_OS_ROOT=$root "$build/umlos" run "$2" >"$root.log" 2>&1 || rc=$?
  local end=$(date +%s.%N)
  echo "$1: exit $rc, $(python3 -c "print(round($end - $start, 2))") s"
  if [ $rc -ne 0 ]; then tail -n 20 "$root.log"; return 0; fi
  local trace=$(sed -n 's/^trace: //p' "$root.log")
  cp "$trace" "$work/$1.trace"
  tail -n 1 "$trace" | python3 -c '
import json, sys
r = json.loads(sys.stdin.read())
print("  ", *(f"{k}={r.get(k)}" for k in ("t", "state_fp", "functional_fp", "rng_fingerprint", "tape_digest")))'
}
run cuda_a "$build/manifests/gpu_digits_cuda.yaml"
run cuda_b "$build/manifests/gpu_digits_cuda.yaml"
run cpu "$build/manifests/gpu_digits_cpu.yaml"

python3 - "$work" <<'PY'
import json, os, sys
w = sys.argv[1]
def load(n):
    p = os.path.join(w, n + ".trace")
    return [json.loads(l) for l in open(p)] if os.path.exists(p) else None
a, b, c = load("cuda_a"), load("cuda_b"), load("cpu")
def fps(tr):
    return {r["t"]: r["state_fp"] for r in tr if "state_fp" in r and "t" in r}
if a and b:
    fa, fb = fps(a), fps(b)
    print("GPU run A vs GPU run B: state_fp equal at %d of %d steps; final records equal: %s" % (
        sum(fa[t] == fb.get(t) for t in fa), len(fa), a[-1] == b[-1]))
if a and c:
    fa, fc = fps(a), fps(c)
    same = [t for t in sorted(fa) if fa[t] == fc.get(t)]
    first_diff = next((t for t in sorted(fa) if fa[t] != fc.get(t)), None)
    print("GPU vs CPU: state_fp equal at %d of %d steps; first differing step: %s" % (len(same), len(fa), first_diff))
PY
