#!/usr/bin/env bash
# The GPU checks of the CUDA driver in one command, for a machine with an
# NVIDIA GPU (the device machine of a session: about 15 minutes in all).
# Builds only what the checks need, then runs, in order:
#   1. nvidia-smi and `umlos modules inspect` of the CUDA module;
#   2. the [cuda_driver] tests (GPU tests included), verbose, and the
#      NCCL jobs of tests/kernel/distributed.tests.cpp (one rank on one GPU
#      against the Gloo job; two ranks where two GPUs are listed);
#   3. `umlos conformance` of the CUDA module: the whole primitive
#      catalogue against cpu_driver;
#   4. the digits manifest with its driver line swapped to cuda_driver
#      (scripts/gpu-manifest.sh): two GPU runs and one CPU run compared;
#   5. umlos_bench_cuda_driver (matmul vs cuBLAS, the GPT block step);
#   6. the PyTorch peer on the GPU, when torch with CUDA is installed;
#   7. the multi-rank bench (Gloo over loopback) on 1, 2 and 4 local ranks,
#      which the machine's cores make meaningful.
# Every step's output goes to $OUT/<step>.txt (OUT defaults to ./gpu-check)
# so a step that fails or runs out of time still leaves what came before.
#
#   bash scripts/gpu-check.sh            (about 5-8 minutes on 16 cores)
#   PREBUILT=1 BUILD_DIR=build bash scripts/gpu-check.sh
#       (binaries built elsewhere, e.g. carried to a machine that lacks the
#       build dependencies; no configure or build)
set -uo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo_root"
out=${OUT:-$repo_root/gpu-check}
mkdir -p "$out"
: >"$out/summary.txt"
build=${BUILD_DIR:-build-cuda}
jobs=${JOBS:-$(nproc)}

step() {  # step NAME LIMIT_S COMMAND...: runs it, output to $out/NAME.txt, and says how it ended
  local name=$1 limit=$2
  shift 2
  local start=$SECONDS rc=0
  timeout -k 5 "$limit" "$@" >"$out/$name.txt" 2>&1 || rc=$?
  echo "$name: exit $rc after $((SECONDS - start)) s" | tee -a "$out/summary.txt"
  return 0
}

if [ -z "${PREBUILT:-}" ]; then
  step configure 300 cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DUMLOS_BUILD_TESTS=ON
  step build 900 cmake --build "$build" -j"$jobs"
fi
# NCCL for the one-rank communicator test: the system's, else the one a
# CUDA Python stack ships (the nvidia-nccl wheel).
if ! ldconfig -p | grep -q 'libnccl.so.2 '; then
  nccl_dir=$(env -u LD_LIBRARY_PATH python3 -c 'import os, nvidia.nccl as n; print(os.path.join(list(n.__path__)[0], "lib"))' 2>/dev/null) &&
    export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$nccl_dir
fi
step device 30 sh -c "nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv &&
  $build/umlos modules inspect $build/modules/libumlos_cuda_driver.so"
step tests 200 "$build/tests/umlos_tests" "[cuda_driver]" --durations yes
step nccl_jobs 150 "$build/tests/umlos_tests" "[distributed][nccl]"
step conformance 120 "$build/umlos" conformance "$build/modules/libumlos_cuda_driver.so"
step manifest 90 bash scripts/gpu-manifest.sh "$build" 300
step bench 120 "$build/bench/umlos_bench_cuda_driver" 5 1024,2048,4096 1
if env -u LD_LIBRARY_PATH python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  step torch_f32 45 env -u LD_LIBRARY_PATH python3 bench/cuda_driver/torch_cuda_steps.py --reps 5 --dtype f32
  step torch_f32_deterministic 45 env -u LD_LIBRARY_PATH python3 bench/cuda_driver/torch_cuda_steps.py --reps 5 --dtype f32 --deterministic
else
  echo "torch: no CUDA-enabled torch here, peer not run" | tee -a "$out/summary.txt"
fi

step distributed_w2 150 python3 bench/distributed/bench_distributed.py --umlos "$build/umlos" \
  --manifest "$build/manifests/digits_wide.yaml" --ranks 2 --repeat 2
step distributed_w4 90 python3 bench/distributed/bench_distributed.py --umlos "$build/umlos" \
  --manifest "$build/manifests/digits_wide.yaml" --ranks 4 --repeat 1

# The end of the output is what a device session's reply carries.
tail -n 4 "$out/tests.txt"
grep -E "NCCL one-rank|SKIPPED|passed|failed" "$out/nccl_jobs.txt"
grep -E "FAIL|implemented|missing|conformance:" "$out/conformance.txt"
cat "$out/manifest.txt"
tail -n 30 "$out/bench.txt"
# The device tool brings back at most 8 files: the peer's figures travel in
# the reply's output instead.
for f in "$out/torch_f32.txt" "$out/torch_f32_deterministic.txt"; do [ -f "$f" ] && tail -n 6 "$f"; done
tail -n 12 "$out/distributed_w2.txt" "$out/distributed_w4.txt"
cat "$out/summary.txt"
