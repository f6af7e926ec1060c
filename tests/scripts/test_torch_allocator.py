#!/usr/bin/env python3
"""Tests scripts/peer/torch_allocator.py and scripts/peer/compare_allocator.py without a GPU:

- the peer's trace reading (pinbench.trace/1, each fault named with its path) and its replay
  bookkeeping (skipped allocs and frees, OOMs skipped with their free, 0-byte requests), on plain
  Python;
- whole peer runs against a stand-in torch module (FAKE_TORCH below): the calls in the order
  PyTorch needs them (PYTORCH_CUDA_ALLOC_CONF set before torch is imported, streams made and the
  memory fraction set before recording starts, recording started right before the first
  request, the statistics and the snapshot taken before what is live is freed), --stop-at-oom,
  --memory-cap, the exit codes (2 bad arguments or trace, 3 no torch or no CUDA) and SIGTERM;
- tune answers parsed (export, with a memory fraction line, "", keep, no setting, not found);
- the comparison on fixture documents: equal statistics and decisions pass, one byte or one
  decision off fails naming it, two runs that disagree fail;
- the committed traces tests/data/traces/peer-*.json are what make_traces() writes
  (`test_torch_allocator.py --write-traces` writes them again);
- with pinbench (argument 1: the executable or the build folder, or PINBENCH=path), the
  rehearsal's plumbing end to end: pinbench's own snapshot of each trace as the reference, replayed on the host backend and
  compared, and the OOM trace tuned and its answer checked.

Without pinbench the last part cannot check anything: the rest runs, then exit 77 (skipped).
Exit 0 on success; otherwise a message per failed check and exit 1."""

import importlib.util
import json
import os
import pickle
import random
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PEER = os.path.join(ROOT, "scripts", "peer", "torch_allocator.py")
COMPARE = os.path.join(ROOT, "scripts", "peer", "compare_allocator.py")
TRACES = os.path.join(ROOT, "tests", "data", "traces")
SKIP = 77
MiB = 1 << 20

failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
    return condition


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---- the committed traces ------------------------------------------------------------------
# peer-settings.json: what the allocator settings act on: two streams, requests from 512 B to
# 130 MiB (odd sizes for roundup_power2_divisions, some above 64 MiB for max_split_size_mb:64,
# 1-10 MiB ones that share 20 MiB segments), frees out of order, empty_cache every 4 iterations.
# peer-oom.json: a training loop whose batch changes every step and whose step outputs are kept
# for the epoch: capped at 600 MiB (live allocations peak at 502 MiB), PyTorch's defaults run
# out of memory on fragmentation, and other settings do not.
# peer-expandable-unmapped.json: five events on which pinbench's replay of its own
# expandable_segments snapshot diverges (see expandable_unmapped_trace).

PROVENANCE = "made by tests/scripts/test_torch_allocator.py --write-traces"


class TraceWriter:
    def __init__(self, label):
        self.events = [{"op": "mark", "label": f"{PROVENANCE}: {label}"}]
        self.next_id = 1

    def alloc(self, size, stream=0):
        ident = self.next_id
        self.next_id += 1
        self.events.append({"op": "alloc", "id": ident, "size": size, "stream": stream})
        return ident

    def free(self, ident):
        self.events.append({"op": "free", "id": ident})

    def text(self):
        lines = ",\n".join("  " + json.dumps(e) for e in self.events)
        return '{"schema": "pinbench.trace/1", "events": [\n' + lines + "\n]}\n"


def settings_trace():
    rng = random.Random(7)
    t = TraceWriter("two streams, 512 B to 130 MiB, frees out of order, empty_cache; for the "
                    "allocator settings the GPU check compares")
    params = [t.alloc(rng.choice([3 * MiB + 100, 9 * MiB, 700 * 1024, 5000])) for _ in range(12)]
    for it in range(12):
        acts = []
        for layer in range(20):
            size = rng.choice([512, 700, 3000, 65536 + 17, 300000, MiB + 5, 2 * MiB + 4096,
                               7 * MiB + 3, 12 * MiB, 25 * MiB + 1000, 45 * MiB])
            if layer % 7 == 3:
                size = rng.choice([70 * MiB + 512 * rng.randrange(100), 90 * MiB + 1, 130 * MiB])
            acts.append(t.alloc(size))
            if rng.random() < 0.3:
                acts.append(t.alloc(rng.choice([4096, MiB + 1, 6 * MiB]), 1))
        rng.shuffle(acts)
        for a in acts[3:] + acts[:3]:
            t.free(a)
        t.events.append({"op": "mark", "label": f"iteration {it}"})
        if it % 4 == 3:
            t.events.append({"op": "empty_cache"})
    for p in params:
        t.free(p)
    return t.text()


def oom_trace():
    rng = random.Random(47)
    t = TraceWriter("a training loop with a changing batch and step outputs kept for the epoch; "
                    "PyTorch's defaults run out of memory under a 600 MiB cap")
    params = [t.alloc(rng.choice([1, 2, 4, 6, 12, 24]) * MiB + 512 * rng.randrange(4))
              for _ in range(24)]
    kept = []
    for step, b in enumerate([16, 64, 24, 56, 32, 48, 40, 60, 20, 52]):
        acts = []
        for layer in range(12):
            acts.append(t.alloc(b * 384 * 1024 + 4096 * rng.randrange(16)))
            if layer in (3, 8):  # the step's outputs, kept for the epoch's metrics
                kept.append(t.alloc(b * 40 * 1024 + 100))
        grads = []
        for a in reversed(acts):
            grads.append(t.alloc(b * 192 * 1024 + 512, 1))
            t.free(a)
            if len(grads) > 2:
                t.free(grads.pop(0))
        for g in grads:
            t.free(g)
        kept.append(t.alloc(rng.choice([512, 2048, 4000]), 1))
        t.events.append({"op": "mark", "label": f"step {step}, batch {b}"})
    for k in kept:
        t.free(k)
    for p in params:
        t.free(p)
    return t.text()


def expandable_unmapped_trace():
    """The smallest trace (found by delta debugging peer-settings.json) whose own snapshot
    pinbench does not replay as it ran it, under expandable_segments:True: a small and a large
    expandable segment, both unmapped by empty_cache before the dump."""
    t = TraceWriter("expandable_segments:True: a small and a large segment both unmapped by "
                    "empty_cache; pinbench's replay of its own snapshot maps the large one "
                    "elsewhere")
    t.free(t.alloc(4096))
    t.free(t.alloc(6 * MiB))
    t.events.append({"op": "empty_cache"})
    return t.text()


def make_traces():
    return {"peer-settings.json": settings_trace(), "peer-oom.json": oom_trace(),
            "peer-expandable-unmapped.json": expandable_unmapped_trace()}


def check_committed_traces():
    for name, text in make_traces().items():
        path = os.path.join(TRACES, name)
        try:
            with open(path, encoding="utf-8") as f:
                committed = f.read()
        except OSError as e:
            check(False, f"{path}: {e}")
            continue
        check(committed == text, f"{path} is not what make_traces() writes: run "
              "tests/scripts/test_torch_allocator.py --write-traces")
        check(len(committed) < 200_000, f"{path}: {len(committed)} bytes (keep it under 200 KB)")


# ---- the peer's parts that need no torch ---------------------------------------------------

def check_trace_reading(peer):
    events = peer.parse_trace({"schema": "pinbench.trace/1", "events": [
        {"op": "alloc", "id": 1, "size": 4096, "stream": 0},
        {"op": "alloc", "id": 2, "size": 2 * MiB, "stream": 3},
        {"op": "mark", "label": "iteration"},
        {"size": 512, "op": "alloc", "id": 3},
        {"op": "free", "id": 2},
        {"op": "empty_cache"},
    ]})
    check(events == [("alloc", 1, 4096, 0), ("alloc", 2, 2 * MiB, 3), ("mark", "iteration"),
                     ("alloc", 3, 512, 0), ("free", 2), ("empty_cache",)],
          f"parse_trace: {events}")
    check(peer.streams_of(events) == [0, 3], f"streams_of: {peer.streams_of(events)}")
    bad = [
        ([], "expected a JSON object"),
        ({"schema": "pinbench.trace/2", "events": []}, "schema"),
        ({"schema": "pinbench.trace/1"}, "events"),
        ({"schema": "pinbench.trace/1", "events": [], "x": 1}, "x: unknown key"),
        ({"schema": "pinbench.trace/1", "events": [{"op": "malloc"}]}, "events[0].op"),
        ({"schema": "pinbench.trace/1", "events": [{"op": "alloc", "id": 1}]}, "needs \"size\""),
        ({"schema": "pinbench.trace/1", "events": [{"op": "alloc", "id": 1, "size": -1}]},
         "events[0].size"),
        ({"schema": "pinbench.trace/1", "events": [{"op": "alloc", "id": 1, "size": 1.5}]},
         "events[0].size"),
        ({"schema": "pinbench.trace/1", "events": [{"op": "free", "id": True}]}, "events[0].id"),
        ({"schema": "pinbench.trace/1", "events": [{"op": "free", "id": 1, "sz": 2}]},
         "events[0].sz: unknown key"),
    ]
    for doc, expected in bad:
        try:
            peer.parse_trace(doc, "t.json")
            check(False, f"parse_trace accepted {doc}")
        except peer.TraceError as e:
            check(expected in str(e), f"parse_trace({doc}): \"{e}\" lacks \"{expected}\"")
    for name in ("peer-settings.json", "peer-oom.json"):
        events = peer.read_trace(os.path.join(TRACES, name))
        counts = peer.trace_counts(events)
        check(counts["alloc"] == counts["free"] and counts["alloc"] > 100,
              f"{name}: {counts}")
        check(len(peer.streams_of(events)) == 2, f"{name}: streams {peer.streams_of(events)}")


class FakeOOM(RuntimeError):
    pass


def check_replay_bookkeeping(peer):
    calls = []
    budget = [3 * MiB]
    ptrs = {}

    def alloc(size, stream):
        if size > budget[0]:
            raise FakeOOM("CUDA out of memory. Tried to allocate ...")
        budget[0] -= size
        ptr = 0x1000 * (len(calls) + 1)
        ptrs[ptr] = size
        calls.append(("alloc", size, stream))
        return ptr

    def free(ptr):
        budget[0] += ptrs.pop(ptr)
        calls.append(("free", ptr))

    events = [("alloc", 1, MiB, 0), ("alloc", 1, 512, 0),  # the second: id still live, skipped
              ("alloc", 2, 0, 1),  # 0 bytes: skipped, and its free
              ("alloc", 3, 4 * MiB, 1),  # out of memory: skipped, and its free
              ("free", 3), ("free", 2), ("free", 9),  # 9: never allocated
              ("empty_cache",), ("mark", "x"), ("free", 1), ("alloc", 4, MiB, 1)]
    r = peer.Replay(events, alloc, free, lambda: calls.append(("empty_cache",)),
                    lambda e: isinstance(e, FakeOOM))
    stopped = r.run()
    check(not stopped and r.next_event == len(events), "replay did not run to the end")
    check(r.counts == {"allocs": 2, "frees": 1, "empty_cache_calls": 1, "ooms": 1,
                       "skipped_allocs": 1, "skipped_frees": 1, "zero_size_allocs": 1},
          f"replay counts: {r.counts}")
    check(r.first_oom_event() == 3 and r.ooms[0]["size"] == 4 * MiB and r.ooms[0]["stream"] == 1,
          f"replay ooms: {r.ooms}")
    check(list(r.live) == [4], f"live after the replay: {r.live}")
    r2 = peer.Replay(events, alloc, free, lambda: None, lambda e: isinstance(e, FakeOOM))
    budget[0] = 3 * MiB
    check(r2.run(stop_at_oom=True) and r2.next_event == 4, "--stop-at-oom did not stop at the OOM")

    def broken(size, stream):
        raise ValueError("not an OOM")
    r3 = peer.Replay(events, broken, free, lambda: None, lambda e: isinstance(e, FakeOOM))
    try:
        r3.run()
        check(False, "an error that is not an OOM was swallowed")
    except ValueError:
        check(r3.next_event == 0, f"next_event after a failure: {r3.next_event}")
    check(peer.release_of("2.11.0+cu130") == "2.11" and peer.release_of("2.6.0") == "2.6",
          "release_of")


def check_history_call(peer):
    def new(enabled="all", context="all", stacks="all", max_entries=sys.maxsize, device=None):
        pass

    def new_varargs(enabled="all", *args, **kwargs):
        pass

    def legacy(enabled, record_context=True, trace_alloc_max_entries=1,
               trace_alloc_record_context=False, device=None, record_context_cpp=False):
        pass

    a, k, _ = peer.history_call(new, 5000, "python")
    check(a == ("all",) and k == {"context": "all", "stacks": "python", "max_entries": 5000},
          f"history_call(2.1+): {a} {k}")
    a, k, _ = peer.history_call(new_varargs, 5000, "python")
    check(a == ("all",) and k["max_entries"] == 5000, f"history_call(*args, **kwargs): {a} {k}")
    a, k, _ = peer.history_call(legacy, 5000, "python")
    check(a == (True,) and k["trace_alloc_max_entries"] == 5000, f"history_call(2.0): {a} {k}")


# A stand-in for torch: a bump allocator with a capacity, the calls logged in order to
# $FAKE_TORCH_LOG, memory_stats from the live bytes, snapshots as PyTorch's structure.
# FAKE_TORCH picks a fault: absent (ImportError), nocuda, slow (each request sleeps 50 ms).
FAKE_TORCH = r'''
import json, os, pickle, time, types

FAULT = os.environ.get("FAKE_TORCH", "")
if FAULT == "absent":
    raise ImportError("No module named 'torch' (stand-in)")
LOG = os.environ["FAKE_TORCH_LOG"]
__version__ = "2.11.0+fake"
version = types.SimpleNamespace(cuda="13.0")
TOTAL = 1 << 34


def log(*what):
    with open(LOG, "a") as f:
        f.write(json.dumps(what) + "\n")


log("import", os.environ.get("PYTORCH_CUDA_ALLOC_CONF"), os.environ.get("PYTORCH_ALLOC_CONF"))


class OutOfMemoryError(RuntimeError):
    pass


class _State:
    fraction = None
    recording = False
    trace = []
    live = {}
    next_ptr = 1 << 20
    peak = 0
    ooms = 0


class Stream:
    count = 0

    def __init__(self, device=None):
        Stream.count += 1
        self.cuda_stream = 0x7000 + Stream.count
        log("Stream", device, _State.recording)


def _limit():
    return int(_State.fraction * TOTAL) if _State.fraction is not None else TOTAL


def _alloc(size, device=None, stream=None):
    if FAULT == "slow":
        time.sleep(0.05)
    s = getattr(stream, "cuda_stream", stream)
    log("alloc", size, device, s, _State.recording)
    used = sum(_State.live.values())
    if used + size > _limit():
        _State.ooms += 1
        if _State.recording:
            _State.trace.append({"action": "oom", "size": size, "stream": s, "device_free": 0})
        raise OutOfMemoryError("CUDA out of memory. Tried to allocate %d bytes (stand-in)" % size)
    ptr = _State.next_ptr
    _State.next_ptr += size
    _State.live[ptr] = size
    _State.peak = max(_State.peak, used + size)
    if _State.recording:
        _State.trace.append({"action": "segment_alloc", "addr": ptr, "size": size, "stream": s})
        _State.trace.append({"action": "alloc", "addr": ptr, "size": size, "stream": s})
    return ptr


def _delete(ptr):
    log("delete", ptr, _State.recording)
    size = _State.live.pop(ptr)
    if _State.recording:
        _State.trace.append({"action": "free_requested", "addr": ptr, "size": size})
        _State.trace.append({"action": "free_completed", "addr": ptr, "size": size})
        _State.trace.append({"action": "segment_free", "addr": ptr, "size": size})


def _stats(device=None):
    used = sum(_State.live.values())
    return {"reserved_bytes.all.current": used, "reserved_bytes.all.peak": _State.peak,
            "allocated_bytes.all.current": used, "allocated_bytes.all.peak": _State.peak,
            "num_ooms": _State.ooms, "num_alloc_retries": 0}


def _snapshot():
    return {"segments": [], "device_traces": [list(_State.trace)]}


def _record(enabled="all", context="all", stacks="all", max_entries=1, device=None):
    log("record", enabled, context, stacks, max_entries)
    _State.recording = enabled not in (None, False)


def _dump(filename="dump_snapshot.pickle"):
    log("dump", bool(_State.live))
    with open(filename, "wb") as f:
        pickle.dump(_snapshot(), f)


def _set_fraction(fraction, device=None):
    if not isinstance(fraction, float):
        raise TypeError("Invalid type for fraction argument, must be `float`")
    log("fraction", fraction, _State.recording)
    _State.fraction = fraction


memory = types.SimpleNamespace(_record_memory_history=_record, _dump_snapshot=_dump,
                               _snapshot=_snapshot)
cuda = types.SimpleNamespace(
    is_available=lambda: FAULT != "nocuda",
    device_count=lambda: 1,
    set_device=lambda d: log("set_device", d),
    get_allocator_backend=lambda: "native",
    mem_get_info=lambda d=None: (TOTAL - 1000, TOTAL),
    set_per_process_memory_fraction=_set_fraction,
    current_stream=lambda d=None: types.SimpleNamespace(cuda_stream=0),
    Stream=Stream,
    memory_stats=_stats,
    reset_peak_memory_stats=lambda d=None: log("reset_peak"),
    reset_accumulated_memory_stats=lambda d=None: log("reset_accumulated"),
    caching_allocator_alloc=_alloc,
    caching_allocator_delete=_delete,
    empty_cache=lambda: log("empty_cache", _State.recording),
    OutOfMemoryError=OutOfMemoryError,
    memory=memory,
    get_device_properties=lambda i: types.SimpleNamespace(
        major=9, minor=0, total_memory=TOTAL, multi_processor_count=132, uuid="fake"),
    get_device_name=lambda i: "Stand-in GPU",
)
'''


def fake_env(folder, fault=""):
    pkg = os.path.join(folder, "fake")
    os.makedirs(pkg, exist_ok=True)
    with open(os.path.join(pkg, "torch.py"), "w", encoding="utf-8") as f:
        f.write(FAKE_TORCH)
    env = {k: v for k, v in os.environ.items() if k != "PYTORCH_CUDA_ALLOC_CONF"}
    env.update(PYTHONPATH=pkg, FAKE_TORCH=fault, FAKE_TORCH_LOG=os.path.join(folder, "calls.log"),
               PYTORCH_ALLOC_CONF="expandable_segments:True")
    return env


def read_log(folder):
    path = os.path.join(folder, "calls.log")
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        calls = [json.loads(line) for line in f]
    os.unlink(path)
    return calls


def run_peer(args, env, timeout=60):
    return subprocess.run([sys.executable, PEER, *args], capture_output=True, text=True, env=env,
                          timeout=timeout, check=False)


def write_trace(folder, name, events):
    path = os.path.join(folder, name)
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"schema": "pinbench.trace/1", "events": events}, f)
    return path


def check_peer_runs(folder):
    env = fake_env(folder)
    trace = write_trace(folder, "t.json", [
        {"op": "alloc", "id": 1, "size": 4096, "stream": 0},
        {"op": "alloc", "id": 2, "size": 3 * MiB, "stream": 2},
        {"op": "free", "id": 1},
        {"op": "empty_cache"},
        {"op": "alloc", "id": 3, "size": 40 * MiB, "stream": 0},
        {"op": "free", "id": 3},
        {"op": "alloc", "id": 4, "size": MiB, "stream": 0},
    ])
    out = os.path.join(folder, "peer.json")
    snap = os.path.join(folder, "peer.pickle")
    r = run_peer([trace, "--conf", "max_split_size_mb:64", "--memory-cap", "32MiB",
                  "--out", out, "--snapshot", snap, "--max-entries", "5000"], env)
    check(r.returncode == 0, f"peer run: exit {r.returncode}: {r.stderr.strip()[-400:]}")
    calls = read_log(folder)
    names = [c[0] for c in calls]
    check(calls and calls[0] == ["import", "max_split_size_mb:64", None],
          f"PYTORCH_CUDA_ALLOC_CONF not set (or PYTORCH_ALLOC_CONF kept) before import: "
          f"{calls[:1]}")
    order = [n for n in names if n in ("fraction", "Stream", "reset_peak", "record", "alloc")]
    check(order[:5] == ["fraction", "Stream", "reset_peak", "record", "alloc"],
          f"set-up order (fraction, streams, reset, record, first request): {order[:6]}")
    check(all(c[-1] is False for c in calls if c[0] in ("fraction", "Stream")),
          "the fraction or a stream was set up while recording")
    frac = [c for c in calls if c[0] == "fraction"]
    check(frac and frac[0][1] == 32 * MiB / (1 << 34), f"--memory-cap's fraction: {frac}")
    allocs = [c for c in calls if c[0] == "alloc"]
    check([a[3] for a in allocs] == [0, 0x7001, 0, 0],
          f"streams: 0 = current stream, others a Stream each: {allocs}")
    check(allocs and allocs[2][1] == 40 * MiB and names.count("delete") == 3,
          f"the OOM request is not skipped with its free: {calls}")
    dump_at = names.index("dump") if "dump" in names else -1
    check(dump_at >= 0 and calls[dump_at][1] is True and "delete" in names[dump_at:],
          "the snapshot was not dumped before what is live was freed")
    with open(out, encoding="utf-8") as f:
        doc = json.load(f)
    check(doc["schema"] == "pinbench.result/1" and doc["tool"]["name"] == "torch-peer",
          "peer document head")
    case = doc["scenarios"][0]["cases"][0]
    info = case["info"]
    check(info["num_ooms"] == 1 and info["first_oom_event"] == 4, f"peer OOMs: {info['ooms']}")
    check(info["memory_stats"]["num_ooms"] == 1, "memory_stats not read")
    check(info["config"] == "max_split_size_mb:64" and info["memory_cap_bytes"] == 32 * MiB,
          "peer setting not recorded")
    check(info["environment_removed"] == ["PYTORCH_ALLOC_CONF=expandable_segments:True"],
          f"PYTORCH_ALLOC_CONF not named as removed: {info['environment_removed']}")
    check(info["pytorch"]["release"] == "2.11" and info["device_total_bytes"] == 1 << 34,
          "torch release or device total not recorded")
    check(info["snapshot"] == os.path.abspath(snap) and os.path.exists(snap), "snapshot missing")
    with open(snap, "rb") as f:
        entries = pickle.load(f)["device_traces"][0]
    check(entries and entries[0]["action"] == "segment_alloc" and entries[0]["size"] == 4096,
          "the snapshot's trace does not start at the first request")
    check(case["metrics"]["num_ooms"]["summary"]["median"] == 1, "metrics from memory_stats")
    facts = info.get("snapshot_facts") or {}
    check(facts.get("actions", {}).get("oom") == 1 and facts.get("entries") == len(entries),
          f"snapshot_facts: {facts}")

    # --stop-at-oom: the snapshot at the OOM, nothing after it. The document it replaces keeps
    # its mode.
    os.chmod(out, 0o640)
    r = run_peer([trace, "--conf", "", "--memory-cap", "32MiB", "--stop-at-oom", "--out", out,
                  "--label", "stop"], env)
    check(r.returncode == 0, f"--stop-at-oom: exit {r.returncode}: {r.stderr.strip()[-300:]}")
    calls = read_log(folder)
    check(calls and calls[0][1] is None, f"--conf \"\" left a setting in force: {calls[:1]}")
    check(len([c for c in calls if c[0] == "alloc"]) == 3, "--stop-at-oom replayed past the OOM")
    with open(out, encoding="utf-8") as f:
        info = json.load(f)["scenarios"][0]["cases"][0]["info"]
    check(stat.S_IMODE(os.stat(out).st_mode) == 0o640,
          f"the replaced document's mode: {oct(os.stat(out).st_mode)}")
    check(info["stopped_at_oom"] and info["replayed_events"] == 5 and info["snapshot"] ==
          os.path.abspath(out[:-5] + ".pickle"), f"--stop-at-oom document: {info}")

    # Exit codes.
    for args, code, text in [([trace, "--memory-fraction", "2"], 2, "between 0 and 1"),
                             ([trace, "--memory-fraction", "0.5", "--memory-cap", "1GiB"], 2,
                              "not allowed"),
                             ([os.path.join(folder, "missing.json")], 2, "missing.json"),
                             ([write_trace(folder, "bad.json", [{"op": "alloc", "id": 1}])], 2,
                              "needs \"size\"")]:
        r = run_peer([*args, "--out", out], env)
        check(r.returncode == code and text in r.stderr,
              f"{args}: exit {r.returncode} (expected {code}), stderr: {r.stderr.strip()[-200:]}")
    for fault in ("absent", "nocuda"):
        r = run_peer([trace, "--out", out], fake_env(folder, fault))
        check(r.returncode == 3, f"FAKE_TORCH={fault}: exit {r.returncode}, expected 3")
    read_log(folder)

    # SIGTERM mid-replay: what was replayed is written, marked interrupted, exit 143.
    long_trace = write_trace(folder, "long.json",
                             [{"op": "alloc", "id": i, "size": 512, "stream": 0}
                              for i in range(400)])
    proc = subprocess.Popen([sys.executable, PEER, long_trace, "--out", out],
                            env=fake_env(folder, "slow"), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not any(
            c[0] == "alloc" for c in (json.loads(line) for line in open_lines(folder))):
        time.sleep(0.05)
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    check(proc.returncode == 128 + signal.SIGTERM, f"SIGTERM: exit {proc.returncode}: {err[-300:]}")
    with open(out, encoding="utf-8") as f:
        doc = json.load(f)
    n = doc["scenarios"][0]["cases"][0]["info"]["replayed_events"]
    check(doc["interrupted"] and 0 < n < 400, f"SIGTERM: interrupted {doc['interrupted']}, {n} "
          "events replayed")
    read_log(folder)


def open_lines(folder):
    path = os.path.join(folder, "calls.log")
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        return [line for line in f if line.strip()]


# ---- tune answers and the comparison -------------------------------------------------------

def check_answers(cmp):
    cases = [
        ("export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True   # no OOM (PyTorch's defaults: "
         "OOM at events[12]); peak reserved 1 GiB", ("export", "expandable_segments:True", None)),
        ("export PYTORCH_CUDA_ALLOC_CONF=garbage_collection_threshold:0.6,max_split_size_mb:23"
         "   # no OOM\ntorch.cuda.set_per_process_memory_fraction(1.0)   # arms "
         "garbage_collection_threshold",
         ("export", "garbage_collection_threshold:0.6,max_split_size_mb:23", 1.0)),
        ("export PYTORCH_CUDA_ALLOC_CONF=roundup_power2_divisions:[64:8,256:4,>:1]   # x",
         ("export", "roundup_power2_divisions:[64:8,256:4,>:1]", None)),
        ('export PYTORCH_CUDA_ALLOC_CONF=""   # no OOM', ("export", "", None)),
        ("# keep PYTORCH_CUDA_ALLOC_CONF as it is (PyTorch's defaults): no OOM", ("keep", None, None)),
        ("# no setting avoids the OOM: the trace's live allocations alone peak at 79 GiB",
         ("no-setting", None, None)),
        ("# not found: the search was cut short (the budget was spent)", ("not-found", None, None)),
        ("", ("unknown", None, None)),
    ]
    for text, expected in cases:
        got = cmp.parse_answer(text)
        check(got == expected, f"parse_answer({text[:50]!r}...): {got}, expected {expected}")
    check(cmp.normal_conf("max_split_size_mb:23,garbage_collection_threshold:0.6") ==
          cmp.normal_conf("garbage_collection_threshold:0.60, max_split_size_mb:23"),
          "normal_conf: the same setting written two ways")
    check(cmp.normal_conf("expandable_segments:True") != cmp.normal_conf(""), "normal_conf")


STATS = {"reserved_bytes.all.peak": 44040192, "reserved_bytes.all.current": 23068672,
         "allocated_bytes.all.peak": 25165824, "allocated_bytes.all.current": 1048576,
         "requested_bytes.all.peak": 25165000, "requested_bytes.all.current": 1048576,
         "inactive_split_bytes.all.peak": 20971520, "inactive_split_bytes.all.current": 0,
         "segment.all.peak": 2, "segment.all.current": 1, "num_alloc_retries": 0,
         "num_ooms": 0, "num_device_alloc": 2, "num_device_free": 1}
DECISIONS = [{"action": "segment_alloc", "addr": 1 << 30, "size": 20971520, "stream": 0},
             {"action": "alloc", "addr": 1 << 30, "size": 1048576, "stream": 0},
             {"action": "segment_alloc", "addr": 2 << 30, "size": 23068672, "stream": 0},
             {"action": "segment_free", "addr": 1 << 30, "size": 20971520, "stream": 0}]


def fixture(folder, name, stats=STATS, decisions=DECISIONS, reproduced=True):
    """A reference (peer result + its snapshot pickle) and a pinbench run of it (result +
    --snapshot JSON) as files; returns (reference path, result path, snapshots path)."""
    snap = os.path.join(folder, name + ".pickle")
    with open(snap, "wb") as f:
        pickle.dump({"segments": [], "device_traces": [DECISIONS]}, f)
    ref = os.path.join(folder, name + ".ref.json")
    with open(ref, "w", encoding="utf-8") as f:
        json.dump({"schema": "pinbench.result/1", "tool": {"name": "torch-peer"},
                   "scenarios": [{"cases": [{"id": name, "status": "ok", "params": {}, "info": {
                       "memory_stats": STATS, "snapshot": snap, "config": "", "device": 0,
                       "memory_fraction": None, "device_total_bytes": 1 << 34,
                       "pytorch": {"version": "2.11.0", "release": "2.11"}, "num_ooms": 0}}]}]},
                  f)
    scenario = "allocator-peer-" + name
    result = os.path.join(folder, name + ".pb.json")
    with open(result, "w", encoding="utf-8") as f:
        json.dump({"scenarios": [{"name": scenario, "cases": [{
            "id": "default", "status": "ok", "params": {"trace_file": snap},
            "info": {"memory_stats": stats, "pytorch_decisions": {
                "checked": True, "reproduced": reproduced, "identical": 2 if reproduced else 1,
                "pytorch": 2, "summary": "s"}}}]}]}, f)
    snapshots = os.path.join(folder, name + ".snap.json")
    with open(snapshots, "w", encoding="utf-8") as f:
        json.dump({"schema": "pinbench.snapshots/1", "cases": [
            {"scenario": scenario, "case": "default",
             "snapshot": {"segments": [], "device_traces": [
                 [dict(d, seq=i) for i, d in enumerate(decisions)] +
                 [{"action": "empty_cache", "size": 0}]]}}]}, f)
    return ref, result, snapshots


def compare(args):
    return subprocess.run([sys.executable, COMPARE, "compare", *args], capture_output=True,
                          text=True, timeout=60, check=False)


def check_comparison(cmp, folder):
    ref, result, snaps = fixture(folder, "same")
    out = os.path.join(folder, "cmp.json")
    r = compare(["--reference", ref, "--pinbench", "cuda", result, snaps,
                 "--pinbench", "host", result, snaps, "--out", out])
    check(r.returncode == 0 and "OK: 12 statistics equal" in r.stdout,
          f"equal fixtures: exit {r.returncode}: {r.stdout.strip()} {r.stderr.strip()}")
    with open(out, encoding="utf-8") as f:
        doc = json.load(f)
    c = doc["comparisons"][0]
    check(doc["schema"] == "pinbench.allocator-peer/1" and c["ok"] and c["runs_agree"]
          and c["reference_decisions"] == 3, f"comparison document: {c}")
    check(any(r["name"] == "num_device_alloc" and not r["decides"] for r in c["stats"]),
          "num_device_alloc not shown beside the compared statistics")

    off = dict(STATS, **{"reserved_bytes.all.peak": STATS["reserved_bytes.all.peak"] + 1})
    ref2, result2, snaps2 = fixture(folder, "offbyone", stats=off)
    r = compare(["--reference", ref2, "--pinbench", "cuda", result2, snaps2])
    check(r.returncode == 1 and "MISMATCH" in r.stdout and "reserved_bytes.all.peak" in r.stdout,
          f"one byte off: exit {r.returncode}: {r.stdout.strip()}")

    swapped = [DECISIONS[0], DECISIONS[1], dict(DECISIONS[2], size=25165824), DECISIONS[3]]
    ref3, result3, snaps3 = fixture(folder, "decision", decisions=swapped)
    r = compare(["--reference", ref3, "--pinbench", "cuda", result3, snaps3])
    check(r.returncode == 1 and "segment decisions differ at #1" in r.stdout,
          f"one decision off: exit {r.returncode}: {r.stdout.strip()}")

    ref4, result4, snaps4 = fixture(folder, "selfcheck", reproduced=False)
    r = compare(["--reference", ref4, "--pinbench", "cuda", result4, snaps4])
    check(r.returncode == 1 and "not reproduced" in r.stdout,
          f"pinbench's own check failed: exit {r.returncode}: {r.stdout.strip()}")

    # Two runs that disagree: the second run's case replays the same snapshot, stats differ.
    with open(result, encoding="utf-8") as f:
        good = f.read()
    other = os.path.join(folder, "other.pb.json")
    with open(other, "w", encoding="utf-8") as f:
        f.write(good.replace(str(STATS["reserved_bytes.all.peak"]),
                             str(STATS["reserved_bytes.all.peak"] + 512)))
    r = compare(["--reference", ref, "--pinbench", "cuda", result, snaps,
                 "--pinbench", "host", other, snaps])
    check(r.returncode == 1 and "cuda and host differ" in r.stdout,
          f"runs that disagree: exit {r.returncode}: {r.stdout.strip()}")

    # A snapshot pickle that would import something is refused, never executed.
    evil = os.path.join(folder, "evil.pickle")
    with open(evil, "wb") as f:
        f.write(b"\x80\x04cos\nsystem\n(S'true'\ntR.")
    try:
        cmp.load_pickle(evil)
        check(False, "a pickle importing os.system was loaded")
    except cmp.Unreadable as e:
        check("refused" in str(e), f"evil pickle: {e}")


# ---- with pinbench: the rehearsal's plumbing ------------------------------------------------

def find_pinbench(argv):
    if len(argv) > 1:
        candidate = argv[1]
        if os.path.isdir(candidate):
            candidate = os.path.join(candidate, "app", "pinbench")
        return candidate if os.access(candidate, os.X_OK) else None
    path = os.environ.get("PINBENCH")
    return path if path and os.access(path, os.X_OK) else None


def sh(args, timeout=120):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, check=False)


def check_with_pinbench(pinbench, folder):
    py = [sys.executable, COMPARE]
    refs = []
    for label, trace, conf, cap in [("defaults", "peer-settings.json", "", None),
                                    ("gc-0.6", "peer-settings.json",
                                     "garbage_collection_threshold:0.6", "800MiB"),
                                    ("oom-defaults", "peer-oom.json", "", "600MiB")]:
        sc = os.path.join(folder, f"own-{label}.scenario.json")
        cmd = [*py, "trace-scenario", os.path.join(TRACES, trace), "--name",
               f"allocator-peer-own-{label}", "--device-memory", "8GiB", "--config", conf,
               "--out", sc]
        if cap:
            cmd += ["--memory-cap", cap]
        r = sh(cmd)
        check(r.returncode == 0, f"trace-scenario {label}: {r.stderr.strip()}")
        own, pkl = os.path.join(folder, f"own-{label}.json"), os.path.join(folder, f"{label}.pickle")
        r = sh([pinbench, "run", "--backend", "host", sc, "--out", own, "--snapshot", pkl, "-q"])
        check(r.returncode == 0, f"pinbench run {label}: exit {r.returncode}: {r.stderr[-300:]}")
        ref = os.path.join(folder, f"{label}.ref.json")
        r = sh([*py, "stand-in", own, pkl, "--label", label, "--out", ref])
        check(r.returncode == 0, f"stand-in {label}: {r.stderr.strip()}")
        refs.append(ref)
    scen = os.path.join(folder, "scenarios")
    r = sh([*py, "replay-scenarios", *refs, "--out-dir", scen])
    check(r.returncode == 0 and len(r.stdout.split()) == 3, f"replay-scenarios: {r.stderr}")
    result, snaps = os.path.join(folder, "replay.json"), os.path.join(folder, "replay.snap.json")
    r = sh([pinbench, "run", "--backend", "host", *r.stdout.split(), "--out", result,
            "--snapshot", snaps, "-q"])
    check(r.returncode == 0, f"pinbench replay: exit {r.returncode}: {r.stderr[-300:]}")
    r = sh([*py, "compare", "--reference", *refs, "--pinbench", "host", result, snaps,
            "--out", os.path.join(folder, "compare.json")])
    check(r.returncode == 0 and r.stdout.count(": OK: ") == 3 and "rehearsal" in r.stdout,
          f"compare of pinbench's own snapshots: exit {r.returncode}: {r.stdout}{r.stderr}")
    with open(refs[2], encoding="utf-8") as f:
        oom_ref = json.load(f)
    info = oom_ref["scenarios"][0]["cases"][0]["info"]
    check(info["num_ooms"] >= 1, f"peer-oom.json under 600 MiB: no OOM ({info['num_ooms']})")
    tune = os.path.join(folder, "tune.json")
    r = sh([pinbench, "tune", "allocator", info["snapshot"], "--capacity", "8GiB",
            "--memory-fraction", repr(info["memory_fraction"]), "--backend", "host",
            "--budget", "15s", "--out", tune, "-q"])
    check(r.returncode in (0, 1) and os.path.exists(tune), f"tune: exit {r.returncode}")
    r = sh([*py, "answer", tune])
    kind, conf, fraction = (r.stdout.split("\n") + ["", "", ""])[:3]
    check(r.returncode == 0 and kind == "export" and conf, f"answer: {r.stdout!r} {r.stderr}")
    sc = os.path.join(folder, "after.scenario.json")
    sh([*py, "trace-scenario", os.path.join(TRACES, "peer-oom.json"), "--name",
        "allocator-peer-own-oom-answer", "--device-memory", "8GiB", "--config", conf,
        "--memory-fraction", fraction or repr(info["memory_fraction"]), "--out", sc])
    own = os.path.join(folder, "after.json")
    r = sh([pinbench, "run", "--backend", "host", sc, "--out", own, "-q"])
    check(r.returncode == 0, f"pinbench run of the answer: {r.stderr[-300:]}")
    after = os.path.join(folder, "after.ref.json")
    sh([*py, "stand-in", own, os.path.join(folder, "none.pickle"), "--label", "oom-answer",
        "--out", after])
    r = sh([*py, "oom-check", "--before", refs[2], "--tune", tune, "--after", after])
    check(r.returncode == 0 and "passed" in r.stdout, f"oom-check: {r.stdout}{r.stderr}")


def check_snapshot_sweep(pinbench):
    """The sweep over snapshots a program wrote: the repository's fixtures, one per situation a
    replay must reproduce, all identical."""
    fixtures = sorted(os.path.join(TRACES, n) for n in os.listdir(TRACES)
                      if n.startswith("snapshot-") and n.endswith(".pickle"))
    # 16 GiB holds every fixture's peak; an emulated device reserves 17 times its size of
    # address space, which ThreadSanitizer's runtime does not leave for 80 GiB.
    r = sh([sys.executable, COMPARE, "snapshots", pinbench, *fixtures, "--device-memory", "16GiB"])
    check(r.returncode == 0 and r.stdout.strip().endswith("device traces identical")
          and " 0 of " not in r.stdout,
          f"snapshots: exit {r.returncode}: {r.stdout[-400:]}{r.stderr[-300:]}")


def main(argv):
    if "--write-traces" in argv:
        for name, text in make_traces().items():
            with open(os.path.join(TRACES, name), "w", encoding="utf-8") as f:
                f.write(text)
            print(f"wrote {os.path.join(TRACES, name)} ({len(text)} bytes)")
        return 0
    argv = [a for a in argv if a != "--write-traces"]
    peer = load(PEER, "torch_allocator")
    cmp = load(COMPARE, "compare_allocator")
    check_committed_traces()
    check_trace_reading(peer)
    check_replay_bookkeeping(peer)
    check_history_call(peer)
    check_answers(cmp)
    folder = tempfile.mkdtemp(prefix="test-torch-allocator-")
    try:
        check_peer_runs(folder)
        check_comparison(cmp, folder)
        pinbench = find_pinbench(argv)
        if pinbench:
            check_with_pinbench(pinbench, folder)
            check_snapshot_sweep(pinbench)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    for f in failures:
        print(f"test_torch_allocator: FAILED: {f}", file=sys.stderr)
    if failures:
        return 1
    if not pinbench:
        print("test_torch_allocator: skipped: no pinbench (give its path or the build folder, or "
              "PINBENCH=), "
              "so the rehearsal's plumbing was not checked; the rest passed", file=sys.stderr)
        return SKIP
    print("test_torch_allocator: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
