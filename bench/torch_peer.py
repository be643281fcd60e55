"""The PyTorch peer of the benches, set up the way a user would run it, and
described so that a ratio against it can be checked.

A ratio against PyTorch means something only when PyTorch runs on an
optimised BLAS (Debian: `python3-torch` with `libopenblas0-pthread`) with the
thread count the bench names. `start(threads)` pins both OpenBLAS's and
torch's thread counts (re-executing the script once, since OpenBLAS reads
its environment only when it is loaded) and returns torch;
`describe(torch)` names the BLAS library the process really loaded, the
kernel set OpenBLAS chose, and measures torch's sgemm and dgemm GFLOP/s at
the bench's thread count, so the bench can refuse a crippled peer.

Debian 12's OpenBLAS (0.3.21) does not know CPUs newer than it, and falls
back to its SSE3 "Prescott" kernels on them (on a Sapphire Rapids core:
30 sgemm GFLOP/s instead of 113). So unless OPENBLAS_CORETYPE is set
already, start() names the newest kernel set the CPU's flags allow
(SkylakeX with AVX-512, Haswell with AVX2 and FMA): the peer a user who
checked would run.
"""
import ctypes
import os
import sys
import time


def add_arguments(ap):
    ap.add_argument("--threads", type=int, default=1)


def best_openblas_core():
    flags = set()
    with open("/proc/cpuinfo") as info:
        for line in info:
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    if {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= flags:
        return "SkylakeX"
    if {"avx2", "fma"} <= flags:
        return "Haswell"
    return None


def start(threads):
    """Pins OpenBLAS and torch to `threads` (and OpenBLAS to the CPU's best
    kernel set) and returns the torch module."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    core = best_openblas_core()
    if core and "OPENBLAS_CORETYPE" not in env:
        env["OPENBLAS_CORETYPE"] = core
    if any(os.environ.get(k) != v for k, v in env.items()):
        os.execve(sys.executable, [sys.executable] + sys.argv, env)
    import torch
    torch.set_num_threads(threads)
    return torch


def loaded_blas():
    """The BLAS shared library mapped into this process, resolved through
    Debian's alternatives links (libblas.so.3 may be the reference BLAS or
    OpenBLAS)."""
    names = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            base = os.path.basename(path)
            if "blas" in base or "mkl" in base:
                names.add(os.path.realpath(path))
    return sorted(names)


def openblas_core(libraries):
    """The kernel set OpenBLAS chose (its openblas_get_corename), or None."""
    for path in libraries:
        if "openblas" in os.path.basename(path):
            try:
                lib = ctypes.CDLL(path)
                lib.openblas_get_corename.restype = ctypes.c_char_p
                return lib.openblas_get_corename().decode()
            except (OSError, AttributeError):
                return None
    return None


def gemm_gflops(torch, dtype, m=128, k=768, n=3072, reps=7):
    a = torch.randn(m, k, dtype=dtype)
    b = torch.randn(k, n, dtype=dtype)
    a @ b
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - t0)
    return 2.0 * m * k * n / min(times) / 1e9


def describe(torch, m=128, k=768, n=3072):
    """torch's version, the BLAS it loaded and its [m,k]x[k,n] matmul speed
    in f32 and f64 (GFLOP/s, wall, best of 7: the machine may be shared, and
    umlos's side is timed the same way)."""
    blas = loaded_blas()
    return {
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "blas": blas,
        "openblas_core": openblas_core(blas),
        "gemm_shape": [m, k, n],
        "sgemm_gflops": gemm_gflops(torch, torch.float32, m, k, n),
        "dgemm_gflops": gemm_gflops(torch, torch.float64, m, k, n),
    }
