#!/usr/bin/env python3
"""Does pinbench's caching allocator decide as PyTorch's did? Compares, exactly, what
scripts/peer/torch_allocator.py measured in PyTorch with pinbench's replay of the snapshot
PyTorch wrote, and checks a `pinbench tune allocator` answer in PyTorch.

  compare_allocator.py replay-scenarios REF.json... --out-dir DIR [--name-suffix S]
      one allocator scenario per reference (workload trace, trace_file the reference's
      snapshot, the same config, memory fraction, device memory and PyTorch release), for
      `pinbench run`; prints the files' paths
  compare_allocator.py compare --reference REF.json... --pinbench NAME RESULT SNAPSHOTS...
                               [--out OUT.json]
      per reference, one line: memory_stats() equal to pinbench's (reserved, allocated,
      requested, inactive split bytes and segments, peak and current; num_alloc_retries,
      num_ooms), the sequence of segment decisions (segment_alloc/free/map/unmap with their
      sizes) in PyTorch's snapshot equal to that in pinbench's `--snapshot` trace, pinbench's
      own check (info.pytorch_decisions) reproduced, and every pinbench run (NAME: a backend)
      equal to the others; exit 1 on any mismatch
  compare_allocator.py answer TUNE.json
      the answer of a `pinbench tune allocator --out` result, three lines: its kind (export,
      keep, no-setting, not-found), the PYTORCH_CUDA_ALLOC_CONF it sets, the memory fraction it
      sets (empty: none); exit 1 where there is no tune answer
  compare_allocator.py oom-check --before REF.json --tune TUNE.json [--after REF.json]
                                 [--out OUT.json]
      the OOM `before` met, tune's answer, and `after` (the trace again with the answer under the
      same memory fraction): passed when `after` has no OOM, or when tune answered that no
      setting avoids it
  compare_allocator.py trace-scenario TRACE --name NAME --device-memory SIZE [--config TEXT]
                                      [--memory-cap SIZE | --memory-fraction F] --out FILE
      an allocator scenario replaying a pinbench.trace/1 trace (the rehearsal's stand-in for the
      peer: pinbench's own run of the trace, --snapshot X.pickle)
  compare_allocator.py stand-in RESULT.json PICKLE [--label L] --out REF.json
      a one-case pinbench result and its snapshot pickle as a reference in the peer's shape,
      marked as pinbench's own (a rehearsal without PyTorch compares pinbench with itself)
  compare_allocator.py snapshots PINBENCH SNAPSHOT.pickle... [--device-memory SIZE] [--out F]
      snapshots a program wrote (anyone's): each device trace with segment entries replayed by
      `pinbench run` under the snapshot's own settings (config "snapshot"), PyTorch's segment
      decisions against the replay's `--snapshot` trace; one line per trace, identical/total
      (the leading decisions equal in action and size) and the first difference; exit 1 when
      one is not identical

A reference is the peer's result (tool "torch-peer") or a stand-in; compare's output and
oom-check's are pinbench.allocator-peer/1 documents, which scripts/gpu_check_report.py merges
into pinbench.json and tabulates. Standard library only (the GPU machine has python3 and
PyTorch, none of our packages); snapshots are read as plain data (a pickle that would import
anything is refused).
"""

import argparse
import json
import os
import pickle
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pinbench_result import parse_bytes, parse_fraction, write_atomic  # noqa: E402

PROG = "compare_allocator"
SCHEMA = "pinbench.allocator-peer/1"
SCENARIO_PREFIX = "allocator-peer-"
# Compared exactly; a key missing on either side is a mismatch.
COMPARED = (
    "reserved_bytes.all.peak", "reserved_bytes.all.current",
    "allocated_bytes.all.peak", "allocated_bytes.all.current",
    "requested_bytes.all.peak", "requested_bytes.all.current",
    "inactive_split_bytes.all.peak", "inactive_split_bytes.all.current",
    "segment.all.peak", "segment.all.current",
    "num_alloc_retries", "num_ooms",
)
# Shown beside them where both sides have them; they do not decide the verdict.
ALSO_SHOWN = ("num_device_alloc", "num_device_free", "active_bytes.all.peak",
              "oversize_allocations.peak", "oversize_segments.peak", "num_sync_all_streams")
SEGMENT_ACTIONS = ("segment_alloc", "segment_free", "segment_map", "segment_unmap")
# Snapshot scenarios replay quickly and decide the same way every run: one observed run and a
# few timed ones are enough.
SAMPLING = {"warmup": 0, "min_samples": 1, "max_samples": 3, "max_noise": 1.0, "min_time": "0",
            "timeout": "2s"}


class Unreadable(Exception):
    pass


class OneLineParser(argparse.ArgumentParser):
    def error(self, message):
        print(f"{PROG}: error: {message} (see --help)", file=sys.stderr)
        sys.exit(2)


# ---- reading -------------------------------------------------------------------------------

def load_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise Unreadable(f"{path}: {e.strerror or e}") from None
    except ValueError as e:
        raise Unreadable(f"{path}: not JSON ({e})") from None


class PlainUnpickler(pickle.Unpickler):
    """PyTorch's snapshot is plain data: refuse anything that would import a global."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"refused: the pickle imports {module}.{name} (a "
                                     "snapshot is plain data)")


def load_pickle(path):
    try:
        with open(path, "rb") as f:
            return PlainUnpickler(f).load()
    except OSError as e:
        raise Unreadable(f"{path}: {e.strerror or e}") from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError) as e:
        raise Unreadable(f"{path}: not a snapshot pickle ({e})") from None


def only_case(doc, path):
    cases = [c for s in doc.get("scenarios", []) for c in s.get("cases", [])]
    if len(cases) != 1:
        raise Unreadable(f"{path}: expected one case, found {len(cases)}")
    return cases[0]


def as_fraction(value):
    return None if value in (None, "unset") else float(value)


def reference_of(path):
    """A reference (the peer's result or a stand-in) as a flat dict."""
    doc = load_json(path)
    if not isinstance(doc, dict):
        raise Unreadable(f"{path}: not a result document")
    case = only_case(doc, path)
    info = case.get("info", {})
    stand_in = doc.get("stand_in")
    return {
        "path": path,
        "label": case.get("id") or os.path.splitext(os.path.basename(path))[0],
        "kind": "stand-in" if stand_in else "pytorch",
        "stand_in": stand_in,
        "status": case.get("status"),
        "message": case.get("message"),
        "interrupted": bool(doc.get("interrupted")),
        "stats": info.get("memory_stats") or {},
        "snapshot": info.get("snapshot"),
        "config": info.get("config") or "",
        "memory_fraction": as_fraction(info.get("memory_fraction")),
        "memory_cap_bytes": info.get("memory_cap_bytes"),
        "device_total_bytes": info.get("device_total_bytes"),
        "device": int(info.get("device") or 0),
        "release": (info.get("pytorch") or {}).get("release"),
        "version": (info.get("pytorch") or {}).get("version"),
        "num_ooms": int(info.get("num_ooms") or 0),
        "first_oom_event": info.get("first_oom_event"),
        "trace_file": case.get("params", {}).get("trace_file"),
    }


def segment_decisions(trace):
    """(action, size) of each segment_alloc/free/map/unmap entry, in order."""
    return [(e.get("action"), e.get("size")) for e in trace
            if isinstance(e, dict) and e.get("action") in SEGMENT_ACTIONS]


def torch_decisions(snapshot, device=0):
    traces = snapshot.get("device_traces") if isinstance(snapshot, dict) else None
    if not isinstance(traces, list) or device >= len(traces):
        raise Unreadable(f"the snapshot has no trace for device {device} (no device_traces: "
                         "was memory history recorded?)")
    return segment_decisions(traces[device])


def pinbench_decisions(snapshots_doc, scenario):
    """From `pinbench run --snapshot FILE.json`: the decisions of `scenario`'s case."""
    for c in snapshots_doc.get("cases", []):
        if c.get("scenario") == scenario:
            traces = (c.get("snapshot") or {}).get("device_traces") or [[]]
            return segment_decisions(traces[0])
    return None


# ---- replay scenarios ----------------------------------------------------------------------

def scenario_name(label, suffix=""):
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", label).strip("-") or "case"
    return SCENARIO_PREFIX + slug + suffix


def replay_scenario(ref, suffix=""):
    if not ref["snapshot"]:
        raise Unreadable(f"{ref['path']}: the reference names no snapshot")
    if not ref["device_total_bytes"]:
        raise Unreadable(f"{ref['path']}: the reference names no device_total_bytes")
    params = {
        "workload": "trace",
        "trace_file": os.path.abspath(ref["snapshot"]),
        "trace_device": ref["device"],
        "config": ref["config"],
        "device_memory": int(ref["device_total_bytes"]),
    }
    if ref["memory_fraction"] is not None:
        params["memory_fraction"] = ref["memory_fraction"]
    if ref["release"]:
        params["pytorch"] = ref["release"]
    who = ("pinbench's own snapshot (rehearsal stand-in)" if ref["kind"] == "stand-in"
           else f"PyTorch {ref['version']}'s snapshot")
    return {
        "schema": "pinbench.scenario/1",
        "name": scenario_name(ref["label"], suffix),
        "description": f"{who} of {ref['label']}, replayed by pinbench's caching allocator "
                       "under the same setting (scripts/peer/compare_allocator.py)",
        "kind": "allocator",
        "params": params,
        "sampling": SAMPLING,
    }


def cmd_replay_scenarios(args):
    """One scenario file per readable reference (its path printed); an unreadable one is named
    on stderr and makes the exit 1, the others are still written."""
    os.makedirs(args.out_dir, exist_ok=True)
    rc = 0
    for path in args.references:
        try:
            sc = replay_scenario(reference_of(path), args.name_suffix)
        except Unreadable as e:
            print(f"{PROG}: replay-scenarios: left out: {e}", file=sys.stderr)
            rc = 1
            continue
        out = os.path.join(args.out_dir, sc["name"] + ".json")
        write_atomic(out, json.dumps(sc, indent=2) + "\n", ".scenario-", shared=True)
        print(out)
    return rc


def cmd_trace_scenario(args):
    params = {"workload": "trace", "trace_file": os.path.abspath(args.trace),
              "config": args.config, "device_memory": args.device_memory}
    if args.memory_cap is not None:
        params["memory_fraction"] = args.memory_cap / args.device_memory
    elif args.memory_fraction is not None:
        params["memory_fraction"] = args.memory_fraction
    sc = {"schema": "pinbench.scenario/1", "name": args.name,
          "description": f"pinbench's own replay of {os.path.basename(args.trace)} (config "
                         f"\"{args.config}\"): the stand-in for PyTorch's in a rehearsal",
          "kind": "allocator", "params": params, "sampling": SAMPLING}
    write_atomic(args.out, json.dumps(sc, indent=2) + "\n", ".scenario-", shared=True)
    return 0


def size_of(text):
    """A pinbench size param ("8GiB", "143771MiB", "1000", 4096) in bytes."""
    if isinstance(text, int):
        return text
    return parse_bytes(str(text))


def cmd_stand_in(args):
    doc = load_json(args.result)
    case = only_case(doc, args.result)
    info = case.get("info", {})
    params = case.get("params", {})
    stats = info.get("memory_stats") or {}
    release = (info.get("pytorch") or {}).get("release")
    label = args.label or case.get("id") or "stand-in"
    ref = {
        "schema": doc.get("schema"),
        "tool": doc.get("tool"),
        "created": doc.get("created"),
        "stand_in": "pinbench's own run of the trace and its --snapshot pickle (a rehearsal: "
                    "no PyTorch ran; this compares pinbench with itself)",
        "command_line": doc.get("command_line"),
        "interrupted": bool(doc.get("interrupted")),
        "environment": doc.get("environment"),
        "scenarios": [{
            "name": "pinbench-stand-in",
            "kind": "allocator",
            "cases": [{
                "id": label,
                "params": params,
                "status": case.get("status"),
                "info": {
                    "memory_stats": stats,
                    "pytorch": {"version": f"pinbench's rules of {release}", "release": release},
                    "config": info.get("config", params.get("config", "")),
                    "memory_fraction": as_fraction(info.get("memory_fraction")),
                    "device_total_bytes": size_of(params.get("device_memory", 0)),
                    "device": 0,
                    "num_ooms": int(stats.get("num_ooms", 0)),
                    "first_oom_event": None,
                    "snapshot": os.path.abspath(args.pickle),
                },
            }],
        }],
    }
    write_atomic(args.out, json.dumps(ref, indent=2) + "\n", ".stand-in-", shared=True)
    return 0


# ---- compare -------------------------------------------------------------------------------

def compare_stats(reference, runs):
    """Rows {name, reference, <run>: value, equal} for COMPARED and the ALSO_SHOWN keys both
    sides have; `runs` maps a run's name to its memory_stats."""
    rows = []
    for name in COMPARED + ALSO_SHOWN:
        decides = name in COMPARED
        values = {run: stats.get(name) for run, stats in runs.items()}
        if not decides and (name not in reference or any(v is None for v in values.values())):
            continue
        ref = reference.get(name)
        equal = ref is not None and all(v == ref for v in values.values())
        rows.append({"name": name, "reference": ref, **values, "equal": equal,
                     "decides": decides})
    return rows


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def describe(d):
    return f"{d[0]} {d[1]}" if d else "(none)"


def decisions_row(reference, theirs):
    if theirs is None:
        return {"count": None, "equal": False, "why": "no snapshot of this case in the run"}
    i = first_difference(reference, theirs)
    row = {"count": len(theirs), "equal": i is None}
    if i is not None:
        row["first_difference"] = {
            "index": i,
            "reference": describe(reference[i] if i < len(reference) else None),
            "pinbench": describe(theirs[i] if i < len(theirs) else None)}
    return row


def self_check_of(case):
    d = (case.get("info") or {}).get("pytorch_decisions")
    if not isinstance(d, dict):
        return {"checked": False, "why_not": "no info.pytorch_decisions"}
    keep = ("checked", "reproduced", "identical", "pytorch", "summary", "why_not",
            "first_divergence")
    out = {k: d[k] for k in keep if k in d}
    if isinstance(out.get("first_divergence"), dict):
        out["first_divergence"] = out["first_divergence"].get("text", out["first_divergence"])
    return out


def find_case(result, name):
    for s in result.get("scenarios", []):
        if s.get("name") == name and s.get("cases"):
            return s["cases"][0]
    return None


def case_for(result, ref):
    """The case of a pinbench run that replays the reference's snapshot: matched by its
    trace_file (any scenario name), else by the scenario name replay-scenarios gives."""
    want = os.path.realpath(ref["snapshot"]) if ref["snapshot"] else None
    for s in result.get("scenarios", []):
        for c in s.get("cases", []):
            tf = c.get("params", {}).get("trace_file")
            if want and tf and os.path.realpath(tf) == want:
                return s.get("name"), c
    return None, None


def compare_one(ref, runs):
    """runs: [(name, result doc, snapshots doc)]. Returns the comparison dict."""
    problems = []
    out = {"label": ref["label"], "reference": ref["kind"], "config": ref["config"],
           "memory_fraction": ref["memory_fraction"], "memory_cap_bytes": ref["memory_cap_bytes"],
           "device_total_bytes": ref["device_total_bytes"], "pytorch": ref["version"],
           "snapshot": ref["snapshot"], "reference_ooms": ref["num_ooms"],
           "reference_first_oom_event": ref["first_oom_event"], "runs": {}}
    if ref["status"] != "ok" or ref["interrupted"]:
        problems.append(f"the reference did not finish ({ref['message'] or 'interrupted'})")
    try:
        ref_decisions = torch_decisions(load_pickle(ref["snapshot"]), ref["device"]) \
            if ref["snapshot"] else None
    except Unreadable as e:
        ref_decisions = None
        problems.append(str(e))
    if ref_decisions is None and not problems:
        problems.append("the reference wrote no snapshot")
    out["reference_decisions"] = None if ref_decisions is None else len(ref_decisions)

    stats_by_run = {}
    decisions_by_run = {}
    for name, result, snapshots in runs:
        scenario, case = case_for(result, ref)
        if case is None:
            problems.append(f"{name}: no case replays {ref['snapshot']}")
            continue
        run = {"scenario": scenario, "status": case.get("status"),
               "self_check": self_check_of(case)}
        if case.get("status") != "ok":
            problems.append(f"{name}: the case {case.get('status')}: {case.get('message', '')}")
        stats_by_run[name] = (case.get("info") or {}).get("memory_stats") or {}
        theirs = pinbench_decisions(snapshots, scenario) if snapshots is not None else None
        decisions_by_run[name] = theirs
        if ref_decisions is not None:
            run["decisions"] = decisions_row(ref_decisions, theirs)
            if not run["decisions"]["equal"]:
                d = run["decisions"].get("first_difference")
                problems.append(f"{name}: segment decisions differ" + (
                    f" at #{d['index']}: reference {d['reference']}, pinbench {d['pinbench']}"
                    if d else f": {run['decisions'].get('why')}"))
        sc = run["self_check"]
        if not (sc.get("checked") and sc.get("reproduced")):
            why = sc.get("why_not") or sc.get("first_divergence") or sc.get("summary") or "?"
            problems.append(f"{name}: pinbench's own check: not reproduced ({why})")
        out["runs"][name] = run

    rows = compare_stats(ref["stats"], stats_by_run) if stats_by_run else []
    out["stats"] = rows
    for r in rows:
        if r["decides"] and not r["equal"]:
            values = ", ".join(f"{n} {r.get(n)}" for n in stats_by_run)
            problems.append(f"{r['name']}: reference {r['reference']}, {values}")
    # The runs against each other (a backend must not change a decision).
    names = list(stats_by_run)
    agree = True
    for other in names[1:]:
        a, b = stats_by_run[names[0]], stats_by_run[other]
        if any(a.get(k) != b.get(k) for k in COMPARED) or \
                decisions_by_run.get(names[0]) != decisions_by_run.get(other):
            agree = False
            problems.append(f"{names[0]} and {other} differ")
    out["runs_agree"] = agree and len(names) == len(runs)
    out["ok"] = not problems and len(names) == len(runs) and bool(runs)
    out["problems"] = problems
    out["verdict"] = verdict_line(out, ref, stats_by_run)
    return out


def verdict_line(out, ref, stats_by_run):
    who = "PyTorch's" if ref["kind"] == "pytorch" else "those of pinbench's own run (rehearsal)"
    setting = ref["config"] or "defaults"
    if ref["memory_fraction"] is not None:
        setting += f", fraction {ref['memory_fraction']:.6g}"
    if not out["ok"]:
        against = "PyTorch" if ref["kind"] == "pytorch" else "pinbench's own run (rehearsal)"
        return (f"{ref['label']} ({setting}): MISMATCH against {against}: "
                + "; ".join(out["problems"][:4])
                + (f" (+{len(out['problems']) - 4} more)" if len(out["problems"]) > 4 else ""))
    n = sum(1 for r in out["stats"] if r["decides"])
    runs = " and ".join(stats_by_run)
    checks = [run["self_check"] for run in out["runs"].values()]
    identical = all(c.get("identical") == c.get("pytorch") for c in checks)
    return (f"{ref['label']} ({setting}): OK: {n} statistics equal to {who} on {runs} "
            f"(reserved peak {ref['stats'].get('reserved_bytes.all.peak')} B, "
            f"{ref['num_ooms']} OOM(s)), {out['reference_decisions']} segment decisions "
            f"identical, pinbench's check reproduced"
            + ("" if identical else " (not every decision at the same address)"))


def cmd_compare(args):
    runs = []
    for name, result_path, snapshots_path in args.pinbench:
        try:
            result = load_json(result_path)
            snapshots = load_json(snapshots_path)
        except Unreadable as e:
            print(f"{PROG}: {name}: {e}", file=sys.stderr)
            result, snapshots = {"scenarios": []}, None
        runs.append((name, result, snapshots))
    comparisons = []
    for path in args.reference:
        try:
            ref = reference_of(path)
        except Unreadable as e:
            comparisons.append({"label": os.path.basename(path), "ok": False,
                                "problems": [str(e)], "verdict": f"{path}: unreadable: {e}"})
            continue
        comparisons.append(compare_one(ref, runs))
    for c in comparisons:
        print(f"{PROG}: {c['verdict']}")
    kinds = {c.get("reference") for c in comparisons if c.get("reference")}
    doc = {"schema": SCHEMA, "kind": "comparisons",
           "reference": "stand-in" if kinds == {"stand-in"} else "pytorch",
           "runs": [r[0] for r in runs], "compared": list(COMPARED),
           "comparisons": comparisons}
    if args.out:
        write_atomic(args.out, json.dumps(doc, indent=2) + "\n", ".compare-", shared=True)
    return 0 if comparisons and all(c["ok"] for c in comparisons) else 1


# ---- tune's answer -------------------------------------------------------------------------

ANSWER_EXPORT = re.compile(r"^\s*export\s+PYTORCH_CUDA_ALLOC_CONF=(\"\"|''|\S*)")
ANSWER_FRACTION = re.compile(
    r"^\s*torch\.cuda\.set_per_process_memory_fraction\(\s*([0-9.eE+-]+)\s*\)")


def parse_answer(text):
    """(kind, conf, fraction) of a tune answer: kind "export" (conf: the setting to export,
    fraction: set_per_process_memory_fraction's argument when the answer adds that line, else
    None), "keep" (the setting in use is already best), "no-setting" (none avoids the OOM),
    "not-found" (the search was cut short), "unknown"."""
    text = text or ""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = ANSWER_EXPORT.match(line)
        if m:
            conf = m.group(1)
            if conf in ('""', "''"):
                conf = ""
            fraction = None
            for rest in lines[i + 1:]:
                f = ANSWER_FRACTION.match(rest)
                if f:
                    fraction = float(f.group(1))
                    break
            return "export", conf, fraction
    first = lines[0].strip() if lines else ""
    if first.startswith("# keep"):
        return "keep", None, None
    if first.startswith("# no setting"):
        return "no-setting", None, None
    if first.startswith("# not found"):
        return "not-found", None, None
    return "unknown", None, None


def normal_conf(text):
    """A PYTORCH_CUDA_ALLOC_CONF as a comparable value: its options (split at the commas outside
    brackets) sorted, so that pinbench's way of writing a setting equals the answer's."""
    parts, depth, cur = [], 0, ""
    for ch in text or "":
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    out = []
    for p in parts:
        key, _, value = p.strip().partition(":")
        value = value.strip().replace(" ", "")
        try:
            value = repr(float(value))
        except ValueError:
            value = value.lower()
        if key.strip():
            out.append((key.strip(), value))
    return sorted(out)


def tune_answer(path):
    doc = load_json(path)
    tune = doc.get("tune") if isinstance(doc, dict) else None
    if not isinstance(tune, dict) or not isinstance(tune.get("answer"), str):
        raise Unreadable(f"{path}: no tune.answer (not a `pinbench tune --out` result)")
    return tune


def cmd_answer(args):
    try:
        tune = tune_answer(args.tune)
    except Unreadable as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    kind, conf, fraction = parse_answer(tune["answer"])
    print(kind)
    print("" if conf is None else conf)
    print("" if fraction is None else repr(fraction))
    return 0


def cmd_oom_check(args):
    problems = []
    before = after = tune = None
    try:
        before = reference_of(args.before)
    except Unreadable as e:
        problems.append(f"before: {e}")
    try:
        tune = tune_answer(args.tune)
    except Unreadable as e:
        problems.append(f"tune: {e}")
    kind, conf, fraction = parse_answer(tune["answer"]) if tune else ("unknown", None, None)
    if args.after:
        try:
            after = reference_of(args.after)
        except Unreadable as e:
            problems.append(f"after: {e}")
    who = "PyTorch" if (before or {}).get("kind") == "pytorch" else \
        "pinbench's own run (rehearsal)"
    if before and before["num_ooms"] == 0:
        problems.append(f"no OOM to tune: {who} replayed the trace without one under "
                        f"fraction {before['memory_fraction']}")
    if kind == "export":
        if after is None:
            problems.append("the answer was not tried (no --after)")
        else:
            if after["status"] != "ok" or after["interrupted"]:
                problems.append(f"the rerun did not finish ({after['message'] or 'interrupted'})")
            if after["num_ooms"]:
                problems.append(f"the answer still runs out of memory: {after['num_ooms']} "
                                f"OOM(s), the first at events[{after['first_oom_event']}]")
            if before and after["memory_fraction"] != (fraction if fraction is not None
                                                       else before["memory_fraction"]):
                problems.append(f"the rerun's memory fraction {after['memory_fraction']} is not "
                                f"the one asked ({fraction or before['memory_fraction']})")
            if normal_conf(after["config"]) != normal_conf(conf):
                problems.append(f"the rerun's setting \"{after['config']}\" is not the answer's "
                                f"\"{conf}\"")
    elif kind != "no-setting":
        problems.append(f"tune gave no setting to try ({kind}): "
                        f"{(tune or {}).get('answer', '?').splitlines()[0] if tune else '?'}")
    ok = not problems
    if before:
        if not before["num_ooms"]:
            met = "no OOM"
        elif before["first_oom_event"] is not None:
            met = f"OOM at events[{before['first_oom_event']}]"
        else:
            met = f"{before['num_ooms']} OOM(s)"
        head = (f"{who} with {before['config'] or 'defaults'} under memory fraction "
                f"{before['memory_fraction']}: {met}")
    else:
        head = "the OOM run is unreadable"
    if kind == "export":
        tail = (f"tune answered {conf or 'defaults'}"
                + (f" with fraction {fraction}" if fraction is not None else "")
                + (f"; {who} with it: {after['num_ooms']} OOM(s)" if after else ""))
    else:
        tail = f"tune answered: {(tune or {}).get('answer', '?').splitlines()[0] if tune else '?'}"
    verdict = f"oom: {head}; {tail}: " + ("passed" if ok else "FAILED: " + "; ".join(problems))
    print(f"{PROG}: {verdict}")
    doc = {"schema": SCHEMA, "kind": "oom-check",
           "reference": (before or {}).get("kind", "pytorch"),
           "oom_check": {"ok": ok, "verdict": verdict, "problems": problems,
                         "answer_kind": kind, "answer": (tune or {}).get("answer"),
                         "conf": conf, "fraction": fraction, "goal_met": (tune or {}).get("goal_met"),
                         "before": {k: before[k] for k in ("label", "config", "memory_fraction",
                                                            "memory_cap_bytes", "num_ooms",
                                                            "first_oom_event")} if before else None,
                         "after": {k: after[k] for k in ("label", "config", "memory_fraction",
                                                          "num_ooms", "first_oom_event")}
                         if after else None}}
    if args.out:
        write_atomic(args.out, json.dumps(doc, indent=2) + "\n", ".oom-check-", shared=True)
    return 0 if ok else 1


# ---- main ----------------------------------------------------------------------------------

def cmd_snapshots(args):
    """Each device trace of each snapshot, replayed and compared (see the usage)."""
    import subprocess
    import tempfile
    rows, failed = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        for path in args.snapshots:
            snapshot = load_pickle(path)
            traces = snapshot.get("device_traces") if isinstance(snapshot, dict) else None
            if not isinstance(traces, list):
                raise Unreadable(f"{path}: no device_traces (was memory history recorded?)")
            for device, trace in enumerate(traces):
                theirs = segment_decisions(trace or [])
                if not theirs:
                    continue
                scenario = os.path.join(tmp, "replay.json")
                out, snaps = os.path.join(tmp, "r.json"), os.path.join(tmp, "s.json")
                with open(scenario, "w", encoding="utf-8") as f:
                    json.dump({"schema": "pinbench.scenario/1", "name": "replay",
                               "kind": "allocator",
                               "params": {"workload": "trace", "trace_file": os.path.abspath(path),
                                          "trace_device": device, "config": "snapshot",
                                          "device_memory": args.device_memory},
                               "sampling": {"warmup": 0, "min_samples": 1, "max_samples": 1}}, f)
                run = subprocess.run([args.pinbench, "run", scenario, "--backend", "host", "-q",
                                      "--out", out, "--snapshot", snaps],
                                     capture_output=True, text=True)
                row = {"snapshot": path, "device": device, "pytorch": len(theirs)}
                if run.returncode != 0:
                    row.update(identical=0, error=run.stderr.strip().splitlines()[-1:])
                else:
                    ours = pinbench_decisions(load_json(snaps), "replay") or []
                    i = first_difference(theirs, ours)
                    row["identical"] = len(theirs) if i is None else i
                    if i is not None:
                        row["first_difference"] = {
                            "index": i, "pytorch": describe(theirs[i] if i < len(theirs) else None),
                            "pinbench": describe(ours[i] if i < len(ours) else None)}
                    info = only_case(load_json(out), out).get("info", {})
                    row["check"] = (info.get("pytorch_decisions") or {}).get("summary")
                failed += row["identical"] != row["pytorch"]
                rows.append(row)
                tail = "" if row["identical"] == row["pytorch"] else (
                    f"  first difference: {row.get('first_difference') or row.get('error')}")
                print(f"{path}@{device}: {row['identical']}/{row['pytorch']}{tail}")
    if args.out:
        write_atomic(args.out, json.dumps({"schema": "pinbench.snapshot-sweep/1", "traces": rows},
                                          indent=1) + "\n", prefix=".sweep-")
    print(f"{len(rows) - failed} of {len(rows)} device traces identical")
    return 1 if failed else 0


def main(argv=None):
    ap = OneLineParser(prog=PROG, description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    r = sub.add_parser("replay-scenarios")
    r.add_argument("references", nargs="+")
    r.add_argument("--out-dir", required=True)
    r.add_argument("--name-suffix", default="")
    c = sub.add_parser("compare")
    c.add_argument("--reference", nargs="+", required=True)
    c.add_argument("--pinbench", nargs=3, action="append", required=True,
                   metavar=("NAME", "RESULT", "SNAPSHOTS"))
    c.add_argument("--out")
    a = sub.add_parser("answer")
    a.add_argument("tune")
    o = sub.add_parser("oom-check")
    o.add_argument("--before", required=True)
    o.add_argument("--tune", required=True)
    o.add_argument("--after")
    o.add_argument("--out")
    t = sub.add_parser("trace-scenario")
    t.add_argument("trace")
    t.add_argument("--name", required=True)
    t.add_argument("--device-memory", type=parse_bytes, required=True)
    t.add_argument("--config", default="")
    g = t.add_mutually_exclusive_group()
    g.add_argument("--memory-cap", type=parse_bytes)
    g.add_argument("--memory-fraction", type=parse_fraction)
    t.add_argument("--out", required=True)
    s = sub.add_parser("stand-in")
    s.add_argument("result")
    s.add_argument("pickle")
    s.add_argument("--label")
    s.add_argument("--out", required=True)
    w = sub.add_parser("snapshots")
    w.add_argument("pinbench")
    w.add_argument("snapshots", nargs="+")
    w.add_argument("--device-memory", default="192GiB")
    w.add_argument("--out")
    args = ap.parse_args(argv)
    handlers = {"replay-scenarios": cmd_replay_scenarios, "compare": cmd_compare,
                "answer": cmd_answer, "oom-check": cmd_oom_check,
                "trace-scenario": cmd_trace_scenario, "stand-in": cmd_stand_in,
                "snapshots": cmd_snapshots}
    try:
        return handlers[args.command](args)
    except Unreadable as e:
        print(f"{PROG}: {args.command}: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
