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

One per situation a replay must reproduce PyTorch's decisions in (tests/alloc/recording_test.cpp),
each trace written as PyTorch's allocator would have made it (the reasoning beside each):
  snapshot-start-state.pickle  recorded after the model existed: cached segments, live blocks
  snapshot-releases.pickle     segment_free runs of empty_cache() and of the retry path
  snapshot-addresses.pickle    a best fit whose tie is broken by PyTorch's addresses
  snapshot-streams.pickle      two streams, a free that completes late
  snapshot-expandable.pickle   expandable segments: map, unmap, a range mapped before
  snapshot-devices.pickle      two devices, the OOM on device 1
  snapshot-v2.0.pickle         PyTorch 2.0's format: blocks with a history, no address
  snapshot-two-reservations.pickle  expandable segments of two pools 27 GiB apart (a 24 GiB
                               GPU's): one released while the other's pages stay mapped
  snapshot-fraction.pickle     PyTorch 2.10's format, per_process_memory_fraction in the config
  bad/pickle-overlapping-segments.pickle, bad/pickle-huge-address.pickle  refused with their path
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


FRAME_EMPTY_CACHE = {"filename": "", "line": 0,
                     "name": "c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::emptyCache()"}
FRAME_MALLOC = {"filename": "", "line": 0,
                "name": "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(...)"}
KiB = 1 << 10


def seg(address, total, blocks, stream=STREAM_MAIN, kind="large", expandable=False, device=0):
    """A segment of the dump: blocks as (offset, size, requested, state)."""
    bl = [{"address": address + off, "size": size, "requested_size": req, "state": state,
           "frames": []} for off, size, req, state in blocks]
    active = sum(b["size"] for b in bl if b["state"] != "inactive")
    return {"device": device, "address": address, "total_size": total, "allocated_size": active,
            "active_size": active,
            "requested_size": sum(b["requested_size"] for b in bl if b["state"] != "inactive"),
            "stream": stream, "segment_type": kind, "segment_pool_id": (0, 0),
            "is_expandable": expandable, "frames": [], "blocks": bl}


def free(addr, size, stream=STREAM_MAIN):
    return [entry("free_requested", addr, size, stream), entry("free_completed", addr, size, stream)]


def with_settings(segments, traces, **kw):
    return {"segments": segments, "device_traces": traces, "allocator_settings": settings(**kw),
            "external_annotations": []}


def start_state_snapshot():
    """Recorded after the model was built: a cached small segment S1 (its first 512 KiB live)
    and a large one S2 (its first 5 MiB live), neither made in the trace.
      0 256 KiB: the small pool's best fit is S1's free 1.5 MiB: split, at A + 512 KiB
      1 4 MiB: S2's free 15 MiB, split (11 MiB > 1 MiB left), at B + 5 MiB
      2-3 the 512 KiB block at A, allocated before the recording, freed
      4-5 30 MiB: no cached block (S2 has 11 MiB free): a 30 MiB segment at C
      6-9 the 4 MiB and the 30 MiB freed (S2: 15 MiB free again)
      10 empty_cache(): only C is a whole free segment
      11 8 MiB: S2's free 15 MiB, split, at B + 5 MiB
    A replay that opened a new segment for the 256 KiB would part from PyTorch at once."""
    a, b, c = BASE, BASE + 0x10000000, BASE + 0x20000000
    trace = [entry("alloc", a + 512 * KiB, 256 * KiB), entry("alloc", b + 5 * MiB, 4 * MiB)]
    trace += free(a, 512 * KiB)
    trace += [entry("segment_alloc", c, 30 * MiB), entry("alloc", c, 30 * MiB)]
    trace += free(b + 5 * MiB, 4 * MiB) + free(c, 30 * MiB)
    trace += [entry("segment_free", c, 30 * MiB, frames=[FRAME_EMPTY_CACHE]),
              entry("alloc", b + 5 * MiB, 8 * MiB)]
    segments = [seg(a, 2 * MiB, [(0, 512 * KiB, 0, "inactive"),
                                 (512 * KiB, 256 * KiB, 256 * KiB, "active_allocated"),
                                 (768 * KiB, 1280 * KiB, 0, "inactive")], kind="small"),
                seg(b, 20 * MiB, [(0, 5 * MiB, 5 * MiB, "active_allocated"),
                                  (5 * MiB, 8 * MiB, 8 * MiB, "active_allocated"),
                                  (13 * MiB, 7 * MiB, 0, "inactive")])]
    return with_settings(segments, [trace])


def releases_snapshot():
    """The program's empty_cache() between requests, and the retry path of an allocation whose
    cudaMalloc failed on a nearly full device (a release run right before its segment_alloc).
      0-3 two 30 MiB segments P and Q, one block each; 4-5 P's freed
      6 empty_cache(): P released (Q's block is live)
      7-9 R, 24 MiB; R's block freed
      10-11 40 MiB: no cached block fits; cudaMalloc fails; R released, then a 40 MiB segment S"""
    p, q, r, t = BASE, BASE + 0x10000000, BASE + 0x20000000, BASE + 0x30000000
    trace = [entry("segment_alloc", p, 30 * MiB), entry("alloc", p, 30 * MiB),
             entry("segment_alloc", q, 30 * MiB), entry("alloc", q, 30 * MiB)]
    trace += free(p, 30 * MiB)
    trace += [entry("segment_free", p, 30 * MiB, frames=[FRAME_EMPTY_CACHE]),
              entry("segment_alloc", r, 24 * MiB), entry("alloc", r, 24 * MiB)]
    trace += free(r, 24 * MiB)
    trace += [entry("segment_free", r, 24 * MiB, frames=[FRAME_MALLOC]),
              entry("segment_alloc", t, 40 * MiB), entry("alloc", t, 40 * MiB)]
    segments = [seg(q, 30 * MiB, [(0, 30 * MiB, 30 * MiB, "active_allocated")]),
                seg(t, 40 * MiB, [(0, 40 * MiB, 40 * MiB, "active_allocated")])]
    return with_settings(segments, [trace])


def addresses_snapshot():
    """Two 20 MiB segments whose cudaMalloc addresses run downwards (Y below X), each with a free
    11 MiB block: the 11 MiB request takes the one at the lower address, Y's.
      0-1 X; 9 MiB at X (11 MiB left, split); 2 11 MiB at X + 9 MiB (the whole rest)
      3-4 Y, below X; 9 MiB at Y; 5-6 X + 9 MiB freed: X's and Y's free 11 MiB tie
      7 11 MiB: the tie broken by address: Y + 9 MiB
      8-9 X's 9 MiB freed: X whole and free; 10 empty_cache(): X released
    On addresses that rise with each cudaMalloc, the tie would go to X and nothing would be
    released at the end."""
    x, y = BASE + 0x40000000, BASE + 0x20000000
    trace = [entry("segment_alloc", x, 20 * MiB), entry("alloc", x, 9 * MiB),
             entry("alloc", x + 9 * MiB, 11 * MiB),
             entry("segment_alloc", y, 20 * MiB), entry("alloc", y, 9 * MiB)]
    trace += free(x + 9 * MiB, 11 * MiB)
    trace += [entry("alloc", y + 9 * MiB, 11 * MiB)]
    trace += free(x, 9 * MiB)
    trace += [entry("segment_free", x, 20 * MiB, frames=[FRAME_EMPTY_CACHE])]
    segments = [seg(y, 20 * MiB, [(0, 9 * MiB, 9 * MiB, "active_allocated"),
                                  (9 * MiB, 11 * MiB, 11 * MiB, "active_allocated")])]
    return with_settings(segments, [trace])


def streams_snapshot():
    """Two streams: a cached block is never handed to another stream; a free requested on one
    stream completes only when the other's work is done.
      0-1 P for stream 0, 256 KiB; 2-3 Q for the side stream, 256 KiB
      4-5 P's block freed; 6 128 KiB on the side stream: from Q, not P
      7 128 KiB on stream 0: from P; 8 Q's first block: free requested (record_stream)
      9 256 KiB on the side stream: Q's first block is not free yet: Q + 384 KiB
      10 its free completes"""
    p, q = BASE, BASE + 0x10000000
    side = STREAM_SIDE
    trace = [entry("segment_alloc", p, 2 * MiB), entry("alloc", p, 256 * KiB),
             entry("segment_alloc", q, 2 * MiB, side), entry("alloc", q, 256 * KiB, side)]
    trace += free(p, 256 * KiB)
    trace += [entry("alloc", q + 256 * KiB, 128 * KiB, side), entry("alloc", p, 128 * KiB),
              entry("free_requested", q, 256 * KiB, side),
              entry("alloc", q + 384 * KiB, 256 * KiB, side),
              entry("free_completed", q, 256 * KiB, side)]
    segments = [seg(p, 2 * MiB, [(0, 128 * KiB, 128 * KiB, "active_allocated"),
                                 (128 * KiB, 1920 * KiB, 0, "inactive")], kind="small"),
                seg(q, 2 * MiB, [(0, 256 * KiB, 0, "inactive"),
                                 (256 * KiB, 128 * KiB, 128 * KiB, "active_allocated"),
                                 (384 * KiB, 256 * KiB, 256 * KiB, "active_allocated"),
                                 (640 * KiB, 1408 * KiB, 0, "inactive")], stream=side,
                    kind="small")]
    return with_settings(segments, [trace])


def expandable_snapshot():
    """expandable_segments:True. The large pool's segment E of stream 0 has a page (20 MiB)
    mapped from before the recording, its first 2 MiB live; the side stream has none.
      0 4 MiB: from E's free 18 MiB, at E + 2 MiB (split: expandable segments split any rest)
      1 30 MiB: E's free 14 MiB and the unmapped space after it: one more page mapped at
        E + 20 MiB, the block at E + 6 MiB
      2-3 the 30 MiB freed; 4 empty_cache(): the page wholly free, E + 20 MiB, unmapped
      5 8 MiB: from E's free 14 MiB, at E + 6 MiB
      6 4 MiB on the side stream: a reservation of its own, F, its first page mapped"""
    e, f = BASE, BASE + 0x4000000000
    side = STREAM_SIDE
    trace = [entry("alloc", e + 2 * MiB, 4 * MiB),
             entry("segment_map", e + 20 * MiB, 20 * MiB), entry("alloc", e + 6 * MiB, 30 * MiB)]
    trace += free(e + 6 * MiB, 30 * MiB)
    trace += [entry("segment_unmap", e + 20 * MiB, 20 * MiB, frames=[FRAME_EMPTY_CACHE]),
              entry("alloc", e + 6 * MiB, 8 * MiB),
              entry("segment_map", f, 20 * MiB, side), entry("alloc", f, 4 * MiB, side)]
    segments = [seg(e, 20 * MiB, [(0, 2 * MiB, 2 * MiB, "active_allocated"),
                                  (2 * MiB, 4 * MiB, 4 * MiB, "active_allocated"),
                                  (6 * MiB, 8 * MiB, 8 * MiB, "active_allocated"),
                                  (14 * MiB, 6 * MiB, 0, "inactive")], expandable=True),
                seg(f, 20 * MiB, [(0, 4 * MiB, 4 * MiB, "active_allocated"),
                                  (4 * MiB, 16 * MiB, 0, "inactive")], stream=side,
                    expandable=True)]
    return with_settings(segments, [trace], conf="expandable_segments:True", expandable=True)


def devices_snapshot():
    """Two devices: device 0's trace is the longer, device 1's ends in an OOM (a 600 MiB request
    with 100 MiB reserved and 200 MiB free: 300 MiB in all)."""
    a = BASE
    trace0 = [entry("segment_alloc", a, 2 * MiB), entry("alloc", a, 4 * KiB)]
    for k in range(8):
        trace0 += [entry("alloc", a + (k + 1) * 4 * KiB, 4 * KiB)]
    b = BASE + 0x100000000
    trace1 = [entry("segment_alloc", b, 100 * MiB), entry("alloc", b, 100 * MiB),
              {"action": "oom", "device_free": 200 * MiB, "size": 600 * MiB,
               "stream": STREAM_MAIN, "frames": [], "time_us": 1_700_000_000_000_099}]
    segments = [seg(a, 2 * MiB, [(k * 4 * KiB, 4 * KiB, 4 * KiB, "active_allocated")
                                 for k in range(9)] +
                    [(36 * KiB, 2 * MiB - 36 * KiB, 0, "inactive")], kind="small"),
                seg(b, 100 * MiB, [(0, 100 * MiB, 100 * MiB, "active_allocated")], device=1)]
    return with_settings(segments, [trace0, trace1])


def v2_0_snapshot():
    """PyTorch 2.0's format: blocks with no address and a history of {addr, real_size}, trace
    entries without time_us, no allocator_settings, segments without is_expandable. Recorded
    after the model existed (its 5 MiB block in S2 live from before):
      0 4 MiB from S2's free 15 MiB, at B + 5 MiB; 1-2 a 30 MiB segment C; 3-4 C's block freed"""
    b, c = BASE + 0x10000000, BASE + 0x20000000
    old = lambda action, addr, size: {"action": action, "addr": addr, "size": size,
                                      "stream": 0, "frames": []}
    trace = [old("alloc", b + 5 * MiB, 4 * MiB), old("segment_alloc", c, 30 * MiB),
             old("alloc", c, 30 * MiB), old("free_requested", c, 30 * MiB),
             old("free_completed", c, 30 * MiB)]

    def block(addr, size, real, state):
        return {"size": size, "state": state,
                "history": [{"addr": addr, "real_size": real, "frames": []}] if real else []}

    segments = [{"device": 0, "address": b, "total_size": 20 * MiB, "allocated_size": 9 * MiB,
                 "active_size": 9 * MiB, "requested_size": 9 * MiB, "stream": 0,
                 "segment_type": "large",
                 "blocks": [block(b, 5 * MiB, 5 * MiB, "active_allocated"),
                            block(b + 5 * MiB, 4 * MiB, 4 * MiB, "active_allocated"),
                            block(b + 9 * MiB, 11 * MiB, 0, "inactive")]},
                {"device": 0, "address": c, "total_size": 30 * MiB, "allocated_size": 0,
                 "active_size": 0, "requested_size": 0, "stream": 0, "segment_type": "large",
                 "blocks": [block(c, 30 * MiB, 0, "inactive")]}]
    return {"segments": segments, "device_traces": [trace]}


def two_reservations_snapshot():
    """expandable_segments:True on a 24 GiB GPU: the small pool's reservation S and the large
    pool's L, 27 GiB above it, each with a page mapped before the recording (L's first 2 MiB
    live). On a larger device pinbench reserves more than 27 GiB for S: L's pages lie in S's
    range, and must stay L's when S goes.
      0-2 4 KiB from S's free page, freed; 3-5 4 MiB from L's free 18 MiB, freed
      6 empty_cache(): S's page is wholly free: unmapped (and S given back); L's first page
        holds the live block: nothing of it unmapped
      7-8 40 MiB: L's free 18 MiB and two more pages mapped after it, at L + 20 MiB
      9-11 freed; empty_cache(): the two pages, wholly free, unmapped"""
    small, large = BASE, BASE + 27 * (1 << 30)
    trace = [entry("alloc", small, 4 * KiB)] + free(small, 4 * KiB)
    trace += [entry("alloc", large + 2 * MiB, 4 * MiB)] + free(large + 2 * MiB, 4 * MiB)
    trace += [entry("segment_unmap", small, 2 * MiB, frames=[FRAME_EMPTY_CACHE]),
              entry("segment_map", large + 20 * MiB, 40 * MiB),
              entry("alloc", large + 2 * MiB, 40 * MiB)]
    trace += free(large + 2 * MiB, 40 * MiB)
    trace += [entry("segment_unmap", large + 20 * MiB, 40 * MiB, frames=[FRAME_EMPTY_CACHE])]
    segments = [seg(large, 20 * MiB, [(0, 2 * MiB, 2 * MiB, "active_allocated"),
                                      (2 * MiB, 18 * MiB, 0, "inactive")], expandable=True)]
    return with_settings(segments, [trace], conf="expandable_segments:True", expandable=True)


def fraction_snapshot():
    """PyTorch 2.10's format (user_metadata in the entries) with per_process_memory_fraction:0.9
    in PYTORCH_CUDA_ALLOC_CONF, which allocator_settings has no key for: 8 requests of 15 MiB, each
    a 16 MiB segment of its own (the 1 MiB left is not split off)."""
    trace = []
    for k in range(8):
        at = BASE + k * 0x10000000
        trace += [entry("segment_alloc", at, 16 * MiB), entry("alloc", at, 15 * MiB)]
    for e in trace:
        e["compile_context"] = "N/A"
        e["user_metadata"] = ""
    segments = [seg(BASE + k * 0x10000000, 16 * MiB, [(0, 16 * MiB, 15 * MiB, "active_allocated")])
                for k in range(8)]
    snap = with_settings(segments, [trace], conf="per_process_memory_fraction:0.9")
    snap["allocator_settings"]["graph_capture_record_stream_reuse"] = False
    return snap


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
    for name, make in (("start-state", start_state_snapshot), ("releases", releases_snapshot),
                       ("addresses", addresses_snapshot), ("streams", streams_snapshot),
                       ("expandable", expandable_snapshot), ("devices", devices_snapshot),
                       ("v2.0", v2_0_snapshot), ("two-reservations", two_reservations_snapshot),
                       ("fraction", fraction_snapshot)):
        write(f"snapshot-{name}.pickle", pickle.dumps(make(), protocol=4))
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
    overlapping = start_state_snapshot()
    overlapping["segments"].append(seg(BASE + MiB, 2 * MiB, [], kind="small"))
    write("bad/pickle-overlapping-segments.pickle", pickle.dumps(overlapping, protocol=4))
    huge = start_state_snapshot()
    huge["device_traces"][0][0]["addr"] = 1 << 62
    write("bad/pickle-huge-address.pickle", pickle.dumps(huge, protocol=4))
    write("bad/pickle-no-device-traces.pickle",
          pickle.dumps({"segments": [], "allocator_settings": settings()}, protocol=4))


if __name__ == "__main__":
    main()
