#!/usr/bin/env python3
"""Writes training-oom.pickle: a PyTorch memory snapshot of a training run that died of CUDA OOM.

A model whose batch size varies from step to step (24 layers, weights and optimizer state held,
activations that scale with the batch, gradients per layer) on an 80 GiB GPU under PyTorch's
default allocator settings. The snapshot is what torch.cuda.memory._dump_snapshot() writes in the
`except torch.cuda.OutOfMemoryError` handler: the history up to the failing request, its `oom`
entry (the size asked for and the device's free memory then), and the segments that were still
reserved after the allocator had released its cache.

The run itself is pinbench's own replay of the same steps (the allocator is PyTorch's, replayed):
  1. the steps' events as a pinbench.trace/1 JSON;
  2. `pinbench tune allocator` on it at 80 GiB: where the defaults run out (first_oom_event);
  3. `pinbench run --snapshot` of the events before that point: the segments at that moment,
     less those holding no live block (what the allocator frees before it gives up);
  4. the pickle: those segments, the history as torch records it (alloc, free_requested,
     free_completed), the oom entry, and allocator_settings with PyTorch's defaults.
So the snapshot is self-consistent: reserved at the OOM plus the device's free memory then is
the 80 GiB the run had.

Usage: tests/data/snapshots/make_training_oom_snapshot.py PINBENCH   (rewrites training-oom.pickle)
"""

import json
import os
import pickle
import random
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MiB = 1 << 20
CAPACITY = 80 << 30
BASE = 0x7F0000000000
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
        before = events[:oom_at]
        prefix = os.path.join(tmp, "prefix.json")
        with open(prefix, "w", encoding="utf-8") as f:
            json.dump(trace_json(before), f)
        scenario = os.path.join(tmp, "prefix-scenario.json")
        with open(scenario, "w", encoding="utf-8") as f:
            json.dump({"schema": "pinbench.scenario/1", "name": "prefix", "kind": "allocator",
                       "params": {"workload": "trace", "trace_file": prefix,
                                  "device_memory": str(CAPACITY)},
                       "sampling": {"warmup": 0, "min_samples": 1, "max_samples": 1}}, f)
        snaps = os.path.join(tmp, "snapshots.json")
        pinbench_json(pinbench, ["run", scenario, "--backend", "host", "-q", "--snapshot", snaps])
        with open(snaps, encoding="utf-8") as f:
            at_peak = json.load(f)["cases"][0]["snapshot"]

    # What the allocator still held once it had released its cache: segments with a live block.
    segments = [s for s in at_peak["segments"]
                if any(b["state"] != "inactive" for b in s["blocks"])]
    reserved = sum(s["total_size"] for s in segments)
    frames = [{"filename": "train.py", "line": 88, "name": "train_step"},
              {"filename": "torch/nn/modules/module.py", "line": 1750, "name": "_call_impl"}]
    trace, addr_of, next_addr, t = [], {}, BASE, 0
    for op, ident, size in before:
        t += 7
        if op == "alloc":
            addr_of[ident] = (next_addr, size)
            trace.append({"action": "alloc", "addr": next_addr, "size": size, "stream": 0,
                          "time_us": 1_760_000_000_000_000 + t, "frames": frames})
            next_addr += (size + 511) // 512 * 512
        elif op == "free":
            addr, size = addr_of.pop(ident)
            for action in ("free_requested", "free_completed"):
                trace.append({"action": action, "addr": addr, "size": size, "stream": 0,
                              "time_us": 1_760_000_000_000_000 + t, "frames": frames})
    failed = events[oom_at]
    trace.append({"action": "oom", "device_free": CAPACITY - reserved, "size": failed[2],
                  "stream": 0, "time_us": 1_760_000_000_000_000 + t + 7, "frames": frames})
    snapshot = {
        "segments": segments,
        "device_traces": [trace],
        "allocator_settings": {
            "PYTORCH_CUDA_ALLOC_CONF": "",
            "max_split_size": -1,
            "garbage_collection_threshold": 0.0,
            "expandable_segments": False,
            "pinned_num_register_threads": 1,
            "release_lock_on_cudamalloc": False,
            "pinned_use_cuda_host_register": False,
            "roundup_power2_divisions": {str(1 << j): 0 for j in range(16)},
        },
    }
    out = os.path.join(HERE, "training-oom.pickle")
    with open(out, "wb") as f:
        pickle.dump(snapshot, f, protocol=4)
    print(f"{out}: {len(trace)} trace entries, OOM at events[{oom_at}] asking "
          f"{failed[2] / MiB:.0f} MiB with {reserved / (1 << 30):.2f} GiB reserved")


if __name__ == "__main__":
    main()
