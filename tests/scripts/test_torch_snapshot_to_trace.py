#!/usr/bin/env python3
"""Tests scripts/torch_snapshot_to_trace.py without torch: builds a snapshot pickle shaped like
the one torch.cuda.memory._dump_snapshot() writes, converts it, and checks the trace. Also keeps
tests/data/traces/from_torch.json (read by the C++ trace tests) equal to the converter's output.
Exit 0 on success; otherwise a message per failed check and exit 1."""

import json
import os
import pickle
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONVERTER = os.path.join(ROOT, "scripts", "torch_snapshot_to_trace.py")
GOLDEN = os.path.join(ROOT, "tests", "data", "traces", "from_torch.json")

A = 0x7F0000000000       # start of a 20 MiB segment
B = 0x7F0002000000       # a small-pool block elsewhere
SIDE_STREAM = 94000000000  # a cudaStream_t value as torch records it


def frames(name):
    return [{"filename": "train.py", "line": 10, "name": name}]


def entry(action, addr, size, stream=0, t=0):
    return {"action": action, "addr": addr, "size": size, "stream": stream,
            "frames": frames("step"), "time_us": t}


def build_snapshot():
    trace = [
        # Freed block allocated before recording began: no alloc to pair with, dropped.
        entry("free_requested", A - 4096, 512, t=1),
        entry("free_completed", A - 4096, 512, t=2),
        entry("segment_alloc", A, 20 << 20, t=3),
        entry("alloc", A, 4 << 20, t=4),                          # id 1, stream index 0
        entry("alloc", A + (4 << 20), 1024, SIDE_STREAM, t=5),    # id 2, stream index 1
        entry("free_requested", A, 4 << 20, t=6),
        entry("free_completed", A, 4 << 20, t=7),                 # free 1
        entry("alloc", A, 2 << 20, t=8),                          # same address: id 3
        # record_stream(): requested now, completed once the other stream is done.
        entry("free_requested", A + (4 << 20), 1024, SIDE_STREAM, t=9),
        entry("alloc", B, 512, t=10),                             # id 4
        entry("free_completed", A + (4 << 20), 1024, SIDE_STREAM, t=11),  # free 2
        # The ring buffer ends before this block's free_completed: free_requested stands in.
        entry("free_requested", B, 512, t=12),                    # free 4
        entry("segment_free", A - (20 << 20), 20 << 20, t=13),
        {"action": "oom", "addr": 0, "size": 1 << 40, "stream": 0, "device_free": 0,
         "frames": [], "time_us": 14},
        {"action": "snapshot", "addr": 0, "size": 0, "stream": 0, "frames": [], "time_us": 15},
    ]
    segment = {"device": 0, "address": A, "total_size": 20 << 20, "allocated_size": 2 << 20,
               "active_size": 2 << 20, "requested_size": 2 << 20, "stream": 0,
               "segment_type": "large", "segment_pool_id": (0, 0), "is_expandable": False,
               "frames": frames("step"),
               "blocks": [{"address": A, "size": 2 << 20, "requested_size": 2 << 20,
                           "state": "active_allocated", "frames": frames("step")},
                          {"address": A + (2 << 20), "size": 18 << 20, "requested_size": 0,
                           "state": "inactive", "frames": []}]}
    return {"segments": [segment], "device_traces": [trace, []],
            "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:False"}}


EXPECTED = [
    {"op": "alloc", "id": 1, "size": 4 << 20, "stream": 0},
    {"op": "alloc", "id": 2, "size": 1024, "stream": 1},
    {"op": "free", "id": 1},
    {"op": "alloc", "id": 3, "size": 2 << 20, "stream": 0},
    {"op": "alloc", "id": 4, "size": 512, "stream": 0},
    {"op": "free", "id": 2},
    {"op": "free", "id": 4},
]

failures = []


def check(condition, message):
    if not condition:
        failures.append(message)


def run(*args):
    return subprocess.run([sys.executable, CONVERTER, *args], capture_output=True, text=True,
                          check=False)


class Sneaky:
    """Pickles as a call to os.mkdir: a converter that runs it would create the directory."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (os.mkdir, (self.path,))


def main():
    with tempfile.TemporaryDirectory() as tmp:
        snapshot_path = os.path.join(tmp, "snapshot.pickle")
        with open(snapshot_path, "wb") as f:
            pickle.dump(build_snapshot(), f)

        # Conversion to stdout.
        r = run(snapshot_path)
        check(r.returncode == 0, f"convert: exit {r.returncode}, stderr: {r.stderr}")
        if r.returncode == 0:
            trace = json.loads(r.stdout)
            check(trace.get("schema") == "pinbench.trace/1", f"schema: {trace.get('schema')}")
            check(trace.get("events") == EXPECTED,
                  f"events:\n  got      {trace.get('events')}\n  expected {EXPECTED}")
        check("dropped 1 free(s)" in r.stderr, f"stderr lacks the dropped free: {r.stderr!r}")
        check("1 allocation(s) are still live" in r.stderr,
              f"stderr lacks the live allocation: {r.stderr!r}")

        # Conversion to a file: identical to the committed fixture the C++ tests read.
        out_path = os.path.join(tmp, "out.json")
        r = run(snapshot_path, "-o", out_path, "--device", "0")
        check(r.returncode == 0, f"convert -o: exit {r.returncode}, stderr: {r.stderr}")
        with open(out_path, encoding="utf-8") as f:
            produced = f.read()
        with open(GOLDEN, encoding="utf-8") as f:
            golden = f.read()
        check(produced == golden,
              f"{GOLDEN} differs from the converter's output:\n{produced}")
        check(not os.path.exists(out_path + ".tmp"), "temporary output left behind")

        # Another device: its (empty) trace; a device that is not there: an error.
        r = run(snapshot_path, "--device", "1")
        check(r.returncode == 0 and json.loads(r.stdout)["events"] == [],
              f"--device 1: exit {r.returncode}, out {r.stdout!r}")
        r = run(snapshot_path, "--device", "2")
        check(r.returncode == 2 and "no device 2" in r.stderr and "2 device(s)" in r.stderr,
              f"--device 2: exit {r.returncode}, stderr {r.stderr!r}")

        # A pickle that references a global is refused before anything in it runs.
        marker = os.path.join(tmp, "ran")
        evil_path = os.path.join(tmp, "evil.pickle")
        with open(evil_path, "wb") as f:
            pickle.dump({"device_traces": [[]], "x": Sneaky(marker)}, f)
        r = run(evil_path)
        check(r.returncode == 2, f"evil pickle: exit {r.returncode}")
        check("refusing to load" in r.stderr, f"evil pickle: stderr {r.stderr!r}")
        check(not os.path.exists(marker), "the pickle's code ran")

        # Not a snapshot at all.
        other_path = os.path.join(tmp, "list.pickle")
        with open(other_path, "wb") as f:
            pickle.dump([1, 2, 3], f)
        r = run(other_path)
        check(r.returncode == 2 and "device_traces" in r.stderr,
              f"list pickle: exit {r.returncode}, stderr {r.stderr!r}")
        r = run(os.path.join(tmp, "missing.pickle"))
        check(r.returncode == 2 and "cannot read" in r.stderr,
              f"missing file: exit {r.returncode}, stderr {r.stderr!r}")

    for message in failures:
        print(f"FAIL: {message}", file=sys.stderr)
    if not failures:
        print("torch_snapshot_to_trace: all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
