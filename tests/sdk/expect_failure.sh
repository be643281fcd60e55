#!/usr/bin/env bash
# expect_failure.sh STATUSES PATTERN COMMAND...
# Runs COMMAND; passes when it exits with one of STATUSES (comma-separated;
# "nonzero": any status but 0) and its combined output contains PATTERN
# (grep -E). Prints the output.
set -uo pipefail
want=$1 pattern=$2
shift 2
output=$("$@" 2>&1)
status=$?
printf '%s\n' "$output"
if [[ $want == nonzero ]]; then
  ((status != 0)) || { echo "FAIL: expected a non-zero exit status, got 0" >&2; exit 1; }
elif [[ ,$want, != *,$status,* ]]; then
  echo "FAIL: expected exit status $want, got $status" >&2
  exit 1
fi
grep -Eq -- "$pattern" <<<"$output" || { echo "FAIL: output does not match /$pattern/" >&2; exit 1; }
echo "PASS: exit status $status, output matches /$pattern/"
