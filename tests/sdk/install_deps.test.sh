#!/usr/bin/env bash
# Tests scripts/install-deps.sh against stub dpkg-query / apt-get / sudo (no
# package is really installed): nothing missing -> no apt call at all; some
# missing -> `apt-get update` then one `apt-get install` of exactly those;
# apt failing -> a non-zero exit; a package apt did not install -> an error.
#
# usage: install_deps.test.sh SOURCE_DIR
set -euo pipefail
script=$1/scripts/install-deps.sh
work=$(mktemp -d "${TMPDIR:-/tmp}/umlos-deps-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/bin"

# dpkg-query -W -f=FORMAT PKG: "installed" when PKG is listed in $work/installed.
cat >"$work/bin/dpkg-query" <<'STUB'
#!/usr/bin/env bash
pkg=${!#}
if grep -qx -- "$pkg" "$STUB_DIR/installed"; then printf installed; else exit 1; fi
STUB
# apt-get: logs its arguments; `install` marks the packages installed unless
# STUB_APT_FAIL is set (then it fails like a broken mirror) or the package is
# in $STUB_DIR/uninstallable (apt "succeeds" but the package stays missing).
cat >"$work/bin/apt-get" <<'STUB'
#!/usr/bin/env bash
echo "apt-get $*" >>"$STUB_DIR/log"
[[ ${STUB_APT_FAIL:-} ]] && { echo "E: stub failure" >&2; exit 100; }
if [[ $1 == install ]]; then
  for a in "$@"; do
    [[ $a == -* || $a == install ]] && continue
    grep -qx -- "$a" "$STUB_DIR/uninstallable" 2>/dev/null || echo "$a" >>"$STUB_DIR/installed"
  done
fi
STUB
printf '#!/usr/bin/env bash\nexec "$@"\n' >"$work/bin/sudo"
chmod +x "$work/bin/"*
export STUB_DIR=$work PATH=$work/bin:$PATH

all=(build-essential cmake ninja-build pkg-config libboost-dev libboost-program-options-dev
     libboost-filesystem-dev libyaml-cpp-dev libssl-dev catch2 nlohmann-json3-dev zlib1g-dev libjemalloc-dev
     libprotobuf-dev protobuf-compiler libgloo-dev libsleef-dev python3 clang libclang-rt-14-dev llvm time clang-format ccache)
fail() { echo "FAIL: $*" >&2; exit 1; }

echo "-- everything installed: no apt-get call"
printf '%s\n' "${all[@]}" >"$work/installed"
: >"$work/log"
bash "$script"
[[ ! -s $work/log ]] || fail "apt-get was called: $(cat "$work/log")"

echo "-- two packages missing: update, then install exactly those"
printf '%s\n' "${all[@]}" | grep -vx -e catch2 -e libyaml-cpp-dev >"$work/installed"
: >"$work/log"
bash "$script"
[[ $(sed -n 1p "$work/log") == "apt-get update" ]] || fail "first call: $(sed -n 1p "$work/log")"
[[ $(sed -n 2p "$work/log") == "apt-get install -y --no-install-recommends libyaml-cpp-dev catch2" ]] ||
  fail "second call: $(sed -n 2p "$work/log")"
(($(wc -l <"$work/log") == 2)) || fail "more than two apt-get calls"
echo "-- and a second run is a no-op"
: >"$work/log"
bash "$script"
[[ ! -s $work/log ]] || fail "second run called apt-get"

echo "-- apt-get failing: non-zero exit"
printf '%s\n' "${all[@]}" | grep -vx python3 >"$work/installed"
if STUB_APT_FAIL=1 bash "$script"; then fail "a failing apt-get was not reported"; fi

echo "-- a package apt did not install: non-zero exit naming it"
printf '%s\n' "${all[@]}" | grep -vx python3 >"$work/installed"
echo python3 >"$work/uninstallable"
if out=$(bash "$script" 2>&1); then fail "a package still missing was not reported"; fi
grep -q "python3 is still not installed" <<<"$out" || fail "message: $out"

echo "PASS"
