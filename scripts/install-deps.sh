#!/usr/bin/env bash
# Installs what building and testing UML_OS needs on Debian 12 (bookworm),
# from Debian's own archive only. Idempotent: when every package is already
# installed it does nothing (no apt-get call at all), so the README commands
# and CI can run it every time.
#
# Run as root (or as a user with sudo). Exits non-zero, with apt's own error
# output, when anything cannot be installed.
set -euo pipefail

# What the build (CMakeLists.txt) and the tests (tests/) use, and nothing else:
#   compilers, make, binutils (nm), coreutils      build-essential
#   build system                                   cmake ninja-build pkg-config
#   Boost.DLL (header-only), Program_options, Filesystem
#                                                  libboost-dev libboost-program-options-dev
#                                                  libboost-filesystem-dev
#   manifests, hashing, JSON, compression          libyaml-cpp-dev libssl-dev nlohmann-json3-dev zlib1g-dev
#   the umlos executable's allocator               libjemalloc-dev
#   data-set readers                               libprotobuf-dev protobuf-compiler
#   multi-rank collectives (cpu_driver)            libgloo-dev
#   vectorised deterministic erf/exp (cpu_driver)  libsleef-dev
#   tests                                          catch2 python3
#   sanitizer build and fuzz targets (CI)          clang libclang-rt-14-dev llvm
#                                                  (AddressSanitizer, UBSan and
#                                                  libFuzzer runtimes, llvm-symbolizer)
#                                                  time (fuzz targets' CPU time)
#   CI's format check and compiler cache           clang-format ccache
packages=(
  build-essential
  cmake
  ninja-build
  pkg-config
  libboost-dev
  libboost-program-options-dev
  libboost-filesystem-dev
  libyaml-cpp-dev
  libssl-dev
  catch2
  nlohmann-json3-dev
  zlib1g-dev
  libjemalloc-dev
  libprotobuf-dev
  protobuf-compiler
  libgloo-dev
  libsleef-dev
  python3
  clang
  libclang-rt-14-dev
  llvm
  time
  clang-format
  ccache
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [[ $status == installed ]] || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} build and test packages are installed"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-deps: apt-get not found; install these Debian 12 packages by hand: ${missing[*]}" >&2
  exit 1
fi
if ((EUID == 0)); then
  as_root=()
elif command -v sudo >/dev/null 2>&1; then
  as_root=(sudo)
else
  echo "install-deps: must run as root (or with sudo) to install: ${missing[*]}" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update
"${as_root[@]}" apt-get install -y --no-install-recommends "${missing[@]}"

# Verify: a package apt claims to have installed but dpkg does not list is an error.
for p in "${missing[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  if [[ $status != installed ]]; then
    echo "install-deps: $p is still not installed" >&2
    exit 1
  fi
done
echo "install-deps: done"
