#!/usr/bin/env bash
# tests/cli/test-plume-detect.sh PLUME SCRATCH: `plume detect` and `plume demo` end to end,
# through the built binary. On a short scene: the CSV's header and rows; the same CSV from
# the stack, from a folder of the same frames as .npy, PGM and PNG files, from the same
# samples as raw frames (a file, stdin, big-endian, after a header), and with any number
# of frames in flight or frames a batch; --out - (the CSV on stdout, the summary on stderr), -q, an --out of
# another extension refused; a TIFF stack and a TIFF in a folder, a FITS cube, an HDF5 dataset
# and a NetCDF-4 variable (physical or stored values), FFV1 videos (Matroska, AVI, and Matroska
# on stdin), read as their .npy, a video's damage named; --overlay's pictures; the rows equal `plume op threshold` + `plume op label
# --regions --intensity` for the same chain; no progress bar when stderr is not a
# terminal, and one on a terminal; arrays named by the pipeline (--tensor) give the
# same rows as the built-in kernel and threshold they stand for; exit codes (0 ok, 2 bad
# usage, a bad pipeline, a bad frame or tensor file) with one-line messages on stderr, and
# no output (or temporary) file left by a failure. Then `plume demo` on a short scene: its precision and recall are >= 0.95,
# its files are removed (or kept with --keep) and `plume score` agrees with it; with
# --difficulty hard it writes the hard scene and its calibration, which a --pipeline names
# as @gain and @offset.
# Python (any python3, standard library only) makes the PNG frames when it is found.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
tiffs=$(cd "$(dirname "${BASH_SOURCE[0]}")/../fixtures/tiff" && pwd) # TIFFs tifffile wrote
fitses=$(cd "$(dirname "${BASH_SOURCE[0]}")/../fixtures/fits" && pwd) # FITS files astropy wrote
videos=$(cd "$(dirname "${BASH_SOURCE[0]}")/../fixtures/video" && pwd) # videos ffmpeg made
plume=$1
cli_begin "$plume" "$2" --commands

log="conv2d kernel=log:9:1.5 pad=same border=replicate ! threshold value=25 ! label connectivity=8"
pipeline="$log ! regions capacity=64"
header="frame,label,area,min_row,min_col,max_row,max_col,centroid_row,centroid_col,sum,max,wcentroid_row,wcentroid_col"

# ---- a scene and its detections ---------------------------------------------------------
N=40
H=128
W=128
frame_bytes=$((H * W * 2))
run 0 "scene" scene --frames $N --size $H,$W --out s.npy --truth t.csv
run 0 "detect a stack" detect --frames s.npy --pipeline "$pipeline" --out a.csv
checks=$((checks + 1))
[[ $(head -n 1 a.csv) == "$header" ]] || fail "a.csv header: $(head -n 1 a.csv)"
rows=$(($(wc -l <a.csv) - 1))
checks=$((checks + 1))
[[ $rows -ge 20 ]] || fail "a.csv has only $rows rows"
# Rows: 13 fields, frames 0..N-1 in order, labels 1.. within each frame.
checks=$((checks + 1))
bad=$(tail -n +2 a.csv | awk -F, -v n=$N 'NF != 13 || $1 < 0 || $1 >= n || $1 < last ||
  ($1 == last && $2 != label + 1) || ($1 != last && $2 != 1) {print; exit}
  {last = $1; label = $2}')
[[ -z $bad ]] || fail "a.csv row out of order or malformed: $bad"
checks=$((checks + 1))
grep -q "^detect: $N frames of ${H}x$W u16 from s.npy, $rows regions -> a.csv$" out.txt ||
  fail "detect summary: $(cat out.txt)"
checks=$((checks + 1))
grep -Eq "^$N frames in [0-9.]+ s: [0-9.]+ frames/s \(host backend, 3 frames in flight" out.txt ||
  fail "detect figures: $(cat out.txt)"
checks=$((checks + 1))
grep -q "^graphs: not used (the host backend has no graphs)$" out.txt || fail "graphs: $(cat out.txt)"
# Not a terminal: no progress bar, nothing at all on stderr.
checks=$((checks + 1))
[[ ! -s err.txt ]] || fail "stderr is not empty without a terminal: $(cat -v err.txt)"
# The detections are good ones.
run 0 "score" score --truth t.csv --detections a.csv
checks=$((checks + 1))
awk '/^precision:/ {p = $2} /^recall:/ {r = $2} END {exit !(p >= 0.95 && r >= 0.95)}' out.txt ||
  fail "score of a.csv: $(cat out.txt)"

# Any number of frames in flight gives the same CSV.
for k in 1 2 5 16; do
  run 0 "--streams $k" detect --frames s.npy --pipeline "$pipeline" --out k.csv --streams $k
  checks=$((checks + 1))
  cmp -s a.csv k.csv || fail "--streams $k changes the CSV"
  grep -q "host backend, $k frames in flight" out.txt || fail "--streams $k: $(cat out.txt)"
done
# Batches (--batch N, apps/detect.h "Batches"): the same CSV whatever N, a short last batch
# (40 frames in batches of 3 and 16) included.
for b in 1 3 16; do
  run 0 "--batch $b" detect --frames s.npy --pipeline "$pipeline" --out k.csv --batch $b
  checks=$((checks + 1))
  cmp -s a.csv k.csv || fail "--batch $b changes the CSV"
  [[ $b == 1 ]] || grep -q "host backend, 3 batches of $b frames in flight" out.txt ||
    fail "--batch $b: $(cat out.txt)"
done
# An element that takes one frame at a time is named, with what to write instead.
run 2 "--batch with segment" detect --frames s.npy --pipeline "segment value=25" --out x.csv \
  --batch 4 && expect_err "--batch with segment" "for segment write threshold ! label ! regions"
absent "--batch with segment" x.csv
# Raw frames (support/raw_frames.h): the stack's data without its .npy header, from a file
# and from standard input through a pipe, in either byte order, after a header to skip,
# give the same CSV; a short last frame is refused naming the frame and the bytes missing.
tail -c $((N * frame_bytes)) s.npy >s.raw
raw=(--raw-shape ${H}x$W --raw-dtype u16)
run 0 "raw file" detect --frames s.raw "${raw[@]}" --pipeline "$pipeline" --out r.csv
same r.csv a.csv "raw file"
run 0 "raw stdin" detect --frames - "${raw[@]}" --pipeline "$pipeline" --out r.csv < <(cat s.raw)
same r.csv a.csv "raw stdin"
checks=$((checks + 1))
grep -q "^detect: $N frames of ${H}x$W u16 from -, $rows regions -> r.csv$" out.txt ||
  fail "raw stdin summary: $(cat out.txt)"
run 0 "raw big-endian" detect --frames - "${raw[@]}" --raw-endian big --pipeline "$pipeline" \
  --out r.csv < <(dd conv=swab status=none <s.raw)
same r.csv a.csv "raw big-endian"
run 0 "raw header" detect --frames - --raw-shape=$H,$W --raw-dtype=u16 --raw-header=11 \
  --pipeline "$pipeline" --out r.csv < <(printf 'eleven byte'; cat s.raw)
same r.csv a.csv "raw header"
# A FIFO is a stream too: its open waits for the writer, as cat's does.
mkfifo frames.fifo
cat s.raw >frames.fifo &
run 0 "raw FIFO" detect --frames frames.fifo "${raw[@]}" --pipeline "$pipeline" --out r.csv
wait $!
same r.csv a.csv "raw FIFO"
rm frames.fifo r.csv
run 2 "raw short stream" detect --frames - "${raw[@]}" --pipeline "$pipeline" --out r.csv \
  < <(head -c $((3 * frame_bytes + 100)) s.raw)
expect_err "raw short stream" "stdin: frame 3 is short: 100 of $frame_bytes bytes, $((frame_bytes - 100)) missing"
absent "raw short stream" r.csv
head -c $((N * frame_bytes - 1)) s.raw >short.raw
run 2 "raw short file" detect --frames short.raw "${raw[@]}" --pipeline "$pipeline" --out r.csv
expect_err "raw short file" "short.raw: frame $((N - 1)) is short: $((frame_bytes - 1)) of $frame_bytes bytes, 1 missing"
absent "raw short file" r.csv
run 2 "stdin without --raw-shape" detect --frames - --pipeline "$pipeline" --out r.csv </dev/null
expect_err "stdin without --raw-shape" "stdin: not a video file"
expect_err "stdin without --raw-shape" "--raw-shape HxW"
run 2 "bad --raw-dtype" detect --frames s.raw --raw-shape 128x128 --raw-dtype i8 \
  --pipeline "$pipeline" --out r.csv
expect_err "bad --raw-dtype" "--raw-dtype 'i8' is not u8, u16 or f32"
run 2 "--raw-dtype without a shape" detect --frames s.raw --raw-dtype u16 --pipeline "$pipeline" \
  --out r.csv
expect_err "--raw-dtype without a shape" "--raw-shape HxW is required"
rm short.raw
# --out -: the CSV on stdout, the summary on stderr; -q: nothing on stderr. The pipe of
# the issue's example: raw frames in on stdin, the CSV out on stdout.
run 0 "--out -" detect --frames s.npy --pipeline "$pipeline" --out -
same out.txt a.csv "--out -"
checks=$((checks + 1))
grep -q "^detect: $N frames of ${H}x$W u16 from s.npy, $rows regions -> -$" err.txt ||
  fail "--out -: the summary is not on stderr: $(cat err.txt)"
run 0 "stdin to stdout, -q" detect --frames - "${raw[@]}" --pipeline "$pipeline" --out - -q \
  < <(cat s.raw)
same out.txt a.csv "stdin to stdout, -q"
checks=$((checks + 1))
[[ ! -s err.txt ]] || fail "-q: stderr is not empty: $(cat err.txt)"
run 0 "--quiet" detect --frames s.npy --pipeline "$pipeline" --out q.csv --quiet
same q.csv a.csv "--quiet"
checks=$((checks + 1))
[[ ! -s out.txt && ! -s err.txt ]] || fail "--quiet: $(cat out.txt err.txt)"
# An extension that is not the CSV's is refused before anything runs.
run 2 "--out m.png" detect --frames s.npy --pipeline "$pipeline" --out m.png
expect_err "--out m.png" "'m.png' ends in .png, but the data written is .csv"
absent "--out m.png" m.png
run 0 "--out Q.CSV" detect --frames s.npy --pipeline "$pipeline" --out Q.CSV -q
same Q.CSV a.csv "--out Q.CSV"
rm -f q.csv Q.CSV
# TIFF frames (support/tiff_io.h): a stack tifffile wrote gives the rows of its .npy, and in a
# folder a .tif is a frame like a .npy of the same values.
tiff_pipeline="threshold value=30000 ! label connectivity=8 ! regions capacity=64"
run 0 "a TIFF stack" detect --frames "$tiffs/u16-stack-tiled-big-endian.tif" \
  --pipeline "$tiff_pipeline" --out tif.csv
run 0 "its .npy" detect --frames "$tiffs/u16-stack-tiled-big-endian.npy" \
  --pipeline "$tiff_pipeline" --out npy.csv
same tif.csv npy.csv "a TIFF stack"
checks=$((checks + 1))
[[ $(wc -l <tif.csv) -gt 3 ]] || fail "a TIFF stack: too few rows: $(cat tif.csv)"
mkdir -p tiff-folder
cp "$tiffs/u8-strips.tif" tiff-folder/0.tif
cp "$tiffs/u8-strips.npy" tiff-folder/1.npy
run 0 "a folder with a TIFF" detect --frames tiff-folder --pipeline \
  "threshold value=128 ! label connectivity=8 ! regions capacity=64" --out folder.csv
checks=$((checks + 1))
[[ $(grep -c '^0,' folder.csv) -gt 0 &&
  $(grep '^0,' folder.csv | cut -d, -f2-) == "$(grep '^1,' folder.csv | cut -d, -f2-)" ]] ||
  fail "a folder with a TIFF: frame 0 (the .tif) and 1 (its .npy) differ: $(cat folder.csv)"
rm -rf tif.csv npy.csv folder.csv tiff-folder
# --latency (apps/detect.h): a row a frame, in order, after the detections' CSV (the same
# as without it); each latency is written_s - read_s (to the printed 0.1 us) and >= 0, and
# no frame is written before it is read; '-' writes the rows to stdout, the summary then to
# stderr. Refused: another extension, --out's own file, both on stdout.
run 0 "--latency" detect --frames s.npy --pipeline "$pipeline" --out l.csv --latency times.csv
same l.csv a.csv "--latency"
checks=$((checks + 1))
awk -F, -v n="$N" 'NR == 1 { ok = $0 == "frame,read_s,written_s,latency_ms" }
  NR > 1 { d = 1000 * ($3 - $2) - $4; ok = ok && $1 == NR - 2 && $4 >= 0 && $3 >= $2 &&
           d < 0.01 && d > -0.01 }
  END { exit !(ok && NR == n + 1) }' times.csv || fail "--latency: $(head -5 times.csv)"
run 0 "--latency -" detect --frames s.npy --pipeline "$pipeline" --out l.csv --latency - &&
  expect_err "--latency -: the summary on stderr" "frames/s"
checks=$((checks + 1))
[[ $(head -1 out.txt) == frame,read_s,written_s,latency_ms && $(wc -l <out.txt) == $((N + 1)) ]] ||
  fail "--latency -: $(head -3 out.txt)"
run 2 "--latency t.txt" detect --frames s.npy --pipeline "$pipeline" --out x.csv --latency t.txt &&
  expect_err "--latency t.txt" "--latency 't.txt' ends in .txt, but the data written is .csv"
run 2 "--latency = --out" detect --frames s.npy --pipeline "$pipeline" --out x.csv \
  --latency x.csv && expect_err "--latency = --out" "--out names the same file"
run 2 "--latency - with --out -" detect --frames s.npy --pipeline "$pipeline" --out - \
  --latency - && expect_err "--latency - with --out -" "--out is standard output already"
absent "--latency refused" t.txt x.csv
rm -f l.csv times.csv
# A folder of frames of several shapes (apps/detect.h, "Shapes"): a pipeline compiled per
# shape, up to 4 kept; 6 shapes, the first coming back after it was evicted. Each frame's
# rows are those of the frame run alone, under its number in the folder; --overlay draws
# each at its own size.
mkdir -p shapes
sizes=(32,32 40,56 48,40 32,32 56,24 64,32 24,72 72,16 32,32)
for i in "${!sizes[@]}"; do
  run 0 "shape $i" scene --frames 1 --size "${sizes[$i]}" --seed $((i + 3)) --out "shapes/f_$i.npy" \
    --truth shape-t.csv
  mkdir -p "alone$i" && cp "shapes/f_$i.npy" "alone$i/"
  run 0 "shape $i alone" detect --frames "alone$i" --pipeline "$pipeline" --out "alone$i.csv"
done
mkdir -p pictures-shapes
run 0 "several shapes" detect --frames shapes --pipeline "$pipeline" --out shapes.csv \
  --overlay pictures-shapes
checks=$((checks + 1))
# 7 shapes in 9 runs; 8 pipelines, for 32x32 is evicted by 72x16 and comes back.
grep -qF "9 frames of several shapes (9 runs of one shape, 8 pipelines compiled; the first 32x32)" \
  out.txt || fail "several shapes: $(cat out.txt)"
{
  echo "$header"
  for i in "${!sizes[@]}"; do tail -n +2 "alone$i.csv" | sed "s/^0,/$i,/"; done
} >shapes-expected.csv
same shapes.csv shapes-expected.csv "several shapes"
checks=$((checks + 1))
# The IHDR of frame 1's picture: 56 wide, 40 high.
[[ $(od -An -tx1 -j 16 -N 8 pictures-shapes/frame_000001.png | tr -d ' \n') == 0000003800000028 ]] ||
  fail "several shapes: frame_000001.png is not 56x40"
rm -rf shapes alone* pictures-shapes shapes.csv shapes-expected.csv shape-t.csv
# --overlay (support/overlay.h): one PNG a frame (8-bit RGB, the frame's size), the CSV as
# without it, and the summary's line; --truth draws the plumes too. Refused: --truth
# alone, --out -, a folder that is not there.
mkdir -p pictures
run 0 "--overlay" detect --frames s.npy --pipeline "$pipeline" --out o.csv --overlay pictures \
  --truth t.csv
same o.csv a.csv "--overlay"
checks=$((checks + 1))
[[ $(ls pictures | wc -l) == "$N" && -f pictures/frame_000000.png ]] &&
  grep -q "^overlay: $N pictures -> pictures$" out.txt || fail "--overlay: $(ls pictures; cat out.txt)"
checks=$((checks + 1))
# The PNG signature, then IHDR: width, height (big-endian), 8 bits, colour type 2 (RGB).
[[ $(od -An -tx1 -j 16 -N 10 pictures/frame_000001.png | tr -d ' \n') == \
  "$(printf '%08x%08x0802' "$W" "$H")" ]] || fail "--overlay: frame_000001.png is not ${W}x$H RGB"
run 2 "--truth without --overlay" detect --frames s.npy --pipeline "$pipeline" --out x.csv \
  --truth t.csv && expect_err "--truth without --overlay" "--truth draws on --overlay's pictures"
run 2 "--overlay with --out -" detect --frames s.npy --pipeline "$pipeline" --out - \
  --overlay pictures && expect_err "--overlay with --out -" "--overlay reads the regions back"
run 2 "--overlay, no folder" detect --frames s.npy --pipeline "$pipeline" --out x.csv \
  --overlay nowhere && expect_err "--overlay, no folder" "--overlay 'nowhere' is not a folder"
absent "refused --overlay" x.csv
rm -rf pictures o.csv
# A FITS cube (support/fits_io.h) gives the rows of its .npy.
fits_pipeline="threshold value=30000 ! label connectivity=8 ! regions capacity=32"
run 0 "a FITS cube" detect --frames "$fitses/u16-cube.fits" --pipeline "$fits_pipeline" \
  --out fits.csv
run 0 "its .npy" detect --frames "$fitses/u16-cube.npy" --pipeline "$fits_pipeline" --out npy.csv
same fits.csv npy.csv "a FITS cube"
checks=$((checks + 1))
[[ $(wc -l <fits.csv) -gt 3 ]] || fail "a FITS cube: too few rows: $(cat fits.csv)"
rm -f fits.csv npy.csv

# An HDF5 dataset (support/hdf5_io.h) gives the rows of its .npy; a NetCDF-4 variable's stored
# values with --h5-values stored, its physical ones (CF scale and offset) by default.
h5s=$(cd "$(dirname "${BASH_SOURCE[0]}")/../fixtures/hdf5" && pwd) # files h5py and netCDF4 wrote
run 0 "an HDF5 dataset" detect --frames "$h5s/u16-cube.h5:/frames" --pipeline "$fits_pipeline" \
  --out h5.csv
run 0 "its .npy" detect --frames "$h5s/u16-cube.npy" --pipeline "$fits_pipeline" --out npy.csv
same h5.csv npy.csv "an HDF5 dataset"
packed_pipeline="threshold value=300 ! label connectivity=8 ! regions capacity=32"
for values in physical stored; do
  want=i16-packed.npy
  [[ $values == stored ]] && want=i16-packed-stored.npy
  run 0 "a NetCDF-4 variable, $values" detect --frames "$h5s/i16-packed.nc" --h5-values "$values" \
    --pipeline "$packed_pipeline" --out h5.csv
  run 0 "its $values .npy" detect --frames "$h5s/$want" --pipeline "$packed_pipeline" --out npy.csv
  same h5.csv npy.csv "a NetCDF-4 variable, $values"
  checks=$((checks + 1))
  [[ $(wc -l <h5.csv) -gt 2 ]] || fail "a NetCDF-4 variable, $values: too few rows: $(cat h5.csv)"
done
run 2 "an HDF5 file without the dataset named" detect --frames "$h5s/u16-cube.h5:/nope" \
  --pipeline "$fits_pipeline" --out h5.csv &&
  expect_err "an HDF5 file without the dataset named" "u16-cube.h5: no dataset /nope"
rm -f h5.csv npy.csv
# Videos (support/video_io.h): FFV1 gray16 in Matroska (its count unknown until the end) and
# gray8 in AVI give the rows of the .npy of the frames they were made of; a damaged packet
# fails naming the file and the frame, leaving no output.
run 0 "an FFV1 Matroska video" detect --frames "$videos/gray16-ffv1.mkv" \
  --pipeline "$fits_pipeline" --out mkv.csv
run 0 "its .npy" detect --frames "$videos/gray16-ffv1.npy" --pipeline "$fits_pipeline" \
  --out npy.csv
same mkv.csv npy.csv "an FFV1 Matroska video"
# --overlay reads a video whose count Matroska does not say to its end: a picture a frame.
mkdir -p pictures-mkv
run 0 "--overlay of a Matroska video" detect --frames "$videos/gray16-ffv1.mkv" \
  --pipeline "$fits_pipeline" --out mkv-drawn.csv --overlay pictures-mkv && {
  want=$(head -c 128 "$videos/gray16-ffv1.npy" | grep -ao "'shape': ([0-9]*" | grep -o "[0-9]*$")
  frames=$(ls pictures-mkv | wc -l)
  checks=$((checks + 1))
  grep -q "^overlay: $frames pictures -> pictures-mkv$" out.txt && [[ $frames -gt 1 && $frames == "$want" ]] ||
    fail "--overlay of a Matroska video: $frames files of $want frames: $(cat out.txt)"
}
same mkv-drawn.csv npy.csv "--overlay of a Matroska video: its rows"
run 0 "an FFV1 Matroska video on stdin" detect --frames - --pipeline "$fits_pipeline" \
  --out stdin.csv < <(cat "$videos/gray16-ffv1.mkv")
same stdin.csv npy.csv "an FFV1 Matroska video on stdin"
checks=$((checks + 1))
[[ $(wc -l <mkv.csv) -gt 3 ]] || fail "an FFV1 Matroska video: too few rows: $(cat mkv.csv)"
video_pipeline="threshold value=200 ! label connectivity=8 ! regions capacity=64"
run 0 "an FFV1 AVI video" detect --frames "$videos/gray8-ffv1.avi" --pipeline "$video_pipeline" \
  --out avi.csv
run 0 "its .npy" detect --frames "$videos/gray8-ffv1.npy" --pipeline "$video_pipeline" \
  --out npy.csv
same avi.csv npy.csv "an FFV1 AVI video"
run 2 "a damaged video" detect --frames "$videos/damaged-packet.avi" \
  --pipeline "$video_pipeline" --out bad.csv &&
  expect_err "a damaged video" "damaged-packet.avi: frame 2: damaged"
absent "a damaged video" bad.csv
rm -f mkv.csv avi.csv npy.csv stdin.csv

# Without capacity= the table holds every region a frame can have: the same rows.
run 0 "no capacity" detect --frames=s.npy "--pipeline=$log ! regions" --out=k.csv --backend=host
checks=$((checks + 1))
cmp -s a.csv k.csv || fail "regions without capacity changes the CSV"

# --profile: the same CSV, the three files with every step of the pipeline in them, and a
# snapshot of the default pool at the end of the run (pool_snapshot.json, its map in
# report.html).
export XDG_CACHE_HOME=$PWD/cache # the calibration's cache stays in the test's directory
run 0 "--profile" detect --frames s.npy --pipeline "$pipeline" --out p.csv --profile prof/run
checks=$((checks + 1))
cmp -s a.csv p.csv || fail "--profile changes the CSV"
checks=$((checks + 1))
grep -q "^profile: prof/run/profile.json, trace.json, report.html, pool_snapshot.json$" out.txt ||
  fail "--profile: $(cat out.txt)"
for f in profile.json trace.json report.html pool_snapshot.json; do
  checks=$((checks + 1))
  [[ -s prof/run/$f ]] || fail "--profile: prof/run/$f is missing or empty"
done
checks=$((checks + 1))
grep -q '"schema": "plume-profile"' prof/run/profile.json || fail "--profile: profile.json schema"
checks=$((checks + 1))
grep -q '"name": "default pool at the end of the run"' prof/run/pool_snapshot.json &&
  grep -q '"state": "used"' prof/run/pool_snapshot.json ||
  fail "--profile: pool_snapshot.json has no default pool with used blocks"
checks=$((checks + 1))
grep -q '<rect class="block"' prof/run/report.html || fail "--profile: report.html has no pool map"
for op in conv2d threshold label regions h2d d2h; do
  checks=$((checks + 1))
  grep -q "\"name\": \"$op\"" prof/run/profile.json || fail "--profile: no $op in profile.json"
  checks=$((checks + 1))
  grep -q "\"name\": \"$op\"" prof/run/trace.json || fail "--profile: no $op in trace.json"
done
# The first run measured the device and cached it; a later process reads the cache (here
# with its FMA rate changed, to see that it is the file that is read), and a damaged line
# is measured again.
checks=$((checks + 1))
grep -q '"from_cache": false' prof/run/profile.json || fail "--profile: the first run did not measure"
cache=cache/plume/calibration.tsv
checks=$((checks + 1))
[[ $(wc -l <"$cache") == 1 ]] && grep -q "^plume-calibration-4	host	" "$cache" ||
  fail "--profile: the cache holds: $(cat "$cache")"
awk 'BEGIN {FS = OFS = "\t"} {$7 = "123.5"; print}' "$cache" >cache.tmp && mv cache.tmp "$cache"
run 0 "--profile, cached" detect --frames s.npy --pipeline "$pipeline" --out p.csv --profile prof/cached
checks=$((checks + 1))
grep -q '"from_cache": true' prof/cached/profile.json && grep -q '"fma_gflops": 123.5' prof/cached/profile.json ||
  fail "--profile: the cached calibration was not used: $(grep -A7 calibration prof/cached/profile.json)"
awk 'BEGIN {FS = OFS = "\t"} {$4 = "fast"; print}' "$cache" >cache.tmp && mv cache.tmp "$cache"
run 0 "--profile, damaged cache" detect --frames s.npy --pipeline "$pipeline" --out p.csv --profile prof/damaged
checks=$((checks + 1))
grep -q '"from_cache": false' prof/damaged/profile.json || fail "--profile: a damaged cache line was used"
# A later line of the device supersedes an earlier one; PLUME_CALIBRATION_CACHE=refresh
# measures again and appends.
tail -n 1 "$cache" | awk 'BEGIN {FS = OFS = "\t"} {$7 = "321.5"; print}' >>"$cache"
run 0 "--profile, the last line" detect --frames s.npy --pipeline "$pipeline" --out p.csv --profile prof/last
checks=$((checks + 1))
grep -q '"from_cache": true' prof/last/profile.json && grep -q '"fma_gflops": 321.5' prof/last/profile.json ||
  fail "--profile: the last cache line was not used: $(grep -A7 calibration prof/last/profile.json)"
lines=$(wc -l <"$cache")
export PLUME_CALIBRATION_CACHE=refresh
run 0 "--profile, refresh" detect --frames s.npy --pipeline "$pipeline" --out p.csv --profile prof/refresh
unset PLUME_CALIBRATION_CACHE
checks=$((checks + 1))
grep -q '"from_cache": false' prof/refresh/profile.json && [[ $(wc -l <"$cache") == $((lines + 1)) ]] ||
  fail "--profile: refresh did not measure and append ($(wc -l <"$cache") lines)"
: >not-a-dir
# A profile that cannot be written after the run is a runtime failure (exit 1), as the
# CSV's would be; the detections stay.
run 1 "--profile into a file" detect --frames s.npy --pipeline "$pipeline" --out q.csv \
  --profile not-a-dir/sub
checks=$((checks + 1))
cmp -s a.csv q.csv || fail "--profile into a file: the detections were not kept"

# ---- the same rows as plume op --------------------------------------------------------------
run 0 "op threshold" op threshold --in s.npy --value 3500 --out m.npy
run 0 "op label" op label --in m.npy --out l.npy --regions r.csv --intensity s.npy
run 0 "detect threshold" detect --frames s.npy --pipeline "threshold value=3500 ! label ! regions" \
  --out d.csv
checks=$((checks + 1))
cmp -s r.csv d.csv || fail "detect differs from plume op threshold + label --regions --intensity"

# A table too short for some frames: the first rows are kept and the loss is reported.
run 0 "capacity 1" detect --frames s.npy --pipeline "threshold value=3500 ! label ! regions capacity=1" \
  --out c.csv
checks=$((checks + 1))
[[ $(($(wc -l <c.csv) - 1)) == "$N" ]] || fail "capacity=1: $(($(wc -l <c.csv) - 1)) rows"
checks=$((checks + 1))
grep -q "^warning: [0-9]* frames had more regions than the table's 1 rows" out.txt ||
  fail "capacity=1: no warning: $(cat out.txt)"
# segment ends a detection pipeline too.
run 0 "segment" detect --frames s.npy --pipeline "conv2d kernel=log:9:1.5 pad=same ! segment value=25" \
  --out g.csv
checks=$((checks + 1))
[[ $(head -n 1 g.csv) == "$header" && $(wc -l <g.csv) -gt 1 ]] || fail "segment: $(head -n 2 g.csv)"
# cfar (cell-averaging CFAR) as the detector: the same regions as plume op cfar then label.
run 0 "detect cfar" detect --frames s.npy --pipeline "cfar window=15 guard=5 k=5 ! label ! regions" \
  --out f.csv
run 0 "op cfar" op cfar --in s.npy --window 15 --guard 5 --k 5 --out fm.npy
run 0 "op label of cfar" op label --in fm.npy --out fl.npy --regions fr.csv --intensity s.npy
checks=$((checks + 1))
[[ $(wc -l <f.csv) -gt 1 ]] && cmp -s fr.csv f.csv ||
  fail "detect cfar: $(($(wc -l <f.csv) - 1)) regions, or it differs from plume op cfar + label"

# ---- arrays the pipeline names (--tensor NAME=FILE) -----------------------------------------
# npy DESCR SHAPE: the header of a .npy of that type ('<f4') and shape ("3, 3"), 128 bytes;
# npy_f32 SHAPE and npy_u8 SHAPE for '<f4' and '|u1'.
npy() {
  printf '\x93NUMPY\x01\x00\x76\x00'
  printf "%-117s\n" "{'descr': '$1', 'fortran_order': False, 'shape': ($2), }"
}
npy_f32() { npy '<f4' "$1"; }
npy_u8() { npy '|u1' "$1"; }
# box.npy: 3x3 taps of 1/9 in f32 (0x3de38e39), the taps kernel=box:3 makes; dark.npy: an
# (H, W) background of 1000 (0x447a0000).
{ npy_f32 "3, 3"; printf '\x39\x8e\xe3\x3d%.0s' {1..9}; } >box.npy
{ npy_f32 "$H, $W"; printf '\x00\x00\x7a\x44%.0s' $(seq $((H * W))); } >dark.npy
boxed="conv2d kernel=box:3 pad=same ! threshold value=3500 ! label ! regions"
run 0 "kernel=box:3" detect --frames s.npy --pipeline "$boxed" --out box.csv
checks=$((checks + 1))
[[ $(wc -l <box.csv) -gt 1 ]] || fail "kernel=box:3 found no regions"
run 0 "kernel=@box" detect --frames s.npy --tensor box=box.npy --out t.csv \
  --pipeline "conv2d kernel=@box pad=same ! threshold value=3500 ! label ! regions"
checks=$((checks + 1))
cmp -s box.csv t.csv || fail "kernel=@box differs from kernel=box:3"
# Taking the background away, then a threshold 1000 lower: the same regions (exact in f32).
run 0 "vector_add b=@dark" detect --frames s.npy --tensor=box=box.npy --tensor dark=dark.npy \
  --pipeline "conv2d kernel=@box pad=same ! vector_add b=@dark beta=-1 ! threshold value=2500 ! label ! regions" \
  --out t.csv
checks=$((checks + 1))
cmp -s box.csv t.csv || fail "vector_add b=@dark beta=-1 differs from a threshold 1000 higher"
# nuc with a gain of 2 and an offset of -2000 everywhere, then a threshold of 5000: the regions
# of a threshold of 3500 (exact in f32), the intensities still the frame's.
{ npy_f32 "$H, $W"; printf '\x00\x00\x00\x40%.0s' $(seq $((H * W))); } >gain2.npy
{ npy_f32 "$H, $W"; printf '\x00\x00\xfa\xc4%.0s' $(seq $((H * W))); } >minus2000.npy
run 0 "nuc gain=@gain offset=@offset" detect --frames s.npy --tensor gain=gain2.npy \
  --tensor offset=minus2000.npy --out n.csv \
  --pipeline "nuc gain=@gain offset=@offset ! threshold value=5000 ! label ! regions"
checks=$((checks + 1))
cmp -s d.csv n.csv || fail "nuc then threshold 5000 differs from threshold 3500"
run 0 "nuc ! cfar" detect --frames s.npy --tensor gain=gain2.npy --tensor offset=minus2000.npy \
  --pipeline "nuc gain=@gain offset=@offset ! cfar window=15 guard=5 k=5 ! label ! regions" \
  --out nc.csv
checks=$((checks + 1))
[[ $(wc -l <nc.csv) -gt 1 ]] || fail "nuc ! cfar found no regions"
# nuc's calibration is one frame's, applied to each frame of a batch's stack.
run 0 "nuc ! cfar --batch 6" detect --frames s.npy --tensor gain=gain2.npy \
  --tensor offset=minus2000.npy --batch 6 --out ncb.csv \
  --pipeline "nuc gain=@gain offset=@offset ! cfar window=15 guard=5 k=5 ! label ! regions"
same nc.csv ncb.csv "nuc ! cfar --batch 6"
run 2 "nuc of the wrong calibration" detect --frames s.npy --tensor gain=box.npy \
  --tensor offset=minus2000.npy --out x.csv \
  --pipeline "nuc gain=@gain offset=@offset ! threshold value=1 ! label ! regions" &&
  absent "nuc of the wrong calibration" x.csv
expect_err "nuc of the wrong calibration" "gain is 3x3 but in's frames are 128x128"
# A stateful pipeline: the background carries from frame to frame in order, so 1 and 4
# frames in flight write the same bytes; a settled background leaves the plumes to cfar.
stateful="background alpha=0.2 ! cfar window=15 guard=5 k=4 ! label connectivity=8 ! regions"
run 0 "background, 1 frame in flight" detect --frames s.npy --pipeline "$stateful" --streams 1 \
  --out bg1.csv
run 0 "background, 4 frames in flight" detect --frames s.npy --pipeline "$stateful" --streams 4 \
  --out bg4.csv
checks=$((checks + 1))
cmp -s bg1.csv bg4.csv || fail "background ! cfar: 4 frames in flight differ from 1"
[[ $(wc -l <bg1.csv) -gt 1 ]] || fail "background ! cfar found no regions"
# badpixel: with no pixel flagged, and with every pixel flagged (none has a valid neighbour,
# so none is replaced), the frames go on unchanged: the regions of threshold 3500.
{ npy_u8 "$H, $W"; head -c $((H * W)) /dev/zero; } >none.npy
{ npy_u8 "$H, $W"; head -c $((H * W)) /dev/zero | tr '\0' '\1'; } >all.npy
for map in none all; do
  run 0 "badpixel bad=@bad, $map flagged" detect --frames s.npy --tensor bad=$map.npy \
    --pipeline "badpixel bad=@bad ! threshold value=3500 ! label ! regions" --out b.csv
  checks=$((checks + 1))
  cmp -s d.csv b.csv || fail "badpixel with $map flagged differs from threshold 3500 alone"
done
# Every eighth pixel flagged: the same rows as plume op badpixel, threshold and label.
{ npy_u8 "$H, $W"; for ((i = 0; i < H * W / 8; i++)); do printf '\x01\0\0\0\0\0\0\0'; done; } >some.npy
run 0 "badpixel ! threshold" detect --frames s.npy --tensor bad=some.npy --out b.csv \
  --pipeline "badpixel bad=@bad ! threshold value=3500 ! label ! regions"
run 0 "op badpixel" op badpixel --in s.npy --bad some.npy --out bm.npy
run 0 "op threshold of badpixel" op threshold --in bm.npy --value 3500 --out bt.npy
run 0 "op label of badpixel" op label --in bt.npy --out bl.npy --regions br.csv --intensity s.npy
checks=$((checks + 1))
[[ $(wc -l <b.csv) -gt 1 ]] && cmp -s br.csv b.csv ||
  fail "detect badpixel: $(($(wc -l <b.csv) - 1)) regions, or it differs from plume op"
run 0 "badpixel ! nuc ! cfar" detect --frames s.npy --tensor bad=some.npy --tensor gain=gain2.npy \
  --tensor offset=minus2000.npy --out bc.csv --pipeline \
  "badpixel bad=@bad ! nuc gain=@gain offset=@offset ! cfar window=15 guard=5 k=5 ! label ! regions"
checks=$((checks + 1))
[[ $(wc -l <bc.csv) -gt 1 ]] || fail "badpixel ! nuc ! cfar found no regions"
{ npy_u8 "3, 3"; head -c 9 /dev/zero; } >bad3.npy
run 2 "badpixel of the wrong map" detect --frames s.npy --tensor bad=bad3.npy --out x.csv \
  --pipeline "badpixel bad=@bad ! threshold value=1 ! label ! regions" &&
  absent "badpixel of the wrong map" x.csv
expect_err "badpixel of the wrong map" "bad is 3x3 but in's frames are 128x128"
run 2 "badpixel of an f32 map" detect --frames s.npy --tensor bad=box.npy --out x.csv \
  --pipeline "badpixel bad=@bad ! threshold value=1 ! label ! regions" &&
  absent "badpixel of an f32 map" x.csv
expect_err "badpixel of an f32 map" "bad->dtype f32 is not u8"
# Presets (plume/presets.h): --preset default is the default text; the others are listed
# with what they need, and a calibrated preset without its tensors is refused before reading.
run 0 "--preset default" detect --frames s.npy --preset default --out p.csv
run 0 "the default text" detect --frames s.npy --pipeline "$log ! regions capacity=1024" \
  --out a2.csv
checks=$((checks + 1))
cmp -s p.csv a2.csv || fail "--preset default differs from its text"
run 0 "--list-presets" detect --list-presets &&
  { grep -q '^robust: ' out.txt && grep -q '^calibrated: ' out.txt &&
    grep -q '^  tensors: gain offset bad' out.txt || fail "--list-presets: $(cat out.txt)"; }
run 0 "--preset robust" detect --frames s.npy --preset robust --streams 2 --out r.csv
# The background's state carries from batch to batch, frame by frame, as without them.
held="background alpha=0.05 gate=2 gate_rate=0 ! conv2d kernel=gauss:5:1 pad=same border=zero"
held="$held ! cfar window=21 guard=7 k=5.3 ! label connectivity=8 ! regions capacity=1024"
run 0 "a background" detect --frames s.npy --pipeline "$held" --out h1.csv
run 0 "a background --batch 7" detect --frames s.npy --pipeline "$held" --batch 7 --out hb.csv
checks=$((checks + 1))
cmp -s h1.csv hb.csv || fail "a background --batch 7 differs from the run without batches"
rm -f h1.csv hb.csv
# robust feeds its CFAR mask to the next frame (hold=~det): the frames of a batch could not
# see it, so --batch N is refused, naming the key.
run 2 "--preset robust --batch 7" detect --frames s.npy --preset robust --batch 7 --out x.csv &&
  absent "--preset robust --batch 7" x.csv
expect_err "--preset robust --batch 7" "--batch 7: the pipeline reads a previous frame's value (hold=~det)"
# Profiled, each step timed on its own: the state's order holds, the same bytes.
run 0 "--preset robust --profile" detect --frames s.npy --preset robust --streams 3 \
  --profile rprof --out rp.csv
checks=$((checks + 1))
cmp -s r.csv rp.csv || fail "--preset robust --profile differs from the run without profile"
rm -rf rprof
run 2 "--preset and --pipeline" detect --frames s.npy --preset robust --pipeline "$pipeline" \
  --out x.csv && absent "--preset and --pipeline" x.csv
expect_err "--preset and --pipeline" "--pipeline and --preset are given; choose one"
run 2 "an unknown preset" detect --frames s.npy --preset fast --out x.csv
expect_err "an unknown preset" "--preset 'fast' is not a preset"
run 2 "calibrated without tensors" detect --frames s.npy --preset calibrated \
  --tensor gain=gain2.npy --out x.csv && absent "calibrated without tensors" x.csv
expect_err "calibrated without tensors" "--preset calibrated needs --tensor offset=FILE.npy"
# One NaN in the gain once blanked every frame (0 detections, exit 0): refused, named.
{ npy_f32 "$H, $W"; printf '\x00\x00\x00\x40%.0s' $(seq $((H * W - 1))); printf '\x00\x00\xc0\x7f'; } >gainnan.npy
run 2 "calibrated with a NaN gain" detect --frames s.npy --preset calibrated \
  --tensor gain=gainnan.npy --tensor offset=minus2000.npy --tensor bad=some.npy --out x.csv &&
  absent "calibrated with a NaN gain" x.csv
expect_err "calibrated with a NaN gain" "'gain': element [$((H - 1)), $((W - 1))] (flat index $((H * W - 1))) is NaN"
run 2 "neither --pipeline nor --preset" detect --frames s.npy --out x.csv
expect_err "neither --pipeline nor --preset" "--pipeline or --preset is required"
# "--tensor" as another option's value is that option's: here the output's name.
run 0 "--tensor as a value" detect --frames s.npy --pipeline "$boxed" --out --tensor
checks=$((checks + 1))
cmp -s box.csv ./--tensor || fail "--out --tensor did not write the file '--tensor'"
rm -f ./--tensor
run 2 "unknown @name" detect --frames s.npy --out x.csv \
  --pipeline "conv2d kernel=@psf ! threshold value=1 ! label ! regions" && absent "unknown @name" x.csv
expect_err "unknown @name" "element 1 'conv2d': key 'kernel': no tensor named 'psf' (no tensors were given)"
run 2 "a tensor of the wrong shape" detect --frames s.npy --tensor dark=box.npy --out x.csv \
  --pipeline "conv2d kernel=box:3 ! vector_add b=@dark ! threshold value=1 ! label ! regions" &&
  absent "a tensor of the wrong shape" x.csv
expect_err "a tensor of the wrong shape" "element 2 'vector_add': "
run 2 "a missing tensor file" detect --frames s.npy --tensor k=missing.npy --pipeline "$boxed" \
  --out x.csv && absent "a missing tensor file" x.csv
expect_err "a missing tensor file" "tensor @k: missing.npy: cannot open"
run 2 "--tensor without =" detect --frames s.npy --tensor box.npy --pipeline "$boxed" --out x.csv &&
  absent "--tensor without =" x.csv
expect_err "--tensor without =" "--tensor 'box.npy' is not NAME=FILE"
run 2 "--tensor bad name" detect --frames s.npy --tensor "a b=box.npy" --pipeline "$boxed" \
  --out x.csv && absent "--tensor bad name" x.csv
expect_err "--tensor bad name" "the name is not letters, digits"
run 2 "--tensor twice" detect --frames s.npy --tensor k=box.npy --tensor=k=dark.npy \
  --pipeline "$boxed" --out x.csv && absent "--tensor twice" x.csv
expect_err "--tensor twice" "--tensor k is given twice"
run 2 "--tensor without a value" detect --frames s.npy --pipeline "$boxed" --out x.csv --tensor &&
  absent "--tensor without a value" x.csv
expect_err "--tensor without a value" "option --tensor needs a value"

# ---- the same frames from a folder ---------------------------------------------------------------
# frame K of the stack: its bytes (little-endian u16).
frame() { tail -c +$((129 + $1 * frame_bytes)) s.npy | head -c $frame_bytes; }
# A 2-D .npy header for (H, W) u16, padded to 128 bytes.
npy_header() {
  printf '\x93NUMPY\x01\x00\x76\x00'
  printf "%-117s\n" "{'descr': '<u2', 'fortran_order': False, 'shape': ($H, $W), }"
}
python=$(command -v python3 || true)
mkdir -p frames
for ((k = 0; k < N; k++)); do
  name=$(printf 'frames/f_%04d' "$k")
  if ((k % 3 == 0)); then
    { npy_header; frame "$k"; } >"$name.npy"
  elif ((k % 3 == 1)) || [[ -z $python ]]; then
    { printf 'P5\n%d %d\n65535\n' $W $H; frame "$k" | dd conv=swab status=none; } >"$name.pgm"
  else
    frame "$k" | "$python" -c '
import struct, sys, zlib
w, h, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
data = sys.stdin.buffer.read()
rows = b"".join(b"\0" + bytes(b for i in range(0, 2 * w, 2)
                               for b in (data[y * 2 * w + i + 1], data[y * 2 * w + i]))
               for y in range(h))
def chunk(kind, body):
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 16, 0, 0, 0, 0))
       + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
open(path, "wb").write(png)' $W $H "$name.png"
  fi
done
[[ -z $python ]] && echo "note: no python3: the folder has .npy and .pgm frames only, no PNG"
# Entries that are not frames are left out.
echo "not a frame" >frames/README.txt
echo "garbage" >frames/.hidden.npy
run 0 "detect a folder" detect --frames frames --pipeline "$pipeline" --out b.csv
checks=$((checks + 1))
cmp -s a.csv b.csv || fail "the folder's CSV differs from the stack's"
checks=$((checks + 1))
[[ $(ls frames/*.png 2>/dev/null | wc -l) -gt 0 || -z $python ]] || fail "no PNG frames were made"
# One frame: a 2-D .npy gives frame 0's rows of the stack.
run 0 "detect one frame" detect --frames frames/f_0000.npy --pipeline "$pipeline" --out one.csv
checks=$((checks + 1))
cmp -s one.csv <(awk -F, 'NR == 1 || $1 == 0' a.csv) || fail "one frame differs from frame 0"

# ---- a progress bar on a terminal -----------------------------------------------------------------
if command -v script >/dev/null; then
  checks=$((checks + 1))
  timeout -k 10 "${CLI_COMMAND_LIMIT:-150}" \
    script -qec "'$plume' detect --frames s.npy --pipeline '$pipeline' --out p.csv" /dev/null \
    >tty.txt 2>&1 </dev/null
  grep -q "detect \[-*\] 0/$N frames" tty.txt && grep -q "$N frames in" tty.txt ||
    fail "no progress bar on a terminal: $(cat -v tty.txt | head -c 400)"
  checks=$((checks + 1))
  cmp -s a.csv p.csv || fail "the CSV differs with a progress bar"
else
  # bsdutils, which scripts/install-deps installs: a missing check is a failure, not a note.
  fail "no 'script' command (bsdutils): the progress bar on a terminal cannot be checked"
fi

# ---- bad usage: exit 2, one line, no file ----------------------------------------------------
run 2 "no arguments" detect && absent "no arguments" x.csv
run 2 "no --frames" detect --pipeline "$pipeline" --out x.csv && absent "no --frames" x.csv
run 2 "no --pipeline" detect --frames s.npy --out x.csv && absent "no --pipeline" x.csv
run 2 "no --out" detect --frames s.npy --pipeline "$pipeline"
run 2 "unknown option" detect --frames s.npy --pipeline "$pipeline" --out x.csv --fast &&
  absent "unknown option" x.csv
run 2 "option twice" detect --frames s.npy --frames s.npy --pipeline "$pipeline" --out x.csv &&
  absent "option twice" x.csv
for k in 0 17 -1 abc 2.5 ''; do
  run 2 "--streams '$k'" detect --frames s.npy --pipeline "$pipeline" --out x.csv --streams "$k" &&
    absent "--streams '$k'" x.csv
done
for b in 0 65537 -1 abc; do
  run 2 "--batch '$b'" detect --frames s.npy --pipeline "$pipeline" --out x.csv --batch "$b" &&
    absent "--batch '$b'" x.csv
done
run 2 "--backend" detect --frames s.npy --pipeline "$pipeline" --out x.csv --backend gpu &&
  absent "--backend" x.csv
run 0 "help" detect --help
checks=$((checks + 1))
grep -q "^usage: plume detect" out.txt || fail "detect --help: $(cat out.txt)"
run 0 "help beside a malformed --tensor" detect --tensor bad --help
checks=$((checks + 1))
grep -q "^usage: plume detect" out.txt || fail "detect --tensor bad --help: $(cat out.txt)"

# ---- bad pipelines ----------------------------------------------------------------------------
run 2 "pipeline does not parse" detect --frames s.npy --pipeline "conv2d pad=same" --out x.csv &&
  absent "pipeline does not parse" x.csv
expect_err "pipeline does not parse" "element 1 'conv2d'"
for p in "sobel" "threshold value=1 ! label" "$log"; do
  run 2 "no regions: $p" detect --frames s.npy --pipeline "$p" --out x.csv &&
    absent "no regions: $p" x.csv
  expect_err "no regions: $p" "not a regions table"
done
run 2 "intensity=none" detect --frames s.npy --pipeline "$log ! regions intensity=none" --out x.csv &&
  absent "intensity=none" x.csv
expect_err "intensity=none" "intensity=none"
run 2 "empty pipeline" detect --frames s.npy --pipeline "" --out x.csv && absent "empty pipeline" x.csv

# ---- bad frames ----------------------------------------------------------------------------------
run 2 "missing frames" detect --frames missing.npy --pipeline "$pipeline" --out x.csv &&
  absent "missing frames" x.csv
expect_err "missing frames" "missing.npy: cannot open"
mkdir -p empty
run 2 "empty folder" detect --frames empty --pipeline "$pipeline" --out x.csv && absent "empty folder" x.csv
expect_err "empty folder" "no frames in the folder"
# --out naming its own input (by another spelling, or a hard link) is refused before
# anything runs, and the input is left as it was.
cp s.npy own.npy
ln -f own.npy own-link.npy
for out in own.npy ./own.npy own-link.npy; do
  run 2 "--out $out is the frames" detect --frames own.npy --pipeline "$pipeline" --out "$out" &&
    expect_err "--out $out is the frames" "--out and --frames name the same file"
  same own.npy s.npy "--out $out is the frames: the frames unchanged"
done
run 2 "--out is a --tensor" detect --frames s.npy --tensor k=own.npy --pipeline "$boxed" \
  --out own.npy && expect_err "--out is a --tensor" "--out and --tensor"
same own.npy s.npy "--out is a --tensor: the tensor unchanged"
rm -f own.npy own-link.npy
# A full disk: exit 1, the CSV not left behind; a missing folder: refused before the run.
run_full_disk 1 "full disk" detect --frames s.npy --pipeline "$pipeline" --out full.csv &&
  expect_err "full disk" "full.csv"
absent "full disk" full.csv
run 2 "--out in a missing folder" detect --frames s.npy --pipeline "$pipeline" --out no/x.csv &&
  expect_err "--out in a missing folder" "its folder 'no' does not exist"
# A signal mid-run (SIGTERM, SIGINT, SIGHUP, SIGPIPE) stops it before the next frame:
# exit 128 + the signal, the old CSV kept, no temporary file left. A slow pipeline (a
# 31 x 31 entropy window) over 1500 frames gives the signal time to land mid-run.
"$cli_program" scene --frames 1500 --size 128,128 --out long.npy --truth long.csv >/dev/null
slow="entropy window=31 bins=64 ! threshold value=4 ! label ! regions capacity=64"
for sig in TERM INT HUP PIPE; do
  echo "old detections" >kept.csv
  run_interrupted "$sig" 'kept.csv.tmp-*' $((128 + $(kill -l "$sig"))) "SIG$sig" \
    detect --frames long.npy --pipeline "$slow" --out kept.csv --backend host &&
    expect_err "SIG$sig" "interrupted by signal"
  checks=$((checks + 1))
  [[ $(cat kept.csv) == "old detections" ]] || fail "SIG$sig: the old CSV was replaced"
  absent "SIG$sig"
done
rm -f long.npy long.csv kept.csv

# A FIFO among a folder's frames is refused at once, and nothing is left behind.
mkfifo empty/0001.npy
checks=$((checks + 1))
timeout 20 "$cli_program" detect --frames empty --pipeline "$pipeline" --out x.csv >out.txt 2>err.txt
rc=$?
[[ $rc == 2 ]] || fail "a FIFO frame: exit $rc, expected 2 (stderr: $(cat err.txt))"
expect_err "a FIFO frame" "not a regular file"
absent "a FIFO frame" x.csv
rm -f empty/0001.npy
head -c $((128 + 3 * frame_bytes)) s.npy >short.npy
run 2 "truncated stack" detect --frames short.npy --pipeline "$pipeline" --out x.csv &&
  absent "truncated stack" x.csv
expect_err "truncated stack" "short.npy: truncated"
# i32 frames are not taken.
{
  printf '\x93NUMPY\x01\x00\x76\x00'
  printf "%-117s\n" "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 16, 16), }"
  head -c $((2 * 16 * 16 * 4)) /dev/zero
} >i32.npy
run 2 "i32 frames" detect --frames i32.npy --pipeline "$pipeline" --out x.csv && absent "i32 frames" x.csv
expect_err "i32 frames" "takes u8, u16 or f32 frames"
# A folder whose 21st frame is cut short: the run stops there, naming the file, and an
# existing output is left as it was (a frame of another shape is taken: "Shapes" above).
cp -r frames odd
rm -f odd/f_0020.*
{ printf 'P5\n%d %d\n65535\n' $W $((H / 2)); frame 20 | head -c $((frame_bytes / 4)); } >odd/f_0020.pgm
echo "old" >x.csv
run 2 "odd frame" detect --frames odd --pipeline "$pipeline" --out x.csv
expect_err "odd frame" "odd/f_0020.pgm: "
checks=$((checks + 1))
[[ $(cat x.csv) == old ]] || fail "odd frame: the old output was changed"
rm -f x.csv
absent "odd frame" x.csv
# A frame of another dtype.
rm -f odd/f_0020.pgm
{ printf 'P5\n%d %d\n255\n' $W $H; head -c $((H * W)) /dev/zero; } >odd/f_0020.pgm
run 2 "u8 frame among u16" detect --frames odd --pipeline "$pipeline" --out x.csv &&
  absent "u8 frame among u16" x.csv
expect_err "u8 frame among u16" "odd/f_0020.pgm: a frame of u8 128x128"

# ---- outputs that cannot be written -----------------------------------------------------------
run 2 "--out in a missing directory" detect --frames s.npy --pipeline "$pipeline" --out no/such/x.csv
mkdir -p in_the_way.csv
run 2 "--out is a directory" detect --frames s.npy --pipeline "$pipeline" --out in_the_way.csv
checks=$((checks + 1))
[[ -d in_the_way.csv && -z $(ls -A in_the_way.csv) ]] || fail "the directory in the way was changed"
absent "outputs" nothing-here

# ---- plume demo ----------------------------------------------------------------------------------
mkdir -p tmp
# The comparison runs 8 frames per timed run (--compare-frames): its default of 80 took
# most of this suite's time under the sanitizers, for the same code.
TMPDIR=$PWD/tmp run 0 "demo" demo --frames 60 --size 256,256 --compare-frames 8
cp out.txt demo.txt
checks=$((checks + 1))
grep -q "(8 frames per run)" demo.txt || fail "demo --compare-frames 8: $(grep 'frames per run' demo.txt)"
checks=$((checks + 1))
awk '/^precision:/ {p = $2} /^recall:/ {r = $2} END {exit !(p >= 0.95 && r >= 0.95)}' demo.txt ||
  fail "demo precision or recall below 0.95: $(cat demo.txt)"
checks=$((checks + 1))
grep -Eq "^60 frames in [0-9.]+ s: [0-9.]+ frames/s" demo.txt || fail "demo figures: $(cat demo.txt)"
checks=$((checks + 1))
grep -Eq "^centroid error: +mean 0\.[0-9]+ px" demo.txt || fail "demo centroid error: $(cat demo.txt)"
checks=$((checks + 1))
[[ -z $(ls -A tmp) ]] || fail "demo left files in TMPDIR: $(ls -R tmp)"
# Interrupted (Ctrl-C, kill) while it writes a long scene: exit 128 + the signal, one line,
# and no file left behind.
if command -v timeout >/dev/null; then
  for sig in INT TERM; do
    checks=$((checks + 1))
    TMPDIR=$PWD/tmp timeout --preserve-status -s $sig 0.5 "$plume" demo --frames 100000 \
      --size 64,64 >out.txt 2>err.txt
    rc=$?
    [[ ($sig == INT && $rc == 130) || ($sig == TERM && $rc == 143) ]] ||
      fail "demo interrupted by SIG$sig: exit $rc: $(cat err.txt)"
    checks=$((checks + 1))
    [[ -z $(ls -A tmp) ]] || fail "demo interrupted by SIG$sig left files: $(ls -R tmp)"
  done
else
  echo "note: no 'timeout' command: the demo's interruption is not checked"
fi
# --workdir and --keep: the files stay, and plume score reads the same figures from them.
run 0 "demo --keep" demo --frames 60 --size 256,256 --workdir kept --keep --streams 2 --backend host \
  --compare-frames 0
checks=$((checks + 1))
[[ -f kept/frames.npy && -f kept/truth.csv && -f kept/detections.csv ]] || fail "demo --keep: $(ls kept)"
checks=$((checks + 1))
cmp -s <(grep -E "^(precision|recall|centroid error):" demo.txt) \
  <(grep -E "^(precision|recall|centroid error):" out.txt) || fail "demo --keep scores differently"
run 0 "score the demo's files" score --truth kept/truth.csv --detections kept/detections.csv
checks=$((checks + 1))
cmp -s <(grep -E "^(precision|recall|centroid error):" demo.txt) \
  <(grep -E "^(precision|recall|centroid error):" out.txt) || fail "plume score disagrees with demo"
# A full disk while the demo writes its scene is a runtime failure (exit 1), and its
# folder is removed.
run_full_disk 1 "demo on a full disk" demo --frames 5 --size 64,64 --workdir full &&
  expect_err "demo on a full disk" "frames.npy"
checks=$((checks + 1))
[[ ! -e full ]] || fail "demo on a full disk left $(ls -R full)"
# A work folder given without --keep is emptied, and removed when the demo made it.
run 0 "demo --workdir" demo --frames 5 --size 64,64 --workdir made --compare-frames 0
checks=$((checks + 1))
grep -q "^comparison: left out (--compare-frames 0)" out.txt && ! grep -q "frames per run" out.txt ||
  fail "demo --compare-frames 0: $(tail -5 out.txt)"
checks=$((checks + 1))
[[ ! -e made ]] || fail "demo --workdir left $(ls -R made)"
# --difficulty hard: the hard scene and its calibration in the folder, which a pipeline
# names as @gain and @offset; the files are all removed at the end unless --keep.
run 0 "demo hard --keep" demo --frames 5 --size 64,64 --difficulty hard --workdir hard --keep \
  --backend host --compare-frames 0
checks=$((checks + 1))
[[ -f hard/frames.npy && -f hard/truth.csv && -f hard/detections.csv && -f hard/gain.npy &&
  -f hard/offset.npy && -f hard/bad.npy ]] || fail "demo hard --keep: $(ls hard)"
run 0 "scene as the demo's" scene --frames 5 --size 64,64 --difficulty hard --out hard-f.npy \
  --truth hard-t.csv --calibration .
same hard/frames.npy hard-f.npy "demo hard: the frames"
for f in gain.npy offset.npy bad.npy; do same hard/$f $f "demo hard: $f"; done
rm -f hard-f.npy hard-t.csv gain.npy offset.npy bad.npy
rm -rf hard
nuc_pipeline="nuc gain=@gain offset=@offset ! $pipeline"
run 0 "demo hard --pipeline nuc" demo --frames 5 --size 64,64 --difficulty hard --workdir made \
  --backend host --pipeline "$nuc_pipeline" --compare-frames 8
checks=$((checks + 1))
grep -qF "through the given pipeline" out.txt && grep -qF "  $nuc_pipeline" out.txt &&
  grep -q "^comparison 1 of 2: left out: the pipeline names tensors" out.txt &&
  grep -q "^precision:" out.txt || fail "demo hard --pipeline nuc: $(head -20 out.txt)"
checks=$((checks + 1))
[[ ! -e made ]] || fail "demo hard left $(ls -R made)"
# Presets: the hard scene runs 'robust' by default, scored after its 40 settling frames, and
# finds the plumes (docs/detection.md: precision and recall >= 0.9); 'default' fails there.
run 0 "demo hard" demo --frames 150 --size 256,256 --difficulty hard --backend host \
  --compare-frames 0
checks=$((checks + 1))
grep -q "through the robust pipeline" out.txt && grep -q "score --skip-frames 40" out.txt &&
  awk '/^precision:/ {p = $2} /^recall:/ {r = $2} END {exit !(p >= 0.9 && r >= 0.9)}' out.txt ||
  fail "demo hard: robust below 0.9: $(grep -E '^(precision|recall|plume demo)' out.txt)"
run 0 "demo hard --preset default" demo --frames 60 --size 128,128 --difficulty hard \
  --preset default --backend host --compare-frames 0
checks=$((checks + 1))
awk '/^precision:/ {p = $2} END {exit !(p < 0.5)}' out.txt ||
  fail "demo hard --preset default: precision $(grep '^precision:' out.txt)"
run 2 "demo --preset calibrated, normal" demo --frames 5 --size 64,64 --preset calibrated \
  --workdir made && expect_err "demo --preset calibrated, normal" "needs the hard scene's calibration"
run 2 "demo --preset and --pipeline" demo --frames 5 --size 64,64 --preset robust \
  --pipeline "$pipeline" --workdir made &&
  expect_err "demo --preset and --pipeline" "--pipeline and --preset are given; choose one"
run 2 "demo --preset fast" demo --frames 5 --size 64,64 --preset fast --workdir made &&
  expect_err "demo --preset fast" "--preset 'fast' is not a preset"
checks=$((checks + 1))
[[ ! -e made ]] || fail "demo preset refusals left $(ls -R made)"
run 2 "demo --difficulty easy" demo --frames 5 --size 64,64 --difficulty easy --workdir made &&
  expect_err "demo --difficulty easy" "--difficulty 'easy' is not normal or hard"
run 2 "demo --pipeline ''" demo --frames 5 --size 64,64 --pipeline ''
# The normal scene has no calibration: a pipeline naming @gain fails, leaving nothing.
run 2 "demo normal --pipeline nuc" demo --frames 5 --size 64,64 --workdir made --backend host \
  --pipeline "$nuc_pipeline" && expect_err "demo normal --pipeline nuc" "gain"
checks=$((checks + 1))
[[ ! -e made ]] || fail "demo normal --pipeline nuc left $(ls -R made)"
# Without a GPU, --backend cuda fails before any scene is written, leaving nothing.
if "$plume" info | grep -q "cuda: no device"; then
  checks=$((checks + 1))
  "$plume" demo --backend cuda --workdir nocuda >out.txt 2>err.txt
  rc=$?
  [[ ($rc == 1 || $rc == 2) && $(wc -l <err.txt) == 1 ]] && grep -q "^plume demo: " err.txt ||
    fail "demo --backend cuda without a GPU: exit $rc: $(cat err.txt)"
  checks=$((checks + 1))
  [[ ! -e nocuda ]] && ! grep -q "^scene:" out.txt || fail "demo --backend cuda wrote a scene"
  checks=$((checks + 1))
  "$plume" detect --frames s.npy --pipeline "$pipeline" --out x.csv --backend cuda 2>err.txt
  rc=$?
  [[ ($rc == 1 || $rc == 2) && $(wc -l <err.txt) == 1 ]] ||
    fail "detect --backend cuda without a GPU: exit $rc: $(cat err.txt)"
  absent "detect --backend cuda" x.csv
fi
run 2 "demo --compare-frames x" demo --frames 5 --size 64,64 --compare-frames x &&
  expect_err "demo --compare-frames x" "--compare-frames 'x' is not a count from 0 to 1000000"
run 2 "demo --frames 0" demo --frames 0
run 2 "demo --size" demo --size 8,8
run 2 "demo --seed" demo --seed -1
run 2 "demo --streams" demo --streams 0
run 2 "demo --keep=yes" demo --keep=yes
run 2 "demo too many pixels" demo --frames 100000 --size 16384,16384
touch a-file
run 2 "demo --workdir a file" demo --workdir a-file
run 0 "demo help" demo -h
checks=$((checks + 1))
grep -q "^usage: plume demo" out.txt || fail "demo -h: $(cat out.txt)"

cli_end
