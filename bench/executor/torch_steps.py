#!/usr/bin/python3
"""PyTorch peer of bench/executor: the same training steps (forward + backward
+ gradients, no optimizer) as umlos_bench_executor, same shapes and ops:

  mlp: x[64,64] -> matmul+bias, relu -> 256 -> matmul+bias, relu -> 256
       -> matmul+bias -> 10, mse against a target
  gpt: one pre-norm GPT-2-small-shaped block at sequence 128, d 768, 12 heads,
       FFN 3072: layer_norm, q/k/v matmuls, attention (scaled q k^T, softmax,
       no mask), output projection, residual, layer_norm, GELU (erf) MLP,
       residual, mse against a target

usage: /usr/bin/python3 bench/executor/torch_steps.py [--reps N] [--threads T] [--dtype f32|f64]
prints one JSON line: {"peer", "dtype", "mlp_s", "gpt_s", "mlp_cpu_s", "gpt_cpu_s"}
(median wall seconds per step; median process CPU seconds per step; "peer"
is bench/torch_peer.py's description: torch version, BLAS, gemm GFLOP/s)

       /usr/bin/python3 bench/executor/torch_steps.py --serve [--threads T]
reads requests "STEP DTYPE N" (STEP mlp or gpt, DTYPE f32 or f64) one per
line on stdin and answers each with one JSON line {"wall": [...]}: the wall
seconds of N steps, after one warm-up step the first time a step is asked
for. The bench alternates blocks of its own steps with blocks of these, so
that a slow spell of a shared machine falls on both sides of a ratio.
"""
import argparse, json, os, statistics, sys, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torch_peer  # noqa: E402


def timed(step, reps):
    step()  # warm-up
    wall, cpu = [], []
    for _ in range(reps):
        w0, c0 = time.perf_counter(), time.process_time()
        step()
        wall.append(time.perf_counter() - w0)
        cpu.append(time.process_time() - c0)
    return statistics.median(wall), statistics.median(cpu)


def make_gpt_step(T, D, H, FF, param, data):
    """One training step (forward + backward, gradients set to None, no
    optimizer) of the GPT-2-shaped block of examples/ir/transformer_block.yaml:
    T tokens of width D, H heads, FFN width FF. `data(*shape)` draws the input
    and the target (in that order), then `param(*shape)` the parameters.
    Shared with bench/cuda_driver/torch_cuda_steps.py."""
    import torch
    import torch.nn.functional as F
    dh = D // H
    xs = data(T, D)
    ts = data(T, D)
    g1, be1, g2, be2 = param(D), param(D), param(D), param(D)
    Wq, Wk, Wv, Wo = param(D, D), param(D, D), param(D, D), param(D, D)
    Wf1, bf1, Wf2, bf2 = param(D, FF), param(FF), param(FF, D), param(D)
    params = [g1, be1, g2, be2, Wq, Wk, Wv, Wo, Wf1, bf1, Wf2, bf2]

    def step():
        for p in params:
            p.grad = None
        h = F.layer_norm(xs, (D,), g1, be1, 1e-5)
        q = (h @ Wq).reshape(T, H, dh).transpose(0, 1)
        k = (h @ Wk).reshape(T, H, dh).transpose(0, 1)
        v = (h @ Wv).reshape(T, H, dh).transpose(0, 1)
        att = torch.softmax((q @ k.transpose(1, 2)) * (1.0 / dh ** 0.5), dim=-1)
        c = (att @ v).transpose(0, 1).reshape(T, D)
        r1 = xs + c @ Wo
        h2 = F.layer_norm(r1, (D,), g2, be2, 1e-5)
        y = r1 + (F.gelu(h2 @ Wf1 + bf1) @ Wf2 + bf2)
        F.mse_loss(y, ts).backward()

    return step


def make_steps(torch, dt):
    """The MLP and GPT-block steps in dtype `dt`, their data and parameters
    drawn from one generator seeded 0 (MLP first)."""
    import torch.nn.functional as F
    g = torch.Generator().manual_seed(0)

    def param(*shape):
        return (0.1 * torch.randn(*shape, generator=g, dtype=dt)).requires_grad_()

    # MLP 64-256-256-10, batch 64
    x = torch.randn(64, 64, generator=g, dtype=dt)
    t = torch.randn(64, 10, generator=g, dtype=dt)
    W1, b1, W2, b2, W3, b3 = param(64, 256), param(256), param(256, 256), param(256), param(256, 10), param(10)
    mlp_params = [W1, b1, W2, b2, W3, b3]

    def mlp_step():
        for p in mlp_params:
            p.grad = None
        h = torch.relu(x @ W1 + b1)
        h = torch.relu(h @ W2 + b2)
        y = h @ W3 + b3
        F.mse_loss(y, t).backward()

    # GPT-2-small block, T 128
    gpt_step = make_gpt_step(128, 768, 12, 3072, param, lambda *shape: torch.randn(*shape, generator=g, dtype=dt))
    return {"mlp": mlp_step, "gpt": gpt_step}


def serve(torch):
    """Answers "STEP DTYPE N" requests until stdin ends (see the usage)."""
    steps, warm = {}, set()
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if len(words) != 3 or words[0] not in ("mlp", "gpt") or words[1] not in ("f32", "f64"):
            print(json.dumps({"error": "expected 'mlp|gpt f32|f64 N', got %r" % line.strip()}), flush=True)
            continue
        step, dtype, n = words[0], words[1], int(words[2])
        if dtype not in steps:
            steps[dtype] = make_steps(torch, torch.float32 if dtype == "f32" else torch.float64)
        run = steps[dtype][step]
        if (step, dtype) not in warm:
            run()
            warm.add((step, dtype))
        wall = []
        for _ in range(n):
            w0 = time.perf_counter()
            run()
            wall.append(time.perf_counter() - w0)
        print(json.dumps({"wall": wall}), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--dtype", default="f32")
    ap.add_argument("--serve", action="store_true")
    torch_peer.add_arguments(ap)
    a = ap.parse_args()
    torch = torch_peer.start(a.threads)
    if a.serve:
        serve(torch)
        return
    steps = make_steps(torch, torch.float32 if a.dtype == "f32" else torch.float64)
    mlp_s, mlp_cpu = timed(steps["mlp"], max(a.reps, 20))
    gpt_s, gpt_cpu = timed(steps["gpt"], a.reps)
    print(json.dumps({"peer": torch_peer.describe(torch), "dtype": a.dtype, "mlp_s": mlp_s, "gpt_s": gpt_s,
                      "mlp_cpu_s": mlp_cpu, "gpt_cpu_s": gpt_cpu}))


if __name__ == "__main__":
    main()
