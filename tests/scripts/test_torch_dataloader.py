#!/usr/bin/env python3
"""Tests scripts/peer/torch_dataloader.py: bad arguments exit 2 with one line (no torch needed),
a missing or empty --jpeg folder too; with torch, tiny sweeps write a pinbench.result/1 document
with the cases and metrics pinbench's loader kind writes, to a file or to stdout, and Ctrl-C
writes the cases measured and exits 130; --jpeg over a small generated ImageFolder writes
scenario loader-jpeg-workers with decode_time, augment_time and bytes_read, and a truncated JPEG
fails its cases naming the file. Without torch the torch checks cannot run (without torchvision
or Pillow, the --jpeg ones): exit 77, which ctest reports as skipped.
Exit 0 on success; otherwise a message per failed check and exit 1."""

import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

SYSTEM_PYTHON = "/usr/bin/python3"  # where Debian's python3-torch and python3-pil land
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


def check_shm_rules():
    """No torch needed: --quick's sweep fits a container's default 64 MB /dev/shm; a case that
    does not fit the /dev/shm there is gets a reason; SIGTERM counts as an interruption."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("torch_dataloader", SCRIPT)
    td = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(td)
    args = td.parse_args(["--quick", "--out", os.devnull])
    batch = args.batch_size * args.sample_bytes
    worst = max(td.shm_bytes_needed(w, args.prefetch_factor, batch) for _, w in args.workers)
    check(worst <= 64_000_000, f"--quick needs {worst} bytes of /dev/shm, over 64 MB")
    check(td.shm_bytes_needed(0, 2, batch) == 0, "0 workers use no shared memory")
    check(td.shm_bytes_needed(4, 2, 8 << 20) == 10 * (8 << 20), "4 workers x 2 + 2 batches")
    check(td.shm_shortfall(48 << 20, 64 << 20) is None, "48 MiB fits in 64 MiB")
    check(td.shm_shortfall(48 << 20, None) is None, "an unreadable /dev/shm skips nothing")
    why = td.shm_shortfall(80 << 20, 64 << 20) or ""
    check("80.0 MiB" in why and "64.0 MiB" in why and "/dev/shm" in why, f"shortfall: {why!r}")
    full = td.parse_args(["--out", os.devnull])
    check([w for _, w in full.workers] == [0, 2, 4], f"default workers {full.workers}")


def check_jpeg_argument_errors(tmp):
    """A --jpeg folder that is missing, not a folder, or without JPEGs in class folders, and the
    options that do not go with --jpeg (or only with it): exit 2, one line naming the problem,
    before torch is imported."""
    empty = os.path.join(tmp, "no-jpegs")
    os.makedirs(os.path.join(empty, "cats"))
    with open(os.path.join(empty, "cats", "notes.txt"), "w", encoding="utf-8") as f:
        f.write("not an image\n")
    missing = os.path.join(tmp, "no-such-folder")
    bad = [
        (["--jpeg", missing], f"--jpeg {missing}: no such folder"),
        (["--jpeg", os.path.join(empty, "cats", "notes.txt")], "not a folder"),
        (["--jpeg", empty], f"--jpeg {empty}: no .jpg/.jpeg file"),
        (["--jpeg", empty, "--cpu-per-sample", "0us"], "--cpu-per-sample does not apply"),
        (["--jpeg", empty, "--sample-bytes", "4KiB"], "--sample-bytes does not apply"),
        (["--crop", "64"], "--crop applies only with --jpeg"),
        (["--output", "uint8"], "--output applies only with --jpeg"),
        (["--jpeg", empty, "--output", "png"], "invalid choice"),
        (["--jpeg", empty, "--crop", "0"], ">= 1"),
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


# Makes an ImageFolder of 2 classes x 8 photo-sized JPEGs (a gradient, gaussian noise of a
# different strength per image, so that every file has its own size), one named .JPEG, beside
# files ImageFolder's JPEG scan must pass over. Pillow only: run by whichever python has it.
MAKE_IMAGES = r"""
import os, sys
from PIL import Image, ImageChops
root = sys.argv[1]
grad = Image.linear_gradient("L").resize((500, 375))
other = grad.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
for c, name in enumerate(("bird", "cat")):
    os.makedirs(os.path.join(root, name))
    with open(os.path.join(root, name, "labels.txt"), "w") as f:
        f.write("not an image")
    for i in range(8):
        noise = Image.effect_noise((500, 375), 10 + 5 * i + 3 * c)
        img = Image.merge("RGB", (grad, ImageChops.blend(other, noise, 0.5), noise))
        ext = ".JPEG" if (c, i) == (1, 5) else ".jpg"
        img.save(os.path.join(root, name, f"{i:03d}{ext}"), quality=90)
Image.new("RGB", (64, 48)).save(os.path.join(root, "outside-a-class.jpg"))
"""


def python_with_pil():
    for python in (sys.executable, SYSTEM_PYTHON):
        if os.path.exists(python) and subprocess.run(
                [python, "-c", "import PIL.Image"], capture_output=True, check=False,
                timeout=60).returncode == 0:
            return python
    return None


def image_files(folder):
    """The JPEGs ImageFolder would load, in its order: (path, size)."""
    out = []
    for cls in sorted(e.name for e in os.scandir(folder) if e.is_dir()):
        for name in sorted(os.listdir(os.path.join(folder, cls))):
            if name.lower().endswith((".jpg", ".jpeg")):
                path = os.path.join(folder, cls, name)
                out.append((path, os.path.getsize(path)))
    return out


def check_jpeg(tmp):
    """--jpeg over 16 generated images: cases num_workers=0 and =2 of scenario
    loader-jpeg-workers, one read_time, decode_time and augment_time sample per image per run,
    bytes_read the folder's JPEG bytes per run; --samples takes the first images in ImageFolder
    order; a truncated JPEG fails each case with its path and PIL's message, and the run goes
    on.
    Returns False when the jpeg checks cannot run here (no Pillow or torchvision)."""
    python = python_with_pil()
    if python is None:
        return False
    folder = os.path.join(tmp, "images")
    r = subprocess.run([python, "-c", MAKE_IMAGES, folder], capture_output=True, text=True,
                       timeout=120, check=False)
    if not check(r.returncode == 0, f"jpeg: making the images failed: {r.stderr}"):
        return True
    files = image_files(folder)
    check(len(files) == 16, f"jpeg: {len(files)} images generated, expected 16")
    total = sum(size for _, size in files)

    out = os.path.join(tmp, "jpeg.json")
    r = run("--jpeg", folder, "--workers", "0,2", "--batch-size", "4", "--runs", "2",
            "--warmup", "0", "--out", out)
    if r.returncode == 3 and "--jpeg needs torchvision and Pillow" in r.stderr:
        return False
    if not check(r.returncode == 0, f"jpeg: exit {r.returncode}, stderr {r.stderr}"):
        return True
    check("read (median)" in r.stderr and "decode (median)" in r.stderr and
          "augment (median)" in r.stderr,
          f"jpeg: no read/decode/augment columns in the table: {r.stderr!r}")
    with open(out, encoding="utf-8") as f:
        doc = json.load(f)
    s = doc["scenarios"][0]
    check(s.get("name") == "loader-jpeg-workers" and s.get("kind") == "loader",
          f"jpeg: scenario {s.get('name')!r} kind {s.get('kind')!r}")
    ids = [c.get("id") for c in s.get("cases", [])]
    check(ids == ["num_workers=0", "num_workers=2"], f"jpeg: case ids {ids}")
    for c in s.get("cases", []):
        cid = f"jpeg {c.get('id')}"
        check(c.get("status") == "ok", f"{cid}: status {c.get('status')!r} {c.get('message')}")
        ds = c.get("params", {}).get("dataset", {})
        check(ds.get("source") == "jpeg" and ds.get("samples") == 16 and ds.get("crop") == 224
              and ds.get("output") == "float32", f"{cid}: params.dataset {ds}")
        info = c.get("info", {})
        images = info.get("images", {})
        check(images.get("files") == 16 and images.get("classes") == 2 and
              images.get("file_bytes") == total and images.get("dir") == folder,
              f"{cid}: info.images {images}, expected 16 images in 2 classes, {total} bytes")
        versions = info.get("versions", {})
        check(all(versions.get(k) for k in ("torch", "torchvision", "pillow")),
              f"{cid}: info.versions {versions}")
        check(info.get("verified") is True, f"{cid}: info.verified {info.get('verified')!r}")
        m = c.get("metrics", {})
        check_metric(f"{cid} samples_per_s", m.get("samples_per_s"), "samples/s", "higher", 2)
        check_metric(f"{cid} batches_per_s", m.get("batches_per_s"), "batches/s", "higher", 2)
        check_metric(f"{cid} epoch_time", m.get("epoch_time"), "ns", "lower", 2)
        check_metric(f"{cid} first_batch_time", m.get("first_batch_time"), "ns", "lower", 2)
        check_metric(f"{cid} data_wait", m.get("data_wait"), "ns", "lower", 8)  # 4 steps x 2
        # One per image per run, timed where the image was made (a worker with num_workers=2).
        check_metric(f"{cid} read_time", m.get("read_time"), "ns", "lower", 32)
        check_metric(f"{cid} decode_time", m.get("decode_time"), "ns", "lower", 32)
        check_metric(f"{cid} augment_time", m.get("augment_time"), "ns", "lower", 32)
        check_metric(f"{cid} bytes_read", m.get("bytes_read"), "bytes", "", 2)
        read = (m.get("bytes_read") or {}).get("samples") or []
        check(read == [total, total], f"{cid}: bytes_read {read}, expected {total} per run")
        for name in ("samples_per_s", "read_time", "decode_time", "augment_time"):
            values = (m.get(name) or {}).get("samples") or [0]
            check(all(x > 0 for x in values), f"{cid}: {name} not all positive: {values}")

    # uint8 output, a small crop, the first 5 images only: to stdout.
    r = run("--jpeg", folder, "--workers", "0", "--output", "uint8", "--crop", "64",
            "--samples", "5", "--batch-size", "2", "--runs", "1", "--warmup", "0", "--out", "-")
    if check(r.returncode == 0, f"jpeg uint8: exit {r.returncode}, stderr {r.stderr}"):
        c = json.loads(r.stdout)["scenarios"][0]["cases"][0]
        m = c["metrics"]
        first5 = sum(size for _, size in files[:5])
        check(c["params"]["dataset"]["output"] == "uint8" and c["params"]["dataset"]["crop"] == 64
              and c["params"]["dataset"]["samples"] == 5, f"jpeg uint8: params {c['params']}")
        check(len(m["decode_time"]["samples"]) == 5 and m["bytes_read"]["samples"] == [first5],
              f"jpeg uint8: decode_time n {len(m['decode_time']['samples'])}, bytes_read "
              f"{m['bytes_read']['samples']}, expected 5 and [{first5}] (the first 5 images)")
        check(len(m["data_wait"]["samples"]) == 3, f"jpeg uint8: data_wait {m['data_wait']}")

    # A truncated JPEG (the 3rd of the second class): each case fails naming it; the run goes on.
    bad_folder = os.path.join(tmp, "bad-images")
    shutil.copytree(folder, bad_folder)
    bad = os.path.join(bad_folder, "cat", "002.jpg")
    with open(bad, "r+b") as f:
        f.truncate(os.path.getsize(bad) // 2)
    out = os.path.join(tmp, "jpeg-bad.json")
    r = run("--jpeg", bad_folder, "--workers", "0,2", "--batch-size", "4", "--runs", "1",
            "--warmup", "0", "--out", out)
    check(r.returncode == 1, f"jpeg truncated: exit {r.returncode}, expected 1; {r.stderr}")
    if check(os.path.exists(out), f"jpeg truncated: no result file; stderr {r.stderr}"):
        with open(out, encoding="utf-8") as f:
            cases = json.load(f)["scenarios"][0]["cases"]
        check([c["id"] for c in cases] == ["num_workers=0", "num_workers=2"],
              f"jpeg truncated: cases {[c['id'] for c in cases]}")
        for c in cases:
            message = c.get("message", "")
            check(c["status"] == "error" and bad in message and "truncated" in message and
                  "\n" not in message,
                  f"jpeg truncated: {c['id']}: status {c['status']}, message {message!r}")
    return True


def main():
    started = time.monotonic()
    check_argument_errors()
    check_shm_rules()
    with tempfile.TemporaryDirectory() as tmp:
        check_jpeg_argument_errors(tmp)
        check_tiny_sweep(tmp)
        check_stdout()
        check_interrupt(tmp)
        jpeg_ran = check_jpeg(tmp)

    if not jpeg_ran and not failures:
        print("SKIPPED: the --jpeg checks need Pillow and torchvision beside torch; every other "
              "check passed")
        return SKIP

    for message in failures:
        print(f"FAIL: {message}", file=sys.stderr)
    if not failures:
        print(f"torch_dataloader: all checks passed in {time.monotonic() - started:.1f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
