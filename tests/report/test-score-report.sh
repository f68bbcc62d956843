#!/usr/bin/env bash
# plume score --report (support/score_report.h) rendered by headless Chromium: a scene's truth
# scored against detections made from it with known faults (every fifth plume dropped, a
# false alarm in every seventh frame), so the page has curves and worst frames. The page
# must log nothing to the console (it has no script), the screenshot must show the curves,
# the frame chart, the latency over time (plume detect --latency's times for the same frames)
# and the worst frames' pictures in the colours they are drawn with, and the DOM must hold
# the four charts and PNG pictures that are not empty.
#
#   test-score-report.sh PLUME PNG_COLOURS SCRATCH_DIR
#
# Exits 77 (skipped, with a message) when Chromium is not installed (tests/report/chromium.sh).
set -euo pipefail

plume=$1 png_colours=$2 scratch=$3

rm -rf "$scratch"
mkdir -p "$scratch"
fail() { echo "FAIL: $*" >&2; exit 1; }
source "$(dirname "${BASH_SOURCE[0]}")/chromium.sh"
chromium_find
cd "$scratch"

"$plume" scene --frames 30 --size 96,96 --seed 7 --out f.npy --truth t.csv -q ||
  fail "plume scene failed"
# Detections from the truth (frame,row,col,amplitude,sigma): the plume's amplitude as the
# region's max, every fifth plume dropped, a false alarm at (5, 5) in every seventh frame.
{
  echo "frame,label,area,min_row,min_col,max_row,max_col,centroid_row,centroid_col,sum,max,wcentroid_row,wcentroid_col"
  awk -F, 'NR > 1 && (NR % 5) != 0 {printf "%d,1,9,%d,%d,%d,%d,%s,%s,100,%s,%s,%s\n",
      $1, $2 - 1, $3 - 1, $2 + 1, $3 + 1, $2, $3, $4, $2, $3}' t.csv
  for f in 0 7 14 21 28; do echo "$f,2,4,4,4,6,6,5,5,40,9999,5,5"; done
} >d.csv

# Each frame's latency, as plume detect --latency writes it for a real run on these frames.
"$plume" detect --frames f.npy --preset default --backend host --out real.csv --latency l.csv -q ||
  fail "plume detect --latency failed"
"$plume" score --truth t.csv --detections d.csv --report r.html --frames f.npy --latency l.csv \
  >score.txt ||
  fail "plume score --report failed: $(cat score.txt)"
[[ -s r.html ]] || fail "no page at r.html"

render "$scratch/r.html" page
errors=$(page_lines "$scratch/page.log" "$scratch/r.html")
[[ -z $errors ]] || fail "the page logged to the console: $errors"
# The precision-recall curve (1f6fd1), the Pd-Pfa curve (c2410c), the frame chart's true
# and false positives (15803d, dc2626), and in the worst frames' pictures the detections'
# crosses (ff3030) and the truth's circles (00dc3c); the latency over time (7c3aed).
"$png_colours" page.png 50 1f6fd1:200 c2410c:200 15803d:200 dc2626:50 ff3030:20 00dc3c:20 \
  7c3aed:200 ||
  fail "the screenshot $scratch/page.png does not show the curves and the pictures"
dump_dom "$scratch/r.html" page
charts=$(grep -o '<svg class="chart"' page.dom | wc -l)
((charts == 4)) || fail "the page has $charts charts, expected 4"
# The latency chart has a point for each of the 30 frames, and its figures under it.
# (awk reads the file itself: a pipeline with an early exit would fail by SIGPIPE under
# pipefail, now and then.)
points=$(awk '/Latency of each frame/ { chart = 1 }
  chart && match($0, /points="[^"]*"/) {
    line = substr($0, RSTART, RLENGTH); print gsub(/[0-9.]+,[0-9.]+/, "", line); exit }' page.dom)
((points == 30)) || fail "the latency chart has $points points, expected 30"
grep -qE '<p>30 frames from l.csv: median [0-9.]+ ms, 99th percentile' page.dom ||
  fail "the page lacks the latency figures"
pictures=$(grep -oE '<img class="frame"[^>]*src="data:image/png;base64,iVBORw0KGgo[A-Za-z0-9+/=]{100,}"' page.dom | wc -l)
((pictures >= 1)) || fail "the page has no picture of a worst frame"

# --latency without --report, and a CSV without a latency_ms column: refused.
if "$plume" score --truth t.csv --detections d.csv --latency l.csv >out.txt 2>err.txt; then
  fail "--latency without --report was taken"
fi
grep -q "give both" err.txt || fail "--latency without --report: $(cat err.txt)"
if "$plume" score --truth t.csv --detections d.csv --report r2.html --latency d.csv \
  >out.txt 2>err.txt; then
  fail "--latency d.csv was taken"
fi
grep -q "d.csv: no column 'latency_ms'" err.txt || fail "--latency d.csv: $(cat err.txt)"
[[ ! -e r2.html ]] || fail "--latency d.csv left a page"

# --frames without --report, and a page named .png: refused, nothing written.
if "$plume" score --truth t.csv --detections d.csv --frames f.npy >out.txt 2>err.txt; then
  fail "--frames without --report was taken"
fi
grep -q "give both" err.txt || fail "--frames without --report: $(cat err.txt)"
if "$plume" score --truth t.csv --detections d.csv --report r.png >out.txt 2>err.txt; then
  fail "--report r.png was taken"
fi
[[ ! -e r.png ]] || fail "--report r.png left a file"

echo "PASS: plume score --report renders without console errors, with its curves, its frame chart, the latency over time and $pictures worst frames drawn"
