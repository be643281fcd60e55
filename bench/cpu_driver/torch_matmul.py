#!/usr/bin/python3
"""The peer of umlos_bench_cpu_driver: torch's matmul of the same shape, f32
and f64, at the same thread count, with the description of the peer
(bench/torch_peer.py: torch version, the BLAS loaded, OpenBLAS's kernel set).

usage: /usr/bin/python3 bench/cpu_driver/torch_matmul.py [--threads T] [--m 128 --k 768 --n 3072]
prints one JSON line: bench/torch_peer.py's describe()
"""
import argparse, json, os, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torch_peer  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--m", type=int, default=128)
    ap.add_argument("--k", type=int, default=768)
    ap.add_argument("--n", type=int, default=3072)
    torch_peer.add_arguments(ap)
    a = ap.parse_args()
    torch = torch_peer.start(a.threads)
    print(json.dumps(torch_peer.describe(torch, a.m, a.k, a.n)))


if __name__ == "__main__":
    main()
