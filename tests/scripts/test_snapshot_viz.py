#!/usr/bin/env python3
"""A replay's snapshot pickle (`pinbench run --snapshot FILE.pickle`) read by PyTorch's own memory
viewer module, torch.cuda._memory_viz: its segments and stats functions take it, and what they
count is what pinbench's result says (segments, bytes reserved, bytes allocated).

usage: test_snapshot_viz.py PINBENCH
The python that runs this, else /usr/bin/python3 (Debian's python3-torch), must import torch;
without one the test exits 77, which ctest reports as skipped, never as passed."""

import json
import os
import pickle
import subprocess
import sys
import tempfile

SKIP = 77
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURE = os.path.join(ROOT, "tests", "data", "traces", "snapshot-start-state.pickle")

# Run by the python that has torch: the viewer's functions on the pickle, as JSON. Releases
# before 2.1 take the list of segments, later ones the snapshot dict.
PROBE = r"""
import json, pickle, sys
import torch.cuda._memory_viz as viz
class Plain(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"{module}.{name}")
snapshot = Plain(open(sys.argv[1], "rb")).load()
def call(fn, **kw):
    try:
        return fn(snapshot, **kw)
    except (TypeError, KeyError):
        return fn(snapshot["segments"], **kw)
stats = call(viz.stats)
flame = call(viz.segments, format_flamegraph=lambda text: text)
print(json.dumps({"stats": {k: int(getattr(v, "value", v)) for k, v in stats.items()},
                  "flame_lines": len(flame.splitlines()), "torch": __import__("torch").__version__}))
"""


def torch_python():
    for candidate in (sys.executable, "/usr/bin/python3"):
        if candidate and os.path.exists(candidate) and subprocess.run(
                [candidate, "-c", "import torch.cuda._memory_viz"], capture_output=True).returncode == 0:
            return candidate
    return None


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    python = torch_python()
    if python is None:
        print("skipped: no python here imports torch (torch.cuda._memory_viz)")
        return SKIP
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        scenario = os.path.join(tmp, "s.json")
        with open(scenario, "w", encoding="utf-8") as f:
            json.dump({"schema": "pinbench.scenario/1", "name": "replay", "kind": "allocator",
                       "params": {"workload": "trace", "trace_file": FIXTURE, "config": "snapshot",
                                  "device_memory": "8GiB"},
                       "sampling": {"warmup": 0, "min_samples": 1, "max_samples": 1}}, f)
        snap, result = os.path.join(tmp, "replay.pickle"), os.path.join(tmp, "r.json")
        subprocess.run([sys.argv[1], "run", scenario, "--backend", "host", "-q", "--snapshot", snap,
                        "--out", result], check=True, stdout=subprocess.DEVNULL)
        probe = subprocess.run([python, "-c", PROBE, snap], capture_output=True, text=True)
        if probe.returncode != 0:
            print(f"torch.cuda._memory_viz refused the pickle:\n{probe.stderr}")
            return 1
        seen = json.loads(probe.stdout)
        with open(result, encoding="utf-8") as f:
            stats = json.load(f)["scenarios"][0]["cases"][0]["info"]["memory_stats"]
        want = {"segments": stats["segment.all.current"],
                "total_size": stats["reserved_bytes.all.current"],
                "active_allocated": stats["allocated_bytes.all.current"]}
        for key, value in want.items():
            if seen["stats"].get(key) != value:
                failures.append(f"{key}: the viewer counts {seen['stats'].get(key)}, "
                                f"pinbench's result {value}")
        if seen["flame_lines"] == 0:
            failures.append("the viewer's segments view is empty")
        print(f"torch {seen['torch']}: stats {seen['stats']}, {seen['flame_lines']} flame lines")
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
