#!/usr/bin/env python3
"""PyTorch peer of pinbench's loader scenarios.

Runs the dataset pinbench's `loader` kind describes (samples of sample_bytes, each costing a
calibrated amount of real CPU work) through torch.utils.data.DataLoader, sweeping num_workers
and cpu_per_sample, and writes a pinbench.result/1 document with the same case ids and metrics
(samples_per_s, batches_per_s, epoch_time, first_batch_time, data_wait), so that PyTorch's own
numbers can be put beside pinbench's.

With --jpeg DIR it runs pinbench's `dataset.source: "jpeg"` instead (scenario
loader-jpeg-workers): each sample is a JPEG file of an ImageFolder, read, decoded with PIL and
augmented with torchvision's training transforms (RandomResizedCrop, RandomHorizontalFlip, then
PILToTensor, or ToTensor + Normalize), as a user's training script does; the cases also carry
read_time, decode_time, augment_time (per sample, measured inside the workers) and bytes_read
(per run), as pinbench's jpeg source does.

Exit codes: 0 done, 1 a case failed (with --jpeg: also a file PIL cannot decode), 2 bad
arguments (also a --jpeg folder that is missing or holds no JPEG), 3 no torch (or --device cuda
without a CUDA device, or --jpeg without torchvision and Pillow), 130 interrupted (what was
measured is still written).
"""

import argparse
import io
import json
import math
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import time
import warnings

# The helpers both peer scripts share live beside them: found from the script's own directory,
# so the script runs from any working directory (and under another interpreter when re-run).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pinbench_result import (  # noqa: E402
    document_head, format_bytes_compact, host_info, int_at_least, metric, write_atomic)
import pinbench_result  # noqa: E402

PROG = "torch_dataloader"
SOURCE = "scripts/peer/torch_dataloader.py"
SYSTEM_PYTHON = "/usr/bin/python3"  # where Debian's python3-torch lands
REEXEC_MARK = "PINBENCH_TORCH_REEXEC"  # set when this script re-ran itself under SYSTEM_PYTHON
INSTALL_HINT = ("install it with `sudo apt-get install -y python3-torch` (Debian) or "
                "`pip install torch`, or rerun with --install")

DURATION_UNITS = {"ns": 1, "us": 1_000, "\u00b5s": 1_000, "ms": 1_000_000, "s": 1_000_000_000}

# One unit of per-sample CPU work: this many steps of a 32-bit LCG in pure Python. Pure Python
# keeps the work on one core (a torch op may fan out to intra-op threads) and holds the GIL the
# way a Python-side transform does, so oversubscription and GIL contention show up as they would.
LCG_STEPS_PER_UNIT = 32
CALIBRATION_TRIALS = 9
CALIBRATION_TRIAL_NS = 2_000_000

# The jpeg dataset: which files count as images (as pinbench's scan, a subset of ImageFolder's
# extensions), ImageNet's normalisation, and the defaults of scenario loader-jpeg-workers.
JPEG_EXTENSIONS = (".jpg", ".jpeg")
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
JPEG_SCENARIO = "loader-jpeg-workers"
JPEG_QUICK_IMAGES = 256

# Workers hand their batches to the main process through shared memory (/dev/shm): up to
# prefetch_factor batches per worker in flight, plus the one the loop holds and one being pinned.
SHM_BATCHES_IN_HAND = 2
SHM_PATH = "/dev/shm"
# --quick sweeps 0 and 2 workers: 2 x 2 + 2 batches of 64 x 128 KiB = 48 MiB, within a
# container's default 64 MB /dev/shm (4 workers would need 80 MiB and fail there).
QUICK_WORKERS = "0,2"


# ---- arguments ------------------------------------------------------------------------------

def parse_bytes(text):
    return pinbench_result.parse_bytes(text, example="128KiB, 1MiB, 4096")


def parse_duration_ns(text):
    """"200us" -> 200000; a bare 0 needs no unit, as in pinbench."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ns|us|\u00b5s|ms|s)?\s*", text)
    if not m or (m.group(2) is None and float(m.group(1)) != 0):
        raise argparse.ArgumentTypeError(
            f'not a duration: "{text}" (expected e.g. 0, 500ns, 200us, 2ms)')
    return round(float(m.group(1)) * DURATION_UNITS[m.group(2) or "ns"])


def comma_list(parse_item, what):
    """A comma list of items as typed, each paired with its parsed value; no blanks, no repeats
    (a repeated value would give two cases one id)."""
    def parse(text):
        items = [t.strip() for t in text.split(",")]
        if not text.strip() or any(not t for t in items):
            raise argparse.ArgumentTypeError(f'empty entry in the {what} list "{text}"')
        out = []
        for t in items:
            value = parse_item(t)
            if any(v == value for _, v in out):
                raise argparse.ArgumentTypeError(f'{what} "{t}" appears twice in "{text}"')
            out.append((t, value))
        return out
    return parse


class OneLineParser(argparse.ArgumentParser):
    """Bad arguments: one line on stderr and exit 2, not the usage block."""

    def error(self, message):
        print(f"{PROG}: error: {message} (see --help)", file=sys.stderr)
        sys.exit(2)


def parse_args(argv):
    p = OneLineParser(prog=PROG, description=__doc__.split("\n\n")[0])
    p.add_argument("--workers", metavar="N,N,...", type=comma_list(int_at_least(0), "workers"),
                   default=None,
                   help="num_workers values to sweep, comma list (default 0,2,4; 0,1,2,4 with "
                   f"--jpeg; {QUICK_WORKERS} with --quick)")
    p.add_argument("--cpu-per-sample", metavar="DURATION,...",
                   type=comma_list(parse_duration_ns, "cpu-per-sample"),
                   default=None,
                   help="real CPU work per sample, comma list of durations (default 0us,200us; "
                   "not with --jpeg)")
    p.add_argument("--batch-size", metavar="N", type=int_at_least(1), default=None,
                   help="samples per batch (default 64; 32 with --jpeg)")
    p.add_argument("--samples", metavar="N", type=int_at_least(1), default=None,
                   help="samples in the dataset (default 4096; 1024 with --quick); with --jpeg: "
                   "the first N images in ImageFolder order (default all; at most 256 with "
                   "--quick)")
    p.add_argument("--sample-bytes", metavar="SIZE", type=parse_bytes, default=None,
                   help="bytes per sample (default 128KiB; not with --jpeg)")
    p.add_argument("--jpeg", metavar="DIR", default=None,
                   help="samples are the JPEG files of DIR, an ImageFolder (DIR/<class>/<file>.jpg"
                   "), decoded with PIL and augmented with torchvision; scenario "
                   f"{JPEG_SCENARIO}")
    p.add_argument("--crop", metavar="N", type=int_at_least(1), default=None,
                   help="--jpeg: RandomResizedCrop's output size (default 224)")
    p.add_argument("--output", choices=("uint8", "float32"), default=None,
                   help="--jpeg: uint8 CHW (PILToTensor) or float32 CHW normalised with ImageNet's "
                   "mean and std (ToTensor + Normalize) (default float32)")
    p.add_argument("--seed", metavar="N", type=int_at_least(0), default=None,
                   help="--jpeg: torch.manual_seed at the start of each case, for the crops and "
                   "flips (default 0)")
    p.add_argument("--prefetch-factor", metavar="N", type=int_at_least(1), default=2,
                   help="batches in flight per worker (default 2; unused with 0 workers)")
    p.add_argument("--pin-memory", action="store_true",
                   help="pin batches (needs a CUDA build of torch and a device; otherwise off, "
                   "with a warning in each case)")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                   help="where batches go: cuda copies each with .to(non_blocking=True); cpu only "
                   "consumes them (default auto: cuda when available)")
    p.add_argument("--compute-per-batch", metavar="DURATION", type=parse_duration_ns, default=None,
                   help="device busy work per batch, cuda only (duration, default 0)")
    p.add_argument("--epochs", metavar="N", type=int_at_least(1), default=1,
                   help="epochs per run (default 1)")
    p.add_argument("--runs", metavar="N", type=int_at_least(1), default=None,
                   help="timed runs per case (default 5; 3 with --quick)")
    p.add_argument("--warmup", metavar="N", type=int_at_least(0), default=1,
                   help="untimed runs before them (default 1)")
    p.add_argument("--quick", action="store_true",
                   help=f"1024 samples (--jpeg: at most 256 images), 3 runs and workers "
                   f"{QUICK_WORKERS} (fits a 64 MB /dev/shm)")
    p.add_argument("--out", metavar="FILE", default="torch-dataloader.json",
                   help="result file (pinbench.result/1), or - for stdout")
    p.add_argument("--install", action="store_true",
                   help="if torch is missing, apt-get install python3-torch (also "
                   "PINBENCH_INSTALL_TORCH=1)")
    args = p.parse_args(argv)
    if args.jpeg is not None:
        for name in ("cpu_per_sample", "sample_bytes"):
            if getattr(args, name) is not None:
                p.error(f"--{name.replace('_', '-')} does not apply with --jpeg (each sample is "
                        "an image file, its cost is its decode and augmentation)")
    else:
        for name in ("crop", "output", "seed"):
            if getattr(args, name) is not None:
                p.error(f"--{name} applies only with --jpeg DIR")
    if args.workers is None:
        args.workers = comma_list(int_at_least(0), "workers")(
            QUICK_WORKERS if args.quick else "0,1,2,4" if args.jpeg is not None else "0,2,4")
    if args.batch_size is None:
        args.batch_size = 32 if args.jpeg is not None else 64
    if args.runs is None:
        args.runs = 3 if args.quick else 5
    if args.compute_per_batch is None:
        args.compute_per_batch = 0
    args.images = None
    args.samples_requested = args.samples
    if args.jpeg is not None:
        # The folder is read before torch is imported, so a wrong path costs no import.
        try:
            args.images = scan_image_folder(args.jpeg)
        except ValueError as e:
            p.error(str(e))
        cap = args.samples if args.samples is not None else (
            JPEG_QUICK_IMAGES if args.quick else None)
        files = args.images["files"]
        if cap is not None:
            files = args.images["files"] = files[:cap]
        args.images["total_bytes"] = sum(size for _, _, size in files)
        args.samples = len(files)
        args.crop = 224 if args.crop is None else args.crop
        args.output = args.output or "float32"
        args.seed = 0 if args.seed is None else args.seed
        return args
    if args.cpu_per_sample is None:
        args.cpu_per_sample = comma_list(parse_duration_ns, "cpu-per-sample")("0us,200us")
    if args.samples is None:
        args.samples = 1024 if args.quick else 4096
    if args.sample_bytes is None:
        args.sample_bytes = 128 << 10
    return args


def scan_image_folder(root):
    """torchvision.datasets.ImageFolder's file discovery, JPEG files only: class folders sorted
    by name (their index is the label), each walked (links followed) in sorted order, file names
    sorted. {"dir", "classes", "files": [(path, label, size)]}. ValueError naming the folder
    when it is missing or holds no JPEG file in a class folder."""
    if not os.path.exists(root):
        raise ValueError(f"--jpeg {root}: no such folder")
    if not os.path.isdir(root):
        raise ValueError(f"--jpeg {root}: not a folder")
    try:
        classes = sorted(e.name for e in os.scandir(root) if e.is_dir())
    except OSError as e:
        raise ValueError(f"--jpeg {root}: cannot list it ({e.strerror})") from None
    files = []
    for label, name in enumerate(classes):
        for folder, _, names in sorted(os.walk(os.path.join(root, name), followlinks=True)):
            for fname in sorted(names):
                if fname.lower().endswith(JPEG_EXTENSIONS):
                    path = os.path.join(folder, fname)
                    try:
                        size = os.path.getsize(path)
                    except OSError:
                        size = 0  # unreadable: the case that reads it fails, naming it
                    files.append((path, label, size))
    if not files:
        raise ValueError(f"--jpeg {root}: no .jpg/.jpeg file in a class folder (ImageFolder "
                         f"layout: {root}/<class>/<image>.jpg; {len(classes)} class folder(s))")
    return {"dir": root, "classes": len(classes), "files": files}


# ---- format helpers -------------------------------------------------------------------------

def format_duration_compact(ns):
    """2000000 -> "2ms", 0 -> "0": a duration as a param, in the largest exact unit."""
    if ns == 0:
        return "0"
    for unit in ("s", "ms", "us"):
        if ns % DURATION_UNITS[unit] == 0:
            return f"{ns // DURATION_UNITS[unit]}{unit}"
    return f"{ns}ns"


def format_duration_ns(ns):
    """As pinbench's tables show durations."""
    a = abs(ns)
    if a < 1e3:
        return f"{ns:.0f} ns"
    if a < 1e6:
        return f"{ns / 1e3:.2f} us"
    if a < 1e9:
        return f"{ns / 1e6:.2f} ms"
    return f"{ns / 1e9:.2f} s"


# ---- torch, found or installed --------------------------------------------------------------

def try_import_torch():
    try:
        import torch  # noqa: PLC0415 - imported late so that argument errors need no torch
        return torch, None
    except ImportError as e:
        return None, e


def system_python_has_torch():
    """True when Debian's interpreter (not this one) has torch: python3-torch installs there, and
    a pyenv or venv python3 first on PATH does not see it."""
    if os.environ.get(REEXEC_MARK) or not os.path.exists(SYSTEM_PYTHON):
        return False
    try:
        if os.path.samefile(sys.executable, SYSTEM_PYTHON):
            return False
    except OSError:
        pass
    try:
        # find_spec, not import: importing torch takes seconds, and the re-run imports it anyway.
        r = subprocess.run([SYSTEM_PYTHON, "-c", "import importlib.util, sys; "
                            "sys.exit(importlib.util.find_spec('torch') is None)"],
                           capture_output=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0


def reexec_under_system_python(argv):
    print(f"{PROG}: torch is not importable by {sys.executable} but is installed for "
          f"{SYSTEM_PYTHON}; re-running under it", file=sys.stderr)
    sys.stderr.flush()
    env = dict(os.environ, **{REEXEC_MARK: "1"})
    os.execve(SYSTEM_PYTHON, [SYSTEM_PYTHON, os.path.abspath(__file__), *argv], env)


def install_torch():
    """apt-get install python3-torch, with sudo when not root. Its output goes to stderr: stdout
    may be carrying the result document."""
    cmd = ["apt-get", "install", "-y", "python3-torch"]
    if os.geteuid() != 0:
        if shutil.which("sudo") is None:
            print(f"{PROG}: cannot install torch: not root and no sudo; {INSTALL_HINT}",
                  file=sys.stderr)
            return False
        cmd.insert(0, "sudo")
    print(f"{PROG}: torch is missing; running: {' '.join(cmd)}", file=sys.stderr)
    sys.stderr.flush()
    try:
        r = subprocess.run(cmd, stdout=sys.stderr, check=False)
    except OSError as e:
        print(f"{PROG}: cannot run apt-get: {e}; {INSTALL_HINT}", file=sys.stderr)
        return False
    if r.returncode != 0:
        print(f"{PROG}: `{' '.join(cmd)}` failed with exit {r.returncode}; {INSTALL_HINT}",
              file=sys.stderr)
        return False
    return True


def obtain_torch(args, argv):
    """torch, or None after one line saying why and how to get it. May not return at all: it
    re-runs the script under Debian's python3 when only that one has torch."""
    torch, error = try_import_torch()
    if torch is not None:
        return torch
    if system_python_has_torch():
        reexec_under_system_python(argv)
    if args.install or os.environ.get("PINBENCH_INSTALL_TORCH") == "1":
        if install_torch():
            import importlib  # noqa: PLC0415

            importlib.invalidate_caches()
            torch, error = try_import_torch()
            if torch is not None:
                return torch
            if system_python_has_torch():
                reexec_under_system_python(argv)
            print(f"{PROG}: python3-torch is installed, but PyTorch is still not importable by "
                  f"{sys.executable} ({error})", file=sys.stderr)
        return None
    print(f"{PROG}: PyTorch is not importable by {sys.executable} ({error}); {INSTALL_HINT}",
          file=sys.stderr)
    return None


# ---- the dataset and its CPU work -----------------------------------------------------------

def lcg_work(seed, units):
    x = (seed * 2654435761 + 1) & 0xFFFFFFFF
    for _ in range(units * LCG_STEPS_PER_UNIT):
        x = (x * 1103515245 + 12345) & 0xFFFFFFFF
    return x


def calibrate_unit_ns():
    """Median over trials of the CPU time one work unit takes, measured once in the main process;
    workers are handed the result, not re-measured. Thread CPU time rather than wall time: on a
    shared machine a trial that is descheduled halfway would otherwise read as a slow unit, and
    every sample would then do too little work."""
    units = 16
    while True:  # grow the trial until it takes CALIBRATION_TRIAL_NS, so timer noise is small
        t0 = time.thread_time_ns()
        lcg_work(1, units)
        if time.thread_time_ns() - t0 >= CALIBRATION_TRIAL_NS or units >= 1 << 20:
            break
        units *= 2
    per_unit = []
    for trial in range(CALIBRATION_TRIALS):
        t0 = time.thread_time_ns()
        lcg_work(trial, units)
        per_unit.append((time.thread_time_ns() - t0) / units)
    return statistics.median(per_unit)


class SyntheticDataset:
    """Item i: sample_bytes bytes, all equal to i mod 256 (cheap to make, easy to verify), after
    `units` units of real CPU work. A map-style torch Dataset (it has __getitem__ and __len__);
    created after torch is imported, so the class needs no torch at definition time."""

    def __init__(self, torch, samples, sample_bytes, units):
        self.samples = samples
        self.sample_bytes = sample_bytes
        self.units = units
        self.checksum = 0
        self._full = torch.full
        self._uint8 = torch.uint8

    def __len__(self):
        return self.samples

    def __getitem__(self, i):
        if i < 0 or i >= self.samples:
            raise IndexError(i)
        if self.units:
            self.checksum ^= lcg_work(i, self.units)  # kept, so the work is not dead code
        return self._full((self.sample_bytes,), i & 0xFF, dtype=self._uint8)


class ImageReadError(Exception):
    """A file that could not be read or decoded: its path, then PIL's (or the OS's) message.
    Raised in a worker, it reaches the main process re-raised by DataLoader with the worker's
    whole traceback as its message; `detail` is the one line again."""

    @property
    def detail(self):
        text = str(self)
        m = re.match(r"Caught ImageReadError (in DataLoader worker process \d+)\.", text)
        if not m:
            return text
        last = re.sub(r"^[\w.]*ImageReadError: ", "", text.rstrip().splitlines()[-1])
        return f"{last} ({m.group(1)})"


class JpegDataset:
    """Item i: the i-th JPEG of the folder in ImageFolder order, as a training script loads it
    (torchvision's ImageFolder + pil_loader): the file's bytes, PIL's decode to RGB, then
    RandomResizedCrop(crop) + RandomHorizontalFlip + PILToTensor (uint8) or ToTensor + Normalize
    (float32). Returns (image, label, index, read_ns, decode_ns, augment_ns, bytes_read): the
    worker's own clock around the file read, the decode and the transforms, as pinbench splits a
    sample's time, collated into tensors with the batch so that the main process records them.
    A map-style torch Dataset; made after torch is imported."""

    def __init__(self, files, crop, output):
        from PIL import Image  # noqa: PLC0415
        from torchvision import transforms  # noqa: PLC0415

        self.files = files
        self._open = Image.open
        steps = [transforms.RandomResizedCrop(crop), transforms.RandomHorizontalFlip()]
        if output == "uint8":
            steps.append(transforms.PILToTensor())
        else:
            steps += [transforms.ToTensor(), transforms.Normalize(IMAGENET_MEAN, IMAGENET_STD)]
        self.transform = transforms.Compose(steps)

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        if i < 0 or i >= len(self.files):
            raise IndexError(i)
        path, label, _ = self.files[i]
        try:
            t0 = time.perf_counter_ns()
            with open(path, "rb") as f:
                data = f.read()
            t1 = time.perf_counter_ns()
            # convert() loads (decodes) the lazily opened image: all of the decode is timed here.
            image = self._open(io.BytesIO(data)).convert("RGB")
            t2 = time.perf_counter_ns()
        except Exception as e:  # noqa: BLE001 - PIL raises OSError, SyntaxError, ValueError...
            raise ImageReadError(f"{path}: {e}") from None
        tensor = self.transform(image)
        t3 = time.perf_counter_ns()
        return tensor, label, i, t1 - t0, t2 - t1, t3 - t2, len(data)


def calibrate_sleep_cycles_per_ns(torch):
    """torch.cuda._sleep spins for a number of GPU clock cycles: how many make one ns."""
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    cycles = 1_000_000
    torch.cuda._sleep(cycles)  # first launch carries one-off costs
    torch.cuda.synchronize()
    rates = []
    for _ in range(5):
        start.record()
        torch.cuda._sleep(cycles)
        end.record()
        end.synchronize()
        ns = start.elapsed_time(end) * 1e6
        if ns > 0:
            rates.append(cycles / ns)
    if not rates:
        raise RuntimeError("torch.cuda._sleep could not be timed")
    return statistics.median(rates)


# ---- measuring ------------------------------------------------------------------------------

class Interrupted(Exception):
    """Ctrl-C inside a case, carrying the whole runs measured before it."""

    def __init__(self, partial, runs):
        super().__init__("interrupted")
        self.partial = partial
        self.runs = runs


SIGINT_SEEN = [False]


def on_sigint(signum, frame):
    # Ctrl-C reaches the loader's workers too; when one dies of it first, the main process sees
    # torch's "worker exited unexpectedly" error instead of KeyboardInterrupt. The flag lets that
    # error still count as an interruption rather than as a failed case. Once: a step's budget
    # may deliver SIGTERM twice (to the peer, then to its group), and a second KeyboardInterrupt
    # would cut the writing of what was measured.
    if SIGINT_SEEN[0]:
        return
    SIGINT_SEEN[0] = True
    signal.default_int_handler(signum, frame)


def on_sigterm(signum, frame):
    # A step's budget (timeout) ends the run with SIGTERM: kept as an interruption, so the cases
    # measured so far are written as after Ctrl-C.
    on_sigint(signum, frame)


def shm_bytes_needed(workers, prefetch_factor, batch_bytes):
    """Shared memory a case's batches may hold at once; none without workers."""
    if workers == 0:
        return 0
    return (workers * prefetch_factor + SHM_BATCHES_IN_HAND) * batch_bytes


def shm_free_bytes(path=SHM_PATH):
    """Free bytes of /dev/shm, or None where it cannot be read (then nothing is skipped)."""
    try:
        return shutil.disk_usage(path).free
    except OSError:
        return None


def shm_shortfall(needed, free):
    """Why a case cannot run in the shared memory there is, or None when it fits."""
    if free is None or needed <= free:
        return None
    mib = 1 << 20
    return (f"needs {needed / mib:.1f} MiB of {SHM_PATH} (workers x prefetch_factor + "
            f"{SHM_BATCHES_IN_HAND} batches), which has {free / mib:.1f} MiB free: a "
            "DataLoader worker would die of it; give the container more (docker run --shm-size)")


def check_synthetic_batch(torch, batch, seen, setup, number):
    """Every sample once, in order: row r holds sample (first index + r), whose first and last
    bytes are its index mod 256. Two columns of B rows: cheap beside the batch. Returns B."""
    n = batch.shape[0]
    expected = torch.arange(seen, seen + n, dtype=torch.int64).bitwise_and_(0xFF).to(torch.uint8)
    if batch.shape[1:] != (setup["sample_bytes"],) or \
            not torch.equal(batch[:, 0], expected) or \
            not torch.equal(batch[:, -1], expected):
        raise RuntimeError(f"batch {number} does not hold samples {seen}..{seen + n - 1}")
    return n


def take_jpeg_batch(torch, batch, seen, setup, number, per_sample):
    """Every image once, in order, with its label and the shape and type asked for; its
    per-sample times and bytes go to per_sample (None: not kept). Returns B."""
    images, labels, indices, read_ns, decode_ns, augment_ns, nbytes = batch
    n = images.shape[0]
    crop = setup["crop"]
    if tuple(images.shape[1:]) != (3, crop, crop) or images.dtype != setup["dtype"] or \
            not torch.equal(indices, torch.arange(seen, seen + n, dtype=indices.dtype)) or \
            not torch.equal(labels, setup["labels"][seen:seen + n]):
        raise RuntimeError(f"batch {number} ({tuple(images.shape)} {images.dtype}) does not hold "
                           f"images {seen}..{seen + n - 1} as 3x{crop}x{crop} {setup['dtype']}")
    if per_sample is not None:
        per_sample["read"].extend(float(x) for x in read_ns.tolist())
        per_sample["decode"].extend(float(x) for x in decode_ns.tolist())
        per_sample["augment"].extend(float(x) for x in augment_ns.tolist())
        per_sample["bytes"] += int(nbytes.sum())
    return n


def one_epoch(torch, loader, setup, expected_batches, wait_ns, per_sample=None):
    """One epoch through a fresh iterator: (epoch_ns, first_batch_ns, batches). Appends each
    step's wait in next() to wait_ns; a jpeg dataset's per-sample figures go to per_sample."""
    device = setup["device"]
    sleep_cycles = setup["sleep_cycles"]
    jpeg = setup["images"] is not None
    seen = 0
    batches = 0
    first_ns = None
    it = None
    t_start = time.perf_counter_ns()
    try:
        it = iter(loader)
        while True:
            t0 = time.perf_counter_ns()
            try:
                batch = next(it)
            except StopIteration:
                break
            t1 = time.perf_counter_ns()
            wait_ns.append(float(t1 - t0))
            if first_ns is None:
                first_ns = t1 - t_start
            if jpeg:
                seen += take_jpeg_batch(torch, batch, seen, setup, batches, per_sample)
                data = batch[0]
            else:
                seen += check_synthetic_batch(torch, batch, seen, setup, batches)
                data = batch
            batches += 1
            if device != "cpu":
                on_device = data.to(device, non_blocking=True)
                if sleep_cycles:
                    torch.cuda._sleep(sleep_cycles)
                del on_device
            del batch, data
        if device != "cpu":
            torch.cuda.synchronize()  # the epoch ends when its device work does
        t_end = time.perf_counter_ns()
    finally:
        del it  # shuts its workers down, also when interrupted
    if seen != setup["samples"] or batches != expected_batches:
        raise RuntimeError(f"epoch delivered {seen} samples in {batches} batches, expected "
                           f"{setup['samples']} in {expected_batches}")
    return t_end - t_start, (first_ns if first_ns is not None else t_end - t_start), batches


def measure_case(torch, setup, workers, units, args):
    from torch.utils.data import DataLoader  # noqa: PLC0415

    jpeg = setup["images"] is not None
    if jpeg:
        torch.manual_seed(args.seed)  # the crops and flips, and the workers' seeds drawn from it
        dataset = JpegDataset(setup["images"]["files"], args.crop, args.output)
    else:
        dataset = SyntheticDataset(torch, args.samples, args.sample_bytes, units)
    kwargs = {"batch_size": args.batch_size, "shuffle": False, "drop_last": False,
              "num_workers": workers, "pin_memory": setup["pin_memory"],
              "persistent_workers": False}
    if workers > 0:  # torch rejects prefetch_factor without workers
        kwargs["prefetch_factor"] = args.prefetch_factor
    loader = DataLoader(dataset, **kwargs)
    expected_batches = math.ceil(args.samples / args.batch_size)

    for _ in range(args.warmup):
        for _ in range(args.epochs):
            one_epoch(torch, loader, setup, expected_batches, [])

    samples_per_s, batches_per_s, epoch_ns, first_ns, wait_ns = [], [], [], [], []
    read_ns, decode_ns, augment_ns, bytes_read = [], [], [], []

    def measured():
        out = {
            "samples_per_s": metric("samples/s", "higher", samples_per_s),
            "batches_per_s": metric("batches/s", "higher", batches_per_s),
            "epoch_time": metric("ns", "lower", epoch_ns),
            "first_batch_time": metric("ns", "lower", first_ns),
            "data_wait": metric("ns", "lower", wait_ns),
        }
        if jpeg:  # as pinbench's jpeg source declares them
            out["read_time"] = metric("ns", "lower", read_ns)
            out["decode_time"] = metric("ns", "lower", decode_ns)
            out["augment_time"] = metric("ns", "lower", augment_ns)
            out["bytes_read"] = metric("bytes", "", bytes_read)
        return out

    try:
        for _ in range(args.runs):
            run_ns = 0
            run_batches = 0
            run_waits = []
            run_epochs, run_firsts = [], []
            per_sample = {"read": [], "decode": [], "augment": [], "bytes": 0} if jpeg else None
            for _ in range(args.epochs):
                e, f, b = one_epoch(torch, loader, setup, expected_batches, run_waits,
                                    per_sample)
                run_ns += e
                run_batches += b
                run_epochs.append(float(e))
                run_firsts.append(float(f))
            # A run's samples join the metrics together, so an interrupted case keeps whole runs.
            samples_per_s.append(args.samples * args.epochs / (run_ns * 1e-9))
            batches_per_s.append(run_batches / (run_ns * 1e-9))
            epoch_ns.extend(run_epochs)
            first_ns.extend(run_firsts)
            wait_ns.extend(run_waits)
            if jpeg:
                read_ns.extend(per_sample["read"])
                decode_ns.extend(per_sample["decode"])
                augment_ns.extend(per_sample["augment"])
                bytes_read.append(float(per_sample["bytes"]))
    except KeyboardInterrupt:
        raise Interrupted(measured(), len(samples_per_s)) from None
    except Exception:
        if SIGINT_SEEN[0]:
            raise Interrupted(measured(), len(samples_per_s)) from None
        raise
    return measured()


# ---- environment ----------------------------------------------------------------------------

def device_info(torch, device):
    if device == "cpu":
        return {"name": "none (batches stay on the CPU)", "emulated": False}
    return pinbench_result.cuda_device_info(torch, torch.cuda.current_device())


def environment(torch, setup):
    import torch.multiprocessing as mp  # noqa: PLC0415

    return {
        "backend": "torch-cuda" if setup["device"] != "cpu" else "torch-cpu",
        "device": device_info(torch, setup["device"]),
        "host": host_info(),
        "peer": {
            "name": "torch.utils.data.DataLoader",
            "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "python": sys.executable,
            "intra_op_threads": torch.get_num_threads(),
            "start_method": mp.get_start_method(allow_none=True) or "default",
            **(setup["libraries"] or {}),
        },
    }


def write_document(args, argv, torch, setup, cases, interrupted):
    if setup["images"] is None:
        name = "loader-peer"
        description = ("torch.utils.data.DataLoader over a synthetic dataset with calibrated CPU "
                       "work per sample")
    else:
        name = JPEG_SCENARIO
        description = ("torch.utils.data.DataLoader over an ImageFolder of JPEGs: file read, PIL "
                       "decode, RandomResizedCrop + RandomHorizontalFlip + " +
                       ("PILToTensor" if args.output == "uint8" else "ToTensor + Normalize"))
    doc = {
        **document_head(torch.__version__),
        "command_line": shlex.join([SOURCE, *argv]),
        "interrupted": interrupted,
        "environment": environment(torch, setup),
        "scenarios": [{
            "name": name,
            "description": description,
            "kind": "loader",
            "source": SOURCE,
            "cases": cases,
        }],
    }
    text = json.dumps(doc, indent=2) + "\n"
    if args.out == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        write_atomic(args.out, text, ".torch-dataloader-", shared=True)
        print(f"{PROG}: wrote {args.out}", file=sys.stderr)


def print_table(cases):
    """samples/s and data_wait per case; with images, the per-sample read, decode and augment
    too."""
    per_sample = any("decode_time" in c.get("metrics", {}) for c in cases)
    head = ["case", "status", "samples/s (median)", "data_wait (median)"]
    if per_sample:
        head += ["read (median)", "decode (median)", "augment (median)"]
    rows = [head]
    for c in cases:
        m = c.get("metrics", {})

        def median(name, fmt):
            s = m.get(name, {}).get("summary", {})
            return fmt(s["median"]) if s.get("n") else "-"

        row = [c["id"], c["status"], median("samples_per_s", lambda v: f"{v:.0f}"),
               median("data_wait", format_duration_ns)]
        if per_sample:
            row += [median("read_time", format_duration_ns),
                    median("decode_time", format_duration_ns),
                    median("augment_time", format_duration_ns)]
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    for r in rows:
        cells = [f"{r[0]:<{widths[0]}}", f"{r[1]:<{widths[1]}}"]
        cells += [f"{v:>{w}}" for v, w in zip(r[2:], widths[2:])]
        print("  ".join(cells), file=sys.stderr)


# ---- main -----------------------------------------------------------------------------------

def prepare(torch, args):
    """Device choice, pinning and calibration, shared by every case; plus warnings for all."""
    notes = []
    cuda = torch.cuda.is_available()
    if args.device == "cuda" and not cuda:
        print(f"{PROG}: --device cuda, but torch.cuda.is_available() is False (torch "
              f"{torch.__version__}, CUDA {torch.version.cuda or 'none: a CPU build'})",
              file=sys.stderr)
        return None
    device = "cuda" if args.device == "cuda" or (args.device == "auto" and cuda) else "cpu"

    pin = args.pin_memory
    if pin and not cuda:
        pin = False
        why = ("this torch is a CPU build" if torch.version.cuda is None
               else "no CUDA device is usable")
        notes.append(f"pin_memory was requested but is off: {why} "
                     f"(torch {torch.__version__}), and DataLoader pins only for CUDA")
    elif pin and device == "cpu":
        notes.append("pin_memory is on, but batches stay on the CPU (--device cpu): pinning "
                     "is pure overhead here")

    compute_ns = args.compute_per_batch
    sleep_cycles_per_ns = None
    if compute_ns and device == "cpu":
        notes.append(f"compute_per_batch {format_duration_ns(compute_ns)} is ignored: it is "
                     "device work and batches stay on the CPU")
        compute_ns = 0
    elif compute_ns:
        sleep_cycles_per_ns = calibrate_sleep_cycles_per_ns(torch)

    images = args.images
    libraries = labels = None
    unit_ns = None
    if images is not None:
        libraries = image_libraries()
        if libraries is None:
            return None
        labels = torch.tensor([label for _, label, _ in images["files"]], dtype=torch.int64)
        print(f"{PROG}: {len(images['files'])} JPEG(s) of {images['dir']}, "
              f"{images['total_bytes'] / 1e6:.1f} MB; torchvision "
              f"{libraries['torchvision']}, Pillow {libraries['pillow']}, libjpeg-turbo "
              f"{libraries['libjpeg_turbo'] or 'not found'}; device {device}", file=sys.stderr)
    else:
        unit_ns = calibrate_unit_ns()
        print(f"{PROG}: calibration: one work unit ({LCG_STEPS_PER_UNIT} LCG steps in Python) = "
              f"{unit_ns:.0f} ns; device {device}", file=sys.stderr)
    return {
        "images": images,
        "libraries": libraries,
        "labels": labels,
        "crop": args.crop,
        "dtype": (torch.uint8 if args.output == "uint8" else torch.float32) if images else None,
        "device": device,
        "pin_memory": pin,
        "compute_ns": compute_ns,
        "sleep_cycles_per_ns": sleep_cycles_per_ns,
        "sleep_cycles": round(compute_ns * sleep_cycles_per_ns) if compute_ns else 0,
        "unit_ns": unit_ns,
        "torch_version": torch.__version__,
        "samples": args.samples,
        "sample_bytes": args.sample_bytes,
        "warnings": notes,
    }


def image_libraries():
    """torchvision's, Pillow's and Pillow's libjpeg(-turbo)'s versions; None after one line on
    stderr when torchvision or Pillow is missing."""
    try:
        import PIL  # noqa: PLC0415
        import torchvision  # noqa: PLC0415
        from PIL import features  # noqa: PLC0415
    except ImportError as e:
        print(f"{PROG}: --jpeg needs torchvision and Pillow, which {sys.executable} cannot import "
              f"({e}); install them with `sudo apt-get install -y python3-torchvision "
              f"python3-pil` (Debian) or `pip install torchvision pillow`", file=sys.stderr)
        return None

    def version(feature):
        try:
            return features.version(feature)
        except Exception:  # noqa: BLE001 - an older Pillow without the feature
            return None

    return {"torchvision": torchvision.__version__, "pillow": PIL.__version__,
            "libjpeg_turbo": version("libjpeg_turbo"), "libjpeg": version("jpg")}


def jpeg_case_entry(args, setup, workers_text, workers):
    images = setup["images"]
    notes = list(setup["warnings"])
    if args.samples_requested is not None and args.samples_requested > args.samples:
        notes.append(f"--samples {args.samples_requested} is more than the folder's "
                     f"{args.samples} JPEG(s): an epoch is those {args.samples}")
    case = {
        "id": f"num_workers={workers_text}",
        "params": {
            "dataset": {
                "samples": args.samples,
                "source": "jpeg",
                "dir": images["dir"],
                "crop": args.crop,
                "output": args.output,
            },
            "batch_size": args.batch_size,
            "num_workers": workers,
            "prefetch_factor": args.prefetch_factor,
            "pin_memory": setup["pin_memory"],
            "pin_mode": "per_batch",
            "non_blocking": setup["device"] != "cpu",
            "shuffle": False,
            "drop_last": False,
            "epochs": args.epochs,
            "compute_per_batch": format_duration_compact(setup["compute_ns"]),
        },
        "status": "ok",
        "stop_reason": "max_samples",
        "elapsed_s": 0.0,
    }
    if notes:
        case["warnings"] = notes
    libraries = setup["libraries"]
    steps = math.ceil(args.samples / args.batch_size)
    case["info"] = {
        # Keys as pinbench's jpeg source writes them, then the peer's own.
        "images": {
            "dir": os.path.abspath(images["dir"]),
            "generated": False,
            "files": args.samples,
            "file_bytes": images["total_bytes"],
            "crop": args.crop,
            "output": "uint8 CHW" if args.output == "uint8" else "float32 CHW, normalised",
            "decoder": f"Pillow {libraries['pillow']} (libjpeg-turbo "
                       f"{libraries['libjpeg_turbo'] or 'not found'})",
            "classes": images["classes"],
            "order": "ImageFolder: class folders sorted, files sorted; .jpg/.jpeg only",
            "seed": args.seed,
        },
        "transform": {
            "decode": 'PIL.Image.open(io.BytesIO(file bytes)).convert("RGB")',
            "augment": f"RandomResizedCrop({args.crop}, scale=(0.08, 1.0), ratio=(3/4, 4/3)) + "
                       "RandomHorizontalFlip() + " +
                       ("PILToTensor()" if args.output == "uint8" else
                        f"ToTensor() + Normalize(mean={list(IMAGENET_MEAN)}, "
                        f"std={list(IMAGENET_STD)})"),
        },
        "versions": {"torch": setup["torch_version"], **libraries},
        "batch_bytes": args.batch_size * 3 * args.crop * args.crop *
                       (1 if args.output == "uint8" else 4),
        "steps_per_run": steps * args.epochs,
        "runs": args.runs,
        "warmup": args.warmup,
        "pin_memory_requested": args.pin_memory,
        "timing": "host clock: epoch_time and samples_per_s from iter() (workers started) to the "
                  "end of the epoch (workers shut down, device work done); first_batch_time from "
                  "iter() to the first batch; data_wait: each step's time in next(); "
                  "read_time, decode_time and augment_time: perf_counter_ns in the process that "
                  "made the sample (a worker, or the main process with 0 workers): read = open "
                  "and read the file, decode = PIL from the bytes in memory, augment = from the "
                  "decoded image to the tensor; bytes_read: the file bytes read in a run",
        "verify_note": "order and exactly-once checked on every batch as the loop receives it "
                       "(each sample's index and label, the batch's shape and dtype, batch and "
                       "sample counts per epoch)",
    }
    return case


def case_entry(args, setup, workers_text, workers, cost_text, cost_ns):
    units = 0
    notes = list(setup["warnings"])
    if cost_ns > 0:
        units = round(cost_ns / setup["unit_ns"])
        if units == 0:
            units = 1
            notes.append(f"cpu_per_sample {cost_text} is below half a work unit "
                         f"({setup['unit_ns']:.0f} ns): each sample does one unit")
    case = {
        "id": f"dataset.cpu_per_sample={cost_text},num_workers={workers_text}",
        "params": {
            "dataset": {
                "samples": args.samples,
                "sample_bytes": format_bytes_compact(args.sample_bytes),
                "cpu_per_sample": cost_text,
                "source": "memory",
            },
            "batch_size": args.batch_size,
            "num_workers": workers,
            "prefetch_factor": args.prefetch_factor,
            "pin_memory": setup["pin_memory"],
            "pin_mode": "per_batch",
            "non_blocking": setup["device"] != "cpu",
            "shuffle": False,
            "drop_last": False,
            "epochs": args.epochs,
            "compute_per_batch": format_duration_compact(setup["compute_ns"]),
        },
        "status": "ok",
        "stop_reason": "max_samples",
        "elapsed_s": 0.0,
    }
    if notes:
        case["warnings"] = notes
    calibration = {
        "ns_per_unit": setup["unit_ns"],
        "units_per_sample": units,
        "work_per_sample_ns": units * setup["unit_ns"],
        "unit": f"{LCG_STEPS_PER_UNIT} steps of a 32-bit LCG in pure Python",
        "clock": f"thread CPU time, median of {CALIBRATION_TRIALS} trials in the main process",
    }
    if setup["sleep_cycles_per_ns"]:
        calibration["compute_cycles_per_ns"] = setup["sleep_cycles_per_ns"]
        calibration["compute_cycles_per_batch"] = setup["sleep_cycles"]
    steps = math.ceil(args.samples / args.batch_size)
    case["info"] = {
        "calibration": calibration,
        # The same two numbers under the key pinbench's loader engine writes them.
        "cpu_work": {"ns_per_unit": setup["unit_ns"], "units_per_sample": units},
        "batch_bytes": args.batch_size * args.sample_bytes,
        "steps_per_run": steps * args.epochs,
        "runs": args.runs,
        "warmup": args.warmup,
        "pin_memory_requested": args.pin_memory,
        "timing": "host clock: epoch_time and samples_per_s from iter() (workers started) to the "
                  "end of the epoch (workers shut down, device work done); first_batch_time from "
                  "iter() to the first batch; data_wait: each step's time in next()",
        "verify_note": "order and exactly-once checked on every batch as the loop receives it "
                       "(each row's first and last byte, batch and sample counts per epoch)",
    }
    return case, units


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    torch = obtain_torch(args, argv)
    if torch is None:
        return 3

    cases = []
    setup = None
    interrupted = False
    signal.signal(signal.SIGINT, on_sigint)
    signal.signal(signal.SIGTERM, on_sigterm)
    try:
        setup = prepare(torch, args)
        if setup is None:
            return 3
        if args.images is None:
            plan = [(cost_text, cost_ns, workers_text, workers)
                    for cost_text, cost_ns in args.cpu_per_sample
                    for workers_text, workers in args.workers]
        else:
            plan = [(None, 0, workers_text, workers) for workers_text, workers in args.workers]
        for cost_text, cost_ns, workers_text, workers in plan:
            if args.images is None:
                case, units = case_entry(args, setup, workers_text, workers, cost_text,
                                         cost_ns)
            else:
                case, units = jpeg_case_entry(args, setup, workers_text, workers), 0
            started = time.perf_counter()
            needed = shm_bytes_needed(workers, args.prefetch_factor, case["info"]["batch_bytes"])
            case["info"]["shm_bytes_needed"] = needed
            shortfall = shm_shortfall(needed, shm_free_bytes())
            if shortfall is not None:
                case.update(status="skipped", message=shortfall, metrics={})
                print(f"{PROG}: {case['id']}: skipped: {shortfall}", file=sys.stderr)
                cases.append(case)
                continue
            try:
                # torch's own warnings (more workers than cores, ...) belong to the case.
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    case["metrics"] = measure_case(torch, setup, workers, units, args)
                case["info"]["verified"] = True  # a mismatch raises instead
                for w in dict.fromkeys(f"torch: {w.message}" for w in caught):
                    case.setdefault("warnings", []).append(w)
                    print(f"{PROG}: {case['id']}: {w}", file=sys.stderr)
                med = case["metrics"]["samples_per_s"]["summary"]["median"]
                print(f"{PROG}: {case['id']}: {med:.0f} samples/s", file=sys.stderr)
            except Interrupted as e:
                if e.runs > 0:  # keep a case cut short only when it has whole runs
                    case.update(status="interrupted", stop_reason="interrupted",
                                metrics=e.partial)
                    case["elapsed_s"] = time.perf_counter() - started
                    cases.append(case)
                raise KeyboardInterrupt from None
            except Exception as e:  # noqa: BLE001 - one failed case does not stop the run
                if SIGINT_SEEN[0]:
                    raise KeyboardInterrupt from None
                text = e.detail if isinstance(e, ImageReadError) else str(e)
                case.update(status="error", message=f"{type(e).__name__}: {text}", metrics={})
                print(f"{PROG}: {case['id']}: error: {case['message']}", file=sys.stderr)
            case["elapsed_s"] = time.perf_counter() - started
            cases.append(case)
    except KeyboardInterrupt:
        interrupted = True
        print(f"{PROG}: interrupted; writing the {len(cases)} case(s) measured", file=sys.stderr)
    if setup is None:
        return 130 if interrupted else 3

    # While the file is written: a second signal (a step's budget sends SIGTERM to the peer and
    # then to its group) must not cut it.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    print_table(cases)
    write_document(args, argv, torch, setup, cases, interrupted)
    if interrupted:
        return 130
    return 1 if any(c["status"] != "ok" for c in cases) else 0


if __name__ == "__main__":
    sys.exit(main())
