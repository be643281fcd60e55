#!/usr/bin/env python3
"""Builds the seed corpora of the libFuzzer targets (tests/fuzz) from files
the project ships, so no copies are committed:

    python3 scripts/fuzz_corpus.py OUT_DIR [RUN_DIR]

OUT_DIR/<target>/ gets one file per seed (named by its SHA-1). RUN_DIR, when
given, is a finished run folder (trace.jsonl, checkpoints/, ...) whose files
seed the checkpoint and run-folder targets; scripts/fuzz.sh makes one with
the demo_walk manifest. Each seed is cut to MAX_SEED bytes (libFuzzer's
-max_len; more for checkpoints and run folders), so large benchmark files
still start a useful corpus.
"""
import glob
import gzip
import hashlib
import json
import os
import re
import sys

MAX_SEED = 64 * 1024
# Whole files where a cut one is only a truncation error (protobuf): these
# targets run with a larger -max_len (scripts/fuzz.sh).
MAX_SEED_LARGE = {"checkpoint": 512 * 1024, "run_folder": 512 * 1024}
ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def files(pattern):
    return sorted(glob.glob(os.path.join(ROOT, pattern), recursive=True))


def read(path):
    with open(path, "rb") as f:
        return f.read()


def head_lines(data, n):
    return b"".join(data.splitlines(keepends=True)[:n])


class Corpus:
    def __init__(self, out):
        self.out = out
        self.counts = {}

    def add(self, target, data):
        data = data[:MAX_SEED_LARGE.get(target, MAX_SEED)]
        d = os.path.join(self.out, target)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, hashlib.sha1(data).hexdigest()), "wb") as f:
            f.write(data)
        self.counts[target] = self.counts.get(target, 0) + 1


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    c = Corpus(sys.argv[1])
    run_dir = sys.argv[2] if len(sys.argv) > 2 else None

    # Manifests (source and pinned) and typed YAML documents.
    for p in files("manifests/*.yaml") + files("examples/ir/*.yaml") + files("examples/ir/*.json"):
        c.add("manifest_yaml", read(p))
    # ModelIR, YAML and JSON.
    for p in files("examples/ir/*.yaml") + files("examples/ir/*.json"):
        c.add("modelir", read(p))
    # Canonical CBOR: the RFC 8949 vectors (deterministic and not).
    vectors = json.loads(read(os.path.join(ROOT, "tests/data/vectors/cbor_rfc8949.json")))
    for case in vectors["cases"]:
        if case.get("hex"):
            c.add("cbor", bytes.fromhex(case["hex"]))
    # --inputs for examples/ir/mlp.yaml (the shapes it declares).
    shapes = {"x": [8, 4], "target": [8, 3], "W1": [4, 16], "b1": [16], "W2": [16, 3], "b2": [3]}
    for i, (tid, shape) in enumerate(shapes.items()):
        n = 1
        for d in shape:
            n *= d
        doc = {tid: {"dtype": "f64", "shape": shape, "values": [0.25 * (k % 7) - 0.5 for k in range(n)]}}
        c.add("inputs_json", json.dumps(doc).encode())
    c.add("inputs_json", b'{"x": {"values": [1, 2, 3]}}')
    # Plan inputs: reader byte (0 JSON, 1 CSV, 2 .json.gz) + alignment byte.
    interval_json = [m for p in files("docs/*.md") for m in
                     re.findall(r"```json\n(\{\"format\": \"umlos.intervals.v1\".*?)```", read(p).decode(), re.S)]
    for doc in interval_json:
        c.add("intervals", b"\x00\x07" + doc.encode())
        c.add("intervals", b"\x02\x07" + gzip.compress(doc.encode(), mtime=0))
    for p in files("tests/data/memory-planning-bench/**/*.csv"):
        c.add("intervals", b"\x01\x00" + head_lines(read(p), 200))
    # Policy conditions: every `cond:` of the manifests and docs.
    for p in files("manifests/*.yaml") + files("docs/*.md"):
        for m in re.findall(r'cond: "([^"]*)"', read(p).decode()):
            c.add("policy_condition", m.encode())
    for cond in ["not (sil_mean > 0.3)", "t % 7 == 3 && !(state == S_PROTO)", "((1e3 >= -2.5E-1))"]:
        c.add("policy_condition", cond.encode())
    # Data sets: option byte + features file (plain and gzip).
    bc = head_lines(read(os.path.join(ROOT, "data/breast_cancer.csv")), 40)
    c.add("dataset_csv", b"\x01" + bc)  # binary, no header, label last, auto delimiter
    c.add("dataset_csv", b"\x81" + gzip.compress(bc, mtime=0))
    for p in files("data/*.csv.gz"):
        plain = head_lines(gzip.decompress(read(p)), 40)
        c.add("dataset_csv", b"\x80" + gzip.compress(plain, mtime=0))
        c.add("dataset_csv", b"\x22" + plain)  # regression, space-delimited
        c.add("gzip", gzip.compress(plain, mtime=0))
    for p in files("data/*.gz"):
        c.add("gzip", read(p))
    # Inputs a fuzz run once found (each now refused cleanly), kept under
    # tests/fuzz/regressions/<target>/ so every later run checks them first.
    for p in files("tests/fuzz/regressions/*/*"):
        c.add(os.path.basename(os.path.dirname(p)), read(p))
    # A finished run folder: checkpoints, trace and the other files report
    # and replay read (run_folder: the parts joined by NUL bytes).
    if run_dir:
        for p in sorted(glob.glob(os.path.join(run_dir, "checkpoints", "*.pb"))):
            c.add("checkpoint", read(p))
        for name, target in [("manifest.cbor", "cbor"), ("manifest.yaml", "manifest_yaml")]:
            if os.path.isfile(os.path.join(run_dir, name)):
                c.add(target, read(os.path.join(run_dir, name)))
        parts = []
        for name in ["trace.jsonl", "value_arenas.json", "failure.json", "memory_plan.svg", "tape.bin"]:
            p = os.path.join(run_dir, name)
            data = read(p) if os.path.isfile(p) else b""
            if name == "trace.jsonl":
                data = head_lines(data, 60)
            parts.append(data)
        c.add("run_folder", b"\x00".join(parts))
        c.add("run_folder", parts[0])
    c.add("run_folder", b'{"record": "run_start", "t": 0}\n{"record": "iter", "t": 1, "loss_total": 0.5}\n')
    # The memory-plan SVG the report inlines (docs' example), alone in its part.
    for p in files("docs/*.svg"):
        c.add("run_folder", b"\x00\x00\x00" + read(p))

    for t in sorted(c.counts):
        print(f"fuzz_corpus: {t}: {c.counts[t]} seeds")


if __name__ == "__main__":
    main()
