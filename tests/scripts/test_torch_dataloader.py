#!/usr/bin/env python3
"""Tests scripts/peer/torch_dataloader.py: bad arguments exit 2 with one line (no torch needed);
with torch, tiny sweeps write a pinbench.result/1 document with the cases and metrics pinbench's
loader kind writes, to a file or to stdout, and Ctrl-C writes the cases measured and exits 130.
Without torch the torch checks cannot run: exit 77, which ctest reports as skipped.
Exit 0 on success; otherwise a message per failed check and exit 1."""

import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "peer", "torch_dataloader.py")
SKIP = 77

# Never let a test run install packages, whatever the caller's environment says.
ENV = {k: v for k, v in os.environ.items() if k != "PINBENCH_INSTALL_TORCH"}

failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
    return condition


def run(*args, timeout=120):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                          env=ENV, timeout=timeout, check=False)


def check_argument_errors():
    bad = [
        (["--workers", "0,x"], "not an integer"),
        (["--workers", "0,,2"], "empty entry"),
        (["--workers", "2,2"], "appears twice"),
        (["--workers=-1"], ">= 0"),
        (["--cpu-per-sample", "200"], "not a duration"),
        (["--cpu-per-sample", "0us,2 parsecs"], "not a duration"),
        (["--sample-bytes", "12QB"], "not a size"),
        (["--sample-bytes", "0"], "positive"),
        (["--batch-size", "0"], ">= 1"),
        (["--runs", "many"], "not an integer"),
        (["--compute-per-batch", "fast"], "not a duration"),
        (["--device", "tpu"], "invalid choice"),
        (["--bogus"], "unrecognized"),
    ]
    for args, expected in bad:
        r = run(*args, "--out", os.devnull)
        lines = r.stderr.strip().splitlines()
        check(r.returncode == 2, f"{args}: exit {r.returncode}, expected 2; stderr {r.stderr!r}")
        check(len(lines) == 1, f"{args}: expected one line on stderr, got {r.stderr!r}")
        check(expected in r.stderr, f"{args}: stderr lacks {expected!r}: {r.stderr!r}")
        check(r.stdout == "", f"{args}: wrote to stdout: {r.stdout!r}")


def skip_without_torch(r):
    """exit 3 means no torch: skipped, never passed."""
    if r.returncode == 3 and "PyTorch is not importable" in r.stderr:
        for message in failures:
            print(f"FAIL: {message}", file=sys.stderr)
        if failures:
            sys.exit(1)
        print(f"SKIPPED: torch is not importable, so the measuring checks cannot run "
              f"({r.stderr.strip()})")
        sys.exit(SKIP)


def check_metric(where, m, unit, better, n=None):
    if not check(isinstance(m, dict), f"{where}: missing"):
        return
    check(m.get("unit") == unit, f"{where}: unit {m.get('unit')!r}, expected {unit!r}")
    check(m.get("better") == better, f"{where}: better {m.get('better')!r}, expected {better!r}")
    samples = m.get("samples") or []
    check(len(samples) > 0, f"{where}: no samples")
    if n is not None:
        check(len(samples) == n, f"{where}: {len(samples)} samples, expected {n}")
    s = m.get("summary", {})
    check(s.get("n") == len(samples), f"{where}: summary.n {s.get('n')} != {len(samples)}")
    if samples:
        check(abs(s.get("median", -1) - statistics.median(samples)) <= 1e-9 * max(samples),
              f"{where}: summary.median {s.get('median')} is not the samples' median")
        check(s.get("min") == min(samples) and s.get("max") == max(samples),
              f"{where}: summary min/max disagree with the samples")
        check(all(x >= 0 for x in samples), f"{where}: negative samples {samples}")


def check_tiny_sweep(tmp):
    out = os.path.join(tmp, "peer.json")
    r = run("--samples", "64", "--batch-size", "8", "--workers", "0,2", "--cpu-per-sample",
            "0us,50us", "--runs", "2", "--warmup", "0", "--pin-memory", "--out", out)
    skip_without_torch(r)
    if not check(r.returncode == 0, f"tiny sweep: exit {r.returncode}, stderr {r.stderr}"):
        return
    check(r.stdout == "", f"tiny sweep: stdout should be empty with --out FILE: {r.stdout!r}")
    check("samples/s" in r.stderr and "data_wait" in r.stderr,
          f"tiny sweep: no table on stderr: {r.stderr!r}")
    check(not any(n.startswith(".torch-dataloader-") for n in os.listdir(tmp)),
          "tiny sweep: temporary file left behind")
    with open(out, encoding="utf-8") as f:
        doc = json.load(f)

    check(doc.get("schema") == "pinbench.result/1", f"schema {doc.get('schema')!r}")
    check(doc.get("interrupted") is False, f"interrupted {doc.get('interrupted')!r}")
    env = doc.get("environment", {})
    backend = env.get("backend")
    check(backend in ("torch-cpu", "torch-cuda"), f"environment.backend {backend!r}")
    peer = env.get("peer", {})
    check(peer.get("name") == "torch.utils.data.DataLoader" and peer.get("torch"),
          f"environment.peer {peer!r}")
    check(isinstance(env.get("host", {}).get("cores"), int), f"environment.host {env.get('host')}")

    scenarios = doc.get("scenarios", [])
    if not check(len(scenarios) == 1, f"{len(scenarios)} scenarios, expected 1"):
        return
    s = scenarios[0]
    check(s.get("name") == "loader-peer" and s.get("kind") == "loader" and
          s.get("source") == "scripts/peer/torch_dataloader.py",
          f"scenario name/kind/source: {s.get('name')!r} {s.get('kind')!r} {s.get('source')!r}")
    ids = [c.get("id") for c in s.get("cases", [])]
    expected_ids = ["dataset.cpu_per_sample=0us,num_workers=0",
                    "dataset.cpu_per_sample=0us,num_workers=2",
                    "dataset.cpu_per_sample=50us,num_workers=0",
                    "dataset.cpu_per_sample=50us,num_workers=2"]
    check(ids == expected_ids, f"case ids {ids}, expected {expected_ids}")

    for c in s.get("cases", []):
        cid = c.get("id")
        check(c.get("status") == "ok", f"{cid}: status {c.get('status')!r} {c.get('message')}")
        p = c.get("params", {})
        cost = cid.split(",")[0].split("=")[1] if cid else None
        workers = int(cid.rsplit("=", 1)[1]) if cid else None
        check(p.get("dataset") == {"samples": 64, "sample_bytes": "128KiB",
                                   "cpu_per_sample": cost, "source": "memory"},
              f"{cid}: params.dataset {p.get('dataset')}")
        check(p.get("batch_size") == 8 and p.get("num_workers") == workers and
              p.get("prefetch_factor") == 2 and p.get("compute_per_batch") == "0",
              f"{cid}: params {p}")
        # A CPU build cannot pin: the case says so instead of pretending it pinned.
        if backend == "torch-cpu":
            check(p.get("pin_memory") is False, f"{cid}: pin_memory {p.get('pin_memory')!r}")
            check(any("pin_memory" in w and "off" in w for w in c.get("warnings", [])),
                  f"{cid}: no warning that pin_memory is off: {c.get('warnings')}")
        else:
            check(p.get("pin_memory") is True, f"{cid}: pin_memory {p.get('pin_memory')!r}")
        info = c.get("info", {})
        cal = info.get("calibration", {})
        check(cal.get("ns_per_unit", 0) > 0, f"{cid}: calibration {cal}")
        check(info.get("cpu_work") == {"ns_per_unit": cal.get("ns_per_unit"),
                                       "units_per_sample": cal.get("units_per_sample")},
              f"{cid}: info.cpu_work {info.get('cpu_work')} disagrees with {cal}")
        check(info.get("verified") is True, f"{cid}: info.verified {info.get('verified')!r}")
        units = cal.get("units_per_sample")
        check(units == 0 if cost == "0us" else (isinstance(units, int) and units > 0),
              f"{cid}: units_per_sample {units!r} for cpu_per_sample {cost}")

        m = c.get("metrics", {})
        check_metric(f"{cid} samples_per_s", m.get("samples_per_s"), "samples/s", "higher", 2)
        check_metric(f"{cid} batches_per_s", m.get("batches_per_s"), "batches/s", "higher", 2)
        check_metric(f"{cid} epoch_time", m.get("epoch_time"), "ns", "lower", 2)
        check_metric(f"{cid} first_batch_time", m.get("first_batch_time"), "ns", "lower", 2)
        # One wait per step: 64 samples / 8 per batch = 8 steps, in each of 2 runs.
        check_metric(f"{cid} data_wait", m.get("data_wait"), "ns", "lower", 16)
        sps = (m.get("samples_per_s") or {}).get("samples") or [0]
        check(all(x > 0 for x in sps), f"{cid}: samples_per_s {sps}")
        bps = (m.get("batches_per_s") or {}).get("samples") or [0]
        # 8 batches of 8: batches/s is samples/s over 8, run by run.
        check(len(bps) == len(sps) and all(abs(b * 8 - x) <= 1e-6 * x for b, x in zip(bps, sps)),
              f"{cid}: batches_per_s {bps} vs samples_per_s {sps}")


def check_stdout():
    r = run("--samples", "16", "--batch-size", "4", "--workers", "0", "--cpu-per-sample", "0",
            "--runs", "1", "--warmup", "0", "--out", "-")
    if not check(r.returncode == 0, f"--out -: exit {r.returncode}, stderr {r.stderr}"):
        return
    try:
        doc = json.loads(r.stdout)
    except json.JSONDecodeError as e:
        check(False, f"--out -: stdout is not JSON ({e}): {r.stdout[:200]!r}")
        return
    cases = doc["scenarios"][0]["cases"]
    check([c["id"] for c in cases] == ["dataset.cpu_per_sample=0,num_workers=0"],
          f"--out -: ids {[c['id'] for c in cases]}")
    check(len(cases[0]["metrics"]["data_wait"]["samples"]) == 4,
          f"--out -: data_wait {cases[0]['metrics']['data_wait']}")


def check_interrupt(tmp):
    """Ctrl-C (SIGINT to the whole process group, workers included) after the first case: the
    file holds the cases measured, says it was interrupted, and the exit status is 130."""
    out = os.path.join(tmp, "interrupted.json")
    # The first case is quick; the second would take about 10 s, so the signal lands in it.
    p = subprocess.Popen([sys.executable, SCRIPT, "--samples", "128", "--batch-size", "16",
                          "--workers", "2", "--cpu-per-sample", "0us,50ms", "--runs", "3",
                          "--warmup", "0", "--out", out],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=ENV,
                         start_new_session=True)
    seen = []
    try:
        deadline = time.monotonic() + 60
        for line in p.stderr:
            seen.append(line)
            if "samples/s" in line or time.monotonic() > deadline:
                break
        time.sleep(0.5)  # into the next case, with its workers started
        os.killpg(p.pid, signal.SIGINT)
        _, rest = p.communicate(timeout=60)
        seen.append(rest)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        check(False, "interrupt: the script did not exit within 60 s of SIGINT")
        return
    stderr = "".join(seen)
    check(p.returncode == 130, f"interrupt: exit {p.returncode}, expected 130; stderr {stderr}")
    if not check(os.path.exists(out), f"interrupt: no result file; stderr {stderr}"):
        return
    with open(out, encoding="utf-8") as f:
        doc = json.load(f)
    check(doc.get("interrupted") is True, f"interrupt: interrupted {doc.get('interrupted')!r}")
    cases = doc["scenarios"][0]["cases"]
    check(len(cases) >= 1 and cases[0]["id"] == "dataset.cpu_per_sample=0us,num_workers=2" and
          cases[0]["status"] == "ok", f"interrupt: cases {[(c['id'], c['status']) for c in cases]}")
    # The second case is kept only if a whole run finished before the signal, marked as cut short.
    for c in cases[1:]:
        check(c["status"] == "interrupted" and c["metrics"]["samples_per_s"]["samples"],
              f"interrupt: {c['id']}: status {c['status']}, expected interrupted with whole runs")
    check(len(cases) <= 2, f"interrupt: {len(cases)} cases, expected at most 2")


def main():
    started = time.monotonic()
    check_argument_errors()
    with tempfile.TemporaryDirectory() as tmp:
        check_tiny_sweep(tmp)
        check_stdout()
        check_interrupt(tmp)

    for message in failures:
        print(f"FAIL: {message}", file=sys.stderr)
    if not failures:
        print(f"torch_dataloader: all checks passed in {time.monotonic() - started:.1f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
