#!/usr/bin/python3
"""PyTorch peer of bench/cuda_driver on the same GPU: the GPT-2-small-shaped
block training step of bench/executor/torch_steps.py (forward + backward,
gradients set to None, no optimizer) on device 'cuda', and an n x n x n matmul.

Two configurations are timed: PyTorch's defaults (TF32 off for matmul by
default since 1.12, cuDNN/cuBLAS heuristics) and deterministic mode
(torch.use_deterministic_algorithms(True), CUBLAS_WORKSPACE_CONFIG=:4096:8),
which is the closer peer of cuda_driver.

usage: python3 bench/cuda_driver/torch_cuda_steps.py [--reps N] [--dtype f32|f64] [--deterministic] [--sizes 1024,2048,4096]
prints one JSON line: {"torch", "device", "dtype", "deterministic", "gpt_ms", "matmul": {n: {"ms", "tflops"}}}
"""
import argparse, json, os, statistics, time

ap = argparse.ArgumentParser()
ap.add_argument("--reps", type=int, default=5)
ap.add_argument("--dtype", default="f32")
ap.add_argument("--deterministic", action="store_true")
ap.add_argument("--sizes", default="1024,2048,4096")
a = ap.parse_args()
if a.deterministic:
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "executor"))
from torch_steps import make_gpt_step  # noqa: E402  the same block as bench/executor

if a.deterministic:
    torch.use_deterministic_algorithms(True)
dev = torch.device("cuda")
dt = torch.float32 if a.dtype == "f32" else torch.float64


def timed(step, reps):
    step()
    torch.cuda.synchronize()
    wall = []
    for _ in range(reps):
        w0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        wall.append(time.perf_counter() - w0)
    return statistics.median(wall)


g = torch.Generator(device="cpu").manual_seed(0)


def param(*shape):
    return (0.1 * torch.randn(*shape, generator=g, dtype=dt)).to(dev).requires_grad_()


gpt_step = make_gpt_step(128, 768, 12, 3072, param,
                         lambda *shape: torch.randn(*shape, generator=g, dtype=dt).to(dev))


out = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0), "dtype": a.dtype,
       "deterministic": a.deterministic, "gpt_ms": 1e3 * timed(gpt_step, a.reps), "matmul": {}}
for n in [int(s) for s in a.sizes.split(",")]:
    A = torch.full((n, n), 0.5, dtype=dt, device=dev)
    B = torch.full((n, n), 0.5, dtype=dt, device=dev)
    s = timed(lambda: A @ B, a.reps)
    out["matmul"][n] = {"ms": 1e3 * s, "tflops": 2.0 * n ** 3 / s / 1e12}
print(json.dumps(out))
