#!/usr/bin/env bash
# The GPU checks of the CUDA driver in one command, for a machine with an
# NVIDIA GPU (the device machine of a session: about 15 minutes in all).
# Builds only what the checks need, then runs, in order:
#   1. nvidia-smi and `umlos modules inspect` of the CUDA module;
#   2. the [cuda_driver] tests (GPU tests included), verbose;
#   3. umlos_bench_cuda_driver (matmul vs cuBLAS, the GPT block step);
#   4. the PyTorch peer on the GPU, when torch with CUDA is installed.
# Every step's output goes to $OUT/<step>.txt (OUT defaults to ./gpu-check)
# so a step that fails or runs out of time still leaves what came before.
#
#   bash scripts/gpu-check.sh            (about 5-8 minutes on 16 cores)
set -uo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo_root"
out=${OUT:-$repo_root/gpu-check}
mkdir -p "$out"
: >"$out/summary.txt"
build=${BUILD_DIR:-build-cuda}
jobs=${JOBS:-$(nproc)}

step() {  # step NAME COMMAND...: runs it, output to $out/NAME.txt, and says how it ended
  local name=$1
  shift
  local start=$SECONDS rc=0
  "$@" >"$out/$name.txt" 2>&1 || rc=$?
  echo "$name: exit $rc after $((SECONDS - start)) s" | tee -a "$out/summary.txt"
  return 0
}

step configure cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DUMLOS_BUILD_TESTS=ON
step build cmake --build "$build" -j"$jobs" --target umlos umlos_cuda_driver umlos_cpu_driver umlos_core \
  umlos_executor umlos_tmmu umlos_tests umlos_bench_cuda_driver
step device sh -c "nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv &&
  $build/umlos modules inspect $build/modules/libumlos_cuda_driver.so"
step tests "$build/tests/umlos_tests" "[cuda_driver]" -s --durations yes
step bench "$build/bench/umlos_bench_cuda_driver" 5 1024,2048,4096 1
if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  step torch_f32 python3 bench/cuda_driver/torch_cuda_steps.py --reps 5 --dtype f32
  step torch_f32_deterministic python3 bench/cuda_driver/torch_cuda_steps.py --reps 5 --dtype f32 --deterministic
else
  echo "torch: no CUDA-enabled torch here, peer not run" | tee -a "$out/summary.txt"
fi
