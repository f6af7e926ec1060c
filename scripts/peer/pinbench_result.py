"""Shared by the PyTorch peer scripts: sizes as pinbench reads and writes them, summaries and
metrics as in a pinbench.result/1 document, the host block of its environment, and the atomic
write of the document. Imported from the scripts' own directory; standard library only.
"""

import argparse
import datetime
import math
import os
import signal
import platform
import re
import socket
import stat
import statistics
import sys
import tempfile

SCHEMA = "pinbench.result/1"
UNITS = {"": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def parse_bytes(text, example="4KiB, 64MiB, 4096"):
    """A positive size such as 4096 or 64MiB; argparse.ArgumentTypeError otherwise."""
    m = re.fullmatch(r"\s*(\d+)\s*(B|KiB|MiB|GiB)?\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f'not a size: "{text}" (expected e.g. {example})')
    value = int(m.group(1)) * UNITS[m.group(2) or ""]
    if value <= 0:
        raise argparse.ArgumentTypeError(f'size must be positive: "{text}"')
    return value


def int_at_least(low):
    """An argparse type: an integer >= low, in the words pinbench's own checks use."""
    def parse(text):
        try:
            value = int(text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f'not an integer: "{text}"') from None
        if value < low:
            raise argparse.ArgumentTypeError(f"expected an integer >= {low}, got {value}")
        return value
    return parse


def parse_fraction(text):
    """An argparse type: a number between 0 and 1, both included."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'not a number: "{text}"') from None
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise argparse.ArgumentTypeError(f'must be between 0 and 1: "{text}"')
    return value


def format_bytes_compact(n):
    """4096 -> "4KiB", 1000 -> "1000", as pinbench writes sizes in case ids."""
    for unit in ("GiB", "MiB", "KiB"):
        if n % UNITS[unit] == 0:
            return f"{n // UNITS[unit]}{unit}"
    return str(n)


def quantile_sorted(v, q):
    """Linear interpolation between order statistics (type 7), as pinbench's summarize()."""
    if not v:
        return 0.0
    pos = q * (len(v) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def summarize(samples):
    v = sorted(samples)
    if not v:
        return {"n": 0, "median": 0, "mean": 0, "min": 0, "max": 0, "q1": 0, "q3": 0, "stdev": 0}
    return {
        "n": len(v),
        "median": quantile_sorted(v, 0.5),
        "mean": statistics.fmean(v),
        "min": v[0],
        "max": v[-1],
        "q1": quantile_sorted(v, 0.25),
        "q3": quantile_sorted(v, 0.75),
        "stdev": statistics.stdev(v) if len(v) > 1 else 0.0,
    }


def metric(unit, better, samples):
    return {"unit": unit, "better": better, "summary": summarize(samples), "samples": samples}


def document_head(torch_version):
    """The first keys of a result document; the caller adds the rest after them."""
    return {
        "schema": SCHEMA,
        "tool": {"name": "torch-peer", "version": torch_version},
        "created": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def host_info():
    cpu = None
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    memory = None
    try:
        with open("/proc/meminfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    memory = int(line.split()[1]) * 1024
                    break
    except OSError:
        pass
    return {
        "cpu": cpu or platform.processor() or None,
        "cores": os.cpu_count(),
        "memory_bytes": memory,
        "hostname": socket.gethostname(),
        "os": f"{platform.system()} {platform.release()} {platform.machine()}",
        "python": platform.python_version(),
    }


def replace_atomically(path, prefix, write, shared=False, suffix=""):
    """Makes `path` through a temporary file beside it, so that a reader never sees half a
    file: `write(tmp)` fills the temporary file, which is then renamed. A file replaced keeps
    its mode; a new one is mkstemp's 0600, or with `shared` the umask's usual mode."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        mode = None
    fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=directory)
    os.close(fd)
    try:
        result = write(tmp)
        if mode is None and shared:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
        return result
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_atomic(path, text, prefix, shared=False):
    """Writes `text` to `path` as replace_atomically does."""
    def write(tmp):
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
    replace_atomically(path, prefix, write, shared)


class Interruption:
    """SIGINT and SIGTERM end the peer's work as KeyboardInterrupt (once), so that what was
    measured so far is still written; `signum` is the signal that came."""

    def __init__(self):
        self.signum = None

    def catch(self):
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, self._on_signal)

    def _on_signal(self, signum, frame):
        # Once: a step's budget may deliver SIGTERM twice (to the peer, then to its group), and
        # a second KeyboardInterrupt would cut the handling of the first.
        if self.signum is not None:
            return
        self.signum = signum
        raise KeyboardInterrupt

    def hold_off(self):
        """While the file is written: a second signal must not cut it."""
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_IGN)

    def exit_code(self):
        return 128 + (self.signum or signal.SIGINT)


def start_cuda_torch(prog, stop, nothing_done):
    """Imports torch and checks that CUDA is usable: (torch, None), or (None, exit code) after
    one line on stderr. A cold import can take 10-20 s, so a signal may come during it; then
    `nothing_done` says what was not yet done (e.g. "nothing measured, no file written")."""
    try:
        import torch  # noqa: PLC0415 - late: a caller may set PYTORCH_CUDA_ALLOC_CONF first
        available = torch.cuda.is_available()
    except ImportError as e:
        print(f"{prog}: PyTorch is not importable: {e}", file=sys.stderr)
        return None, 3
    except KeyboardInterrupt:
        print(f"{prog}: interrupted while starting torch: {nothing_done}", file=sys.stderr)
        return None, stop.exit_code()
    if not available:
        print(f"{prog}: torch.cuda.is_available() is False (no NVIDIA driver or no device)",
              file=sys.stderr)
        return None, 3
    return torch, None


def cuda_device_info(torch, index):
    """The CUDA device a peer measured, as pinbench's environment block names it."""
    props = torch.cuda.get_device_properties(index)
    uuid = getattr(props, "uuid", None)
    return {
        "name": torch.cuda.get_device_name(index),
        "uuid": f"GPU-{uuid}" if uuid is not None else None,
        "index": index,
        "compute_capability": f"{props.major}.{props.minor}",
        "runtime": torch.version.cuda,
        "memory_bytes": props.total_memory,
        "multiprocessors": props.multi_processor_count,
        "emulated": False,
    }
