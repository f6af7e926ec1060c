#!/usr/bin/env python3
"""PyTorch peer of pinbench's allocator kind: PyTorch's own caching allocator replays a
pinbench.trace/1 trace.

Each alloc event is a torch.cuda.caching_allocator_alloc(size, device, stream) call and each free
a torch.cuda.caching_allocator_delete(ptr): the same CUDACachingAllocator a tensor goes through,
without the tensors. Stream 0 is the device's current stream, every other stream index a
torch.cuda.Stream made once, before recording starts; empty_cache events call
torch.cuda.empty_cache(); marks are skipped. PYTORCH_CUDA_ALLOC_CONF (--conf) is set before torch
is imported, so that the allocator reads it when CUDA starts; --memory-fraction (or --memory-cap)
calls torch.cuda.set_per_process_memory_fraction before the first request. Memory history is
recorded (torch.cuda.memory._record_memory_history) from the first request, so the snapshot's
trace holds the replay and nothing before it, and the peak and accumulated statistics are reset
just before it.

An out-of-memory error is a result, as in pinbench: it is counted, that allocation is skipped
and so is its free, and the replay goes on; with --stop-at-oom the snapshot is dumped at the first
one, as a program's `except torch.cuda.OutOfMemoryError: torch.cuda.memory._dump_snapshot(...)`
handler would, and the replay stops there. At the end (before what is still live is freed) the
peer reads torch.cuda.memory_stats() and dumps the snapshot (--snapshot), which `pinbench run`
(workload trace) and `pinbench tune allocator` read. It writes a pinbench.result/1 document
(--out): one case, whose info holds the flat memory_stats() dictionary, torch's version, the
setting, the memory fraction, the OOMs (the first one's event index) and the snapshot's path.
scripts/peer/compare_allocator.py compares it with pinbench's replay of the snapshot.

Interrupted (SIGINT, or SIGTERM as a step's budget sends it), it still reads the statistics,
dumps the snapshot of what was replayed and writes the document, marked "interrupted", then
exits 128 + the signal's number.

Exit codes: 0 done (an out-of-memory error is a result, not a failure), 1 the replay failed
otherwise, 2 bad arguments or a bad trace, 3 no torch, no CUDA device, or a torch without what
the replay needs.
"""

import argparse
import inspect
import json
import os
import pickle
import re
import shlex
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pinbench_result import (  # noqa: E402
    Interruption, cuda_device_info, document_head, format_bytes_compact, host_info, int_at_least,
    metric, parse_bytes, parse_fraction, replace_atomically, start_cuda_torch, write_atomic)

PROG = "torch_allocator"
SOURCE = "scripts/peer/torch_allocator.py"
TRACE_SCHEMA = "pinbench.trace/1"
EVENT_KEYS = ("op", "id", "size", "stream", "label")
OPS = ("alloc", "free", "empty_cache", "mark")
DEFAULT_MAX_ENTRIES = 1_000_000
# Environment variables PyTorch also reads its allocator settings from: --conf must be the only
# setting in force, so these are taken out of the environment (and named in the result).
OTHER_CONF_VARIABLES = ("PYTORCH_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF")

# The memory_stats() counters a case also carries as metrics, with pinbench's units.
METRICS = (
    ("allocated_bytes.all.peak", "bytes", ""),
    ("requested_bytes.all.peak", "bytes", ""),
    ("active_bytes.all.peak", "bytes", ""),
    ("reserved_bytes.all.peak", "bytes", "lower"),
    ("reserved_bytes.all.current", "bytes", "lower"),
    ("inactive_split_bytes.all.peak", "bytes", "lower"),
    ("inactive_split_bytes.all.current", "bytes", "lower"),
    ("segment.all.peak", "count", ""),
    ("num_device_alloc", "count", "lower"),
    ("num_device_free", "count", "lower"),
    ("num_alloc_retries", "count", "lower"),
    ("num_ooms", "count", "lower"),
)


class TraceError(Exception):
    """A trace that cannot be replayed: exit 2, one line."""


class OneLineParser(argparse.ArgumentParser):
    """Bad arguments: one line on stderr and exit 2, not the usage block."""

    def error(self, message):
        print(f"{PROG}: error: {message} (see --help)", file=sys.stderr)
        sys.exit(2)


# ---- the trace, without torch ----------------------------------------------------------------

def _whole(value, path, what):
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TraceError(f"{path}: {what} must be a non-negative integer, got {json.dumps(value)}")
    return value


def parse_trace(doc, source="trace"):
    """The events of a pinbench.trace/1 document as tuples, in order: ("alloc", id, size,
    stream), ("free", id), ("empty_cache",), ("mark", label). TraceError names the first thing
    wrong, with its JSON path, as pinbench's reader does."""
    if not isinstance(doc, dict):
        raise TraceError(f"{source}: expected a JSON object with \"schema\" and \"events\"")
    for key in doc:
        if key not in ("schema", "events"):
            raise TraceError(f"{source}: {key}: unknown key (expected schema, events)")
    if doc.get("schema") != TRACE_SCHEMA:
        raise TraceError(f"{source}: schema: expected \"{TRACE_SCHEMA}\", got "
                         f"{json.dumps(doc.get('schema'))}")
    events = doc.get("events")
    if not isinstance(events, list):
        raise TraceError(f"{source}: events: expected an array of events")
    out = []
    for i, e in enumerate(events):
        path = f"{source}: events[{i}]"
        if not isinstance(e, dict):
            raise TraceError(f"{path}: expected an object")
        for key in e:
            if key not in EVENT_KEYS:
                raise TraceError(f"{path}.{key}: unknown key (expected {', '.join(EVENT_KEYS)})")
        op = e.get("op")
        if op not in OPS:
            raise TraceError(f"{path}.op: expected one of {', '.join(OPS)}, got "
                             f"{json.dumps(op)}")
        if op == "alloc":
            for key in ("id", "size"):
                if key not in e:
                    raise TraceError(f"{path}: an alloc needs \"{key}\"")
            out.append(("alloc", _whole(e["id"], path + ".id", "id"),
                        _whole(e["size"], path + ".size", "size"),
                        _whole(e.get("stream", 0), path + ".stream", "stream")))
        elif op == "free":
            if "id" not in e:
                raise TraceError(f"{path}: a free needs \"id\"")
            out.append(("free", _whole(e["id"], path + ".id", "id")))
        elif op == "empty_cache":
            out.append(("empty_cache",))
        else:
            out.append(("mark", str(e.get("label", ""))))
    return out


def read_trace(path):
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as e:
        raise TraceError(f"{path}: {e.strerror or e}") from None
    except ValueError as e:
        raise TraceError(f"{path}: not JSON ({e})") from None
    return parse_trace(doc, path)


def streams_of(events):
    """The stream indexes the allocations use, in order of first use (0 always first)."""
    seen = [0]
    for e in events:
        if e[0] == "alloc" and e[3] not in seen:
            seen.append(e[3])
    return seen


def trace_counts(events):
    out = {"events": len(events), "alloc": 0, "free": 0, "empty_cache": 0, "mark": 0,
           "bytes_requested": 0}
    for e in events:
        out[e[0]] += 1
        if e[0] == "alloc":
            out["bytes_requested"] += e[2]
    return out


class Replay:
    """The trace's bookkeeping, as pinbench's engine keeps it: an alloc of an id still live is
    skipped, a free of an id never allocated is skipped, an allocation that ran out of memory is
    skipped and so is its free; a request of 0 bytes is skipped (caching_allocator_alloc returns
    0 without asking the allocator) and so is its free. `alloc(size, stream)` and `free(ptr)`
    are the allocator; `is_oom(exc)` tells an out-of-memory error."""

    def __init__(self, events, alloc, free, empty_cache, is_oom):
        self.events = events
        self._alloc, self._free, self._empty_cache, self._is_oom = alloc, free, empty_cache, is_oom
        self.live = {}  # id -> pointer
        self.failed = set()  # ids whose allocation ran out of memory
        self.zero = set()  # ids of 0-byte requests
        self.counts = {"allocs": 0, "frees": 0, "empty_cache_calls": 0, "ooms": 0,
                       "skipped_allocs": 0, "skipped_frees": 0, "zero_size_allocs": 0}
        self.ooms = []  # {"event", "size", "stream", "message"}
        self.next_event = 0  # the index of the event to replay next

    def run(self, stop_at_oom=False):
        """Replays from next_event to the end, or to the first OOM with stop_at_oom (True
        returned then). An exception other than an OOM propagates, next_event at its event."""
        while self.next_event < len(self.events):
            i = self.next_event
            e = self.events[i]
            op = e[0]
            if op == "alloc":
                _, ident, size, stream = e
                if ident in self.live:
                    self.counts["skipped_allocs"] += 1
                elif size == 0:
                    self.counts["zero_size_allocs"] += 1
                    self.zero.add(ident)
                else:
                    try:
                        ptr = self._alloc(size, stream)
                    except Exception as exc:  # noqa: BLE001 - sorted by is_oom just below
                        if not self._is_oom(exc):
                            raise
                        self.counts["ooms"] += 1
                        self.failed.add(ident)
                        self.ooms.append({"event": i, "size": size, "stream": stream,
                                          "message": first_line(exc)})
                        self.next_event = i + 1
                        if stop_at_oom:
                            return True
                        continue
                    self.failed.discard(ident)
                    self.zero.discard(ident)
                    self.live[ident] = ptr
                    self.counts["allocs"] += 1
            elif op == "free":
                ident = e[1]
                if ident in self.live:
                    self._free(self.live.pop(ident))
                    self.counts["frees"] += 1
                elif ident in self.failed:
                    self.failed.discard(ident)
                elif ident in self.zero:
                    self.zero.discard(ident)
                else:
                    self.counts["skipped_frees"] += 1
            elif op == "empty_cache":
                self._empty_cache()
                self.counts["empty_cache_calls"] += 1
            self.next_event = i + 1
        return False

    def first_oom_event(self):
        return self.ooms[0]["event"] if self.ooms else None


def first_line(exc):
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# ---- PyTorch -------------------------------------------------------------------------------

def release_of(version):
    """"2.11.0+cu130" -> "2.11" (the X.Y pinbench's `pytorch` param takes)."""
    m = re.match(r"(\d+)\.(\d+)", version or "")
    return f"{m.group(1)}.{m.group(2)}" if m else None


def oom_classes(torch):
    cls = getattr(torch.cuda, "OutOfMemoryError", None)  # 1.13+
    return (cls,) if isinstance(cls, type) else ()


def make_is_oom(torch):
    classes = oom_classes(torch)

    def is_oom(exc):
        if classes and isinstance(exc, classes):
            return True
        # Releases before torch.cuda.OutOfMemoryError raised a RuntimeError.
        return isinstance(exc, RuntimeError) and "out of memory" in str(exc)
    return is_oom


def history_call(fn, max_entries, stacks):
    """How to start recording with `fn` (torch.cuda.memory._record_memory_history) on this
    release: (args, kwargs, text). 2.1 and later take enabled="all", context, stacks and
    max_entries; 2.0 only the legacy form (enabled=True, trace_alloc_max_entries,
    trace_alloc_record_context)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        params = {}
    names = set(params)
    var_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    if "trace_alloc_max_entries" in names and "max_entries" not in names:
        kwargs = {"trace_alloc_max_entries": max_entries, "trace_alloc_record_context": True,
                  "record_context": True}
        return (True,), kwargs, (f"_record_memory_history(True, trace_alloc_max_entries="
                                 f"{max_entries}, trace_alloc_record_context=True)")
    if "max_entries" in names or var_kw:
        kwargs = {"context": "all", "stacks": stacks, "max_entries": max_entries}
        return ("all",), kwargs, (f"_record_memory_history(\"all\", context=\"all\", "
                                  f"stacks=\"{stacks}\", max_entries={max_entries})")
    raise RuntimeError("torch.cuda.memory._record_memory_history takes neither max_entries "
                       "nor trace_alloc_max_entries: this torch cannot record the replay")


def dump_snapshot(torch, path):
    """The snapshot as torch.cuda.memory._dump_snapshot writes it (a pickle of _snapshot()),
    written beside `path` and renamed, so that no reader sees half a file; releases without
    _dump_snapshot pickle _snapshot() themselves. Returns how it was written."""
    def write(tmp):
        memory = torch.cuda.memory
        if hasattr(memory, "_dump_snapshot"):
            memory._dump_snapshot(tmp)
            return "torch.cuda.memory._dump_snapshot"
        with open(tmp, "wb") as f:
            pickle.dump(memory._snapshot(), f)
        return "pickle.dump(torch.cuda.memory._snapshot())"
    return replace_atomically(path, ".torch-allocator-", write, shared=True, suffix=".pickle")


def fraction_for(cap_bytes, total_bytes):
    """--memory-cap SIZE as the fraction of the device that allows it: PyTorch's limit is
    size_t(fraction * total), which pinbench computes alike from the same double."""
    if total_bytes <= 0:
        raise ValueError("the device reports no memory")
    return min(1.0, cap_bytes / total_bytes)


def differences(stacks, max_entries):
    return [
        "requests go through torch.cuda.caching_allocator_alloc/caching_allocator_delete "
        "(CUDACachingAllocator's raw_alloc_with_stream and raw_delete): the allocator tensors "
        "use, without tensors, so no record_stream and no tensor bookkeeping",
        "a request of 0 bytes returns 0 without reaching the allocator: it is skipped (and its "
        "free), where pinbench's engine allocates it",
        "stream 0 is the device's current stream; each other stream index is a torch.cuda.Stream "
        "made before recording starts; frees are immediate (no stream uses to wait for)",
        f"memory history recorded from the first request (context \"all\", stacks "
        f"\"{stacks}\", max_entries {max_entries}); peak and accumulated statistics reset just "
        "before it",
        "the statistics and the snapshot are read at the end, before what is still live is "
        "freed (with --stop-at-oom: in the OOM's handler)",
    ]


# ---- main ----------------------------------------------------------------------------------

def parse_args(argv):
    p = OneLineParser(prog=PROG, description=__doc__.split("\n\n")[0])
    p.add_argument("trace", help="a pinbench.trace/1 JSON trace")
    p.add_argument("--conf", metavar="TEXT", default=None,
                   help="PYTORCH_CUDA_ALLOC_CONF for the replay (set before torch starts CUDA; "
                   "\"\" = PyTorch's defaults); default: the environment's")
    fraction = p.add_mutually_exclusive_group()
    fraction.add_argument("--memory-fraction", metavar="F", type=parse_fraction, default=None,
                          help="torch.cuda.set_per_process_memory_fraction(F) before the first "
                          "request; default: never called")
    fraction.add_argument("--memory-cap", metavar="SIZE", type=parse_bytes, default=None,
                          help="the same with F = SIZE / the device's total memory "
                          "(cudaMemGetInfo), e.g. 600MiB: a cap that means the same on any GPU")
    p.add_argument("--device", metavar="N", type=int_at_least(0), default=0,
                   help="CUDA device index (default 0)")
    p.add_argument("--max-entries", metavar="N", type=int_at_least(1), default=DEFAULT_MAX_ENTRIES,
                   help=f"memory history entries kept (default {DEFAULT_MAX_ENTRIES})")
    p.add_argument("--stacks", choices=("python", "all"), default="python",
                   help="stack frames recorded with each entry (default python: \"all\" adds "
                   "C++ frames, whose symbolization can make the dump slow)")
    p.add_argument("--stop-at-oom", action="store_true",
                   help="dump the snapshot at the first out-of-memory error and stop there "
                   "(default: count it, skip that allocation and its free, go on)")
    p.add_argument("--snapshot", metavar="OUT.pickle", default=None,
                   help="where the snapshot goes (default: beside --out, .pickle)")
    p.add_argument("--out", metavar="OUT.json", default="torch-allocator.json",
                   help="result file (pinbench.result/1)")
    p.add_argument("--label", default=None,
                   help="the case's id (default: the trace's file name and the setting)")
    args = p.parse_args(argv)
    if args.snapshot is None:
        base = args.out[:-5] if args.out.endswith(".json") else args.out
        args.snapshot = base + ".pickle"
    if os.path.abspath(args.snapshot) == os.path.abspath(args.out):
        p.error("--snapshot and --out name the same file")
    return args


def default_label(args):
    name = os.path.splitext(os.path.basename(args.trace))[0]
    parts = [name, args.conf if args.conf else "defaults"]
    if args.memory_cap is not None:
        parts.append("cap " + format_bytes_compact(args.memory_cap))
    elif args.memory_fraction is not None:
        parts.append(f"fraction {args.memory_fraction:g}")
    return ", ".join(parts)


def set_conf(conf):
    """Before torch is imported: --conf as the only allocator setting in force. Returns
    (the setting in force, the other variables taken out)."""
    removed = []
    if conf is None:
        return os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""), removed
    for name in OTHER_CONF_VARIABLES:
        if name in os.environ:
            removed.append(f"{name}={os.environ.pop(name)}")
    if conf:
        os.environ["PYTORCH_CUDA_ALLOC_CONF"] = conf
    else:
        os.environ.pop("PYTORCH_CUDA_ALLOC_CONF", None)
    return conf, removed


def main(argv=None):
    began = time.perf_counter()
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    try:
        events = read_trace(args.trace)
    except TraceError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    label = args.label or default_label(args)
    conf, removed = set_conf(args.conf)
    stop = Interruption()
    stop.catch()

    # torch only now: PYTORCH_CUDA_ALLOC_CONF is read when it starts.
    torch, code = start_cuda_torch(PROG, stop, "nothing replayed, no file written")
    if torch is None:
        return code
    memory = getattr(torch.cuda, "memory", None)
    needed = ("caching_allocator_alloc", "caching_allocator_delete", "memory_stats",
              "_record_memory_history", "_snapshot")
    missing = [n for n in needed if not hasattr(torch.cuda, n) and not hasattr(memory, n)]
    if missing:
        print(f"{PROG}: torch {torch.__version__} lacks torch.cuda.{', '.join(missing)}",
              file=sys.stderr)
        return 3
    if args.device >= torch.cuda.device_count():
        print(f"{PROG}: error: --device {args.device}: this machine has "
              f"{torch.cuda.device_count()} CUDA device(s)", file=sys.stderr)
        return 2

    dev = args.device
    interrupted = False
    stopped_at_oom = False
    replay = None
    failure = None
    snapshot_how = None
    stats = {}
    history_text = None
    fraction = args.memory_fraction
    warnings_ = []
    backend_name = free_bytes = total_bytes = None
    try:
        torch.cuda.set_device(dev)
        backend_name = (torch.cuda.get_allocator_backend()
                        if hasattr(torch.cuda, "get_allocator_backend") else "native")
        free_bytes, total_bytes = torch.cuda.mem_get_info(dev)
        if args.memory_cap is not None:
            fraction = fraction_for(args.memory_cap, total_bytes)
        if fraction is not None:
            torch.cuda.set_per_process_memory_fraction(float(fraction), dev)
        # Every stream before recording starts: making one allocates nothing from the cache,
        # but nothing of the set-up should be in the snapshot.
        streams = {}
        for index in streams_of(events):
            streams[index] = (torch.cuda.current_stream(dev) if index == 0
                              else torch.cuda.Stream(device=dev))
        before = torch.cuda.memory_stats(dev)
        if before.get("reserved_bytes.all.current", 0):
            warnings_.append(
                f"{before['reserved_bytes.all.current']} bytes were reserved before the replay: "
                "the snapshot starts with those segments")
        torch.cuda.reset_peak_memory_stats(dev)
        torch.cuda.reset_accumulated_memory_stats(dev)

        is_oom = make_is_oom(torch)
        replay = Replay(
            events,
            alloc=lambda size, stream: torch.cuda.caching_allocator_alloc(size, dev,
                                                                         streams[stream]),
            free=torch.cuda.caching_allocator_delete,
            empty_cache=torch.cuda.empty_cache,
            is_oom=is_oom)
        record = torch.cuda.memory._record_memory_history
        h_args, h_kwargs, history_text = history_call(record, args.max_entries, args.stacks)
        record(*h_args, **h_kwargs)
        try:
            stopped_at_oom = replay.run(stop_at_oom=args.stop_at_oom)
        except KeyboardInterrupt:
            interrupted = True
            print(f"{PROG}: interrupted at events[{replay.next_event}]; writing what was "
                  "replayed", file=sys.stderr)
        except Exception as e:  # noqa: BLE001 - the document still says what happened
            failure = f"events[{replay.next_event}]: {type(e).__name__}: {first_line(e)}"
        # What the OOM handler (or the end of the program) sees: the statistics, then the
        # snapshot, before anything live is freed.
        stats = dict(torch.cuda.memory_stats(dev))
        if args.snapshot:
            snapshot_how = dump_snapshot(torch, args.snapshot)
        try:
            if h_args == ("all",):
                record(None)
            else:
                record(False)
        except Exception:  # noqa: BLE001 - recording off is a courtesy at exit
            pass
        for ptr in list(replay.live.values()):
            torch.cuda.caching_allocator_delete(ptr)
        replay.live.clear()
    except KeyboardInterrupt:
        interrupted = True
        print(f"{PROG}: interrupted before the replay ended", file=sys.stderr)
    except Exception as e:  # noqa: BLE001
        failure = failure or f"{type(e).__name__}: {first_line(e)}"
    stop.hold_off()

    facts = snapshot_facts(args.snapshot, dev) if snapshot_how else None
    if facts and facts["entries"] >= args.max_entries:
        warnings_.append(f"the snapshot holds {facts['entries']} trace entries, --max-entries: "
                         "the history's start may have been overwritten (pinbench then replays "
                         "from the memory the snapshot's trace begins with)")
    if facts and "expandable_segments:true" in (conf or "").replace(" ", "").lower() and \
            facts["actions"].get("segment_alloc") and not facts["actions"].get("segment_map"):
        warnings_.append("expandable_segments:True was asked, but the snapshot has segment_alloc "
                         "and no segment_map entries: PyTorch did not use expandable segments "
                         "(unsupported here?)")

    info = {
        "memory_stats": stats,
        "pytorch": {"version": torch.__version__, "release": release_of(torch.__version__),
                    "cuda": torch.version.cuda, "allocator_backend": backend_name},
        "config": conf,
        "environment_removed": removed,
        "memory_fraction": fraction,
        "memory_cap_bytes": args.memory_cap,
        "device_total_bytes": total_bytes,
        "device_free_bytes_before": free_bytes,
        "device": dev,
        "stop_at_oom": args.stop_at_oom,
        "stopped_at_oom": stopped_at_oom,
        "num_ooms": replay.counts["ooms"] if replay else 0,
        "first_oom_event": replay.first_oom_event() if replay else None,
        "ooms": replay.ooms if replay else [],
        "replayed_events": replay.next_event if replay else 0,
        "ops": replay.counts if replay else {},
        "trace": trace_counts(events),
        "streams": len(streams_of(events)),
        "record_memory_history": history_text,
        "snapshot": os.path.abspath(args.snapshot) if snapshot_how else None,
        "snapshot_written_by": snapshot_how,
        "snapshot_facts": facts,
    }
    case = {
        "id": label,
        "params": {"workload": "trace", "trace_file": os.path.abspath(args.trace),
                   "config": conf, "memory_fraction": fraction if fraction is not None
                   else "unset", "device": dev, "stop_at_oom": args.stop_at_oom},
        "status": "error" if failure else "ok",
        "stop_reason": "interrupted" if interrupted else "converged",
        "elapsed_s": time.perf_counter() - began,
        "info": info,
        "metrics": {name: metric(unit, better, [stats[name]])
                    for name, unit, better in METRICS if name in stats},
    }
    if failure:
        case["message"] = failure
    if warnings_:
        case["warnings"] = warnings_
    doc = {
        **document_head(torch.__version__),
        "command_line": shlex.join([SOURCE, *argv]),
        "interrupted": interrupted,
        "environment": {"backend": "cuda",
                        "device": cuda_device_info(torch, dev) if torch.cuda.is_available() else {},
                        "host": host_info()},
        "scenarios": [{
            "name": "torch-allocator",
            "description": "PyTorch's caching allocator replaying a pinbench.trace/1 trace "
                           "through caching_allocator_alloc/caching_allocator_delete",
            "kind": "allocator",
            "source": SOURCE,
            "differences": differences(args.stacks, args.max_entries),
            "cases": [case],
        }],
    }
    write_atomic(args.out, json.dumps(doc, indent=2) + "\n", ".torch-allocator-", shared=True)
    oom_text = (f"{info['num_ooms']} OOM(s), the first at events[{info['first_oom_event']}]"
                if info["num_ooms"] else "no OOM")
    print(f"{PROG}: {label}: {oom_text}; reserved peak {stats.get('reserved_bytes.all.peak')} "
          f"B, {stats.get('num_device_alloc', '?')} device allocs; wrote {args.out}"
          f"{' and ' + args.snapshot if snapshot_how else ''} "
          f"({time.perf_counter() - began:.1f} s)", file=sys.stderr)
    if failure:
        print(f"{PROG}: error: {failure}", file=sys.stderr)
    if interrupted:
        return stop.exit_code()
    return 1 if failure else 0


def snapshot_facts(path, device):
    """What the snapshot pickle holds (read back as plain data): the device's trace entries, the
    count of each action, the segments, the allocator_settings PyTorch recorded; None where it
    cannot be read."""
    try:
        with open(path, "rb") as f:
            snap = PlainUnpickler(f).load()
        trace = snap["device_traces"][device]
        actions = {}
        for e in trace:
            actions[e.get("action")] = actions.get(e.get("action"), 0) + 1
        settings = snap.get("allocator_settings")
        return {"entries": len(trace), "actions": actions,
                "segments": len(snap.get("segments", [])),
                "allocator_settings": settings if isinstance(settings, dict) else None}
    except Exception:  # noqa: BLE001 - only remarks depend on it
        return None


class PlainUnpickler(pickle.Unpickler):
    """A snapshot is plain data (dicts, lists, strings, numbers, tuples): anything that would
    import a global is refused."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"a snapshot holds plain data only, not {module}.{name}")


if __name__ == "__main__":
    sys.exit(main())
