#!/usr/bin/env python3
"""Reference simulator of UML_OS.TMMU.PlanMemory_v2 (spec 001 section 6, 0.F, VII.C).

An independent implementation of the slot planner in plain Python (no code
shared with modules/core/tmmu), plus a deterministic generator of golden
graphs: 10 seeds x presets (train_full, inference) x modes (forward,
backward, inference).

  slot_simulator.py golden --umlos PATH --work-dir DIR
      writes each golden graph as umlos.intervals.v1 JSON, runs
      `umlos plan FILE --strategy UML_OS.TMMU.PlanMemory_v2 --json` and
      requires offsets, slots and arena footprints equal to the simulator's,
      bit for bit. Exit 1 on any difference (listed).
  slot_simulator.py selftest
      hand-computed plans and invariants (slots == max live, no overlap).
  slot_simulator.py plan FILE.json
      prints the simulator's plan as JSON.
"""
import argparse
import json
import os
import random
import subprocess
import sys

SEEDS = range(1, 11)
PRESETS = ("train_full", "inference")
MODES = ("forward", "backward", "inference")
DEFAULT_ARENAS = [("parameters", True), ("activations", False), ("gradients", False)]


def align_up(v, a):
    if a <= 1:
        return v
    return (v + a - 1) // a * a


def arenas_of(doc):
    default_align = doc.get("alignment", 128)
    if "arenas" in doc:
        return [(a["name"], a.get("alignment", default_align), bool(a.get("persistent", False)))
                for a in doc["arenas"]]
    return [(name, default_align, persistent) for name, persistent in DEFAULT_ARENAS]


def simulate(doc):
    """Returns {id: (arena, slot, offset)} and {arena: footprint}."""
    arenas = arenas_of(doc)
    index = {name: k for k, (name, _, _) in enumerate(arenas)}
    tensors = []
    for t in doc["tensors"]:
        end = t["end"]
        if t.get("saved_for_backward") and "last_backward_use" in t:
            end = max(end, t["last_backward_use"])
        size = t["size"]
        if "shape_envelope" in t:
            size = t["shape_envelope"]["max_size"]
        tensors.append({"id": t["id"], "arena": index[t.get("arena", "activations")], "size": size,
                        "align": t.get("alignment", 0), "begin": t["begin"], "end": end,
                        "group": t.get("alias_group")})
    # Request order = tensor_id bytewise ascending (the spec's id tie-break).
    tensors.sort(key=lambda t: t["id"].encode())
    plan = {}
    footprints = {}
    for a, (arena_name, arena_align, persistent) in enumerate(arenas):
        # Storages: a tensor, or an alias group (hull interval, largest size).
        storages = []
        by_group = {}
        for rank, t in enumerate(tensors):
            if t["arena"] != a:
                continue
            align = max(t["align"] or arena_align, arena_align)
            g = t["group"]
            if g is not None and g in by_group:
                s = by_group[g]
                s["size"] = max(s["size"], t["size"])
                s["align"] = max(s["align"], align)
                s["begin"] = min(s["begin"], t["begin"])
                s["end"] = max(s["end"], t["end"])
                s["members"].append(t["id"])
                continue
            s = {"size": t["size"], "align": align, "begin": t["begin"], "end": t["end"],
                 "rank": rank, "members": [t["id"]]}
            storages.append(s)
            if g is not None:
                by_group[g] = s
        if not storages:
            footprints[arena_name] = 0
            continue
        order = sorted(storages, key=lambda s: (s["begin"], -s["size"], s["rank"]))
        slot_size, slot_align = [], []
        if persistent:
            for k, s in enumerate(order):
                s["slot"] = k
                slot_size.append(s["size"])
                slot_align.append(max(s["align"], arena_align))
        else:
            active = []  # (end, slot), kept as a plain list: the simulator favours clarity
            free = []
            for s in order:
                still = []
                for end, slot in active:
                    if end < s["begin"]:
                        free.append(slot)
                    else:
                        still.append((end, slot))
                active = still
                if free:
                    slot = min(free)
                    free.remove(slot)
                else:
                    slot = len(slot_size)
                    slot_size.append(0)
                    slot_align.append(arena_align)
                active.append((s["end"], slot))
                s["slot"] = slot
                slot_size[slot] = max(slot_size[slot], s["size"])
                slot_align[slot] = max(slot_align[slot], s["align"], arena_align)
        offsets = [0]
        for k in range(1, len(slot_size)):
            offsets.append(align_up(offsets[k - 1] + slot_size[k - 1], slot_align[k]))
        footprints[arena_name] = align_up(offsets[-1] + slot_size[-1], arena_align)
        if footprints[arena_name] >= 2 ** 64:
            raise OverflowError("ALLOCATION_OVERFLOW in arena " + arena_name)
        for s in storages:
            for m in s["members"]:
                plan[m] = (arena_name, s["slot"], offsets[s["slot"]])
    return plan, footprints


def generate(seed, preset, mode):
    """A residual network's tensors and their live intervals for one mode.

    Forward layers i = 0..L-1 run at step i; in training the backward of
    layer i runs at step 2L-1-i. preset picks the shape (train_full: deeper,
    bigger batch; inference: shallower, branchier); mode picks liveness:
      inference: an activation dies at its last forward consumer;
      forward:   activations saved for backward stay live to the end of forward;
      backward:  saved activations live to their backward use; gradients live
                 from the step that makes them to the step that consumes them.
    """
    rng = random.Random(seed * 1000 + PRESETS.index(preset) * 10 + MODES.index(mode))
    layers = rng.randint(30, 60) if preset == "train_full" else rng.randint(15, 35)
    batch = rng.choice([8, 16, 32]) if preset == "train_full" else 1
    alignment = rng.choice([64, 128, 256])
    tensors = []
    last_use = {}
    consumers = {}
    for i in range(layers):
        width = rng.choice([64, 128, 256, 512, 768])
        size = batch * width * rng.choice([4, 16, 49, 196]) * 4
        consumers[i] = [i + 1] if i + 1 < layers else [i]
        if i >= 2 and rng.random() < 0.3:  # residual skip from an earlier layer
            src = rng.randint(max(0, i - 6), i - 2)
            consumers[src].append(i)
        tensors.append({"id": "act%03d" % i, "arena": "activations", "size": size, "begin": i})
        tensors.append({"id": "w%03d" % i, "arena": "parameters", "size": width * width * 4 + 4 * rng.randint(0, 7),
                        "begin": 0, "end": 0})
        if rng.random() < 0.2:  # a view of the activation (reshape): one storage
            tensors.append({"id": "act%03d_view" % i, "arena": "activations", "size": size // 2,
                            "begin": i, "alias_group": "g%03d" % i})
            tensors[-3]["alias_group"] = "g%03d" % i
        if rng.random() < 0.1:
            tensors.append({"id": "scratch%03d" % i, "arena": "activations", "size": rng.randint(1, 4096),
                            "begin": i, "end": i, "alignment": 512})
    for i in range(layers):
        last_use[i] = max(consumers[i])
    L = layers
    for t in tensors:
        if t["arena"] != "activations" or "end" in t:
            continue
        i = int(t["id"][3:6])
        if mode == "inference":
            t["end"] = last_use[i]
        elif mode == "forward":
            t["end"] = L - 1
            t["saved_for_backward"] = True
        else:
            t["end"] = last_use[i]
            t["saved_for_backward"] = True
            t["last_backward_use"] = 2 * L - 1 - i
    if mode == "backward":
        for i in range(L):
            gsize = batch * rng.choice([64, 128, 256, 512, 768]) * rng.choice([4, 16, 49]) * 4
            step = 2 * L - 1 - i
            tensors.append({"id": "grad_act%03d" % i, "arena": "gradients", "size": gsize,
                            "begin": step, "end": min(step + 1, 2 * L - 1)})
            tensors.append({"id": "grad_w%03d" % i, "arena": "gradients", "size": 4 * rng.randint(100, 100000),
                            "begin": step, "end": 2 * L - 1})
    return {"format": "umlos.intervals.v1", "name": "golden_%s_%s_%d" % (preset, mode, seed),
            "alignment": alignment, "mode": mode, "tensors": tensors}


def check_invariants(doc, plan, footprints):
    """No two live storages overlap within an arena; slots == max live."""
    by_arena = {}
    tensors = {t["id"]: t for t in doc["tensors"]}
    for tid, (arena, slot, off) in plan.items():
        by_arena.setdefault(arena, []).append((tid, slot, off))
    problems = []
    arenas = {name: persistent for name, _, persistent in arenas_of(doc)}
    for arena, items in by_arena.items():
        def interval(tid):
            t = tensors[tid]
            end = max(t["end"], t.get("last_backward_use", t["end"])) if t.get("saved_for_backward") else t["end"]
            return t["begin"], end
        slots = {}
        for tid, slot, off in items:
            slots.setdefault(slot, []).append(tid)
        groups = {}
        for tid, _, _ in items:
            g = tensors[tid].get("alias_group")
            groups.setdefault(g if g is not None else "_" + tid, []).append(tid)
        hull = {}
        for key, members in groups.items():
            hull[key] = (min(interval(m)[0] for m in members), max(interval(m)[1] for m in members))
        steps = sorted({b for b, _ in hull.values()})
        max_live = len(hull) if arenas[arena] else max(
            sum(1 for b, e in hull.values() if b <= s <= e) for s in steps)
        if len(slots) != max_live:
            problems.append("%s: %d slots, max live %d" % (arena, len(slots), max_live))
        # storages sharing a slot never overlap in time
        for slot, members in slots.items():
            keys = sorted({tensors[m].get("alias_group") or "_" + m for m in members})
            for x in range(len(keys)):
                for y in range(x + 1, len(keys)):
                    (b1, e1), (b2, e2) = hull[keys[x]], hull[keys[y]]
                    if b1 <= e2 and b2 <= e1 and not arenas[arena]:
                        problems.append("%s: slot %d holds %s and %s live together" % (arena, slot, keys[x], keys[y]))
    return problems


def cmd_golden(args):
    os.makedirs(args.work_dir, exist_ok=True)
    failures = 0
    cases = 0
    for preset in PRESETS:
        for mode in MODES:
            for seed in SEEDS:
                doc = generate(seed, preset, mode)
                path = os.path.join(args.work_dir, doc["name"] + ".json")
                with open(path, "w") as f:
                    json.dump(doc, f)
                want, want_fp = simulate(doc)
                problems = check_invariants(doc, want, want_fp)
                out = subprocess.run([args.umlos, "plan", path, "--strategy", "UML_OS.TMMU.PlanMemory_v2", "--json"],
                                     capture_output=True, text=True)
                cases += 1
                if out.returncode != 0:
                    print("FAIL %s: umlos plan exited %d: %s" % (doc["name"], out.returncode, out.stderr.strip()))
                    failures += 1
                    continue
                got = json.loads(out.stdout)
                for t in got["tensors"]:
                    w = want[t["id"]]
                    if (t["arena"], t["slot"], t["offset"]) != w:
                        problems.append("%s: C++ (%s, slot %s, offset %s) vs simulator (%s, slot %s, offset %s)"
                                        % (t["id"], t["arena"], t["slot"], t["offset"], *w))
                if len(got["tensors"]) != len(want):
                    problems.append("tensor count %d vs %d" % (len(got["tensors"]), len(want)))
                got_fp = got["metrics"]["peak_physical_bytes_per_arena"]
                for arena, fp in want_fp.items():
                    if got_fp.get(arena, 0) != fp:
                        problems.append("arena %s footprint C++ %s vs simulator %s" % (arena, got_fp.get(arena), fp))
                if problems:
                    failures += 1
                    print("FAIL %s:\n  %s" % (doc["name"], "\n  ".join(problems[:10])))
    print("%d golden graphs (%d seeds x %d presets x %d modes), %d differ"
          % (cases, len(SEEDS), len(PRESETS), len(MODES), failures))
    return 1 if failures else 0


def cmd_selftest(_args):
    # The hand-computed example of tests/tmmu/planners.test.cpp.
    doc = {"format": "umlos.intervals.v1", "alignment": 64, "arenas": [{"name": "activations"}],
           "tensors": [{"id": "a", "size": 100, "begin": 0, "end": 1},
                       {"id": "b", "size": 300, "begin": 0, "end": 5},
                       {"id": "c", "size": 300, "begin": 0, "end": 5},
                       {"id": "d", "size": 200, "begin": 2, "end": 3, "alignment": 256}]}
    plan, fp = simulate(doc)
    expect = {"a": ("activations", 2, 768), "b": ("activations", 0, 0), "c": ("activations", 1, 320),
              "d": ("activations", 2, 768)}
    bad = []
    if plan != expect or fp != {"activations": 1024}:
        bad.append("hand example: got %r %r" % (plan, fp))
    for preset in PRESETS:
        for mode in MODES:
            doc = generate(3, preset, mode)
            p, f = simulate(doc)
            bad += ["%s: %s" % (doc["name"], x) for x in check_invariants(doc, p, f)]
    print("\n".join(bad) if bad else "simulator self-test ok")
    return 1 if bad else 0


def cmd_plan(args):
    with open(args.file) as f:
        doc = json.load(f)
    plan, fp = simulate(doc)
    print(json.dumps({"footprints": fp, "tensors": [{"id": k, "arena": v[0], "slot": v[1], "offset": v[2]}
                                                     for k, v in sorted(plan.items())]}))
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("golden")
    g.add_argument("--umlos", required=True)
    g.add_argument("--work-dir", required=True)
    sub.add_parser("selftest")
    pl = sub.add_parser("plan")
    pl.add_argument("file")
    args = p.parse_args()
    return {"golden": cmd_golden, "selftest": cmd_selftest, "plan": cmd_plan}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
