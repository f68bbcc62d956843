#!/usr/bin/env bash
# tests/cli/test-plume-scene.sh PLUME SCRATCH: `plume scene` and `plume score` (text and
# --json) end to end, through the built binary. Checks the files a scene writes (the .npy header and size,
# the truth CSV's header and ranges), determinism (the same arguments give the same
# bytes, another seed other bytes), the hard scene's five files (frames, truth, gain,
# offset, bad) and its refusals, that the truth scored as detections is perfect,
# a report over a video's frames,
# exit codes (0 ok, 2 bad usage or a bad file) with one-line messages on stderr, and
# that no output (or temporary) file is left behind by a failure. No Python needed (where a
# python3 is found, it also reads score's JSON).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cli_begin "$1" "$2" --commands

# ---- a scene ---------------------------------------------------------------------------
run 0 "scene" scene --frames 3 --size 32,40 --out a.npy --truth a.csv
# The .npy: version 1.0, a header padded to 128 bytes, u16 (3, 32, 40), then the data.
checks=$((checks + 1))
size=$(wc -c <a.npy)
[[ $size == $((128 + 3 * 32 * 40 * 2)) ]] || fail "a.npy is $size bytes"
checks=$((checks + 1))
head -c 128 a.npy | grep -aq "{'descr': '<u2', 'fortran_order': False, 'shape': (3, 32, 40), }" ||
  fail "a.npy's header: $(head -c 128 a.npy | tail -c +11)"
# Values: 14 bits (every u16 at most 16383: the high two bits of each high byte clear).
checks=$((checks + 1))
high=$(tail -c +129 a.npy | od -An -v -tu1 -w2 | awk '$2 >= 64 {n++} END {print n + 0}')
[[ $high == 0 ]] || fail "a.npy: $high values above 16383"
# The truth: its header, then rows with frames 0..2 and centres inside 32 x 40.
checks=$((checks + 1))
[[ $(head -n 1 a.csv) == "frame,row,col,amplitude,sigma" ]] || fail "a.csv header: $(head -n 1 a.csv)"
checks=$((checks + 1))
bad=$(tail -n +2 a.csv | awk -F, 'NF != 5 || $1 < 0 || $1 > 2 || $2 < 0 || $2 > 31 ||
  $3 < 0 || $3 > 39 || $4 <= 0 || $5 <= 0 {print}')
[[ -z $bad ]] || fail "a.csv rows out of range: $bad"
checks=$((checks + 1))
[[ $(tail -n +2 a.csv | wc -l) -ge 1 ]] || fail "a.csv has no plume rows"
grep -q "^scene: 3 frames of 32x40 (seed 1)" out.txt || fail "scene summary: $(cat out.txt)"

# ---- determinism -------------------------------------------------------------------------
# '-': the frames (or the truth) on stdout, the summary on stderr; -q: no summary; names
# for another format refused; both on stdout refused.
run 0 "--out -" scene --frames 3 --size 32,40 --out - --truth dash.csv
same out.txt a.npy "--out -"
same dash.csv a.csv "--out -: the truth"
checks=$((checks + 1))
grep -q "^scene: 3 frames of 32x40 (seed 1), .* -> -, dash.csv$" err.txt ||
  fail "--out -: the summary is not on stderr: $(cat err.txt)"
run 0 "--truth - -q" scene --frames 3 --size 32,40 --out dash.npy --truth - -q
same out.txt a.csv "--truth -"
checks=$((checks + 1))
[[ ! -s err.txt ]] || fail "-q: stderr: $(cat err.txt)"
rm -f dash.npy dash.csv
run 2 "--out f.png" scene --frames 3 --size 32,40 --out f.png --truth f.csv &&
  expect_err "--out f.png" "--out 'f.png' ends in .png, but the data written is .npy"
run 2 "--truth t.npy" scene --frames 3 --size 32,40 --out f.npy --truth t.npy &&
  expect_err "--truth t.npy" "--truth 't.npy' ends in .npy, but the data written is .csv"
run 2 "both on stdout" scene --frames 3 --size 32,40 --out - --truth - &&
  expect_err "both on stdout" "both - (standard output)"
absent "refused names" f.png f.csv f.npy t.npy
run 0 "same scene" scene --frames 3 --size 32,40 --seed 1 --out b.npy --truth b.csv
checks=$((checks + 1))
cmp -s a.npy b.npy && cmp -s a.csv b.csv || fail "the default seed is not seed 1, or not deterministic"
run 0 "another seed" scene --frames=3 --size=32,40 --seed=2 --out=c.npy --truth=c.csv
checks=$((checks + 1))
cmp -s a.npy c.npy && fail "seeds 1 and 2 give the same frames"
# A shorter scene is the start of a longer one.
run 0 "longer" scene --frames 5 --size 32,40 --out d.npy --truth d.csv
checks=$((checks + 1))
cmp -s <(tail -c +129 a.npy) <(tail -c +129 d.npy | head -c $((3 * 32 * 40 * 2))) ||
  fail "the first 3 of 5 frames differ from the 3-frame scene"
# Overwriting an existing file replaces it whole.
echo old >e.npy
run 0 "overwrite" scene --frames 3 --size 32,40 --out e.npy --truth e.csv
checks=$((checks + 1))
cmp -s a.npy e.npy || fail "an overwritten output differs"
absent "good runs" nothing-here

# ---- the hard scene and its calibration ------------------------------------------------------
mkdir -p cal cal2
run 0 "hard" scene --frames 3 --size 32,40 --difficulty hard --out h.npy --truth h.csv \
  --calibration cal
checks=$((checks + 1))
grep -q "^scene: 3 frames of 32x40 (seed 1, hard), .* calibration in cal$" out.txt ||
  fail "hard summary: $(cat out.txt)"
# The five files: the frames as the normal scene's, gain and offset f32 (32, 40), bad u8.
checks=$((checks + 1))
[[ $(wc -c <h.npy) == $((128 + 3 * 32 * 40 * 2)) && $(wc -c <cal/gain.npy) == $((128 + 32 * 40 * 4)) &&
  $(wc -c <cal/offset.npy) == $((128 + 32 * 40 * 4)) && $(wc -c <cal/bad.npy) == $((128 + 32 * 40)) ]] ||
  fail "hard file sizes: $(wc -c h.npy cal/*.npy)"
checks=$((checks + 1))
head -c 128 cal/gain.npy | grep -aq "{'descr': '<f4', 'fortran_order': False, 'shape': (32, 40), }" &&
  head -c 128 cal/offset.npy | grep -aq "'descr': '<f4'" &&
  head -c 128 cal/bad.npy | grep -aq "{'descr': '|u1', 'fortran_order': False, 'shape': (32, 40), }" ||
  fail "calibration headers: $(head -c 128 cal/gain.npy | tail -c +11) $(head -c 128 cal/bad.npy | tail -c +11)"
checks=$((checks + 1))
others=$(tail -c +129 cal/bad.npy | od -An -v -tu1 -w1 | awk '$1 > 1 {n++} END {print n + 0}')
[[ $others == 0 ]] || fail "bad.npy has $others values other than 0 and 1"
checks=$((checks + 1))
[[ $(head -n 1 h.csv) == "frame,row,col,amplitude,sigma" ]] || fail "h.csv header: $(head -n 1 h.csv)"
checks=$((checks + 1))
cmp -s a.npy h.npy && fail "the hard scene's frames are the normal scene's"
# Deterministic: the same arguments give the same five files; without --calibration, the
# same frames and truth.
run 0 "hard again" scene --frames 3 --size 32,40 --difficulty=hard --out h2.npy --truth h2.csv \
  --calibration=cal2
for f in gain.npy offset.npy bad.npy; do same cal/$f cal2/$f "hard again"; done
same h.npy h2.npy "hard again"
same h.csv h2.csv "hard again"
run 0 "hard without --calibration" scene --frames 3 --size 32,40 --difficulty hard --out h3.npy \
  --truth h3.csv
same h.npy h3.npy "hard without --calibration"
run 0 "--difficulty normal" scene --frames 3 --size 32,40 --difficulty normal --out n.npy --truth n.csv
same a.npy n.npy "--difficulty normal"
rm -f h2.npy h2.csv h3.npy h3.csv n.npy n.csv cal2/*.npy
absent "hard runs" nothing-here
# Refusals: exit 2, one line, no file.
mkdir -p cal3
for difficulty in easy Hard '' 1; do
  run 2 "--difficulty '$difficulty'" scene --frames 2 --size 32,32 --difficulty "$difficulty" \
    --out x.npy --truth x.csv && absent "--difficulty '$difficulty'" x.npy x.csv
done
expect_err "--difficulty '1'" "--difficulty '1' is not normal or hard"
run 2 "--calibration without --difficulty" scene --frames 2 --size 32,32 --out x.npy --truth x.csv \
  --calibration cal3 && expect_err "--calibration without --difficulty" \
  "--calibration needs --difficulty hard"
absent "--calibration without --difficulty" x.npy x.csv cal3/gain.npy cal3/offset.npy cal3/bad.npy
run 2 "--calibration with normal" scene --frames 2 --size 32,32 --difficulty normal --out x.npy \
  --truth x.csv --calibration cal3 && absent "--calibration with normal" x.npy x.csv cal3/gain.npy
run 2 "--calibration missing" scene --frames 2 --size 32,32 --difficulty hard --out x.npy \
  --truth x.csv --calibration no-such-dir && expect_err "--calibration missing" \
  "--calibration 'no-such-dir' is not an existing folder"
absent "--calibration missing" x.npy x.csv
run 2 "--calibration a file" scene --frames 2 --size 32,32 --difficulty hard --out x.npy \
  --truth x.csv --calibration a.csv && absent "--calibration a file" x.npy x.csv
mkdir -p cal3/offset.npy
run 2 "a calibration file is a folder" scene --frames 2 --size 32,32 --difficulty hard \
  --out x.npy --truth x.csv --calibration cal3 &&
  expect_err "a calibration file is a folder" "cal3/offset.npy"
absent "a calibration file is a folder" x.npy x.csv cal3/gain.npy cal3/bad.npy
rmdir cal3/offset.npy
run 2 "--out in the calibration folder" scene --frames 2 --size 32,32 --difficulty hard \
  --out cal3/gain.npy --truth x.csv --calibration cal3 &&
  expect_err "--out in the calibration folder" "--out and --calibration name the same file"
absent "--out in the calibration folder" x.csv cal3/gain.npy cal3/offset.npy cal3/bad.npy
# All or none: a full disk, or a signal, leaves the old files of all five paths.
for f in gain.npy offset.npy bad.npy; do echo "old $f" >cal3/$f; done
echo "old frames" >kept.npy
echo "old truth" >kept.csv
run_full_disk 1 "hard on a full disk" scene --frames 2 --size 32,32 --difficulty hard \
  --out kept.npy --truth kept.csv --calibration cal3
run_interrupted TERM 'kept.npy.tmp-*' $((128 + $(kill -l TERM))) "hard SIGTERM" scene \
  --frames 4000 --size 128,128 --difficulty hard --out kept.npy --truth kept.csv \
  --calibration cal3 && expect_err "hard SIGTERM" "interrupted by signal"
checks=$((checks + 1))
[[ $(cat kept.npy) == "old frames" && $(cat kept.csv) == "old truth" && $(cat cal3/gain.npy) == "old gain.npy" &&
  $(cat cal3/offset.npy) == "old offset.npy" && $(cat cal3/bad.npy) == "old bad.npy" ]] ||
  fail "a failed hard scene replaced an old file: $(head -c 40 kept.npy cal3/*)"
absent "hard failures"
rm -f kept.npy kept.csv cal3/*.npy

# ---- plume score ---------------------------------------------------------------------------
# The truth as detections (frame, region columns, the centre as both centroids): perfect.
{
  echo "frame,label,area,min_row,min_col,max_row,max_col,centroid_row,centroid_col,sum,max,wcentroid_row,wcentroid_col"
  tail -n +2 d.csv | awk -F, '{print $1 ",1,9,0,0,0,0," $2 "," $3 ",100,50," $2 "," $3}'
} >perfect.csv
rows=$(($(wc -l <d.csv) - 1))
run 0 "score perfect" score --truth d.csv --detections perfect.csv
checks=$((checks + 1))
grep -q "^true positives: *$rows$" out.txt && grep -q "^precision: *1.0000$" out.txt &&
  grep -q "^recall: *1.0000$" out.txt && grep -q "mean 0.000 px" out.txt ||
  fail "score perfect: $(cat out.txt)"
# Every detection moved 4 px down: out of the default radius of sigma <= 1.5 plumes but
# within a radius of 5.
{
  head -n 1 perfect.csv
  tail -n +2 perfect.csv | awk -F, -v OFS=, '{$12 += 4; print}'
} >moved.csv
run 0 "score radius 5" score --truth d.csv --detections moved.csv --radius 5
checks=$((checks + 1))
grep -q "^true positives: *$rows$" out.txt && grep -q "mean 4.000 px" out.txt ||
  fail "score radius 5: $(cat out.txt)"
# --skip-frames 2: the moved detections of frames 0 and 1 and the plumes of those frames
# are left out alike, so only frames 2..4 count (all false at radius 3.9 below).
skipped=$(awk -F, 'NR > 1 && $1 >= 2' d.csv | wc -l)
run 0 "score --skip-frames 2" score --truth d.csv --detections moved.csv --radius 5 \
  --skip-frames 2
checks=$((checks + 1))
grep -q "^true positives: *$skipped$" out.txt && grep -q "^false positives: *0$" out.txt ||
  fail "score --skip-frames 2 ($skipped rows from frame 2): $(cat out.txt)"
# --json: the same figures as a JSON document on stdout, with each frame's counts (frames 2,
# 3 and 4 here), nothing on stderr.
run 0 "score --json" score --truth d.csv --detections moved.csv --radius 5 --skip-frames 2 --json
checks=$((checks + 1))
grep -q "^  \"true_positives\": $skipped,$" out.txt && grep -q '^  "skipped_frames": 2,$' out.txt &&
  grep -q '^  "false_positives": 0,$' out.txt && [[ $(grep -c '"frame":' out.txt) == 3 ]] &&
  [[ ! -s err.txt ]] || fail "score --json: $(cat out.txt err.txt)"
if command -v python3 >/dev/null; then
  checks=$((checks + 1))
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
assert sum(f["true_positives"] for f in d["frames"]) == d["true_positives"] == int(sys.argv[2])
assert d["frames"][0]["frame"] == 2 and d["precision"] == 1.0' out.txt "$skipped" ||
    fail "score --json is not the JSON expected: $(cat out.txt)"
fi
run 0 "score --skip-frames past the end" score --truth d.csv --detections moved.csv \
  --skip-frames 99
checks=$((checks + 1))
grep -q "^true positives: *0$" out.txt && grep -q "^false negatives: *0$" out.txt ||
  fail "score --skip-frames 99: $(cat out.txt)"
run 2 "score --skip-frames -1" score --truth d.csv --detections moved.csv --skip-frames -1 &&
  expect_err "score --skip-frames -1" "--skip-frames '-1' is not a count of frames"
run 0 "score radius 3.9" score --truth d.csv --detections moved.csv --radius=3.9
checks=$((checks + 1))
grep -q "^true positives: *0$" out.txt && grep -q "^false positives: *$rows$" out.txt ||
  fail "score radius 3.9: $(cat out.txt)"
# No detections at all.
head -n 1 perfect.csv >none.csv
run 0 "score none" score --truth d.csv --detections none.csv
checks=$((checks + 1))
grep -q "^recall: *0.0000$" out.txt && grep -q "^false negatives: *$rows$" out.txt ||
  fail "score none: $(cat out.txt)"

# --report over a video whose container does not count its frames (NUT, tests/fixtures/video):
# the count (Pfa's denominator) is then the last frame with a truth or a detection, here all
# 4, so the page is the one over the .npy of the same frames.
videos=$(cd "$(dirname "${BASH_SOURCE[0]}")/../fixtures/video" && pwd)
printf 'frame,row,col,amplitude,sigma\n0,5,6,50,1.5\n1,10,20,50,1.5\n3,12,8,50,1.5\n' >vt.csv
{
  echo "frame,label,area,min_row,min_col,max_row,max_col,centroid_row,centroid_col,sum,max,wcentroid_row,wcentroid_col"
  echo "0,1,9,4,5,6,7,5,6,100,80,5,6"
  echo "1,1,4,2,2,3,3,2.5,2.5,40,30,2.5,2.5"
  echo "3,1,9,11,7,13,9,12,8,100,90,12,8"
} >vd.csv
run 0 "score --report, frames of a .npy" score --truth vt.csv --detections vd.csv \
  --report npy.html --frames "$videos/gray8-raw.npy"
run 0 "score --report, frames of a video" score --truth vt.csv --detections vd.csv \
  --report video.html --frames "$videos/gray8-raw.nut"
same npy.html video.html "score --report over a video of uncounted frames"
rm -f vt.csv vd.csv npy.html video.html

# ---- signals: stopped before the next frame, exit 128 + the signal, old files kept ----------
for sig in TERM INT; do
  echo "old frames" >kept.npy
  echo "old truth" >kept.csv
  run_interrupted "$sig" 'kept.npy.tmp-*' $((128 + $(kill -l "$sig"))) "scene SIG$sig" \
    scene --frames 4000 --size 128,128 --out kept.npy --truth kept.csv &&
    expect_err "scene SIG$sig" "interrupted by signal"
  checks=$((checks + 1))
  [[ $(cat kept.npy) == "old frames" && $(cat kept.csv) == "old truth" ]] ||
    fail "scene SIG$sig: an old file was replaced"
  absent "scene SIG$sig"
done
rm -f kept.npy kept.csv

# ---- bad usage: exit 2, one line, no file ---------------------------------------------------
run_full_disk 1 "full disk" scene --frames 2 --size 32,32 --out full.npy --truth full.csv &&
  expect_err "full disk" "full.npy"
absent "full disk" full.npy full.csv
run 2 "--truth in a missing folder" scene --frames 2 --size 32,32 --out x.npy --truth no/x.csv &&
  expect_err "--truth in a missing folder" "its folder 'no' does not exist"
absent "--truth in a missing folder" x.npy
run 2 "--out is --truth" scene --frames 2 --size 32,32 --out same.npy --truth ./same.npy &&
  expect_err "--out is --truth" "--out and --truth name the same file"
absent "--out is --truth" same.npy
run 2 "no arguments" scene && absent "no arguments" x.npy x.csv
run 2 "no --frames" scene --size 32,32 --out x.npy --truth x.csv && absent "no --frames" x.npy x.csv
run 2 "no --size" scene --frames 2 --out x.npy --truth x.csv && absent "no --size" x.npy x.csv
run 2 "no --out" scene --frames 2 --size 32,32 --truth x.csv && absent "no --out" x.csv
run 2 "no --truth" scene --frames 2 --size 32,32 --out x.npy && absent "no --truth" x.npy
for frames in 0 -1 abc 1e3 100001 ''; do
  run 2 "--frames '$frames'" scene --frames "$frames" --size 32,32 --out x.npy --truth x.csv &&
    absent "--frames '$frames'" x.npy x.csv
done
for size in 15,32 32,16385 32x32 32 32, ,32 32,32,32 ' 32,32' 32,-32 99999999999999999999,32; do
  run 2 "--size '$size'" scene --frames 2 --size "$size" --out x.npy --truth x.csv &&
    absent "--size '$size'" x.npy x.csv
done
for seed in -1 18446744073709551616 0x10 1.5 ''; do
  run 2 "--seed '$seed'" scene --frames 2 --size 32,32 --seed "$seed" --out x.npy --truth x.csv &&
    absent "--seed '$seed'" x.npy x.csv
done
run 0 "largest seed" scene --frames 1 --size 16,16 --seed 18446744073709551615 --out x.npy \
  --truth x.csv && rm -f x.npy x.csv
run 2 "too many pixels" scene --frames 100000 --size 16384,16384 --out x.npy --truth x.csv &&
  absent "too many pixels" x.npy x.csv
run 2 "unknown option" scene --frames 2 --size 32,32 --out x.npy --truth x.csv --colour &&
  absent "unknown option" x.npy x.csv
run 2 "option without a value" scene --frames 2 --size 32,32 --out x.npy --truth &&
  absent "option without a value" x.npy
run 2 "option twice" scene --frames 2 --frames 3 --size 32,32 --out x.npy --truth x.csv &&
  absent "option twice" x.npy x.csv
run 2 "same file" scene --frames 2 --size 32,32 --out x.npy --truth x.npy && absent "same file" x.npy
run 0 "help" scene --help
checks=$((checks + 1))
grep -q "^usage: plume scene" out.txt || fail "scene --help: $(cat out.txt)"

# ---- outputs that cannot be written: neither file is left ------------------------------------
run 2 "--out in a missing directory" scene --frames 2 --size 32,32 --out no/such/x.npy \
  --truth x.csv && absent "--out in a missing directory" x.csv
run 2 "--truth in a missing directory" scene --frames 2 --size 32,32 --out x.npy \
  --truth no/such/x.csv && absent "--truth in a missing directory" x.npy
mkdir -p in_the_way.csv
run 2 "--truth is a directory" scene --frames 2 --size 32,32 --out x.npy --truth in_the_way.csv &&
  absent "--truth is a directory" x.npy
checks=$((checks + 1))
[[ -d in_the_way.csv && -z $(ls -A in_the_way.csv) ]] || fail "the directory in the way was changed"
if [[ $(id -u) != 0 ]]; then
  # A directory without write permission (root ignores permissions: skipped as root).
  mkdir -p locked && chmod 555 locked
  run 2 "--truth in a read-only directory" scene --frames 2 --size 32,32 --out x.npy \
    --truth locked/x.csv && absent "--truth in a read-only directory" x.npy
  chmod 755 locked
fi

# ---- plume score: bad usage and bad files ----------------------------------------------------
run 2 "score without --truth" score --detections perfect.csv
run 2 "score without --detections" score --truth d.csv
run 2 "score unknown option" score --truth d.csv --detections perfect.csv --fast
for radius in 0 -1 abc inf nan 1e999 ''; do
  run 2 "score --radius '$radius'" score --truth d.csv --detections perfect.csv --radius "$radius"
done
run 2 "score missing file" score --truth missing.csv --detections perfect.csv
checks=$((checks + 1))
grep -q "missing.csv: cannot open" err.txt || fail "score missing file: $(cat err.txt)"
mkfifo fifo.csv
checks=$((checks + 1))
timeout 20 "$cli_program" score --truth fifo.csv --detections perfect.csv >out.txt 2>err.txt
rc=$?
[[ $rc == 2 ]] || fail "score a FIFO: exit $rc, expected 2 (stderr: $(cat err.txt))"
grep -q "fifo.csv: not a regular file" err.txt || fail "score a FIFO: $(cat err.txt)"
rm -f fifo.csv
printf 'frame,row,col,amplitude,sigma\n0,1,2,3\n' >short.csv
run 2 "score short row" score --truth short.csv --detections perfect.csv
checks=$((checks + 1))
grep -q "short.csv:2: fewer fields" err.txt || fail "score short row: $(cat err.txt)"
printf 'frame,label,area\n0,1,2\n' >nocentroid.csv
run 2 "score no centroid" score --truth d.csv --detections nocentroid.csv
checks=$((checks + 1))
grep -q "nocentroid.csv: no column 'centroid_row'" err.txt || fail "score no centroid: $(cat err.txt)"
run 2 "score a .npy" score --truth a.npy --detections perfect.csv
run 0 "score help" score -h
checks=$((checks + 1))
grep -q "^usage: plume score" out.txt || fail "score -h: $(cat out.txt)"

cli_end
