#!/usr/bin/env python3
"""Convert a PyTorch CUDA memory snapshot into a pinbench.trace/1 JSON trace.

The input is the pickle that torch.cuda.memory._dump_snapshot() writes (recorded with
torch.cuda.memory._record_memory_history() on): a dict with "segments" and "device_traces", one
list of trace entries per device, each entry a dict with "action", "addr", "size", "stream"
(and "frames", "time_us", ... which are ignored). torch is not needed.

Mapping:
  alloc           -> {"op": "alloc", "id": N, "size": SIZE, "stream": S}, one new id per
                     allocation (an address reused after its free gets a new id)
  free_completed  -> {"op": "free", "id": N}: the moment the block went back to the cache.
                     A block freed with record_stream() on another stream reaches this only once
                     that stream's work is done, which is what a replay must reproduce.
  free_requested  -> used instead only for a block whose free_completed never appears (the
                     ring buffer of trace entries ended before it)
  segment_*, snapshot, oom, ... -> ignored: the replaying allocator makes its own segments.
Streams are numbered 0, 1, ... in order of first appearance. Frees of addresses allocated
before the recorded history began are dropped (a count goes to stderr), and so are allocations
still live at the end: they stay live in the trace.

The pickle is read with an unpickler that refuses every global (class or function reference):
torch writes only dicts, lists, strings and numbers, and anything else in a file could run code.

pinbench reads the pickle itself too (an allocator case's trace_file, trace_device choosing the
device), with the same mapping, and replays an oom entry as an allocation of the size that
failed; this script stays for those who want the trace as JSON.

Usage: torch_snapshot_to_trace.py SNAPSHOT.pickle [--device N] [-o OUT.json]
"""

import argparse
import json
import os
import pickle
import sys

SCHEMA = "pinbench.trace/1"


class _PlainUnpickler(pickle.Unpickler):
    """Loads only built-in containers and scalars; a global reference is an error."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(
            f"refusing to load {module}.{name}: a torch memory snapshot holds only plain "
            "dicts, lists, strings and numbers")


class ConversionError(Exception):
    pass


def load_snapshot(path):
    try:
        with open(path, "rb") as f:
            snapshot = _PlainUnpickler(f).load()
    except OSError as e:
        raise ConversionError(f"{path}: cannot read: {e.strerror}") from e
    except (pickle.UnpicklingError, EOFError, ValueError) as e:
        raise ConversionError(f"{path}: not a torch memory snapshot pickle: {e}") from e
    if not isinstance(snapshot, dict) or "device_traces" not in snapshot:
        raise ConversionError(
            f"{path}: not a torch memory snapshot: expected a dict with \"device_traces\" "
            "(was the history recorded with torch.cuda.memory._record_memory_history()?)")
    return snapshot


def _int_field(entry, key, index):
    value = entry.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ConversionError(
            f"device trace entry {index}: expected a non-negative integer \"{key}\", "
            f"got {value!r}")
    return value


def convert(snapshot, device=0):
    """Returns (events, notes): pinbench.trace/1 event dicts and human-readable remarks."""
    traces = snapshot["device_traces"]
    if not isinstance(traces, list):
        raise ConversionError("\"device_traces\" is not a list")
    if not 0 <= device < len(traces):
        raise ConversionError(
            f"no device {device} in the snapshot (it has traces for {len(traces)} device(s))")
    entries = traces[device]

    # Pass 1: pair each alloc with the entry that ends it, so that free_requested can stand in
    # for a missing free_completed without looking ahead while emitting.
    ends_at = {}      # index of an alloc entry -> index of the entry that frees it
    live = {}         # address -> [alloc index, free_requested index or None]
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ConversionError(f"device trace entry {i}: expected a dict, got {entry!r}")
        action = entry.get("action")
        if action == "alloc":
            addr = _int_field(entry, "addr", i)
            if addr in live:
                # Allocated again without a free_completed in between: the free that was
                # requested (if any) is the best evidence of when the block went.
                alloc_index, requested = live.pop(addr)
                if requested is not None:
                    ends_at[alloc_index] = requested
            live[addr] = [i, None]
        elif action == "free_requested":
            addr = _int_field(entry, "addr", i)
            if addr in live:
                live[addr][1] = i
        elif action in ("free_completed", "free"):
            addr = _int_field(entry, "addr", i)
            if addr in live:
                ends_at[live.pop(addr)[0]] = i
    for alloc_index, requested in live.values():
        if requested is not None:
            ends_at[alloc_index] = requested

    # Pass 2: emit in trace order.
    frees_at = {}  # entry index -> alloc indices whose free happens there
    for alloc_index, end in ends_at.items():
        frees_at.setdefault(end, []).append(alloc_index)
    ids = {}
    streams = {}
    events = []
    next_id = 1
    dropped_frees = 0
    for i, entry in enumerate(entries):
        action = entry.get("action")
        if action == "alloc":
            size = _int_field(entry, "size", i)
            stream = entry.get("stream", 0)
            if not isinstance(stream, int) or isinstance(stream, bool):
                raise ConversionError(f"device trace entry {i}: expected an integer \"stream\", "
                                      f"got {stream!r}")
            if size == 0:
                continue
            ids[i] = next_id
            next_id += 1
            stream_index = streams.setdefault(stream, len(streams))
            events.append({"op": "alloc", "id": ids[i], "size": size, "stream": stream_index})
        elif action in ("free_completed", "free_requested", "free"):
            matched = frees_at.get(i, [])
            for alloc_index in matched:
                if alloc_index in ids:
                    events.append({"op": "free", "id": ids[alloc_index]})
            if not matched and action != "free_requested":
                dropped_frees += 1
    notes = []
    if dropped_frees:
        notes.append(f"dropped {dropped_frees} free(s) of blocks allocated before the recorded "
                     "history began")
    still_live = sum(1 for i in ids if i not in ends_at)
    if still_live:
        notes.append(f"{still_live} allocation(s) are still live at the end of the trace")
    return events, notes


def write_trace(events, out):
    out.write('{"schema": "%s", "events": [\n' % SCHEMA)
    for n, ev in enumerate(events):
        out.write(json.dumps(ev))
        out.write(",\n" if n + 1 < len(events) else "\n")
    out.write("]}\n")


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Convert a torch.cuda.memory._dump_snapshot() pickle into a "
                    "pinbench.trace/1 JSON trace.")
    parser.add_argument("snapshot", help="the pickle written by _dump_snapshot()")
    parser.add_argument("--device", type=int, default=0, help="device index (default 0)")
    parser.add_argument("-o", "--output", default="-", help="output file (default stdout)")
    args = parser.parse_args(argv)
    try:
        events, notes = convert(load_snapshot(args.snapshot), args.device)
    except ConversionError as e:
        print(f"torch_snapshot_to_trace: {e}", file=sys.stderr)
        return 2
    if args.output == "-":
        write_trace(events, sys.stdout)
    else:
        # Written beside the target and renamed, so that a failure leaves no half trace.
        tmp = args.output + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            write_trace(events, f)
        os.replace(tmp, args.output)
    for note in notes:
        print(f"torch_snapshot_to_trace: {note}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
