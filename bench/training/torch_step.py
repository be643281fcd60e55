#!/usr/bin/python3
"""The spec 004 model of manifests/digits.yaml, one training step at a time,
in PyTorch on the CPU: the peer that bench/training/README.md compares
`umlos run` against. Same shapes (D 64, hidden 128, latent 16, head 128,
10 classes, batch 64), same loss terms (CE + MSE reconstruction + KL + sliced
W2 with 4 directions + covariance), Adam, gradient clipping. No fingerprints,
trace or checks: only the arithmetic of a step.

usage: /usr/bin/python3 bench/training/torch_step.py [--steps N] [--threads T] [--data data/digits.csv.gz]
prints one JSON line: {"steps", "seconds", "steps_per_s", "peer"} ("peer" is
bench/torch_peer.py's description: torch version, BLAS, gemm GFLOP/s)
"""
import argparse, gzip, json, os, sys, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torch_peer  # noqa: E402

if __name__ == "__main__":
    _ap = argparse.ArgumentParser()
    torch_peer.add_arguments(_ap)
    torch_peer.start(_ap.parse_known_args()[0].threads)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def load(path):
    with gzip.open(path, "rt") as f:
        a = np.loadtxt(f, delimiter=",")
    x, y = a[:, :-1], a[:, -1].astype(np.int64)
    lo, hi = x.min(0), x.max(0)
    scale = np.where(hi > lo, 1.0 / np.where(hi > lo, hi - lo, 1.0), 0.0)
    return torch.tensor(np.clip((x - lo) * scale, 0, 1), dtype=torch.float32), torch.tensor(y)


class Model(nn.Module):
    def __init__(self, D=64, H=128, p=16, Hh=128, C=10):
        super().__init__()
        self.enc, self.mu, self.lv = nn.Linear(D, H), nn.Linear(H, p), nn.Linear(H, p)
        self.dec1, self.dec2 = nn.Linear(p, H), nn.Linear(H, D)
        self.head1, self.head2 = nn.Linear(p, Hh), nn.Linear(Hh, C)
        self.register_buffer("dirs", F.normalize(torch.randn(p, 4), dim=0))
        self.p = p

    def loss(self, x, y):
        h = F.relu(self.enc(x))
        mu, logvar = self.mu(h), torch.clamp(self.lv(h), -8, 8)
        eps = torch.randn_like(mu)
        z = mu + torch.exp(0.5 * logvar) * eps
        recon = torch.clamp(torch.sigmoid(self.dec2(F.relu(self.dec1(z)))), 0, 1)
        logits = self.head2(F.relu(self.head1(z)))
        l_sup = F.cross_entropy(logits, y)
        l_rec = F.mse_loss(recon, x)
        l_kl = -0.5 * torch.sum(1 + logvar - mu * mu - torch.exp(logvar)) / x.shape[0]
        pz, pe = torch.sort(z @ self.dirs, 0)[0], torch.sort(eps @ self.dirs, 0)[0]
        l_ot = F.mse_loss(pz, pe)
        zc = z - z.mean(0, keepdim=True)
        cov = zc.T @ zc / (x.shape[0] - 1)
        l_cov = torch.sum((cov - torch.eye(self.p)) ** 2)
        return l_sup + 1.0 * l_rec + 0.001 * l_kl + 0.01 * l_ot + 0.001 * l_cov


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--data", default="data/digits.csv.gz")
    torch_peer.add_arguments(ap)
    a = ap.parse_args()
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    x, y = load(a.data)
    n = (x.shape[0] * 4) // 5
    x, y = x[:n], y[:n]
    m = Model()
    opt = torch.optim.AdamW(m.parameters(), lr=0.002, weight_decay=0.0001)
    perm, pos = torch.randperm(n), 0
    start = time.perf_counter()
    for _ in range(a.steps):
        if pos + 64 > n:
            perm, pos = torch.randperm(n), 0
        idx = perm[pos:pos + 64]
        pos += 64
        opt.zero_grad()
        loss = m.loss(x[idx], y[idx])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 5.0)
        opt.step()
    secs = time.perf_counter() - start
    print(json.dumps({"steps": a.steps, "seconds": secs, "steps_per_s": a.steps / secs,
                      "peer": torch_peer.describe(torch)}))


if __name__ == "__main__":
    main()
