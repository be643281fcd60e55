#!/usr/bin/python3
"""bench/distributed: steps per second of `umlos run` on 1 and on W local
ranks (`umlos run --nproc W`), measured alternately in the same run, with
the bytes each rank sends per step next to those a ring all-reduce of the
same gradients would send, and a check that every world size gave the same
state_fp sequence.

usage (from the repository root, after the build):
  /usr/bin/python3 bench/distributed/bench_distributed.py [--repeat 3] [--ranks 2]
      [--manifest build/manifests/digits_wide.yaml] [--no-ceiling]
prints markdown table rows for bench/distributed/README.md.

The machine's ceiling: W one-rank runs of the same manifest started at
once, independent (no collective, no repeated work), each hashing in place
as the ranks of a job that fill the cores do. Their steps per second
together are the most any W-rank job can reach on this machine: cores
shared with other tenants, one memory system and one L3 cost them what
they cost the ranks.

Bytes: rank 0's profile counts the bytes it sent (`collectives.bytes_sent`
in profile.json, as the usual algorithms send them: a ring all-gather sends
its input to the W - 1 other ranks, an all-to-all W - 1 of its W blocks).
A ring all-reduce of G gradient bytes sends 2 (W - 1) / W x G per rank. G
is the parameters' bytes in the compute dtype, read from the run's exported
safetensors (`umlos export`).
"""
import argparse, json, os, statistics, struct, subprocess, sys, tempfile, time


def umlos_run(umlos, manifest, ranks, extra):
    with tempfile.TemporaryDirectory() as root:
        env = dict(os.environ, UML_OS_ROOT=root)
        run_dir = os.path.join(root, "run")
        cmd = [umlos, "run", "-q", "--profile", "--run-dir", run_dir] + extra + [manifest]
        if ranks > 1:
            cmd[2:2] = ["--nproc", str(ranks)]
        start = time.monotonic()
        subprocess.run(cmd, check=True, env=env, stderr=subprocess.DEVNULL)
        wall = time.monotonic() - start
        prof = json.load(open(os.path.join(run_dir, "profile.json")))
        fps = [json.loads(line)["state_fp"] for line in open(os.path.join(run_dir, "trace.jsonl"))
               if '"record":"iter"' in line]
        out = os.path.join(root, "theta.safetensors")
        subprocess.run([umlos, "export", run_dir, "-o", out], check=True, env=env, capture_output=True)
        with open(out, "rb") as f:
            (n,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(n))
        grad_bytes = sum(v["data_offsets"][1] - v["data_offsets"][0] for k, v in header.items() if k != "__metadata__")
        return {"wall": wall, "steps": len(fps), "fps": fps, "prof": prof, "grad_bytes": grad_bytes}


def independent_runs(umlos, manifest, copies):
    """`copies` one-rank runs of the manifest started at once, each in its own
    UML_OS_ROOT, each hashing its state fingerprint in place
    (--sync-fingerprints) as the ranks of a job that fill the cores do. No
    collective, nothing repeated, nothing shared but the machine: their
    steps per second together bound what any job of `copies` ranks can
    reach here."""
    roots = [tempfile.mkdtemp() for _ in range(copies)]
    try:
        start = time.monotonic()
        procs = [subprocess.Popen([umlos, "run", "-q", "--sync-fingerprints", "--run-dir",
                                   os.path.join(root, "run"), manifest],
                                  env=dict(os.environ, UML_OS_ROOT=root), stderr=subprocess.DEVNULL)
                 for root in roots]
        for p in procs:
            if p.wait() != 0:
                sys.exit("bench_distributed: an independent run failed")
        wall = time.monotonic() - start
        fps = [[json.loads(line)["state_fp"] for line in open(os.path.join(root, "run", "trace.jsonl"))
                if '"record":"iter"' in line] for root in roots]
        return {"wall": wall, "steps": sum(len(f) for f in fps), "fps": fps}
    finally:
        for root in roots:
            subprocess.run(["rm", "-rf", root], check=False)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--umlos", default="build/umlos")
    ap.add_argument("--manifest", default="build/manifests/digits_wide.yaml")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-ceiling", action="store_true",
                    help="skip the machine's ceiling (W independent one-rank runs at once)")
    ap.add_argument("--sync-fingerprints", action="store_true",
                    help="umlos run --sync-fingerprints: every process hashes on its training thread, so W ranks "
                         "use W cores, not up to 2 W")
    a = ap.parse_args()
    extra = ["--sync-fingerprints"] if a.sync_fingerprints else []
    one, many, apart = [], [], []
    for _ in range(a.repeat):  # alternating, so a slow spell of the machine hits all
        one.append(umlos_run(a.umlos, a.manifest, 1, extra))
        many.append(umlos_run(a.umlos, a.manifest, a.ranks, extra))
        if not a.no_ceiling:
            apart.append(independent_runs(a.umlos, a.manifest, a.ranks))
    same = all(r["fps"] == one[0]["fps"] for r in one + many) and all(
        f == one[0]["fps"] for r in apart for f in r["fps"])
    w = a.ranks
    s1 = statistics.median(r["steps"] / r["wall"] for r in one)
    sw = statistics.median(r["steps"] / r["wall"] for r in many)
    steps = many[0]["steps"]
    coll = many[0]["prof"]["collectives"]
    sent = coll["bytes_sent"] / steps
    g = many[0]["grad_bytes"]
    ring = 2 * (w - 1) / w * g
    print("manifest %s, %d steps, runs alternating, median of %d; state fingerprint %s; "
          "state_fp sequences identical across runs: %s"
          % (a.manifest, steps, a.repeat, "hashed in place" if a.sync_fingerprints else "overlapped",
             "yes" if same else "NO"))
    print("| W | steps/s (median) | speed-up | collectives/step | bytes sent/step/rank | ring all-reduce of %d B | sent / ring | time in collectives |"
          % g)
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    print("| 1 | %.1f | 1.00 | 0 | 0 | - | - | - |" % s1)
    print("| %d | %.1f | %.2f | %.1f | %.0f | %.0f | %.2f | %.0f %% |"
          % (w, sw, sw / s1, coll["calls"] / steps, sent, ring, sent / ring,
             100 * coll["s"] / many[0]["prof"]["wall_s"]))
    if apart:
        sc = statistics.median(r["steps"] / r["wall"] for r in apart)
        print("| %d independent one-rank runs at once (the machine's ceiling) | %.1f in total | %.2f | - | - | - | - | - |"
              % (w, sc, sc / s1))
    if not same:
        sys.exit("bench_distributed: the state_fp sequences differ between runs")


if __name__ == "__main__":
    main()
