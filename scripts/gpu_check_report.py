#!/usr/bin/env python3
"""The two pieces of scripts/gpu-check.sh that want more than shell: merging result files and
writing summary.md.

  gpu_check_report.py merge OUT IN...     one pinbench.result/1 document from several (the first
                                          one's head and environment, every scenario of each;
                                          missing or unreadable inputs are left out and named)
  gpu_check_report.py summary OUT --steps STEPS.tsv --pinbench PB.json --torch TORCH.json
                          [--env ENV.txt] [--junit TESTS.xml] [--rehearse]

Standard library only: the GPU machine has python3 (PyTorch's) but none of our packages.
Every figure in the summary is read from the result files, with its backend beside it.
"""

import argparse
import json
import os
import sys
import tempfile
import xml.etree.ElementTree as ET


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        return doc if isinstance(doc, dict) else None
    except (OSError, ValueError):
        return None


def write_atomic(path, text):
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".gpu-check-", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


# ---- merge ---------------------------------------------------------------------------------

ALLOCATOR_PEER = "pinbench.allocator-peer/1"


def merge(out, inputs):
    merged, commands, missing = None, [], []
    peer = None  # scripts/peer/compare_allocator.py's verdicts, kept in one block
    for path in inputs:
        doc = load(path)
        if doc is None:
            missing.append(os.path.basename(path))
            continue
        if doc.get("schema") == ALLOCATOR_PEER:
            if peer is None:
                peer = {"reference": doc.get("reference"), "comparisons": [], "oom_checks": []}
            if doc.get("reference") == "stand-in":
                peer["reference"] = "stand-in"
            peer["comparisons"].extend(doc.get("comparisons", []))
            if isinstance(doc.get("oom_check"), dict):
                peer["oom_checks"].append(doc["oom_check"])
            continue
        if merged is None:
            merged = dict(doc)
            merged["scenarios"] = []
        merged["scenarios"].extend(doc.get("scenarios", []))
        # A tune's answer is its own block: kept, one per tune, beside the scenarios.
        if isinstance(doc.get("tune"), dict):
            merged.setdefault("tunes", []).append(doc["tune"])
        merged["interrupted"] = bool(merged.get("interrupted")) or bool(doc.get("interrupted"))
        if doc.get("command_line"):
            commands.append(doc["command_line"])
        # Warnings of every run, each once: they say how the figures were taken.
        env, other = merged.setdefault("environment", {}), doc.get("environment", {})
        warnings = env.setdefault("warnings", [])
        for w in other.get("warnings", []):
            if w not in warnings:
                warnings.append(w)
    if merged is None:
        print(f"gpu_check_report: merge: no readable input among {', '.join(inputs)}",
              file=sys.stderr)
        return 1
    merged["command_line"] = " ; ".join(commands)
    if peer is not None:
        merged["allocator_peer"] = peer
    write_atomic(out, json.dumps(merged, indent=2) + "\n")
    if missing:
        print(f"gpu_check_report: merge: left out (missing or unreadable): {', '.join(missing)}",
              file=sys.stderr)
    return 0


# ---- summary -------------------------------------------------------------------------------

def cases(doc, scenario=None):
    for s in (doc or {}).get("scenarios", []):
        if scenario is None or s.get("name") == scenario:
            for c in s.get("cases", []):
                yield s, c


def median(case, name):
    m = case.get("metrics", {}).get(name)
    if not m or case.get("status") != "ok":
        return None
    return m.get("summary", {}).get("median")


def fmt(value, digits=2, scale=1.0):
    return "-" if value is None else f"{value * scale:.{digits}f}"


def table(headers, rows):
    if not rows:
        return "_(no data)_\n"
    out = "| " + " | ".join(headers) + " |\n|" + "|".join("---" for _ in headers) + "|\n"
    for r in rows:
        out += "| " + " | ".join(str(x).replace("|", "\\|") for x in r) + " |\n"
    return out


def backend_of(doc):
    return (doc or {}).get("environment", {}).get("backend", "?")


def transfer_key(case, mode_default="non_blocking"):
    p = case.get("params", {})
    return (p.get("direction", "h2d"), p.get("memory", "pinned"), p.get("mode", mode_default),
            str(p.get("bytes")))


def size_order(text):
    units = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
    for u, f in units.items():
        if text.endswith(u) and text[:-len(u)].isdigit():
            return int(text[:-len(u)]) * f
    return int(text) if text.isdigit() else 0


def bandwidth_section(pb, th):
    ours = {transfer_key(c): c for _, c in cases(pb, "transfer-size")}
    theirs = {transfer_key(c): c for s, c in cases(th) if s.get("kind") == "transfer"}
    keys = sorted(set(ours) | {k for k in theirs if k[2] == "non_blocking"},
                  key=lambda k: (k[0], k[1], k[2], size_order(k[3])))
    rows = []
    for k in keys:
        a, b = ours.get(k), theirs.get(k)
        bw_a = median(a, "bandwidth") if a else None
        bw_b = median(b, "bandwidth") if b else None
        ratio = f"{bw_a / bw_b:.2f}" if bw_a and bw_b else "-"
        batch = (a or {}).get("info", {}).get("copies_per_sample", "-")
        link = median(a, "link_fraction") if a else None
        rows.append([k[0], k[1], k[2], k[3], fmt(bw_a), fmt(link, 1, 100), fmt(bw_b), ratio, batch,
                     (a or {}).get("info", {}).get("timing", (a or {}).get("message", "-"))])
    return ("### Bandwidth by size, GB/s (median): pinbench `transfer-size` | torch peer\n\n"
            f"pinbench backend: {backend_of(pb)}; torch backend: {backend_of(th) if th else 'not run'}\n\n"
            + "ceiling (the `% of link` column): "
            + ", ".join(sorted(ceilings(pb, "transfer-size")) or ["-"]) + "\n\n"
            + table(["dir", "memory", "mode", "bytes", "pinbench", "% of link", "torch", "ratio",
                     "copies/sample", "pinbench timing"], rows))


def ceilings(doc, scenario):
    """The link ceilings' sources (or reasons) the scenario's cases name, once each."""
    out = set()
    for _, c in cases(doc, scenario):
        lc = c.get("info", {}).get("link_ceiling") or {}
        text = lc.get("source") or lc.get("reason")
        if text and text.startswith("host memcpy"):
            out.add("a host memcpy of each case's size, measured in the run (info.link_ceiling)")
        elif text:
            out.add(text.split(";")[0])
    return out


def judge_section(pb):
    """Per scenario: clocks, throttling and NUMA placement, so a figure can be judged."""
    rows = []
    peer_replays = 0
    for s in (pb or {}).get("scenarios", []):
        # The allocator-peer step's replays: counters compared in their own table.
        if s.get("name", "").startswith("allocator-peer-"):
            peer_replays += 1
            continue
        watched = throttled = discarded = placed = numa_cases = 0
        reasons, sm, nodes = set(), [], set()
        note = "-"
        for c in s.get("cases", []):
            info = c.get("info", {})
            t = info.get("telemetry") or {}
            if "before" in t:
                watched += 1
                throttled += bool(t.get("throttled"))
                discarded += int(t.get("discarded_samples") or 0)
                reasons.update(t.get("reasons_seen") or [])
                for when in ("before", "after"):
                    snap = t.get(when) or {}
                    if snap.get("sm_clock_mhz") is not None:
                        sm.append((snap["sm_clock_mhz"], snap.get("sm_clock_max_mhz")))
            elif t.get("reason"):
                note = t["reason"]
            n = info.get("numa")
            if n:
                numa_cases += 1
                placed += bool(n.get("placed"))
                nodes.add(str(n.get("node")))
        clocks = "-"
        if sm:
            lo, hi = min(v for v, _ in sm), max(v for v, _ in sm)
            top = max((m for _, m in sm if m), default=None)
            clocks = f"{lo}-{hi} of {top}" if top else f"{lo}-{hi}"
        rows.append([s.get("name"), f"{watched}/{len(s.get('cases', []))}" if watched else note,
                     clocks, throttled, ", ".join(sorted(reasons)) or "-", discarded,
                     f"{placed}/{numa_cases} on node {','.join(sorted(nodes))}" if numa_cases
                     else "-"])
    return ("### Can the figures be trusted? Clocks, throttling, NUMA (per scenario)\n\n"
            "SM clocks are NVML's before and after each case (MHz, of the maximum); an idle GPU "
            "reads low between cases. Throttled: cases during which a power, thermal or HW "
            "slowdown reason was seen.\n\n"
            + table(["scenario", "cases watched", "sm clock MHz", "throttled", "reasons seen",
                     "samples discarded", "numa placed"], rows)
            + (f"\n_({peer_replays} allocator-peer-* scenarios left out: their counters are "
               "compared in \"allocator: PyTorch vs pinbench\")_\n" if peer_replays else ""))


def host_call_section(pb):
    rows = []
    for s, c in cases(pb):
        if s.get("kind") != "transfer" or s.get("name") not in ("transfer-modes", "transfer-size"):
            continue
        p = c.get("params", {})
        if p.get("mode", "non_blocking") != "non_blocking":
            continue
        if s.get("name") == "transfer-size" and str(p.get("bytes")) != "256MiB":
            continue
        rows.append([s["name"], p.get("direction", "h2d"), p.get("memory"), p.get("bytes"),
                     fmt(median(c, "host_call_time"), 1, 1e-3), fmt(median(c, "copy_time"), 1, 1e-3)])
    return ("### How long `non_blocking` holds the caller, per memory kind (median, us)\n\n"
            f"backend: {backend_of(pb)}\n\n"
            + table(["scenario", "dir", "memory", "bytes", "host_call_time us", "copy_time us"],
                    rows))


def allocator_section(pb):
    rows = []
    for s, c in cases(pb):
        # The allocator-peer step's replays have their own table.
        if s.get("kind") != "allocator" or s.get("name", "").startswith("allocator-peer-"):
            continue
        if c.get("status") != "ok":
            rows.append([s["name"], c.get("id") or "(default)", c.get("status"), "-", "-", "-",
                         "-"])
            continue
        rows.append([s["name"], c.get("id") or "(default)", "ok",
                     fmt(median(c, "alloc_latency"), 0), fmt(median(c, "free_latency"), 0),
                     fmt(median(c, "num_device_alloc"), 0), fmt(median(c, "num_ooms"), 0)])
    return ("### Allocator: caching vs raw cudaMalloc (median per call, ns)\n\n"
            f"backend: {backend_of(pb)}\n\n"
            + table(["scenario", "case", "status", "alloc ns", "free ns", "device allocs",
                     "OOMs"], rows))


def peer_value(row, run):
    v = row.get(run)
    return "-" if v is None else str(v)


def allocator_peer_section(pb, rehearse):
    """The allocator-peer step: PyTorch's caching allocator (scripts/peer/torch_allocator.py)
    against pinbench's replay of the snapshot PyTorch wrote, exactly; in a rehearsal, pinbench's
    own snapshot stands in for PyTorch's and the table says so."""
    block = (pb or {}).get("allocator_peer")
    head = "### allocator: PyTorch vs pinbench\n\n"
    if not isinstance(block, dict):
        return head + "_(no comparison: see the allocator-peer step)_\n"
    stand_in = block.get("reference") == "stand-in"
    ref_name = "pinbench's own run" if stand_in else "PyTorch"
    if stand_in:
        head += ("**Rehearsal on pinbench's own snapshots: no PyTorch ran.** Each reference "
                 "below is pinbench's own run of the trace (`pinbench run --snapshot X.pickle`), "
                 "replayed again by pinbench: this proves the step's plumbing (snapshots, "
                 "replays, comparison, tune and its answer), not that pinbench decides as "
                 "PyTorch does.\n\n")
    else:
        head += ("PyTorch's caching allocator replayed each trace (`scripts/peer/"
                 "torch_allocator.py`: caching_allocator_alloc/delete, memory history "
                 "recorded); pinbench replayed the snapshot PyTorch wrote on each backend. "
                 "Every statistic is compared exactly; the segment decisions are the "
                 "snapshot's segment_alloc/free/map/unmap entries with their sizes.\n\n")
    rows = []
    for c in block.get("comparisons", []):
        stats = {r.get("name"): r for r in c.get("stats", [])}
        runs = list((c.get("runs") or {}).keys())
        peak = stats.get("reserved_bytes.all.peak", {})
        fraction = c.get("memory_fraction")
        decided = [r for r in c.get("stats", []) if r.get("decides")]
        equal = sum(1 for r in decided if r.get("equal"))
        decisions = []
        for run in runs:
            d = (c["runs"][run] or {}).get("decisions") or {}
            decisions.append(f"{run} {'=' if d.get('equal') else '≠'}")
        checks = []
        for run in runs:
            sc = (c["runs"][run] or {}).get("self_check") or {}
            checks.append(f"{run} {sc.get('identical', '-')}/{sc.get('pytorch', '-')}"
                          + ("" if sc.get("reproduced") else " NOT reproduced"))
        rows.append([
            c.get("label", "?"), c.get("config") or "(defaults)",
            "-" if fraction is None else f"{fraction:.6g}",
            peak.get("reference", "-"),
            " / ".join(peer_value(peak, r) for r in runs) or "-",
            f"{equal}/{len(decided)}",
            f"{c.get('reference_decisions', '-')} ({', '.join(decisions) or '-'})",
            "; ".join(checks) or "-",
            c.get("reference_ooms", "-"),
            "ok" if c.get("ok") else "MISMATCH: " + "; ".join(c.get("problems", [])[:2]),
        ])
    run_names = []
    for c in block.get("comparisons", []):
        for run in (c.get("runs") or {}):
            if run not in run_names:
                run_names.append(run)
    out = head + table(
        ["setting", "config", "memory fraction", f"reserved peak ({ref_name})",
         f"reserved peak (pinbench: {' / '.join(run_names) or '-'})", "stats equal",
         "segment decisions", "pinbench's own check (identical/decisions)", "OOMs", "verdict"],
        rows)
    for o in block.get("oom_checks", []):
        out += f"\n- {'passed' if o.get('ok') else 'FAILED'}: {o.get('verdict', '?')}\n"
    if rehearse and not stand_in:
        out += "\n_(a rehearsal whose references are not marked as stand-ins: check the step)_\n"
    return out


def loader_section(pb, th):
    rows = []
    for s, c in cases(pb):
        if s.get("kind") != "loader" or s.get("name") == "loader-peer":
            continue
        rows.append([s["name"], c.get("id") or "(default)", c.get("status"),
                     fmt(median(c, "gpu_busy"), 2), fmt(median(c, "samples_per_s"), 0)])
    out = ("### Loader built-ins: share of time the device was busy (median)\n\n"
           f"backend: {backend_of(pb)}\n\n"
           + table(["scenario", "case", "status", "gpu_busy", "samples/s"], rows))
    # gpu-check runs loader-peer twice: as built (pin_memory off) and with pin_memory on, as
    # the torch peer runs on a CUDA device; the pinned one is compared.
    ours = {c.get("id"): c for _, c in cases(pb, "loader-peer")
            if c.get("params", {}).get("pin_memory") is True}
    theirs = {c.get("id"): c for s, c in cases(th) if s.get("kind") == "loader"}
    peer_rows = []
    for k in sorted(set(ours) | set(theirs)):
        a, b = median(ours.get(k, {}), "samples_per_s"), median(theirs.get(k, {}), "samples_per_s")
        peer_rows.append([k, fmt(a, 0), fmt(b, 0), f"{a / b:.2f}" if a and b else "-"])
    out += ("\n### Loader alone, pin_memory on: pinbench `loader-peer` | torch DataLoader "
            "(samples/s, median)\n\n"
            + table(["case", "pinbench", "torch", "ratio"], peer_rows))
    return out


def differences_section(th):
    lines = []
    for s in (th or {}).get("scenarios", []):
        for d in s.get("differences", []):
            lines.append(f"- ({s.get('name')}) {d}")
    if not lines:
        return ""
    return "### What still differs between the two methods\n\n" + "\n".join(lines) + "\n"


def tests_section(junit):
    if not junit or not os.path.exists(junit):
        return "### GPU tests\n\n_(no JUnit report: see the step table)_\n"
    try:
        root = ET.parse(junit).getroot()
    except ET.ParseError as e:
        return f"### GPU tests\n\n_(the JUnit report does not parse: {e})_\n"
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    total = failed = skipped = 0
    failures = []
    for suite in suites:
        for tc in suite.iter("testcase"):
            total += 1
            bad = tc.find("failure") if tc.find("failure") is not None else tc.find("error")
            if bad is not None:
                failed += 1
                text = (bad.get("message") or bad.text or "").strip().splitlines()
                failures.append(f"- {tc.get('name')}: {text[0] if text else ''}")
            elif tc.find("skipped") is not None:
                skipped += 1
    out = f"### GPU tests\n\n{total} test cases, {failed} failed, {skipped} skipped.\n"
    return out + ("\n" + "\n".join(failures) + "\n" if failures else "")


def tune_section(pb):
    tunes = (pb or {}).get("tunes", [])
    if not tunes:
        return ""
    out = "### pinbench tune\n\n"
    for t in tunes:
        chosen = t.get("chosen")
        trials = t.get("trials", [])
        evidence = trials[chosen].get("note", "") if isinstance(chosen, int) and chosen < len(trials) else ""
        out += (f"- **{t.get('question', '?')}** (goal met: {t.get('goal_met')}, "
                f"{len(trials)} trials, {t.get('elapsed_s', 0):.1f} s): `{t.get('answer', '').replace(chr(10), ' ; ')}`"
                f"{' — ' + evidence if evidence else ''}\n  {t.get('verdict', '')}\n")
    return out


def summary(args):
    pb, th = load(args.pinbench), load(args.torch)
    steps = []
    if args.steps and os.path.exists(args.steps):
        with open(args.steps, encoding="utf-8") as f:
            steps = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    device = (pb or {}).get("environment", {}).get("device", {})
    head = "# gpu-check summary\n\n"
    if args.rehearse:
        head += ("**REHEARSAL on the host backend: no figure below is a GPU figure.** It proves "
                 "the script's steps, budgets and files.\n\n")
    head += table(["what", "value"], [
        ["device", device.get("name", "?")],
        ["driver / runtime", f"{device.get('driver')} / {device.get('runtime')}"],
        ["pcie", json.dumps(device.get("pcie")) if device.get("pcie") else "-"],
        ["pinbench", f"{(pb or {}).get('tool', {}).get('version', '?')} "
                     f"({(pb or {}).get('tool', {}).get('git', '?')})"],
        ["backend", backend_of(pb)],
        ["created", (pb or {}).get("created", "?")],
    ])
    head += "\n### Steps\n\n" + table(["step", "status", "seconds", "budget s"], steps)
    parts = [head, tests_section(args.junit), judge_section(pb), bandwidth_section(pb, th),
             host_call_section(pb),
             allocator_section(pb), allocator_peer_section(pb, args.rehearse),
             loader_section(pb, th), tune_section(pb),
             differences_section(th)]
    write_atomic(args.out, "\n".join(p for p in parts if p))
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    m = sub.add_parser("merge")
    m.add_argument("out")
    m.add_argument("inputs", nargs="+")
    s = sub.add_parser("summary")
    s.add_argument("out")
    s.add_argument("--steps")
    s.add_argument("--pinbench")
    s.add_argument("--torch")
    s.add_argument("--junit")
    s.add_argument("--rehearse", action="store_true")
    args = ap.parse_args(argv)
    if args.command == "merge":
        return merge(args.out, args.inputs)
    return summary(args)


if __name__ == "__main__":
    sys.exit(main())
