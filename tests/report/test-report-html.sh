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
# is not installed (scripts/install-deps installs it). $CHROMIUM names another binary
# (tests/report/chromium.sh).
set -euo pipefail

writer=$1 png_colours=$2 scratch=$3

rm -rf "$scratch"
fail() { echo "FAIL: $*" >&2; exit 1; }
source "$(dirname "${BASH_SOURCE[0]}")/chromium.sh"
chromium_find

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
dump_dom "$report" report
grep -q '<svg[^>]*id="pool-map-0"' "$scratch/report.dom" ||
  fail "the rendered page has no pool map (DOM: $scratch/report.dom)"
blocks=$(grep -o '<rect class="block"' "$scratch/report.dom" | wc -l)
expected=$(grep -c '"state":' "$scratch/pool_snapshot.json")
((expected > 0 && blocks == expected)) ||
  fail "the pool map has $blocks block rects, the snapshot $expected blocks"

echo "PASS: $report renders without console errors and shows its charts and pool map"
