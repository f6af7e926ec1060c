#!/usr/bin/env python3
"""Writes the snapshot pickle fixtures of tests/alloc/trace_pickle_test.cpp (Python's pickle only).

Each snapshot has the structure of torch.cuda.memory._snapshot(): "segments" (dicts with blocks),
"device_traces" (one list of entry dicts per device: action, addr, size, stream, time_us, frames)
and "allocator_settings". Frame dicts are shared between entries, as torch shares them, so the
pickles hold memo references (BINGET) to dicts that were memoized empty and filled afterwards.

  snapshot-p2.pickle, snapshot-p4.pickle, snapshot-p5.pickle  the same snapshot, protocols 2, 4, 5
  snapshot-oom.pickle    dumped at an oom (its entry last), non-default allocator settings
  snapshot-after-oom.pickle  the same program, gone on after the oom: freed, cache emptied
  snapshot.json, snapshot-oom.json  what scripts/torch_snapshot_to_trace.py makes of them
  bad/pickle-*.pickle    refused: references to os.system (GLOBAL, STACK_GLOBAL, with REDUCE),
                         a truncated pickle, a dict without device_traces

The pickles that reference os.system are written with pickle.dumps, which only names the
function; nothing here or in pinbench ever loads them with pickle.

Usage: tests/data/traces/make_snapshot_pickles.py   (rewrites the files next to it)
"""

import os
import pickle
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
MiB = 1 << 20
BASE = 0x7F3A00000000
STREAM_MAIN = 0
STREAM_SIDE = 0x55D0C0DE1230  # a cudaStream_t as torch records it: an address

FRAME_TRAIN = {"filename": "train.py", "line": 42, "name": "forward"}
FRAME_LINEAR = {"filename": "torch/nn/modules/linear.py", "line": 125, "name": "forward"}
FRAME_EMPTY = {"filename": "torch/cuda/memory.py", "line": 192, "name": "empty_cache"}
STACK_FORWARD = [FRAME_LINEAR, FRAME_TRAIN]  # shared by several entries, as torch does


def entry(action, addr, size, stream=STREAM_MAIN, t=0, frames=None):
    e = {"action": action, "addr": addr, "size": size, "stream": stream,
         "frames": STACK_FORWARD if frames is None else frames}
    e["time_us"] = 1_700_000_000_000_000 + t
    return e


def roundup(divisions_by_mib):
    """allocator_settings' roundup_power2_divisions: "1", "2", ... "32768" (MiB) -> divisions."""
    return {str(1 << j): divisions_by_mib.get(1 << j, 0) for j in range(16)}


def settings(conf="", max_split=-1, gc=0.0, expandable=False, divisions=None):
    return {"PYTORCH_CUDA_ALLOC_CONF": conf,
            "max_split_size": max_split,
            "garbage_collection_threshold": gc,
            "expandable_segments": expandable,
            "pinned_num_register_threads": 1,
            "release_lock_on_cudamalloc": False,
            "pinned_use_cuda_host_register": False,
            "roundup_power2_divisions": roundup(divisions or {})}


def segment(device, address, total, stream=STREAM_MAIN, blocks=()):
    return {"device": device, "address": address, "total_size": total,
            "allocated_size": sum(b["size"] for b in blocks if b["state"] == "active_allocated"),
            "active_size": sum(b["size"] for b in blocks if b["state"] == "active_allocated"),
            "requested_size": sum(b["requested_size"] for b in blocks),
            "stream": stream, "segment_type": "large", "segment_pool_id": (0, 0),
            "is_expandable": False, "frames": STACK_FORWARD, "blocks": list(blocks)}


def block(address, size, state="active_allocated"):
    return {"address": address, "size": size, "requested_size": size, "state": state,
            "frames": STACK_FORWARD}


def basic_snapshot():
    a, b, c, d = BASE, BASE + 4 * MiB, BASE + 8 * MiB, BASE + 24 * MiB
    trace0 = [
        entry("segment_alloc", BASE, 20 * MiB),
        entry("alloc", a, 4 * MiB, t=1),
        entry("alloc", b, 2 * MiB, STREAM_SIDE, t=2),
        entry("free_requested", BASE - 8 * MiB, 1 * MiB, t=3),  # allocated before the history
        entry("free_completed", BASE - 8 * MiB, 1 * MiB, t=4),
        entry("free_requested", a, 4 * MiB, t=5),
        entry("free_completed", a, 4 * MiB, t=6),
        entry("alloc", a, 3 * MiB, t=7),       # the address again: a new id
        entry("alloc", c, 0, t=8),             # zero bytes: not replayed
        entry("free_requested", b, 2 * MiB, STREAM_SIDE, t=9),  # no free_completed follows
        entry("snapshot", 0, 0, t=10, frames=[FRAME_EMPTY]),
        entry("alloc", d, 8 * MiB, STREAM_SIDE, t=11),  # still live at the end
        entry("free_completed", c, 0, t=12),
    ]
    trace1 = [entry("alloc", BASE + 512 * MiB, 1 * MiB, t=20)]
    return {"segments": [segment(0, BASE, 20 * MiB,
                                 blocks=[block(a, 3 * MiB), block(b, 2 * MiB)]),
                         segment(0, BASE + 20 * MiB, 20 * MiB, STREAM_SIDE,
                                 blocks=[block(d, 8 * MiB)]),
                         segment(1, BASE + 512 * MiB, 2 * MiB)],
            "device_traces": [trace0, trace1],
            "allocator_settings": settings()}


def oom_snapshot(went_on):
    """Dumped by the out-of-memory observer (the oom entry last), or after the program caught
    the error and went on (freed, emptied the cache, allocated again)."""
    a, b = BASE, BASE + 64 * MiB
    trace = [
        entry("segment_alloc", a, 64 * MiB),
        entry("alloc", a, 64 * MiB, t=1),
        entry("segment_alloc", b, 32 * MiB, t=2),
        entry("alloc", b, 32 * MiB, t=3),
        entry("free_requested", b, 32 * MiB, t=4),
        entry("free_completed", b, 32 * MiB, t=5),
        entry("segment_free", b, 32 * MiB, t=6),   # released before giving up
        {"action": "oom", "device_free": 48 * MiB, "size": 512 * MiB, "stream": STREAM_MAIN,
         "frames": STACK_FORWARD, "time_us": 1_700_000_000_000_007},
    ]
    segments = [segment(0, a, 64 * MiB, blocks=[block(a, 64 * MiB)])]
    if went_on:
        trace += [
            entry("free_requested", a, 64 * MiB, t=8),
            entry("free_completed", a, 64 * MiB, t=9),
            entry("segment_free", a, 64 * MiB, t=10, frames=[FRAME_EMPTY]),
            entry("segment_alloc", b, 2 * MiB, t=11),
            entry("alloc", b, 1 * MiB, t=12),
        ]
        segments = [segment(0, b, 2 * MiB, blocks=[block(b, 1 * MiB)])]
    return {"segments": segments,
            "device_traces": [trace],
            "allocator_settings": settings(
                conf="max_split_size_mb:256,garbage_collection_threshold:0.6",
                max_split=256 * MiB, gc=0.6,
                divisions={1: 1, 2: 1, 4: 1, 8: 1, 16: 1, 32: 1, 64: 1, 128: 1, 256: 2,
                           512: 8, 1024: 8, 2048: 8, 4096: 8, 8192: 8, 16384: 8, 32768: 8})}


class RunsCommand:
    """Pickles as a call of os.system: what a malicious "snapshot" would hold."""

    def __reduce__(self):
        return (os.system, ("echo this must never run",))


def write(name, data):
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(data)


def convert(pickle_name, json_name):
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "torch_snapshot_to_trace.py"),
                    os.path.join(HERE, pickle_name), "-o", os.path.join(HERE, json_name)],
                   check=True)


def main():
    basic = basic_snapshot()
    for protocol in (2, 4, 5):
        write(f"snapshot-p{protocol}.pickle", pickle.dumps(basic, protocol=protocol))
    write("snapshot-oom.pickle", pickle.dumps(oom_snapshot(went_on=False), protocol=4))
    write("snapshot-after-oom.pickle", pickle.dumps(oom_snapshot(went_on=True), protocol=5))
    convert("snapshot-p2.pickle", "snapshot.json")
    convert("snapshot-oom.pickle", "snapshot-oom.json")

    bad = os.path.join(HERE, "bad")
    os.makedirs(bad, exist_ok=True)
    write("bad/pickle-global.pickle", pickle.dumps(os.system, protocol=2))
    write("bad/pickle-stack-global.pickle",
          pickle.dumps({"device_traces": [[]], "hook": os.system}, protocol=4))
    write("bad/pickle-reduce-os-system.pickle", pickle.dumps(RunsCommand(), protocol=2))
    whole = pickle.dumps(basic, protocol=4)
    write("bad/pickle-truncated.pickle", whole[: len(whole) // 2])
    write("bad/pickle-no-device-traces.pickle",
          pickle.dumps({"segments": [], "allocator_settings": settings()}, protocol=4))


if __name__ == "__main__":
    main()
