#!/usr/bin/env python3
"""Writes a synthetic allocation trace of N events, for measuring the trace readers at scale.

usage: scripts/gen-trace.py N [--format json|csv] [--seed S] OUT

json: a pinbench.trace/1 document, one event per line; csv: an RMM replay log
("Thread,Time,Action,Pointer,Size,Stream"). The pattern is a steady state: at most 256
allocations live at a time (sizes 512 B to 4 MiB, two streams), so the replay's memory does
not depend on N; in JSON a "mark" ends every 1000 events. Written as it is generated: the
generator's own memory does not grow with N either. Standard library only.
"""
import argparse
import random
import sys

MAX_LIVE = 256


def events(n, rng):
    """Yields (op, id, size, stream) tuples; op in alloc, free, mark."""
    live = []  # ids, in allocation order
    next_id = 1
    made = 0
    while made < n:
        if made % 1000 == 999:
            yield ("mark", 0, 0, 0)
        elif live and (len(live) >= MAX_LIVE or rng.random() < 0.5 or n - made <= len(live)):
            ident = live.pop(rng.randrange(len(live)))
            yield ("free", ident, 0, 0)
        else:
            size = rng.choice((512, 4096, 65536, 1 << 20, 4 << 20)) + 512 * rng.randrange(8)
            live.append(next_id)
            yield ("alloc", next_id, size, rng.randrange(2))
            next_id += 1
        made += 1


def write_json(n, rng, out):
    out.write('{"schema": "pinbench.trace/1", "events": [\n')
    first = True
    for op, ident, size, stream in events(n, rng):
        if op == "alloc":
            line = '{"op": "alloc", "id": %d, "size": %d, "stream": %d}' % (ident, size, stream)
        elif op == "free":
            line = '{"op": "free", "id": %d}' % ident
        else:
            line = '{"op": "mark", "label": "iteration"}'
        out.write(line if first else ",\n" + line)
        first = False
    out.write("\n]}\n")


def write_csv(n, rng, out):
    out.write("Thread,Time,Action,Pointer,Size,Stream\n")
    streams = ("0x0", "0x7f8a38001020")
    sizes = {}
    for t, (op, ident, size, stream) in enumerate(events(n, rng)):
        # A pointer per id: distinct while live, as a real allocator's would be.
        pointer = "0x%x" % (0x7F0000000000 + ident * 0x1000)
        if op == "alloc":
            sizes[ident] = (size, stream)
            out.write("1,%d,allocate,%s,%d,%s\n" % (t, pointer, size, streams[stream]))
        elif op == "free":
            size, stream = sizes.pop(ident)
            out.write("1,%d,free,%s,%d,%s\n" % (t, pointer, size, streams[stream]))
        else:
            # The RMM log has no marks: a failed allocation row (no event) keeps the count.
            out.write("1,%d,allocate failure,0x0,0,%s\n" % (t, streams[0]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n", type=int, help="number of events")
    ap.add_argument("out", help="output file")
    ap.add_argument("--format", choices=("json", "csv"), default="json")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if a.n < 1:
        ap.error("N must be at least 1")
    rng = random.Random(a.seed)
    with open(a.out, "w", encoding="ascii", buffering=1 << 20) as out:
        (write_json if a.format == "json" else write_csv)(a.n, rng, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
