#!/usr/bin/env python3
"""PyTorch peer of pinbench's transfer scenarios.

Measures host<->device copy bandwidth the way pinbench does (pinned vs pageable host tensors,
non_blocking copies on a side stream timed with CUDA events, blocking copies timed on the host)
and writes a pinbench.result/1 document, so that `pinbench compare`, `report` and a reader can
put PyTorch's own numbers beside pinbench's.

Exit codes: 0 done, 2 bad arguments, 3 no torch or no CUDA device.
"""

import argparse
import json
import os
import re
import sys
import time

# The helpers both peer scripts share live beside them: found from the script's own directory,
# so the script runs from any working directory (and under another interpreter when re-run).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pinbench_result import (  # noqa: E402
    document_head, format_bytes_compact, host_info, metric, parse_bytes, write_atomic)

DEFAULT_SIZES = ["4KiB", "64KiB", "1MiB", "16MiB", "64MiB", "256MiB"]
QUICK_SIZES = ["64KiB", "16MiB"]


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
    index = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(index)
    pcie, address = pcie_link(props)
    uuid = getattr(props, "uuid", None)
    info = {
        "name": torch.cuda.get_device_name(index),
        "uuid": f"GPU-{uuid}" if uuid is not None else None,
        "index": index,
        "compute_capability": f"{props.major}.{props.minor}",
        "driver": driver_version(),
        "runtime": torch.version.cuda,
        "memory_bytes": props.total_memory,
        "multiprocessors": props.multi_processor_count,
        "pci_bus_id": address,
        "pcie": pcie,
        "emulated": False,
    }
    return info


class Sampling:
    def __init__(self, quick):
        self.warmup = 3
        self.min_samples = 5 if quick else 10
        self.max_samples = 20 if quick else 100
        self.min_time_s = 0.05 if quick else 0.2

    def done(self, n, started):
        if n >= self.max_samples:
            return "max_samples"
        if n >= self.min_samples and time.perf_counter() - started >= self.min_time_s:
            return "converged"
        return None


def measure_case(torch, direction, memory, mode, nbytes, sampling, side_stream):
    pinned = memory == "pinned"
    host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=pinned)
    host.fill_(1)  # touch every page, so no first-touch fault lands in a timed copy
    dev = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    dev.fill_(2)
    src, dst = (host, dev) if direction == "h2d" else (dev, host)
    torch.cuda.synchronize()

    copy_ns, call_ns = [], []
    if mode == "non_blocking":
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)

        def one():
            with torch.cuda.stream(side_stream):
                start.record(side_stream)
                t0 = time.perf_counter_ns()
                dst.copy_(src, non_blocking=True)
                t1 = time.perf_counter_ns()
                end.record(side_stream)
            end.synchronize()
            return start.elapsed_time(end) * 1e6, t1 - t0

    else:

        def one():
            torch.cuda.synchronize()
            t0 = time.perf_counter_ns()
            dst.copy_(src)
            t1 = time.perf_counter_ns()
            torch.cuda.synchronize()
            t2 = time.perf_counter_ns()
            return float(t2 - t0), float(t1 - t0)

    for _ in range(sampling.warmup):
        one()
    started = time.perf_counter()
    stopped = None
    while stopped is None:
        c, h = one()
        copy_ns.append(c)
        call_ns.append(h)
        stopped = sampling.done(len(copy_ns), started)
    elapsed = time.perf_counter() - started

    # A copy too fast for the event clock reads as 0 ns: report no bandwidth for it rather
    # than an infinite one.
    bandwidth = [nbytes / (ns * 1e-9) / 1e9 for ns in copy_ns if ns > 0]
    verified = bool(torch.equal(host, dev.cpu()))
    del host, dev, src, dst
    if not verified:
        raise RuntimeError("the copied data differs from its source")
    return {
        "metrics": {
            "bandwidth": metric("GB/s", "higher", bandwidth),
            "copy_time": metric("ns", "lower", copy_ns),
            "host_call_time": metric("ns", "lower", call_ns),
        },
        "stopped": stopped,
        "elapsed_s": elapsed,
        "extra": {"verified": True},
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", nargs="+", metavar="SIZE",
                        help="copy sizes (e.g. 4KiB 64MiB or 4KiB,64MiB); default: "
                        + " ".join(DEFAULT_SIZES))
    parser.add_argument("--out", default="torch-transfer.json", help="result file (pinbench.result/1)")
    parser.add_argument("--quick", action="store_true",
                        help="fewer sizes and samples, for a smoke test")
    args = parser.parse_args(argv)

    if args.sizes:
        texts = [t for s in args.sizes for t in s.split(",") if t.strip()]
    else:
        texts = QUICK_SIZES if args.quick else DEFAULT_SIZES
    try:
        sizes = [parse_bytes(t) for t in texts]
    except argparse.ArgumentTypeError as e:
        parser.error(str(e))

    try:
        import torch
    except ImportError as e:
        print(f"torch_transfer: PyTorch is not importable: {e}", file=sys.stderr)
        return 3
    if not torch.cuda.is_available():
        print("torch_transfer: torch.cuda.is_available() is False (no NVIDIA driver or no device)",
              file=sys.stderr)
        return 3

    sampling = Sampling(args.quick)
    side_stream = torch.cuda.Stream()
    cases = []
    for direction in ("h2d", "d2h"):
        for memory in ("pageable", "pinned"):
            for mode in ("blocking", "non_blocking"):
                for nbytes in sizes:
                    size_text = format_bytes_compact(nbytes)
                    case_id = f"direction={direction},memory={memory},mode={mode},bytes={size_text}"
                    case = {
                        "id": case_id,
                        "params": {"direction": direction, "memory": memory, "mode": mode,
                                   "bytes": size_text},
                        "status": "ok",
                    }
                    try:
                        case.update(measure_case(torch, direction, memory, mode, nbytes, sampling,
                                                 side_stream))
                        med = case["metrics"]["bandwidth"]["summary"]["median"]
                        print(f"torch_transfer: {case_id}: {med:.2f} GB/s", file=sys.stderr)
                    except Exception as e:  # noqa: BLE001 - one failed case does not stop the run
                        case["status"] = "error"
                        case["message"] = f"{type(e).__name__}: {e}"
                        case["metrics"] = {}
                        print(f"torch_transfer: {case_id}: error: {case['message']}", file=sys.stderr)
                    cases.append(case)

    doc = {
        **document_head(torch.__version__),
        "environment": {"backend": "cuda", "device": device_info(torch), "host": host_info()},
        "scenarios": [{
            "name": "torch-transfer",
            "kind": "transfer",
            "source": "scripts/peer/torch_transfer.py",
            "description": "PyTorch tensor copies: pinned vs pageable, blocking vs non_blocking",
            "cases": cases,
        }],
    }
    write_atomic(args.out, json.dumps(doc, indent=2) + "\n", ".torch-transfer-")
    print(f"torch_transfer: wrote {args.out}", file=sys.stderr)
    return 1 if any(c["status"] != "ok" for c in cases) else 0


if __name__ == "__main__":
    sys.exit(main())
