#!/usr/bin/env bash
# Runs every libFuzzer target of tests/fuzz for SECONDS each, JOBS of them
# at a time (default 2; each target is one process on one core), and says
# per target how many inputs it executed and whether it found anything.
#
#   bash scripts/fuzz.sh [SECONDS] [TARGET...]     (default 60 s, every target)
#
# Builds what it needs first in $BUILD_DIR (default build-asan: clang,
# UMLOS_FUZZ=ON, which is also the ASan + UBSan build of the test suite),
# makes a demo run folder and the seed corpora from the shipped files
# (scripts/fuzz_corpus.py). The corpus each target grows is kept between
# runs in $BUILD_DIR/fuzz/corpus/<target>. A crash, sanitizer report,
# timeout (> 20 s on one input), out-of-memory (> 2.5 GB) or leak leaves
# the input in $FUZZ_FINDINGS/<target>/ (default $BUILD_DIR/fuzz/findings):
# reproduce with  $BUILD_DIR/fuzz/fuzz_<target> FILE
# The cpu-s column is the CPU time the target really had (user + system),
# which is less than SECONDS when other work shares the cores.
# Exit status 1 when any target found something.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo_root"
seconds=${1:-60}
shift || true
build=${BUILD_DIR:-build-asan}
jobs=${JOBS:-2}
findings=${FUZZ_FINDINGS:-$build/fuzz/findings}

if [[ ! -f $build/CMakeCache.txt ]]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DUMLOS_FUZZ=ON
fi
# One build at a time: two fuzz.sh streams starting together would
# otherwise run two ninja processes in one folder and link broken binaries.
mkdir -p "$build"
flock "$build/.fuzz-build.lock" cmake --build "$build" -j"$jobs" --target umlos_fuzz umlos umlos_cpu_driver umlos_core

# Seeds: shipped files, plus a fresh demo_walk run folder (with checkpoints).
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
{ "$build/umlos" manifest pin "$build/manifests/demo_walk.unpinned.yaml" -o "$build/manifests/demo_walk.fuzz.yaml" &&
  UML_OS_ROOT=$work/root "$build/umlos" run "$build/manifests/demo_walk.fuzz.yaml" --checkpoint-every 50; } \
  >"$work/run.log" 2>&1 || { echo "fuzz: the demo_walk run failed:" >&2; cat "$work/run.log" >&2; exit 1; }
run_dir=$(dirname "$(find "$work/root" -name trace.jsonl | head -1)")
python3 scripts/fuzz_corpus.py "$work/seeds" "$run_dir" >/dev/null

if (($# == 0)); then
  set -- $(cd "$build/fuzz" && ls fuzz_* | sed 's/^fuzz_//')
fi

# Under `nice`, lower the whole session's priority too: with the kernel's
# autogroup scheduling, nice alone only ranks processes within one session,
# and background fuzzing would take half the cores from other work.
if (($(nice) > 0)) && [[ -w /proc/self/autogroup ]]; then
  echo "$(nice)" >/proc/self/autogroup 2>/dev/null || true
fi
# Do not stop these processes (SIGSTOP) to free the cores: libFuzzer times a
# unit in wall-clock time, and a pause longer than -timeout is reported as a
# timeout finding.
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# ASan keeps freed memory in its allocator; over hundreds of thousands of
# inputs the process's RSS can pass -rss_limit_mb with a few MB live (seen on
# cbor: 2.5 GB RSS, 29 MB live heap). Returning it to the system keeps the
# limit meaningful for inputs that really allocate too much.
# ASan also records the call stack of every allocation in its stack depot,
# which is never freed: on deeply nested inputs (cbor nests up to 512 levels)
# each new nesting pattern is a new stack, and RSS grew by ~3 KB per input
# until libFuzzer's limit stopped the run (2.0 GB after 116,486 inputs).
# Four frames keep the depot small (590 MB, flat, after 313,662 inputs) and
# the run 2.7x faster; rerun a saved input to see full allocation stacks.
# intercept_tls_get_addr=0: see sanitize.sh (a LeakSanitizer tracer crash).
export ASAN_OPTIONS="allocator_release_to_os_interval_ms=500:malloc_context_size=4:intercept_tls_get_addr=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
# One target: its table row in $work/row-<target>, and $work/found-<target>
# when it found something.
fuzz_one() {
  local t=$1 exe=$build/fuzz/fuzz_$1
  mkdir -p "$build/fuzz/corpus/$t" "$findings/$t" "$work/seeds/$t"
  local log=$findings/$t.log
  touch "$work/start-$t"  # inputs kept by earlier runs are not this run's findings
  local rc=0 max_len=65536
  [[ $t == checkpoint || $t == run_folder ]] && max_len=524288  # whole checkpoints (scripts/fuzz_corpus.py)
  /usr/bin/time -f '%U %S' -o "$work/time-$t" \
    "$exe" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2560 -max_len=$max_len \
    -print_final_stats=1 -close_fd_mask=1 -artifact_prefix="$findings/$t/" \
    "$build/fuzz/corpus/$t" "$work/seeds/$t" >"$log" 2>&1 || rc=$?
  local cpu execs rate kept
  cpu=$(awk '/^[0-9.]+ [0-9.]+$/ { printf "%.0f", $1 + $2 }' "$work/time-$t")
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  kept=$(find "$findings/$t" -type f -newer "$work/start-$t" | sort)
  if ((rc != 0)) || [[ -n $kept ]]; then
    touch "$work/found-$t"
    {
      printf '%-18s %12s %8s %7s  %s\n' "$t" "${execs:-?}" "${rate:-?}" "${cpu:-?}" "FOUND (exit $rc): ${kept:-see $log}"
      grep -E "^(==[0-9]+==ERROR|==umlos-fuzz==|SUMMARY|.*runtime error)" "$log" | head -5 | sed 's/^/    /'
    } >"$work/row-$t"
  else
    printf '%-18s %12s %8s %7s  %s\n' "$t" "${execs:-?}" "${rate:-?}" "${cpu:-?}" "clean" >"$work/row-$t"
  fi
}

for t in "$@"; do
  [[ -x $build/fuzz/fuzz_$t ]] || { echo "fuzz: no target $build/fuzz/fuzz_$t" >&2; exit 2; }
done
running=0
for t in "$@"; do
  if ((running >= jobs)); then
    wait -n || true
    running=$((running - 1))
  fi
  fuzz_one "$t" &
  running=$((running + 1))
done
wait || true
status=0
printf '%-18s %12s %8s %7s  %s\n' target executions exec/s cpu-s result
for t in "$@"; do
  if [[ -f $work/row-$t ]]; then
    cat "$work/row-$t"
  else
    printf '%-18s %12s %8s %7s  %s\n' "$t" "?" "?" "?" "FAILED: the run left no result (see $findings/$t.log)"
    status=1
  fi
  [[ -e $work/found-$t ]] && status=1
done
exit $status
