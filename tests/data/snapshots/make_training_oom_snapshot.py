#!/usr/bin/env python3
"""Writes training-oom.pickle: a PyTorch memory snapshot of a training run that died of CUDA OOM.

A model whose batch size varies from step to step (24 layers, weights and optimizer state held,
activations that scale with the batch, gradients per layer) on an 80 GiB GPU under PyTorch's
default allocator settings. The snapshot is what torch.cuda.memory._dump_snapshot() writes in the
`except torch.cuda.OutOfMemoryError` handler: the whole history up to the failing request (its
allocations and frees, and the allocator's segment_alloc/segment_free, the releases of its retry
path among them), its `oom` entry (the size asked for and the device's free memory then), and
the segments still reserved.

The run itself is pinbench's own replay of the same steps (the allocator is PyTorch's, replayed,
by PyTorch 2.6's rules):
  1. the steps' events as a pinbench.trace/1 JSON;
  2. `pinbench tune allocator` on it at 80 GiB: where the defaults run out (first_oom_event);
  3. `pinbench run --snapshot training-oom.pickle` of the events up to that request: the
     allocator's history and segments at its end, in the form PyTorch pickles them.
So the snapshot is self-consistent: reserved at the OOM plus the device's free memory then is
the 80 GiB the run had, and its segment entries are the decisions PyTorch's allocator makes.

Usage: tests/data/snapshots/make_training_oom_snapshot.py PINBENCH   (rewrites training-oom.pickle)
"""

import json
import os
import random
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MiB = 1 << 20
CAPACITY = 80 << 30
SCALE = 30.3  # sizes of a model that nearly fills an 80 GiB device


def steps():
    """The run's events: (op, id, size), "mark" after each step."""
    events, next_id = [], [0]

    def alloc(size):
        next_id[0] += 1
        events.append(("alloc", next_id[0], size))
        return next_id[0]

    for k in range(24):
        alloc(int(SCALE * (24 * MiB + 4096 * k)))  # weights
    for k in range(24):
        alloc(int(SCALE * (24 * MiB + 4096 * k)))  # optimizer state
    rng = random.Random(7)
    for _ in range(20):
        b = rng.choice([32, 40, 48, 56, 64, 72, 80])  # the batch, and a sequence length per step
        seq = rng.uniform(0.5, 1.0)
        acts = []
        for layer in range(24):
            acts.append(alloc(int(SCALE * b * MiB * seq * rng.uniform(0.6, 1.0))))  # activations
            acts.append(alloc(b * 16384 + 256 * layer))  # a small buffer beside them
        for a in reversed(acts):
            events.append(("free", a, 0))
        # The step's outputs, kept for the epoch's metrics: allocated from a split of a cached
        # activation block, they pin that block's segment for the rest of the run.
        alloc(int(SCALE * b * MiB * seq * 0.25))
        grads = [alloc(int(SCALE * (24 * MiB + 4096 * layer))) for layer in range(24)]
        for g in grads:
            events.append(("free", g, 0))
        events.append(("mark", 0, 0))
    return events


def trace_json(events):
    out = []
    for op, ident, size in events:
        if op == "alloc":
            out.append({"op": "alloc", "id": ident, "size": size})
        elif op == "free":
            out.append({"op": "free", "id": ident})
        else:
            out.append({"op": "mark", "label": "iteration"})
    return {"schema": "pinbench.trace/1", "events": out}


def pinbench_json(pinbench, args):
    done = subprocess.run([pinbench, *args], check=False, capture_output=True, text=True)
    if done.returncode not in (0, 1):
        sys.exit(f"{pinbench} {' '.join(args)}: exit {done.returncode}: {done.stderr}")
    return done


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    pinbench = sys.argv[1]
    events = steps()
    with tempfile.TemporaryDirectory() as tmp:
        full = os.path.join(tmp, "full.json")
        with open(full, "w", encoding="utf-8") as f:
            json.dump(trace_json(events), f)
        tuned = json.loads(pinbench_json(pinbench, [
            "tune", "allocator", full, "--capacity", str(CAPACITY), "--backend", "host", "-q",
            "--format", "json"]).stdout)
        defaults = next(c for s in tuned["scenarios"] if s["name"] == "tune-allocator-search"
                        for c in s["cases"] if c["id"] == "config=")
        oom_at = defaults["info"]["first_oom_event"]
        # Up to the request that fails, and no further: the handler dumps there.
        prefix = os.path.join(tmp, "prefix.json")
        with open(prefix, "w", encoding="utf-8") as f:
            json.dump(trace_json(events[:oom_at + 1]), f)
        scenario = os.path.join(tmp, "prefix-scenario.json")
        with open(scenario, "w", encoding="utf-8") as f:
            json.dump({"schema": "pinbench.scenario/1", "name": "prefix", "kind": "allocator",
                       "params": {"workload": "trace", "trace_file": prefix,
                                  "device_memory": str(CAPACITY), "pytorch": "2.6"},
                       "sampling": {"warmup": 0, "min_samples": 1, "max_samples": 1}}, f)
        pinbench_json(pinbench, ["run", scenario, "--backend", "host", "-q", "--snapshot",
                                 os.path.join(HERE, "training-oom.pickle")])

    out = os.path.join(HERE, "training-oom.pickle")
    with open(out, "rb") as f:
        head = f.read(2)
    print(f"{out}: {os.path.getsize(out)} bytes (pickle protocol {head[1]}), OOM at events[{oom_at}] "
          f"asking {events[oom_at][2] / MiB:.0f} MiB")


if __name__ == "__main__":
    main()
