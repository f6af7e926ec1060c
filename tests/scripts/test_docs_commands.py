#!/usr/bin/env python3
"""Every command in the README and the guides still works, and every relative link resolves.

Usage: test_docs_commands.py PINBENCH [REPO]   (REPO: the repository root; default: two folders
above this file)

The convention (docs/development.md, "Checking the docs' commands", says the same):

- Fenced blocks whose info string starts with `sh` or `console` are read, in README.md and
  docs/*.md, in order. Lines ending in a backslash are joined with the next; `# ...` comments are
  dropped. In a `console` block only lines starting with `$ ` are commands (the rest is output).
- A command line whose first word is `pinbench` is a pinbench command.
- A plain block runs: the line, up to its first pipe, runs under bash in a scratch folder (one per
  Markdown file, so a command may read what an earlier one in the same file wrote), with
  `pinbench` the binary under test. A `run` or `tune` without `--backend` gets `--backend host`,
  and a `run` gets quick sampling at the end (the last `--set` of a key wins). Each command has
  a time limit. It must exit 0; `compare`, `check` and `tune` may also exit 1 (their answer: a
  regression, a figure outside, no setting met the goal), and `compare ... --strict` 3 (an
  inconclusive gated metric). A block whose info string holds `exit=N` (```console exit=1: an
  example of a failing case) expects exit N from each of its pinbench commands.
- A block whose info string holds `no-run` (```sh no-run, ```console no-run) is checked, not
  run: what needs a GPU, a launcher, a dataset path, the network or PyTorch. From its `pinbench`
  word on, the subcommand must exist (`pinbench SUB... --help` exits 0) and every option the
  command gives must be listed in that help; a `run`'s or `validate`'s `builtin:` scenarios must
  pass `pinbench validate` with the command's `--set` values (those naming a path left out).
- Other commands are not run, but every `scripts/...` path a block names must exist.
- Links: every `](target)` in README.md and docs/*.md that is not a URL must name an existing
  file, and its `#anchor` one of that file's headings (GitHub's anchors).

The scratch folder starts with the inputs the guides name: r.json, a.json, b.json,
baseline.json, current.json, known-good.json (small host-backend runs of transfer-modes),
history/ (two of them), refs.json (check --init of r.json), snapshot.pickle (the repository's
training-oom fixture), my-scenarios/ (one transfer scenario), and links to tests/, results/,
scenarios/ and scripts/. Python 3 standard library only.
"""

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

QUICK = ["--set", "sampling.warmup=0", "--set", "sampling.min_samples=3",
         "--set", "sampling.max_samples=3", "--set", "sampling.min_time=0",
         "--set", "sampling.timeout=1s"]
COMMAND_TIMEOUT = 120  # seconds, one command
ANSWER_EXITS = {"compare", "check", "tune"}  # exit 1 is their answer, not a failure

failures = []


def fail(where, what):
    failures.append(f"{where}: {what}")
    print(f"FAIL {where}: {what}", flush=True)


# ---- reading the Markdown ------------------------------------------------------------------------

FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*(.*)$")


def blocks(path):
    """Yields (first line number, info words, lines) for each fenced block."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = m.group(1), m.group(2), m.group(3).strip()
        start = i + 1
        body = []
        i += 1
        while i < len(lines):
            close = lines[i].strip()
            if close.startswith(fence[0] * len(fence)) and close.strip(fence[0]) == "":
                break
            line = lines[i]
            body.append(line[len(indent):] if line.startswith(indent) else line.lstrip())
            i += 1
        i += 1
        yield start, info.split(), body


def cut_comment_and_pipe(line):
    """The line without its comment, and the part before its first pipe (quotes respected)."""
    quote = None
    out = []
    pipe_at = None
    prev = " "
    for ch_i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and prev.isspace():
            break
        elif ch == "|" and pipe_at is None:
            nxt = line[ch_i + 1] if ch_i + 1 < len(line) else ""
            if nxt != "|" and prev != "|":
                pipe_at = len(out)
        out.append(ch)
        prev = ch
    whole = "".join(out).rstrip()
    before_pipe = whole if pipe_at is None else whole[:pipe_at].rstrip()
    return whole, before_pipe


def commands(info, body):
    """The block's command lines (continuations joined, comments dropped)."""
    console = info and info[0] == "console"
    joined = []
    pending = None
    for raw in body:
        line = raw.rstrip()
        if pending is None:
            if console:
                if not line.startswith("$ "):
                    continue
                line = line[2:]
            if line.lstrip().startswith("#") or not line.strip():
                continue
            pending = ""
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        pending += line
        joined.append(pending.strip())
        pending = None
    if pending:
        joined.append(pending.strip())
    return [cut_comment_and_pipe(c) for c in joined]


# ---- the slugs GitHub gives headings -------------------------------------------------------------


def anchors(path):
    slugs = set()
    seen = {}
    in_fence = False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if FENCE.match(line):
                in_fence = not in_fence
                continue
            if in_fence:
                continue
            m = re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
            if not m:
                continue
            text = m.group(2).lower()
            text = re.sub(r"[^\w\- ]", "", text)
            slug = text.replace(" ", "-")
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            slugs.add(slug if n == 0 else f"{slug}-{n}")
    return slugs


def check_links(repo, files):
    link = re.compile(r"\]\(([^)\s]+)\)")
    for path in files:
        rel = os.path.relpath(path, repo)
        in_fence = False
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if FENCE.match(line):
                    in_fence = not in_fence
                    continue
                if in_fence:
                    continue
                for target in link.findall(re.sub(r"`[^`]*`", "", line)):
                    if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                        continue  # https:, mailto:
                    file_part, _, anchor = target.partition("#")
                    dest = path if not file_part else os.path.normpath(
                        os.path.join(os.path.dirname(path), file_part))
                    if not os.path.exists(dest):
                        fail(f"{rel}:{n}", f"link to {target}: {file_part} does not exist")
                        continue
                    if anchor and dest.endswith(".md") and anchor not in anchors(dest):
                        fail(f"{rel}:{n}", f"link to {target}: no heading makes #{anchor} in "
                             f"{os.path.relpath(dest, repo)}")


# ---- running ------------------------------------------------------------------------------------

WRAPPER = r"""
pinbench() {
  local sub="$1" backend=0 a
  for a in "$@"; do case "$a" in --backend|--backend=*) backend=1 ;; esac; done
  if [ "$sub" = run ] || [ "$sub" = tune ]; then
    [ "$backend" = 1 ] || set -- "$@" --backend host
  fi
  if [ "$sub" = run ]; then set -- "$@" %s; fi
  "$PINBENCH_BIN" "$@"
}
""" % " ".join(QUICK)


def run_shell(line, cwd, env, timeout=COMMAND_TIMEOUT):
    proc = subprocess.Popen(["bash", "-c", WRAPPER + line], cwd=cwd, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return None, out, err
    return proc.returncode, out, err


def make_fixtures(binary, repo, root, env):
    fx = os.path.join(root, "fixtures")
    os.makedirs(os.path.join(fx, "history"))
    os.makedirs(os.path.join(fx, "my-scenarios"))
    small = [binary, "run", "builtin:transfer-modes", "--backend", "host", "--set", "bytes=1MiB",
             "-q"] + QUICK
    for name in ("r.json", "current.json"):
        subprocess.run(small + ["--out", os.path.join(fx, name)], env=env, check=True,
                       stdout=subprocess.DEVNULL, timeout=COMMAND_TIMEOUT)
    for name in ("a.json", "b.json", "baseline.json", "known-good.json", "history/1.json"):
        shutil.copy(os.path.join(fx, "r.json"), os.path.join(fx, name))
    shutil.copy(os.path.join(fx, "current.json"), os.path.join(fx, "history/2.json"))
    subprocess.run([binary, "check", "--init", os.path.join(fx, "r.json"), "--out",
                    os.path.join(fx, "refs.json")], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
    shutil.copy(os.path.join(repo, "tests/data/snapshots/training-oom.pickle"),
                os.path.join(fx, "snapshot.pickle"))
    shutil.copy(os.path.join(repo, "scenarios/transfer-modes.json"),
                os.path.join(fx, "my-scenarios/transfer-modes.json"))
    return fx


def scratch_for(fixtures, root, name):
    d = os.path.join(root, "run-" + name.replace("/", "-"))
    shutil.copytree(fixtures, d)
    return d


REPO_FOLDERS = ("tests", "results", "scenarios", "scripts")


def copy_repo(repo, root):
    """The folders the docs' commands read, copied once: a command that writes beside its
    input (--out results/x.json) writes into the copy, never into the checkout."""
    copy = os.path.join(root, "repo")
    for sub in REPO_FOLDERS:
        shutil.copytree(os.path.join(repo, sub), os.path.join(copy, sub), symlinks=True)
    return copy


def link_repo(copy, d):
    for sub in REPO_FOLDERS:
        os.symlink(os.path.join(copy, sub), os.path.join(d, sub))


def help_text(binary, path, env):
    p = subprocess.run([binary] + path + ["--help"], env=env, capture_output=True, text=True,
                       timeout=30)
    return p.returncode, p.stdout


def subcommands(help_out):
    subs = set()
    in_subs = False
    for line in help_out.split("\n"):
        if line.lower().startswith("subcommands:"):  # CLI11 2.4 writes SUBCOMMANDS:
            in_subs = True
            continue
        if in_subs:
            m = re.match(r"^\s+(\S+)\s", line + " ")
            if m:
                subs.add(m.group(1))
            elif line.strip() == "":
                continue
            else:
                in_subs = False
    return subs


def options(help_out):
    opts = set()
    for line in help_out.split("\n"):
        m = re.match(r"^\s+(-[^\s]+)", line)
        if m:
            for o in m.group(1).split(","):
                opts.add(o)
    return opts


def check_no_run(binary, cmd, where, env, cwd):
    try:
        words = shlex.split(cmd)
    except ValueError as e:
        fail(where, f"cannot split {cmd!r}: {e}")
        return
    if "pinbench" not in words:
        return
    words = words[words.index("pinbench") + 1:]
    # redirections are the shell's, not pinbench's
    words = [w for w in words if not re.match(r"^\d*[<>]", w)]
    path = []
    rc, out = help_text(binary, [], env)
    while words[len(path):] and not words[len(path)].startswith("-") and \
            words[len(path)] in subcommands(out):
        path.append(words[len(path)])
        rc, out = help_text(binary, path, env)
    if not path:
        fail(where, f"no pinbench subcommand in {cmd!r}")
        return
    if rc != 0:
        fail(where, f"pinbench {' '.join(path)} --help exited {rc}")
        return
    known = options(out)
    rest = words[len(path):]
    for w in rest:
        if w.startswith("-") and w != "-":
            name = w.split("=", 1)[0]
            if name not in known:
                fail(where, f"pinbench {' '.join(path)} has no option {name}")
    if path[0] in ("run", "validate"):
        inputs = [w for w in rest if w.startswith("builtin:")]
        sets = []
        for i, w in enumerate(rest):
            if w == "--set" and i + 1 < len(rest) and not re.search(r"[/~]", rest[i + 1]):
                sets += ["--set", rest[i + 1]]
        if inputs:
            p = subprocess.run([binary, "validate", "-q"] + inputs + sets, env=env, cwd=cwd,
                               capture_output=True, text=True, timeout=60)
            if p.returncode != 0:
                fail(where, f"pinbench validate {' '.join(inputs + sets)} exited {p.returncode}: "
                     f"{p.stderr.strip()[:300]}")


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    binary = os.path.abspath(sys.argv[1])
    repo = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else \
        os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if not os.access(binary, os.X_OK):
        print(f"not an executable: {binary}")
        return 2
    docs = os.path.join(repo, "docs")
    files = [os.path.join(repo, "README.md")] + sorted(
        os.path.join(docs, f) for f in os.listdir(docs) if f.endswith(".md"))
    started = time.monotonic()
    check_links(repo, files)

    root = tempfile.mkdtemp(prefix="pinbench-docs-")
    env = dict(os.environ, PINBENCH_BIN=binary, LC_ALL="C.UTF-8")
    env["PINBENCH_CACHE_DIR"] = os.path.join(root, "cache")
    env["TMPDIR"] = os.path.join(root, "tmp")
    os.makedirs(env["TMPDIR"])
    ran = checked = 0
    not_pinbench = []  # commands of runnable blocks that are not pinbench's: named, not run
    try:
        fixtures = make_fixtures(binary, repo, root, env)
        repo_copy = copy_repo(repo, root)
        for path in files:
            rel = os.path.relpath(path, repo)
            scratch = None
            for start, info, body in blocks(path):
                if not info or info[0] not in ("sh", "console"):
                    continue
                no_run = "no-run" in info[1:]
                expect = [int(w[5:]) for w in info[1:] if re.fullmatch(r"exit=\d+", w)]
                text = "\n".join(body)
                for script in re.findall(r"(?<![\w./-])(scripts/[\w./-]*\w)", text):
                    if not os.path.exists(os.path.join(repo, script)):
                        fail(f"{rel}:{start}", f"{script} does not exist")
                for whole, before_pipe in commands(info, body):
                    where = f"{rel}:{start}"
                    first = before_pipe.split()[0] if before_pipe.split() else ""
                    if no_run:
                        if re.search(r"(^|\s)pinbench(\s|$)", whole):
                            check_no_run(binary, before_pipe, where, env, scratch or root)
                            checked += 1
                        continue
                    if first != "pinbench":
                        not_pinbench.append(f"{where}: {before_pipe}")
                        continue
                    if scratch is None:
                        scratch = scratch_for(fixtures, root, rel)
                        link_repo(repo_copy, scratch)
                    t0 = time.monotonic()
                    rc, out, err = run_shell(before_pipe, scratch, env)
                    took = time.monotonic() - t0
                    ran += 1
                    sub = before_pipe.split()[1] if len(before_pipe.split()) > 1 else ""
                    allowed = {0, 1} if sub in ANSWER_EXITS else {0}
                    if sub == "compare" and "--strict" in before_pipe.split():
                        allowed.add(3)
                    if expect:
                        allowed = set(expect)
                    if rc is None:
                        fail(where, f"{before_pipe!r} ran past {COMMAND_TIMEOUT} s")
                    elif rc not in allowed:
                        fail(where, f"{before_pipe!r} exited {rc}: {err.strip()[-600:]}")
                    else:
                        print(f"ok   {where}: {before_pipe} ({took:.1f} s, exit {rc})",
                              flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    took = time.monotonic() - started
    for line in not_pinbench:
        print(f"not run (not a pinbench command; its scripts/ path checked): {line}")
    print(f"{ran} command(s) run, {checked} checked without running, {len(not_pinbench)} "
          f"other command(s) not run, {len(failures)} failure(s), {took:.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
