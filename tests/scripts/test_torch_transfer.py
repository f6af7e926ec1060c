#!/usr/bin/env python3
"""Tests scripts/peer/torch_transfer.py without torch or a GPU: its rules (batch size, hold length,
zero spans, stopping with and without --budget) on plain numbers; its exit codes for bad
arguments (2) and a missing torch or device (3); and whole runs against a stand-in torch module
whose device clock is virtual, which check the document's keys, that the timed span leaves the
torch.cuda._sleep hold out, that a zero span fails its case, and that verification catches bad
data. Exit 0 on success; otherwise a message per failed check and exit 1."""

import importlib.util
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "peer", "torch_transfer.py")
SCENARIO = os.path.join(ROOT, "scenarios", "transfer-size.json")

failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
    return condition


def load_script():
    spec = importlib.util.spec_from_file_location("torch_transfer", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# A stand-in for torch: tensors are bytearrays, and the device has a virtual clock that only
# _sleep and copies advance (copies at exactly 10 GB/s), so event spans are exact. FAKE_TORCH
# picks a fault: absent (ImportError), nocuda, zero (every event span reads 0 ms), corrupt
# (copies between host and device flip the first byte), slow (each copy also takes 2 ms of real
# time, so that a run lasts long enough to be interrupted).
FAKE_TORCH = r'''
import os
import random
import time
import types

FAULT = os.environ.get("FAKE_TORCH", "")
if FAULT == "absent":
    raise ImportError("No module named 'torch' (stand-in)")

__version__ = "0.0+stand-in"
uint8 = "uint8"
version = types.SimpleNamespace(cuda="12.4")
BYTES_PER_NS = 10.0
SLEEP_CYCLES_PER_NS = 1.5
_clock = [0.0]


class Tensor:
    def __init__(self, data, device="cpu"):
        self.data = bytearray(data)
        self.device = device

    def fill_(self, v):
        self.data[:] = bytes([v]) * len(self.data)
        return self

    def zero_(self):
        return self.fill_(0)

    def copy_(self, src, non_blocking=False):
        if len(src.data) != len(self.data):
            raise RuntimeError("size mismatch")
        self.data[:] = src.data
        if FAULT == "slow":
            time.sleep(0.002)
        if self.device != src.device:
            if FAULT == "corrupt" and self.data:
                self.data[0] ^= 0xFF
            _clock[0] += len(self.data) / BYTES_PER_NS
        return self

    def repeat(self, k):
        return Tensor(self.data * k, self.device)

    def __getitem__(self, s):
        return Tensor(self.data[s], self.device)

    def to(self, device):
        return Tensor(self.data, device)

    def cpu(self):
        return self.to("cpu")


def empty(n, dtype=None, device="cpu", pin_memory=False):
    return Tensor(bytes(n), device)


def equal(a, b):
    return a.data == b.data


class Generator:
    def manual_seed(self, seed):
        self.r = random.Random(seed)
        return self


def randint(low, high, shape, dtype=None, generator=None):
    return Tensor(bytes(generator.r.randrange(low, high) for _ in range(shape[0])))


class _Event:
    def __init__(self, enable_timing=False):
        self.t = None

    def record(self, stream=None):
        self.t = _clock[0]

    def synchronize(self):
        pass

    def elapsed_time(self, end):
        return 0.0 if FAULT == "zero" else (end.t - self.t) / 1e6


class _Stream:
    def synchronize(self):
        pass


class _StreamContext:
    def __init__(self, s):
        self.s = s

    def __enter__(self):
        return self.s

    def __exit__(self, *exc):
        return False


def _sleep(cycles):
    _clock[0] += cycles / SLEEP_CYCLES_PER_NS


cuda = types.SimpleNamespace(
    is_available=lambda: FAULT != "nocuda",
    Stream=_Stream,
    stream=_StreamContext,
    Event=_Event,
    synchronize=lambda: None,
    _sleep=_sleep,
    current_device=lambda: 0,
    get_device_name=lambda i: "Stand-in GPU",
    get_device_properties=lambda i: types.SimpleNamespace(
        major=9, minor=0, total_memory=1 << 34, multi_processor_count=132, uuid="stand-in"),
)
'''


def run(args, fake_dir=None, fault="", timeout=120):
    env = dict(os.environ)
    if fake_dir is not None:
        env["PYTHONPATH"] = fake_dir + os.pathsep + env.get("PYTHONPATH", "")
        env["FAKE_TORCH"] = fault
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                          env=env, timeout=timeout, check=False)


# ---- the rules ----------------------------------------------------------------------------

def check_rules(tt):
    check("torch" not in sys.modules, "importing the script imported torch")

    mib = 1 << 20
    for nbytes, copies in ((1, 16), (4096, 16), (64 << 10, 16), (mib, 16), (mib + 1, 1),
                           (16 * mib, 1), (256 * mib, 1)):
        check(tt.copies_per_sample(nbytes) == copies,
              f"copies_per_sample({nbytes}) = {tt.copies_per_sample(nbytes)}, expected {copies}")

    check(tt.uses_hold("pinned", "non_blocking"), "pinned non_blocking should be held")
    for memory, mode in (("pinned", "blocking"), ("pageable", "blocking"),
                         ("pageable", "non_blocking")):
        check(not tt.uses_hold(memory, mode), f"{memory} {mode} should not be held")
    expected = {
        ("pinned", "non_blocking", True): "device events, copies queued behind torch.cuda._sleep",
        ("pinned", "non_blocking", False): "device events",
        ("pageable", "non_blocking", True): "device events",
        ("pinned", "blocking", True): "host clock: time the caller is held per copy",
        ("pageable", "blocking", False): "host clock: time the caller is held per copy",
    }
    for (memory, mode, held), text in expected.items():
        got = tt.timing_text(memory, mode, held)
        check(got == text, f"timing_text({memory}, {mode}, {held}) = {got!r}, expected {text!r}")

    # Calibration: the median rate over the spans that could be timed.
    check(tt.cycles_per_ns(1_000_000, [500_000, 0, 1_000_000, 2_000_000]) == 1.0,
          "cycles_per_ns should take the median over spans above zero")
    try:
        tt.cycles_per_ns(1_000_000, [0, 0.0, -1])
        check(False, "cycles_per_ns with no usable span should raise")
    except ValueError:
        pass

    # The hold: max(100 us, 4 x the median warm-up enqueue time), in whole cycles.
    check(tt.hold_ns([]) == 100_000, f"hold_ns([]) = {tt.hold_ns([])}")
    check(tt.hold_ns([5_000, 10_000, 20_000]) == 100_000, "a short enqueue gets the 100 us floor")
    check(tt.hold_ns([2_000_000, 60_000, 50_000]) == 240_000,
          f"hold_ns should be 4 x the median: {tt.hold_ns([2_000_000, 60_000, 50_000])}")
    check(tt.hold_cycles(240_000, 1.5) == 360_000, f"hold_cycles: {tt.hold_cycles(240_000, 1.5)}")
    check(tt.hold_cycles(100_000, 1.234567) == 123_457, "hold_cycles rounds up")
    check(tt.hold_outrun(150_000, 100_000) and not tt.hold_outrun(100_000, 100_000),
          "hold_outrun: only an enqueue longer than the hold outruns it")

    # Figures of one sample; a span of zero or less is an error, never an infinite bandwidth.
    bw, copy_ns, call_ns = tt.sample_figures(4096, 16, 16 * 409.6, 16 * 5_000)
    check(abs(bw - 10.0) < 1e-12 and abs(copy_ns - 409.6) < 1e-9 and call_ns == 5_000,
          f"sample_figures: {bw}, {copy_ns}, {call_ns}")
    bw, copy_ns, _ = tt.sample_figures(256 << 20, 1, 10e6, 1e6)
    check(abs(bw - (256 << 20) / 10e6) < 1e-9 and copy_ns == 10e6, "sample_figures, one copy")
    for span in (0, 0.0, -1.0, float("inf"), float("nan")):
        try:
            tt.sample_figures(4096, 16, span, 1.0)
            check(False, f"sample_figures with span {span} should raise")
        except tt.SpanError as e:
            check("resolution" in str(e) and "16 x 4KiB" in str(e),
                  f"span error message: {e}")

    check(tt.relative_stdev([]) == 0 and tt.relative_stdev([3.0]) == 0, "relative_stdev of < 2")
    check(abs(tt.relative_stdev([9.0, 11.0]) - 2 ** 0.5 / 10) < 1e-12, "relative_stdev([9, 11])")

    # Stopping: max_samples, then timeout (never before 3 samples), then converged.
    r = tt.Rule(warmup=3, min_samples=10, max_samples=200, max_noise=0.02, min_time_s=0.1,
                timeout_s=3.0)
    check(tt.stop_reason(r, 200, 0.0, 1.0) == "max_samples", "max_samples")
    check(tt.stop_reason(r, 2, 5.0, 0.0) is None, "the timeout must wait for 3 samples")
    check(tt.stop_reason(r, 3, 3.0, 1.0) == "timeout", "timeout at 3 samples")
    check(tt.stop_reason(r, 9, 1.0, 0.0) is None, "converged needs min_samples")
    check(tt.stop_reason(r, 10, 0.05, 0.0) is None, "converged needs min_time")
    check(tt.stop_reason(r, 10, 0.1, 0.03) is None, "converged needs noise <= max_noise")
    check(tt.stop_reason(r, 10, 0.1, 0.02) == "converged", "converged")

    # The defaults are transfer-size's, sizes and sampling both.
    with open(SCENARIO, encoding="utf-8") as f:
        scenario = json.load(f)
    check(tt.DEFAULT_SIZES == scenario["matrix"]["bytes"],
          f"DEFAULT_SIZES {tt.DEFAULT_SIZES} != transfer-size's {scenario['matrix']['bytes']}")
    seconds = {"100ms": 0.1, "3s": 3.0}
    s = scenario["sampling"]
    d = tt.DEFAULT_RULE
    check((d.warmup, d.min_samples, d.max_samples, d.max_noise, d.min_time_s, d.timeout_s) ==
          (s["warmup"], s["min_samples"], s["max_samples"], s["max_noise"],
           seconds.get(s["min_time"]), seconds.get(s["timeout"])),
          f"DEFAULT_RULE {d.as_info()} differs from transfer-size's sampling {s}")

    # --budget: the time left, shared among the cases left, caps min_time and timeout.
    check(tt.budget_rule(r, None, 100.0, 1) is r, "no budget leaves the rule alone")
    b = tt.budget_rule(r, 60.0, 10.0, 48)
    per_case = 50.0 * tt.BUDGET_SAMPLING_SHARE / 48
    check(abs(b.timeout_s - per_case) < 1e-12 and b.min_time_s == 0.1,
          f"budget_rule(60 s, 10 s gone, 48 cases): {b.as_info()}")
    check((b.warmup, b.min_samples, b.max_samples, b.max_noise) == (3, 10, 200, 0.02),
          "budget_rule changes only min_time and timeout")
    big = tt.budget_rule(r, 10_000.0, 0.0, 2)
    check(big.timeout_s == 3.0 and big.min_time_s == 0.1, "a large budget never lengthens a case")
    spent = tt.budget_rule(r, 60.0, 75.0, 5)
    check(spent.timeout_s == 0 and spent.min_time_s == 0, f"budget spent: {spent.as_info()}")
    check(tt.stop_reason(spent, 2, 0.0, 0.0) is None and
          tt.stop_reason(spent, 3, 0.0, 0.5) == "timeout",
          "with the budget spent a case still takes 3 samples, then stops")
    # Cases that each run to their timeout, plus start-up and overhead, stay within the budget.
    budget, elapsed, cases = 60.0, 8.0, 48
    for i in range(cases):
        elapsed += tt.budget_rule(tt.DEFAULT_RULE, budget, elapsed, cases - i).timeout_s + 0.2
    check(elapsed <= budget, f"a budgeted run of {cases} cases took {elapsed:.1f} s of {budget}")

    m = tt.matrix([4096, 1 << 20])
    check(len(m) == 16 and m[0] == ("h2d", "pageable", "blocking", 4096) and
          m[-1] == ("d2h", "pinned", "non_blocking", 1 << 20), f"matrix order: {m[:2]}...")
    check(tt.case_id("d2h", "pinned", "non_blocking", 1 << 20) ==
          "direction=d2h,memory=pinned,mode=non_blocking,bytes=1MiB", "case_id")

    notes = tt.differences(None, True)
    check(notes and all(isinstance(n, str) and n for n in notes), "differences: strings")
    check(len(tt.differences(30.0, True, True)) == len(notes) + 2,
          "--budget and --quick each add a difference")
    check(any("unavailable" in n for n in tt.differences(None, False)),
          "differences without _sleep say so")


# ---- exit codes ---------------------------------------------------------------------------

def check_one_line(r, code, expected, what):
    lines = r.stderr.strip().splitlines()
    check(r.returncode == code,
          f"{what}: exit {r.returncode}, expected {code}; stderr {r.stderr!r}")
    check(len(lines) == 1, f"{what}: expected one line on stderr, got {r.stderr!r}")
    check(expected in r.stderr, f"{what}: stderr lacks {expected!r}: {r.stderr!r}")
    check(r.stdout == "", f"{what}: wrote to stdout: {r.stdout!r}")


def check_exit_codes(fake_dir, tmp):
    for args, expected in ((["--sizes", "bogus"], "not a size"),
                           (["--sizes", "4KiB,0"], "positive"),
                           (["--budget", "0"], "positive"),
                           (["--budget", "soon"], "not a number"),
                           (["--bogus"], "unrecognized")):
        out = os.path.join(tmp, "never.json")
        check_one_line(run([*args, "--out", out]), 2, expected, str(args))
        check(not os.path.exists(out), f"{args}: wrote a result")
    out = os.path.join(tmp, "never.json")
    check_one_line(run(["--quick", "--out", out], fake_dir, "absent"), 3,
                   "PyTorch is not importable", "torch absent")
    check_one_line(run(["--quick", "--out", out], fake_dir, "nocuda"), 3,
                   "is_available() is False", "no CUDA")
    check(not os.path.exists(out), "a run without torch or CUDA wrote a result")


# ---- whole runs against the stand-in ------------------------------------------------------

CASE_KEYS = {"id", "params", "status", "stop_reason", "elapsed_s", "info", "metrics"}


def read_doc(path, what):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        check(False, f"{what}: no readable result: {e}")
        return None


def check_run(fake_dir, tmp):
    out = os.path.join(tmp, "ok.json")
    r = run(["--quick", "--sizes", "4KiB,2MiB", "--out", out], fake_dir)
    if not check(r.returncode == 0, f"stand-in run: exit {r.returncode}, stderr {r.stderr}"):
        return
    doc = read_doc(out, "stand-in run")
    if doc is None:
        return
    check(doc.get("schema") == "pinbench.result/1", f"schema {doc.get('schema')!r}")
    check(doc.get("environment", {}).get("backend") == "cuda", "environment.backend")
    scenarios = doc.get("scenarios", [])
    if not check(len(scenarios) == 1, f"{len(scenarios)} scenarios"):
        return
    s = scenarios[0]
    check(s.get("name") == "torch-transfer" and s.get("kind") == "transfer" and
          s.get("source") == "scripts/peer/torch_transfer.py", "scenario name/kind/source")
    diffs = s.get("differences")
    check(isinstance(diffs, list) and diffs and all(isinstance(d, str) for d in diffs),
          f"scenario.differences: {diffs!r}")
    check(any("--quick" in d for d in diffs or []), "differences lack the --quick line")
    check("differences from pinbench's method" in r.stderr and
          all(d in r.stderr for d in diffs or []), "differences not printed to stderr")

    cases = s.get("cases", [])
    ids = [c.get("id") for c in cases]
    expected_ids = [f"direction={d},memory={m},mode={mode},bytes={b}"
                    for d in ("h2d", "d2h") for m in ("pageable", "pinned")
                    for mode in ("blocking", "non_blocking") for b in ("4KiB", "2MiB")]
    check(ids == expected_ids, f"case ids {ids}")
    for c in cases:
        cid = c.get("id")
        keys = set(c) - {"warnings"}
        check(keys == CASE_KEYS, f"{cid}: keys {sorted(c)}")
        check(c.get("status") == "ok", f"{cid}: status {c.get('status')} {c.get('message')}")
        check(c.get("stop_reason") in ("converged", "max_samples", "timeout"),
              f"{cid}: stop_reason {c.get('stop_reason')!r}")
        p = c.get("params", {})
        check(set(p) == {"direction", "memory", "mode", "bytes"}, f"{cid}: params {p}")
        info = c.get("info", {})
        small = p.get("bytes") == "4KiB"
        check(info.get("copies_per_sample") == (16 if small else 1),
              f"{cid}: copies_per_sample {info.get('copies_per_sample')}")
        check(info.get("verified") is True, f"{cid}: verified {info.get('verified')!r}")
        check(info.get("bytes_per_copy") == (4096 if small else 2 << 20), f"{cid}: bytes_per_copy")
        held = p.get("memory") == "pinned" and p.get("mode") == "non_blocking"
        timing = ("host clock: time the caller is held per copy" if p.get("mode") == "blocking"
                  else "device events, copies queued behind torch.cuda._sleep" if held
                  else "device events")
        check(info.get("timing") == timing, f"{cid}: timing {info.get('timing')!r}")
        hold = info.get("hold")
        if held and check(isinstance(hold, dict), f"{cid}: no info.hold"):
            rate = hold.get("cycles_per_ns", 0)
            check(abs(rate - 1.5) < 1e-9, f"{cid}: calibration {rate}")
            check(hold.get("ns", 0) >= 100_000 and
                  hold.get("cycles") == math.ceil(hold.get("ns", 0) * rate),
                  f"{cid}: hold {hold}")
            check(len(hold.get("warmup_enqueue_ns", [])) == 3, f"{cid}: warm-up figures {hold}")
        elif not held:
            check(hold is None, f"{cid}: info.hold on a copy that is not held")
        m = c.get("metrics", {})
        check(set(m) == {"bandwidth", "copy_time", "host_call_time"}, f"{cid}: metrics {list(m)}")
        n = len(m.get("bandwidth", {}).get("samples", []))
        check(n >= 3 and all(len(m[k]["samples"]) == n for k in m), f"{cid}: {n} samples")
        bw = m.get("bandwidth", {}).get("samples", [])
        check(all(x > 0 for x in bw), f"{cid}: bandwidth samples {bw}")
        if p.get("mode") == "non_blocking":
            # The stand-in device copies at exactly 10 GB/s: any hold inside the span would
            # show as less.
            check(all(abs(x - 10.0) < 1e-6 for x in bw), f"{cid}: bandwidth {bw[:3]}..., not 10")
            per_copy = (4096 if small else 2 << 20) / 10.0
            check(all(abs(x - per_copy) < 1e-3 for x in m["copy_time"]["samples"]),
                  f"{cid}: copy_time is not span / copies")
        else:
            copy_t, call_t = m["copy_time"]["samples"], m["host_call_time"]["samples"]
            check(copy_t == call_t, f"{cid}: blocking copy_time and host_call_time differ")


def check_budget(fake_dir, tmp):
    out = os.path.join(tmp, "budget.json")
    t0 = time.monotonic()
    r = run(["--sizes", "4KiB", "--budget", "1", "--out", out], fake_dir)
    took = time.monotonic() - t0
    if not check(r.returncode == 0, f"budget run: exit {r.returncode}, stderr {r.stderr}"):
        return
    check(took < 6, f"--budget 1 run took {took:.1f} s")
    doc = read_doc(out, "budget run")
    if doc is None:
        return
    s = doc["scenarios"][0]
    check(any("--budget 1" in d for d in s.get("differences", [])), "no --budget difference")
    for c in s["cases"]:
        rule = c.get("info", {}).get("sampling", {})
        check(rule.get("timeout_s", 99) <= 1.0 * 0.6 and rule.get("min_time_s", 99) <= 0.1,
              f"{c['id']}: budgeted sampling {rule}")
        check(len(c.get("metrics", {}).get("bandwidth", {}).get("samples", [])) >= 3,
              f"{c['id']}: fewer than 3 samples under --budget")


def check_faults(fake_dir, tmp):
    out = os.path.join(tmp, "zero.json")
    r = run(["--quick", "--sizes", "4KiB", "--out", out], fake_dir, "zero")
    check(r.returncode == 1, f"zero spans: exit {r.returncode}, expected 1; {r.stderr}")
    doc = read_doc(out, "zero spans")
    if doc is not None:
        s = doc["scenarios"][0]
        check(any("unavailable" in d for d in s["differences"]),
              "an uncalibrated _sleep is not in the differences")
        for c in s["cases"]:
            if c["params"]["mode"] == "non_blocking":
                check(c["status"] == "error" and "resolution" in c.get("message", "") and
                      c["metrics"] == {} and "info" not in c,
                      f"{c['id']}: a zero span should fail the case: {c}")
            else:
                check(c["status"] == "ok", f"{c['id']}: blocking should be unaffected: {c}")

    out = os.path.join(tmp, "corrupt.json")
    r = run(["--quick", "--sizes", "4KiB", "--out", out], fake_dir, "corrupt")
    check(r.returncode == 1, f"corrupt copies: exit {r.returncode}, expected 1; {r.stderr}")
    doc = read_doc(out, "corrupt copies")
    if doc is not None:
        for c in doc["scenarios"][0]["cases"]:
            check(c["status"] == "error" and "verification failed" in c.get("message", ""),
                  f"{c['id']}: bad data should fail the case: {c.get('status')} "
                  f"{c.get('message')}")


def check_interrupt(fake_dir, tmp):
    """SIGTERM (a step's budget) after the first cases: the cases measured are written, the
    document says it was interrupted, and the exit is 128 + 15."""
    out = os.path.join(tmp, "interrupted.json")
    env = dict(os.environ, PYTHONPATH=fake_dir + os.pathsep + os.environ.get("PYTHONPATH", ""),
               FAKE_TORCH="slow")
    p = subprocess.Popen([sys.executable, SCRIPT, "--quick", "--sizes", "4KiB", "--out", out],
                         stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env)
    try:
        # Waits for the second case's line, however slow the machine: by then the first case
        # is kept (a case's line is printed just before it is).
        seen = 0
        for line in p.stderr:
            seen += "GB/s" in line
            if seen == 2:
                break
        p.send_signal(signal.SIGTERM)
        rest = p.stderr.read()
        code = p.wait(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    check(code == 128 + signal.SIGTERM, f"interrupted run: exit {code}; {rest}")
    doc = read_doc(out, "interrupted run")
    if doc is None:
        return
    check(doc.get("interrupted") is True, "the document does not say it was interrupted")
    cases = doc["scenarios"][0]["cases"]
    check(1 <= len(cases) < 8, f"{len(cases)} cases kept, expected the ones before the signal")
    check(all(c["status"] == "ok" and c["metrics"]["bandwidth"]["samples"] for c in cases),
          "a kept case is not a whole measured one")


def main():
    tt = load_script()
    check_rules(tt)
    with tempfile.TemporaryDirectory() as tmp:
        fake_dir = os.path.join(tmp, "fake")
        os.makedirs(os.path.join(fake_dir, "torch"))
        with open(os.path.join(fake_dir, "torch", "__init__.py"), "w", encoding="utf-8") as f:
            f.write(FAKE_TORCH)
        check_exit_codes(fake_dir, tmp)
        check_run(fake_dir, tmp)
        check_budget(fake_dir, tmp)
        check_faults(fake_dir, tmp)
        check_interrupt(fake_dir, tmp)
    for message in failures:
        print(f"FAIL: {message}", file=sys.stderr)
    if failures:
        return 1
    print("ok: torch_transfer rules, exit codes and stand-in runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
