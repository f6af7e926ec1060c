#!/usr/bin/env python3
"""PyTorch peer of pinbench's transfer scenarios.

Measures host<->device copy bandwidth with PyTorch the way pinbench's transfer engine does,
wherever torch allows it: copies of 1 MiB or less in batches of 16 per sample; non_blocking
copies from pinned memory queued behind a spin kernel (torch.cuda._sleep) so that enqueueing
stays out of the timed span; other non_blocking copies between a pair of CUDA events; blocking
copies on the host clock. Writes a pinbench.result/1 document, so that `pinbench compare`,
`report` and a reader can put PyTorch's numbers beside pinbench's; what still differs from
pinbench's method is listed in the scenario's "differences".

Interrupted (SIGINT, or SIGTERM as a step's budget sends it), it writes the cases measured so
far, marked "interrupted", and exits 128 + the signal's number.

Exit codes: 0 done, 1 a case failed, 2 bad arguments, 3 no torch or no CUDA device.
"""

import argparse
import json
import math
import os
import re
import shlex
import statistics
import sys
import time

# The helpers the peer scripts share live beside them: found from the script's own directory,
# so the script runs from any working directory.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pinbench_result import (  # noqa: E402
    Interruption, cuda_device_info, document_head, format_bytes_compact, host_info, metric,
    parse_bytes, start_cuda_torch, write_atomic)

PROG = "torch_transfer"
SOURCE = "scripts/peer/torch_transfer.py"

# pinbench's built-in transfer-size scenario.
DEFAULT_SIZES = ["4KiB", "64KiB", "1MiB", "16MiB", "64MiB", "256MiB"]
QUICK_SIZES = ["64KiB", "16MiB"]
DIRECTIONS = ("h2d", "d2h")
MEMORIES = ("pageable", "pinned")
MODES = ("blocking", "non_blocking")

# Copies this small last a few microseconds, near the event clock's resolution and the launch
# latency: a sample times a batch of them (as pinbench and nvbandwidth do).
SMALL_COPY_BYTES = 1 << 20
SMALL_COPY_BATCH = 16

# The hold before gated copies: a spin long enough to cover enqueueing the whole batch.
MIN_HOLD_NS = 100_000
HOLD_FACTOR = 4
CALIBRATION_CYCLES = 1_000_000
CALIBRATION_TRIALS = 5

# The timeout never stops a case before it has this many samples.
MIN_SAMPLES_BEFORE_TIMEOUT = 3
# With --budget, the share of the time left that sampling may use; the rest goes to start-up,
# allocation, warm-up and verification.
BUDGET_SAMPLING_SHARE = 0.6

TIMING_GATED = "device events, copies queued behind torch.cuda._sleep"
TIMING_EVENTS = "device events"
TIMING_HOST = "host clock: time the caller is held per copy"


class OneLineParser(argparse.ArgumentParser):
    """Bad arguments: one line on stderr and exit 2, not the usage block."""

    def error(self, message):
        print(f"{PROG}: error: {message} (see --help)", file=sys.stderr)
        sys.exit(2)


# ---- the rules, on plain numbers ------------------------------------------------------------

def copies_per_sample(nbytes):
    return SMALL_COPY_BATCH if nbytes <= SMALL_COPY_BYTES else 1


def uses_hold(memory, mode):
    """Only an asynchronous copy from page-locked memory can wait behind a spin kernel: any
    other copy holds the caller, which would then wait for the spin itself."""
    return mode == "non_blocking" and memory == "pinned"


def timing_text(memory, mode, held):
    if mode == "blocking":
        return TIMING_HOST
    return TIMING_GATED if held and uses_hold(memory, mode) else TIMING_EVENTS


def cycles_per_ns(cycles, spans_ns):
    """torch.cuda._sleep's clock rate from the event-timed spans of `cycles`-cycle spins."""
    rates = [cycles / ns for ns in spans_ns if ns > 0 and math.isfinite(ns)]
    if not rates:
        raise ValueError("torch.cuda._sleep could not be timed (every span read 0 ns)")
    return statistics.median(rates)


def hold_ns(enqueue_ns):
    """The hold for a case from the host times of enqueueing one batch in warm-up: the median
    (the first warm-up carries one-off costs), with a wide margin and a floor."""
    if not enqueue_ns:
        return MIN_HOLD_NS
    return max(MIN_HOLD_NS, HOLD_FACTOR * statistics.median(enqueue_ns))


def hold_cycles(ns, rate_cycles_per_ns):
    return max(1, math.ceil(ns * rate_cycles_per_ns))


def hold_outrun(enqueue_since_launch_ns, held_ns):
    """True when the spin may have ended before the batch was queued: it cannot start before
    its launch, so a batch queued within `held_ns` of the launch was queued in time."""
    return enqueue_since_launch_ns > held_ns


class SpanError(Exception):
    pass


def sample_figures(nbytes, copies, span_ns, held_ns):
    """(bandwidth GB/s, copy_time ns, host_call_time ns) of one sample; a span the clock could
    not resolve is an error, never an infinite bandwidth."""
    if not (span_ns > 0 and math.isfinite(span_ns)):
        raise SpanError(
            f"a sample of {copies} x {format_bytes_compact(nbytes)} copies measured "
            f"{span_ns:g} ns: the timer's resolution is too coarse for it")
    return nbytes * copies / span_ns, span_ns / copies, held_ns / copies


def relative_stdev(values):
    if len(values) < 2:
        return 0.0
    mean = statistics.fmean(values)
    return statistics.stdev(values) / abs(mean) if mean else 0.0


class Rule:
    """When a case stops sampling: pinbench's sampler (warm-up, min and max samples, noise,
    min_time, timeout)."""

    def __init__(self, warmup, min_samples, max_samples, max_noise, min_time_s, timeout_s):
        self.warmup = warmup
        self.min_samples = min_samples
        self.max_samples = max_samples
        self.max_noise = max_noise
        self.min_time_s = min_time_s
        self.timeout_s = timeout_s

    def as_info(self):
        return {"warmup": self.warmup, "min_samples": self.min_samples,
                "max_samples": self.max_samples, "max_noise": self.max_noise,
                "min_time_s": self.min_time_s, "timeout_s": self.timeout_s}


# As pinbench's transfer-size scenario samples.
DEFAULT_RULE = Rule(warmup=3, min_samples=10, max_samples=200, max_noise=0.02,
                    min_time_s=0.1, timeout_s=3.0)
QUICK_RULE = Rule(warmup=3, min_samples=5, max_samples=20, max_noise=0.02,
                  min_time_s=0.05, timeout_s=1.0)


def stop_reason(rule, n, elapsed_s, noise):
    """None to go on, else why to stop, in pinbench's order: max_samples, timeout, converged."""
    if n >= rule.max_samples:
        return "max_samples"
    if n >= MIN_SAMPLES_BEFORE_TIMEOUT and elapsed_s >= rule.timeout_s:
        return "timeout"
    if n >= rule.min_samples and elapsed_s >= rule.min_time_s and noise <= rule.max_noise:
        return "converged"
    return None


def budget_rule(rule, budget_s, elapsed_s, cases_left):
    """The rule for the next case under --budget: the time left is shared among the cases left
    (recomputed per case, so a slow case leaves less to the rest), and caps min_time and
    timeout. Without a budget the rule is unchanged."""
    if budget_s is None:
        return rule
    per_case = max(0.0, budget_s - elapsed_s) * BUDGET_SAMPLING_SHARE / max(1, cases_left)
    return Rule(rule.warmup, rule.min_samples, rule.max_samples, rule.max_noise,
                min(rule.min_time_s, per_case), min(rule.timeout_s, per_case))


def matrix(sizes):
    """(direction, memory, mode, nbytes) in the order the cases run and are written."""
    return [(d, m, mode, n) for d in DIRECTIONS for m in MEMORIES for mode in MODES
            for n in sizes]


def case_id(direction, memory, mode, nbytes):
    return (f"direction={direction},memory={memory},mode={mode},"
            f"bytes={format_bytes_compact(nbytes)}")


def differences(budget_s, have_sleep, quick=False):
    out = []
    if have_sleep:
        out.append("non_blocking pinned copies wait behind torch.cuda._sleep, a spin of fixed "
                   f"length (max({MIN_HOLD_NS // 1000} us, {HOLD_FACTOR} x the median time to "
                   "queue the batch in warm-up)), not behind a gate kernel released by a host "
                   "flag once the batch is queued; samples where the spin may have ended early "
                   "are counted in info.hold.outrun_samples")
    else:
        out.append("torch.cuda._sleep was unavailable: non_blocking pinned copies are not held, "
                   "so enqueueing them is inside the timed span")
    out += [
        "copies go through torch's Tensor.copy_ dispatch: a few microseconds of Python and "
        "dispatcher per call, in host_call_time but not in a held span",
        "non_blocking copies to or from pinned memory also do the caching host allocator's "
        "stream bookkeeping (CachingHostAllocator_recordEvent) in each call",
        "pinned tensors come from torch's caching host allocator (pin_memory=True); pinbench's "
        "from cudaHostAlloc",
        "pageable tensors come from torch's CPU allocator and are touched by fill_ before "
        "timing; pinbench's are page-aligned (aligned_alloc) and pre-faulted page by page",
        "verification copies a repeating random pattern and compares with torch.equal; "
        "pinbench a xorshift pattern compared with memcmp",
    ]
    if quick:
        out.append("--quick: fewer samples than transfer-size (5 to 20, min_time 50 ms, "
                   "timeout 1 s, against 10 to 200, 100 ms, 3 s)")
    if budget_s is not None:
        out.append(f"--budget {budget_s:g}: each case's min_time and timeout are capped by its "
                   "share of the time left, so cases may stop on timeout sooner than pinbench's")
    return out


# ---- the device -----------------------------------------------------------------------------

def read_first(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.readline().strip()
    except OSError:
        return None


def pcie_gen(speed):
    m = re.match(r"\s*([0-9.]+)", speed or "")
    if not m:
        return None
    gts = float(m.group(1))
    for gen, rate in enumerate((2.5, 5.0, 8.0, 16.0, 32.0, 64.0, 128.0), start=1):
        if abs(gts - rate) < 0.05 * rate:
            return gen
    return None


def pcie_width(text):
    m = re.fullmatch(r"x?(\d+)", text or "")
    return int(m.group(1)) if m else None


def pcie_link(props):
    """{gen, width, max_gen, max_width} from sysfs, as pinbench's cuda backend reports it."""
    out = {"gen": None, "width": None, "max_gen": None, "max_width": None}
    try:
        address = "%04x:%02x:%02x.0" % (props.pci_domain_id, props.pci_bus_id, props.pci_device_id)
    except AttributeError:
        return out, None
    d = f"/sys/bus/pci/devices/{address}/"
    out["gen"] = pcie_gen(read_first(d + "current_link_speed"))
    out["width"] = pcie_width(read_first(d + "current_link_width"))
    out["max_gen"] = pcie_gen(read_first(d + "max_link_speed"))
    out["max_width"] = pcie_width(read_first(d + "max_link_width"))
    return out, address


def driver_version():
    try:
        import pynvml  # nvidia-ml-py; optional

        pynvml.nvmlInit()
        try:
            v = pynvml.nvmlSystemGetCudaDriverVersion()
            return f"{v // 1000}.{(v % 1000) // 10}"
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 - any failure just means "unknown"
        return None


def device_info(torch):
    """cuda_device_info, with the driver and the PCIe link the transfers went through."""
    index = torch.cuda.current_device()
    pcie, address = pcie_link(torch.cuda.get_device_properties(index))
    return {**cuda_device_info(torch, index), "driver": driver_version(),
            "pci_bus_id": address, "pcie": pcie}


def calibrate_sleep(torch):
    """Cycles per ns of torch.cuda._sleep on the event clock, or None where it cannot run."""
    sleep = getattr(torch.cuda, "_sleep", None)
    if sleep is None:
        return None
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    try:
        sleep(CALIBRATION_CYCLES)  # the first launch carries one-off costs
        torch.cuda.synchronize()
        spans = []
        for _ in range(CALIBRATION_TRIALS):
            start.record()
            sleep(CALIBRATION_CYCLES)
            end.record()
            end.synchronize()
            spans.append(start.elapsed_time(end) * 1e6)
        return cycles_per_ns(CALIBRATION_CYCLES, spans)
    except (RuntimeError, ValueError) as e:
        print(f"{PROG}: torch.cuda._sleep cannot be calibrated ({e}); pinned non_blocking copies "
              "will not be held", file=sys.stderr)
        return None


# ---- measuring ------------------------------------------------------------------------------

class Transfer:
    """One case's tensors, stream and events, and one sample of its batch."""

    def __init__(self, torch, direction, memory, mode, nbytes, side, sleep_rate):
        self.torch = torch
        self.direction, self.memory, self.mode, self.nbytes = direction, memory, mode, nbytes
        self.copies = copies_per_sample(nbytes)
        self.side = side
        self.held = sleep_rate is not None and uses_hold(memory, mode)
        self.sleep_rate = sleep_rate
        self.hold_ns = MIN_HOLD_NS
        self.hold_cycles = hold_cycles(MIN_HOLD_NS, sleep_rate) if self.held else 0
        self.dev = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
        self.host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=memory == "pinned")
        self.host.fill_(1)  # touch every page, so no first-touch fault lands in a timed copy
        self.dev.fill_(2)
        torch.cuda.synchronize()  # the side stream reads what the default stream wrote
        self.start = torch.cuda.Event(enable_timing=True)
        self.end = torch.cuda.Event(enable_timing=True)

    def pair(self):
        return (self.dev, self.host) if self.direction == "h2d" else (self.host, self.dev)

    def set_hold(self, ns):
        self.hold_ns = round(ns)
        self.hold_cycles = hold_cycles(ns, self.sleep_rate)

    def sample(self):
        """(span_ns, held_ns for all copies, enqueue_ns, enqueue_since_launch_ns)."""
        torch, side = self.torch, self.side
        dst, src = self.pair()
        clock = time.perf_counter_ns
        held = 0
        if self.mode == "blocking":
            # pinbench: the copy on a non-default stream, then that stream synchronised.
            with torch.cuda.stream(side):
                t0 = clock()
                for _ in range(self.copies):
                    dst.copy_(src)
                    side.synchronize()
                t1 = clock()
            return float(t1 - t0), float(t1 - t0), float(t1 - t0), float(t1 - t0)
        with torch.cuda.stream(side):
            launch = clock()
            if self.held:
                torch.cuda._sleep(self.hold_cycles)
            t0 = clock()
            self.start.record(side)
            for _ in range(self.copies):
                c0 = clock()
                dst.copy_(src, non_blocking=True)
                held += clock() - c0
            self.end.record(side)
            t1 = clock()
        self.end.synchronize()
        return self.start.elapsed_time(self.end) * 1e6, float(held), float(t1 - t0), \
            float(t1 - launch)

    def verify(self, seed):
        """Copies a fresh pattern once through the measured path and reads it back another way."""
        torch, side = self.torch, self.side
        g = torch.Generator().manual_seed(seed)
        period = 4099  # prime: the pattern never lines up with pages or blocks
        base = torch.randint(0, 256, (period,), dtype=torch.uint8, generator=g)
        pattern = base.repeat(-(-self.nbytes // period))[:self.nbytes]
        if self.direction == "h2d":
            self.host.copy_(pattern)
        else:
            self.dev.copy_(pattern.to("cuda"))
            self.host.zero_()
        torch.cuda.synchronize()
        dst, src = self.pair()
        with torch.cuda.stream(side):
            dst.copy_(src, non_blocking=self.mode == "non_blocking")
        side.synchronize()
        got = self.dev.cpu() if self.direction == "h2d" else self.host
        return bool(torch.equal(got, pattern))


def measure_case(torch, direction, memory, mode, nbytes, rule, side, sleep_rate, seed):
    t = Transfer(torch, direction, memory, mode, nbytes, side, sleep_rate)
    enqueue = []
    for _ in range(rule.warmup):
        enqueue.append(t.sample()[2])
    if t.held:
        t.set_hold(hold_ns(enqueue))

    bandwidth, copy_ns, call_ns = [], [], []
    outrun = 0
    started = time.perf_counter()
    reason = None
    while reason is None:
        span, held, _, since_launch = t.sample()
        gbps, per_copy, per_call = sample_figures(nbytes, t.copies, span, held)
        bandwidth.append(gbps)
        copy_ns.append(per_copy)
        call_ns.append(per_call)
        if t.held and hold_outrun(since_launch, t.hold_ns):
            outrun += 1
        reason = stop_reason(rule, len(bandwidth), time.perf_counter() - started,
                             relative_stdev(bandwidth))

    if not t.verify(seed):
        raise RuntimeError("verification failed: the copied data differs from its source")
    info = {
        "bytes_per_copy": nbytes,
        "copies_per_sample": t.copies,
        "timing": timing_text(memory, mode, t.held),
        "verified": True,
        "sampling": rule.as_info(),
    }
    if t.held:
        info["hold"] = {
            "ns": t.hold_ns,
            "cycles": t.hold_cycles,
            "cycles_per_ns": sleep_rate,
            "warmup_enqueue_ns": enqueue,
            "outrun_samples": outrun,
        }
    del t
    return {
        "stop_reason": reason,
        "info": info,
        "metrics": {
            "bandwidth": metric("GB/s", "higher", bandwidth),
            "copy_time": metric("ns", "lower", copy_ns),
            "host_call_time": metric("ns", "lower", call_ns),
        },
    }


# ---- main -----------------------------------------------------------------------------------

def positive_seconds(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'not a number of seconds: "{text}"') from None
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f'must be a positive number of seconds: "{text}"')
    return value


def parse_args(argv):
    p = OneLineParser(prog=PROG, description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", nargs="+", metavar="SIZE",
                   help="copy sizes (e.g. 4KiB 64MiB or 4KiB,64MiB); default: "
                   + " ".join(DEFAULT_SIZES))
    p.add_argument("--out", default="torch-transfer.json", help="result file (pinbench.result/1)")
    p.add_argument("--quick", action="store_true",
                   help="sizes " + " ".join(QUICK_SIZES) + " and fewer samples, for a smoke test")
    p.add_argument("--budget", metavar="SECONDS", type=positive_seconds, default=None,
                   help="keep the whole run within about this many seconds by shortening each "
                   "case's sampling (at least 3 samples per case); default: no limit")
    args = p.parse_args(argv)
    if args.sizes:
        texts = [t for s in args.sizes for t in s.split(",") if t.strip()]
        if not texts:
            p.error("--sizes: no size given")
    else:
        texts = QUICK_SIZES if args.quick else DEFAULT_SIZES
    try:
        args.sizes = [parse_bytes(t) for t in texts]
    except argparse.ArgumentTypeError as e:
        p.error(f"--sizes: {e}")
    return args


def main(argv=None):
    began = time.perf_counter()  # the budget covers the whole script, start-up included
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    stop = Interruption()
    stop.catch()

    torch, code = start_cuda_torch(PROG, stop, "nothing measured, no file written")
    if torch is None:
        return code

    base_rule = QUICK_RULE if args.quick else DEFAULT_RULE
    todo = matrix(args.sizes)
    cases = []
    sleep_rate = None
    try:
        side = torch.cuda.Stream()
        sleep_rate = calibrate_sleep(torch)
        measure_all(torch, args, todo, base_rule, side, sleep_rate, began, cases)
        interrupted = False
    except KeyboardInterrupt:
        interrupted = True
        print(f"{PROG}: interrupted; writing the {len(cases)} case(s) measured", file=sys.stderr)
    stop.hold_off()

    notes = differences(args.budget, sleep_rate is not None, args.quick)
    doc = {
        **document_head(torch.__version__),
        "command_line": shlex.join([SOURCE, *argv]),
        "interrupted": interrupted,
        "environment": {"backend": "cuda", "device": device_info(torch), "host": host_info()},
        "scenarios": [{
            "name": "torch-transfer",
            "description": "PyTorch tensor copies: pinned vs pageable, blocking vs non_blocking",
            "kind": "transfer",
            "source": SOURCE,
            "differences": notes,
            "cases": cases,
        }],
    }
    write_atomic(args.out, json.dumps(doc, indent=2) + "\n", ".torch-transfer-")
    print(f"{PROG}: wrote {args.out} ({time.perf_counter() - began:.1f} s)", file=sys.stderr)
    print(f"{PROG}: differences from pinbench's method:", file=sys.stderr)
    for note in notes:
        print(f"{PROG}:   - {note}", file=sys.stderr)
    if interrupted:
        return stop.exit_code()
    return 1 if any(c["status"] != "ok" for c in cases) else 0


def measure_all(torch, args, todo, base_rule, side, sleep_rate, began, cases):
    """Every case of `todo`, each appended to `cases` once done (so an interruption keeps
    those)."""
    for i, (direction, memory, mode, nbytes) in enumerate(todo):
        cid = case_id(direction, memory, mode, nbytes)
        case = {
            "id": cid,
            "params": {"direction": direction, "memory": memory, "mode": mode,
                       "bytes": format_bytes_compact(nbytes)},
            "status": "ok",
        }
        rule = budget_rule(base_rule, args.budget, time.perf_counter() - began, len(todo) - i)
        started = time.perf_counter()
        try:
            result = measure_case(torch, direction, memory, mode, nbytes, rule, side, sleep_rate,
                                  seed=i + 7)
            case.update(stop_reason=result["stop_reason"],
                        elapsed_s=time.perf_counter() - started)
            outrun = result["info"].get("hold", {}).get("outrun_samples", 0)
            if outrun:
                case["warnings"] = [
                    f"{outrun} sample(s) took longer to queue than the torch.cuda._sleep hold: "
                    "part of their enqueue cost may be inside the timed span"]
            case.update(info=result["info"], metrics=result["metrics"])
            med = case["metrics"]["bandwidth"]["summary"]["median"]
            print(f"{PROG}: {cid}: {med:.2f} GB/s", file=sys.stderr)
        except Exception as e:  # noqa: BLE001 - one failed case does not stop the run
            # As pinbench writes a failed case: its message, no info, no metrics.
            case.update(status="error",
                        message=str(e) if isinstance(e, SpanError) else f"{type(e).__name__}: {e}",
                        stop_reason="converged", elapsed_s=time.perf_counter() - started,
                        metrics={})
            print(f"{PROG}: {cid}: error: {case['message']}", file=sys.stderr)
        finally:
            # Finish any copies a failure left in flight before the tensors go back.
            try:
                torch.cuda.synchronize()
            except RuntimeError:
                pass
        cases.append(case)


if __name__ == "__main__":
    sys.exit(main())
