#!/usr/bin/env bash
# Renders a real `pinbench report --html` page in headless Chromium: takes a screenshot, and
# fails when the page logs anything to the console (a script error, a resource the page's
# Content-Security-Policy refused) or when a chart is empty (an <svg> of no size, or without a
# drawn data mark: line, marker, bar or block).
#
# Usage: scripts/check-report.sh [--pinbench EXE] [--out-dir DIR] [--result RESULT.json]
#                                [--page PAGE.html] [--compare]
#   --pinbench  the executable (default: $PINBENCH, else $BUILD_DIR/app/pinbench, else build/)
#   --out-dir   where result.json, report.html, screenshot.png and the logs go
#               (default: $PINBENCH_REPORT_DIR, else $TMPDIR/pinbench-report-check)
#   --result    report this result instead of measuring a small one on the host backend
#   --page      check this HTML page as it is (no pinbench run, no report): a report or a
#               `pinbench compare --html` page
#   --compare   check a comparison page instead: measure two small results on the host
#               backend, the second slowed by a host fault, and write the failing
#               `pinbench compare --html` of them
#
# Needs Debian's `chromium` (or the browser PINBENCH_CHROMIUM names). Without it the check is
# skipped (exit 77, which ctest reports as skipped) unless PINBENCH_INSTALL_CHROMIUM=1, which
# installs it with apt-get (about 100 MB+, root only).
# Exit: 0 passed, 1 failed, 77 skipped.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

pinbench=${PINBENCH:-}
out_dir=${PINBENCH_REPORT_DIR:-${TMPDIR:-/tmp}/pinbench-report-check}
result=
page_in=
compare=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --pinbench) pinbench=$2; shift 2 ;;
    --out-dir) out_dir=$2; shift 2 ;;
    --result) result=$2; shift 2 ;;
    --page) page_in=$2; shift 2 ;;
    --compare) compare=1; shift ;;
    -h|--help) sed -n '2,21p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "check-report: unknown argument: $1" >&2; exit 2 ;;
  esac
done
if [[ -z $pinbench ]]; then
  pinbench=${BUILD_DIR:-$root/build}/app/pinbench
fi

fail() { echo "check-report: FAILED: $*" >&2; exit 1; }

# ---- the browser -------------------------------------------------------------------------
find_chromium() {
  local c
  for c in chromium chromium-browser google-chrome; do
    if command -v "$c" >/dev/null 2>&1; then command -v "$c"; return 0; fi
  done
  return 1
}
# PINBENCH_CHROMIUM names the browser to use (a path or a command).
if [[ -n ${PINBENCH_CHROMIUM:-} ]]; then
  browser=$(command -v "$PINBENCH_CHROMIUM" || true)
else
  browser=$(find_chromium || true)
fi
if [[ -z $browser && ${PINBENCH_INSTALL_CHROMIUM:-0} == 1 ]]; then
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
    echo "check-report: installing chromium with apt-get (PINBENCH_INSTALL_CHROMIUM=1)" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium >&2 ||
      { apt-get update >&2 && DEBIAN_FRONTEND=noninteractive \
          apt-get install -y --no-install-recommends chromium >&2; } ||
      fail "apt-get could not install chromium"
    browser=$(find_chromium || true)
  else
    echo "check-report: PINBENCH_INSTALL_CHROMIUM=1 needs root and apt-get" >&2
  fi
fi
if [[ -z $browser ]]; then
  echo "check-report: SKIPPED: no chromium found (apt-get install chromium, or set" \
       "PINBENCH_INSTALL_CHROMIUM=1 to let this script install it)"
  exit 77
fi
[[ -n $page_in || -x $pinbench ]] ||
  fail "no pinbench executable at $pinbench (build it, or pass --pinbench)"
[[ -z $page_in || -f $page_in ]] || fail "no page at $page_in"

rm -rf "$out_dir"
mkdir -p "$out_dir"
out_dir=$(cd "$out_dir" && pwd)
trap 'rm -rf "$out_dir/profile"' EXIT  # the browser's profile: of no use afterwards

# ---- a small result and its report -------------------------------------------------------
report=$out_dir/report.html
# The comparison's runs: quick, but 3 samples a side, so that the gate reaches its verdicts.
quick=(--backend host --quiet --set sampling.warmup=0 --set sampling.min_samples=3
       --set sampling.max_samples=3 --set sampling.min_time=0 --set sampling.timeout=1s)
if [[ -n $page_in ]]; then
  cp "$page_in" "$report"
elif [[ $compare == 1 ]]; then
  # Two results of the same small run, the candidate's copies and compute made 4x slower
  # (--host-fault slow=300%): a gate that fails, as a person meets it, with regressions to read
  # and every gated metric's samples and interval; 5 samples a side, so that the slowdown is
  # told from the noise.
  for side in base candidate; do
    fault=()
    [[ $side == candidate ]] && fault=(--host-fault slow=300%)
    "$pinbench" run builtin:transfer-modes builtin:allocator-fragmentation "${quick[@]}" \
      --set sampling.min_samples=5 --set sampling.max_samples=5 "${fault[@]}" --out "$out_dir/$side.json" >"$out_dir/run-$side.txt" || [[ $? -eq 1 ]] ||
      fail "pinbench run failed (see $out_dir/run-$side.txt)"
  done
  report=$out_dir/compare.html
  code=0
  "$pinbench" compare "$out_dir/base.json" "$out_dir/candidate.json" \
    --html "$report" >"$out_dir/compare.txt" || code=$?
  [[ $code -le 1 ]] || fail "pinbench compare failed (exit $code, see $out_dir/compare.txt)"
elif [[ -z $result ]]; then
  result=$out_dir/result.json
  # Quick sampling: the check is about the page, not the figures. The scenarios cover every
  # chart: bandwidth by size (log x), bars per case, a loader sweep over num_workers, the
  # allocator's peaks, timeline and segment map.
  "$pinbench" run builtin:transfer-size builtin:transfer-modes builtin:loader-workers \
    builtin:allocator-fragmentation --backend host --quiet \
    --set sampling.warmup=0 --set sampling.min_samples=2 --set sampling.max_samples=3 \
    --set sampling.min_time=0 --set sampling.timeout=1s \
    --out "$result" >"$out_dir/run.txt" || [[ $? -eq 1 ]] ||
    fail "pinbench run failed (see $out_dir/run.txt)"
fi
if [[ -z $page_in && $compare == 0 ]]; then
  "$pinbench" report "$result" --html "$report" --quiet || fail "pinbench report failed"
fi
charts=$(grep -o '<svg class="chart' "$report" | wc -l)
[[ $charts -gt 0 ]] || fail "the page holds no chart"

# ---- render ------------------------------------------------------------------------------
# Its own profile directory: nothing is read from or written to the user's.
browse() {
  local log=$1
  shift
  timeout 120 "$browser" --headless=new --no-sandbox --disable-gpu --no-first-run \
    --user-data-dir="$out_dir/profile" --enable-logging=stderr --v=0 "$@" 2>"$log"
}
# Console messages come out as "INFO:CONSOLE(...)" lines. The page has no script, so every
# console message is a problem (a refused resource, an error).
console_errors() { grep -E 'CONSOLE|Uncaught' "$1" || true; }

browse "$out_dir/screenshot.log" --screenshot="$out_dir/screenshot.png" \
  --window-size="${PINBENCH_REPORT_WINDOW:-1200,3000}" --hide-scrollbars "file://$report" \
  >/dev/null || fail "chromium could not take the screenshot (see $out_dir/screenshot.log)"
[[ -s $out_dir/screenshot.png ]] || fail "chromium wrote no screenshot"
errors=$(console_errors "$out_dir/screenshot.log")
[[ -z $errors ]] || fail "console messages while rendering the report:"$'\n'"$errors"

# Measuring the drawn charts needs a script: a copy of the page gets one (and a policy that
# allows inline script and nothing else), which writes what it measured into the page; the
# browser then prints the page.
probe=$(cat <<'EOF'
<script>
(function () {
  var lines = [], problems = [];
  var svgs = document.querySelectorAll('svg.chart');
  svgs.forEach(function (svg) {
    var box = svg.getBoundingClientRect();
    var marks = svg.querySelectorAll('.mark'), drawn = 0;
    marks.forEach(function (m) {
      var b = m.getBBox();
      if (b.width > 0 || b.height > 0) drawn++;
    });
    var title = svg.querySelector('title'), desc = svg.querySelector('desc');
    var labels = svg.querySelectorAll('.axis-label').length;
    var legend = svg.querySelectorAll('.legend-entry').length;
    if (!(box.width > 0 && box.height > 0)) problems.push(svg.id + ': the chart has no size');
    if (drawn === 0) problems.push(svg.id + ': nothing drawn (no data mark of nonzero size)');
    if (!title || !title.textContent.trim()) problems.push(svg.id + ': no <title>');
    if (!desc || !desc.textContent.trim()) problems.push(svg.id + ': no <desc>');
    if (labels === 0) problems.push(svg.id + ': no axis label');
    if (legend === 0) problems.push(svg.id + ': no legend');
    lines.push(svg.id + ' ' + Math.round(box.width) + 'x' + Math.round(box.height) +
               ' marks ' + drawn + '/' + marks.length + ' legend ' + legend);
  });
  var pre = document.createElement('pre');
  pre.id = 'pinbench-check';
  pre.textContent = 'CHARTS ' + svgs.length + '\n' + lines.join('\n') + '\nPROBLEMS ' +
                    problems.length + '\n' + problems.join('\n') + '\nEND';
  document.body.appendChild(pre);
})();
</script>
EOF
)
# A copy of the page with a probe script in it, and a policy that allows inline script and
# nothing else: with_probe SCRIPT COPY.
with_probe() {
  local page
  page=$(<"$report")
  page=${page/"default-src 'none';"/"default-src 'none'; script-src 'unsafe-inline';"}
  page=${page/"</body>"/"$1"$'\n'"</body>"}
  printf '%s\n' "$page" >"$2"
}
with_probe "$probe" "$out_dir/report-probe.html"
browse "$out_dir/probe.log" --dump-dom --window-size=1200,3000 "file://$out_dir/report-probe.html" \
  >"$out_dir/probe-dom.html" || fail "chromium could not load the page (see $out_dir/probe.log)"
errors=$(console_errors "$out_dir/probe.log")
[[ -z $errors ]] || fail "console messages while measuring the charts:"$'\n'"$errors"
findings=$(sed -n '/<pre id="pinbench-check">/,/^END/p' "$out_dir/probe-dom.html" |
           sed 's/.*<pre id="pinbench-check">//')
[[ -n $findings ]] || fail "the measuring script did not run (see $out_dir/probe-dom.html)"
measured=$(sed -n 's/^CHARTS \([0-9]*\)$/\1/p' <<<"$findings")
problems=$(sed -n 's/^PROBLEMS \([0-9]*\)$/\1/p' <<<"$findings")
echo "$findings" | sed -n '/^CHARTS/,/^PROBLEMS/p' | sed '$d' | sed 's/^/check-report: /'
[[ $measured == "$charts" ]] || fail "the page has $charts charts, the browser measured $measured"
if [[ $problems != 0 ]]; then
  fail "$(sed -n '/^PROBLEMS/,/^END/p' <<<"$findings" | sed '1d;$d')"
fi

# ---- the layout, as a person sees it, at two widths ----------------------------------------
# Every <details> is opened first (what is folded must fit too), after the first screen was
# judged as it comes. Limits: no page-wide horizontal scroll; no table wider than its container
# (at 800 px a table marked data-scroll="data", the cases of a scenario, may scroll inside its
# own box, as a data table is expected to; at 1280 px none may); no table row taller than
# 160 px; every chart inside the visible width; the first section is not the environment; on a
# comparison, the outcome and the first verdict's reason are on the first screen.
layout_probe=$(cat <<'EOF'
<script>
(function () {
  var strict = window.innerWidth >= 1200, problems = [], notes = [];
  var view = document.documentElement.clientWidth, screen = window.innerHeight;
  var first = document.querySelector('main > section, main > details');
  if (first && first.id === 'environment') problems.push('the first section is the environment');
  var outcome = document.querySelector('.outcome');
  if (outcome && outcome.getBoundingClientRect().bottom > screen)
    problems.push('the outcome is below the first screen');
  var card = document.querySelector('#attention .card');
  if (card) {
    var reason = card.querySelector('.reason') || card;
    var b = reason.getBoundingClientRect();
    if (b.top > screen) problems.push('the first verdict needing attention is below the first screen');
    if (b.right > view + 1) problems.push("the first verdict's reason runs past the window");
  }
  document.querySelectorAll('details').forEach(function (d) { d.open = true; });
  var page = document.documentElement.scrollWidth;
  if (page > view + 1) problems.push('the page scrolls sideways: ' + page + ' px wide in ' + view);
  document.querySelectorAll('table').forEach(function (t, i) {
    var name = (t.className || 'table') + ' #' + i;
    var box = t.parentElement.clientWidth, wide = t.getBoundingClientRect().width;
    if (wide > box + 1) {
      if (!strict && t.getAttribute('data-scroll') === 'data')
        notes.push(name + ' scrolls in its box (a data table): ' + Math.round(wide) + ' px in ' + box);
      else problems.push(name + ' is clipped: ' + Math.round(wide) + ' px in ' + box);
    }
    var tallest = 0;
    t.querySelectorAll('tr').forEach(function (r) {
      tallest = Math.max(tallest, r.getBoundingClientRect().height);
    });
    if (tallest > 160) problems.push(name + ': a row is ' + Math.round(tallest) + ' px tall');
  });
  document.querySelectorAll('svg.chart').forEach(function (s) {
    var b = s.getBoundingClientRect();
    if (b.left < -1 || b.right > view + 1) problems.push(s.id + ': the chart runs past the window');
  });
  var pre = document.createElement('pre');
  pre.id = 'pinbench-layout';
  pre.textContent = 'NOTES\n' + notes.join('\n') + '\nPROBLEMS ' + problems.length + '\n' +
                    problems.join('\n') + '\nEND';
  document.body.appendChild(pre);
})();
</script>
EOF
)
with_probe "$layout_probe" "$out_dir/layout-probe.html"
layout_problems=
for width in 1280 800; do
  browse "$out_dir/screenshot-$width.log" --screenshot="$out_dir/screenshot-$width.png" \
    --window-size="$width,900" --hide-scrollbars "file://$report" >/dev/null ||
    fail "chromium could not take the $width px screenshot"
  browse "$out_dir/layout-$width.log" --dump-dom --window-size="$width,900" \
    "file://$out_dir/layout-probe.html" >"$out_dir/layout-$width.html" ||
    fail "chromium could not load the page at $width px (see $out_dir/layout-$width.log)"
  found=$(sed -n '/<pre id="pinbench-layout">/,/^END/p' "$out_dir/layout-$width.html" |
          sed 's/.*<pre id="pinbench-layout">//')
  [[ -n $found ]] || fail "the layout probe did not run at $width px"
  sed -n '/^NOTES/,/^PROBLEMS/p' <<<"$found" | sed '1d;$d;/^$/d' |
    sed "s/^/check-report: $width px: /"
  if [[ $(sed -n 's/^PROBLEMS \([0-9]*\)$/\1/p' <<<"$found") != 0 ]]; then
    layout_problems+=$(sed -n '/^PROBLEMS/,/^END/p' <<<"$found" | sed '1d;$d' |
                       sed "s/^/$width px: /")$'\n'
  fi
done
[[ -z $layout_problems ]] || fail "the layout, at 1280 x 900 and 800 x 900:"$'\n'"$layout_problems"

echo "check-report: passed: $charts charts drawn, no console messages, the layout holds at" \
     "1280 and 800 px"
echo "check-report: page:        $report"
echo "check-report: screenshots: $out_dir/screenshot.png $out_dir/screenshot-1280.png" \
     "$out_dir/screenshot-800.png"
