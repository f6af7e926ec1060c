#!/usr/bin/env bash
# Soak run: `pinbench run --backend host` (the built-in quick suite) N times, one process per run,
# each writing a result whose `process` block holds its peak RSS and its open descriptors at the
# end. Fails (exit 1) when either grows from run to run, when a run fails, or when runs leave
# temporary files or processes behind.
#
# Usage: scripts/soak.sh [N] [-- EXTRA RUN ARGS...]     (N defaults to 50)
#   e.g. scripts/soak.sh 10 -- --set sampling.min_time=0
# Environment: PINBENCH (the executable; default build/app/pinbench), SOAK_DIR (where results
#              are kept; default a fresh directory under /tmp, removed when the soak passes).
# Growth: RSS grows when the median of the last 10 runs exceeds the median of the first 10 by
# more than 10% (thirds of the runs when N < 30); descriptors grow when any run ends with more
# open descriptors than the first run did.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

n=50
if [[ $# -gt 0 && "$1" != "--" ]]; then n=$1; shift; fi
if [[ $# -gt 0 && "$1" == "--" ]]; then shift; fi
extra=("$@")
if ! [[ "$n" =~ ^[0-9]+$ ]] || (( n < 2 )); then
  echo "soak.sh: N must be an integer >= 2, got \"$n\"" >&2
  exit 2
fi
bin=${PINBENCH:-$root/build/app/pinbench}
if [[ ! -x "$bin" ]]; then
  echo "soak.sh: $bin is not an executable (build first, or set PINBENCH)" >&2
  exit 2
fi
command -v python3 >/dev/null || { echo "soak.sh: python3 is needed for the figures" >&2; exit 2; }

keep=${SOAK_DIR:+1}
work=${SOAK_DIR:-$(mktemp -d /tmp/pinbench-soak.XXXXXX)}
mkdir -p "$work/results" "$work/tmp" "$work/logs"
echo "soak: $n runs of: $bin run --backend host ${extra[*]:-}"
echo "soak: results in $work/results"

problems=0
t0=$(date +%s)
for ((i = 1; i <= n; i++)); do
  out=$(printf '%s/results/run-%03d.json' "$work" "$i")
  marker="pinbench-soak-$$-$i"
  # TMPDIR of its own: the loader's file dataset (unlinked at once) must leave nothing there.
  rc=0
  PINBENCH_SOAK_MARKER=$marker TMPDIR="$work/tmp" \
    "$bin" run --backend host --quiet --out "$out" "${extra[@]}" \
    >"$work/logs/run-$i.stdout" 2>"$work/logs/run-$i.stderr" || rc=$?
  if (( rc != 0 )); then
    echo "soak: run $i exited $rc: $(head -c 400 "$work/logs/run-$i.stderr")" >&2
    problems=$((problems + 1))
  fi
  # Processes started by the run that outlived it carry its marker in their environment.
  left=$(grep -l -s -a "PINBENCH_SOAK_MARKER=$marker" /proc/[0-9]*/environ 2>/dev/null | grep -v "^/proc/$$/" || true)
  if [[ -n "$left" ]]; then
    echo "soak: run $i left processes behind: $left" >&2
    problems=$((problems + 1))
  fi
  (( i % 10 == 0 )) && echo "soak: $i/$n runs done ($(( $(date +%s) - t0 )) s)"
done
elapsed=$(( $(date +%s) - t0 ))

# Leftovers: atomic-write temporaries beside the results, anything in the runs' TMPDIR.
leftovers=$(cd "$work/results" && ls -A | grep -v '^run-[0-9]*\.json$' || true)
leftovers+=$(ls -A "$work/tmp")
if [[ -n "$leftovers" ]]; then
  echo "soak: temporary files left behind:" $leftovers >&2
  problems=$((problems + 1))
fi

python3 - "$work/results" "$n" "$elapsed" <<'EOF' || problems=$((problems + 1))
import json, pathlib, statistics, sys
results, n, elapsed = pathlib.Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
rss, fds = [], []
for f in sorted(results.glob("run-*.json")):
    p = json.loads(f.read_text()).get("process")
    if not p:
        sys.exit(f"soak: {f.name} has no process block (pinbench too old?)")
    rss.append(p["peak_rss_bytes"])
    fds.append(p["open_fds_at_end"])
if len(rss) != n:
    sys.exit(f"soak: {len(rss)} result files for {n} runs")
mib = lambda b: f"{b / 2**20:.1f} MiB"
print(f"soak: {n} runs in {elapsed} s ({elapsed / n:.1f} s per run), host backend")
print(f"  peak RSS (MiB):     first {mib(rss[0])}, last {mib(rss[-1])}, min {mib(min(rss))}, max {mib(max(rss))}")
print(f"  open fds at end:    first {fds[0]}, last {fds[-1]}, min {min(fds)}, max {max(fds)}")
k = 10 if n >= 30 else max(1, n // 3)
head, tail = statistics.median(rss[:k]), statistics.median(rss[-k:])
growth = tail / head - 1
print(f"  RSS median of the first {k} runs {mib(head)}, of the last {k} {mib(tail)}: {growth:+.1%}")
failed = False
if growth > 0.10:
    print("soak: peak RSS grew by more than 10%", file=sys.stderr)
    failed = True
if max(fds) > fds[0]:
    worst = max(range(n), key=lambda i: fds[i])
    print(f"soak: open descriptors grew: run {worst + 1} ended with {fds[worst]}, the first with {fds[0]}",
          file=sys.stderr)
    failed = True
sys.exit(1 if failed else 0)
EOF

if (( problems > 0 )); then
  echo "soak: FAILED ($problems problem(s)); results and logs kept in $work" >&2
  exit 1
fi
echo "soak: passed: no growth, nothing left behind"
[[ -n "$keep" ]] || rm -rf "$work"
