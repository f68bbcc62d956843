#!/usr/bin/env bash
# The profile report (report.html) rendered by headless Chromium: the page must log
# nothing to the console (it has no script, so any console line from it is an error),
# the screenshot must show the charts, in the colours the report draws them with, and
# the DOM Chromium builds must hold the pool snapshot's segment map with its blocks.
#
#   test-report-html.sh TEST_PROFILE_EXPORT PNG_COLOURS SCRATCH_DIR
#
# TEST_PROFILE_EXPORT --sample DIR writes the sample report; PNG_COLOURS counts a PNG's
# colours (tests/report/png_colours.c). Exits 77 (skipped, with a message) when Chromium
# is not installed (scripts/install-deps installs it). $CHROMIUM names another binary.
set -euo pipefail

writer=$1 png_colours=$2 scratch=$3

chromium=${CHROMIUM:-}
if [[ -z $chromium ]]; then
  chromium=$(command -v chromium || command -v chromium-browser || true)
fi
if [[ -z $chromium ]]; then
  echo "SKIP: chromium is not installed (scripts/install-deps installs it)"
  exit 77
fi

rm -rf "$scratch"
mkdir -p "$scratch/home"
fail() { echo "FAIL: $*" >&2; exit 1; }

# Render page $1 to $2.png, Chromium's stderr to $2.log; everything Chromium keeps goes
# to the scratch folder, not $HOME.
render() {
  local page=$1 out=$2
  HOME="$scratch/home" XDG_CONFIG_HOME="$scratch/home" XDG_CACHE_HOME="$scratch/home" \
    timeout 120 "$chromium" --headless --no-sandbox --disable-gpu \
      --disable-background-networking --no-first-run --enable-logging=stderr --v=0 \
      --user-data-dir="$scratch/profile-$out" --window-size=1280,4000 \
      --screenshot="$scratch/$out.png" "file://$page" 2>"$scratch/$out.log" ||
    fail "chromium exited with $? on $page (log: $scratch/$out.log)"
  [[ -s $scratch/$out.png ]] || fail "chromium wrote no screenshot of $page"
}

# The lines of log $1 that come from page $2 (file://$2): console messages ("...:CONSOLE:7]"
# or, in older versions, "CONSOLE(7)"), uncaught exceptions, and errors naming the
# page. Chromium's own noise (D-Bus, VA-API, the sandbox) names none of these.
page_lines() {
  grep -E ":CONSOLE[:(]|Uncaught|file://$2" "$1" || true
}

"$writer" --sample "$scratch" || fail "$writer --sample $scratch failed"
report="$scratch/report.html"
[[ -s $report ]] || fail "no report at $report"

# The filter must see a broken page's errors, or it would pass anything.
cat >"$scratch/broken.html" <<'HTML'
<!DOCTYPE html><html><body><p>broken</p><script>notAFunction();</script></body></html>
HTML
render "$scratch/broken.html" broken
[[ -n $(page_lines "$scratch/broken.log" "$scratch/broken.html") ]] ||
  fail "the console filter missed the broken page's error (log: $scratch/broken.log)"

render "$report" report
errors=$(page_lines "$scratch/report.log" "$report")
if [[ -n $errors ]]; then
  echo "$errors" >&2
  fail "the report logged to the console (log: $scratch/report.log)"
fi

# Not blank, and the charts are there: the first op's colour (time-per-op bars, timeline
# slices), the second's and third's, the A/B chart's best bar, the roofline's roofs, and
# the pool map's used and pending blocks.
"$png_colours" "$scratch/report.png" 50 4e79a7:10000 f28e2b:4000 e15759:1000 59a14f:3000 \
  c0392b:200 2e86c1:5000 e67e22:20 || fail "the screenshot $scratch/report.png does not show the charts"
# The pool snapshot's map as Chromium parsed it: the <svg> and a rect per block of the
# sample (pool_snapshot.json says how many).
HOME="$scratch/home" XDG_CONFIG_HOME="$scratch/home" XDG_CACHE_HOME="$scratch/home" \
  timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --disable-background-networking \
    --no-first-run --user-data-dir="$scratch/profile-dom" --dump-dom "file://$report" \
    >"$scratch/report.dom" 2>"$scratch/dom.log" || fail "chromium --dump-dom exited with $?"
grep -q '<svg[^>]*id="pool-map-0"' "$scratch/report.dom" ||
  fail "the rendered page has no pool map (DOM: $scratch/report.dom)"
blocks=$(grep -o '<rect class="block"' "$scratch/report.dom" | wc -l)
expected=$(grep -c '"state":' "$scratch/pool_snapshot.json")
((expected > 0 && blocks == expected)) ||
  fail "the pool map has $blocks block rects, the snapshot $expected blocks"

echo "PASS: $report renders without console errors and shows its charts and pool map"
