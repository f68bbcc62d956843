#!/usr/bin/env bash
# tests/examples/test-detect-folder.sh DETECT_FOLDER SCRATCH: examples/detect_folder.c on a
# folder of PGM frames written here, whose hot spots are known: each frame's spots are
# found where they were drawn (centroid and peak), frames are taken in the byte order of
# their names, files other than *.pgm are ignored, and a bad folder fails with a message.
# SCRATCH is deleted and recreated.
set -euo pipefail
exe=$1 scratch=$2
fail() { echo "FAIL: $*"; exit 1; }
rm -rf -- "$scratch"
mkdir -p -- "$scratch/frames"
frames=$scratch/frames

# frame FILE SPOTS...: a 64 x 48 8-bit PGM of background 20 with a 3 x 3 square of 220
# whose top-left pixel is at each ROW,COL of SPOTS (its centroid is ROW+1, COL+1).
frame() {
  local file=$1
  shift
  { printf 'P5\n# written by %s\n64 48\n255\n' "${0##*/}"
    LC_ALL=C awk -v spots="$*" 'BEGIN {
      n = split(spots, s, " ")
      for (y = 0; y < 48; y++) for (x = 0; x < 64; x++) {
        v = 20
        for (i = 1; i <= n; i++) {
          split(s[i], rc, ",")
          if (y >= rc[1] && y < rc[1] + 3 && x >= rc[2] && x < rc[2] + 3) v = 220
        }
        printf "%c", v
      } }'
  } >"$frames/$file"
}
frame frame_00.pgm 10,10
frame frame_01.pgm 12,14
frame frame_02.pgm
frame frame_03.pgm 20,40 30,5
frame frame_10.pgm 5,50
echo "not a frame" >"$frames/notes.txt"

out=$("$exe" "$frames") || fail "detect_folder exited with $?: $out"
echo "$out"
# Each frame's name and spots (centroid and peak), in name order; then the summary.
expected="frame_00.pgm: 1 hot spot
  row 11.00 col 11.00 peak 220
frame_01.pgm: 1 hot spot
  row 13.00 col 15.00 peak 220
frame_02.pgm: 0 hot spots
frame_03.pgm: 2 hot spots
  row 21.00 col 41.00 peak 220
  row 31.00 col 6.00 peak 220
frame_10.pgm: 1 hot spot
  row 6.00 col 51.00 peak 220
5 frames, 5 hot spots"
# The spots' areas depend on the Gaussian's spread, not on where they are: leave them out.
got=$(echo "$out" | sed -n '2,$p' | sed -E 's/ area [0-9]+//; s/; pool:.*//')
[[ $got == "$expected" ]] || fail "the output differs from what was drawn:
$(diff <(echo "$expected") <(echo "$got") || true)"
[[ $(echo "$out" | head -n 1) == "5 frames of 64x48 u8 in $frames, threshold 60, on "* ]] ||
  fail "first line: $(echo "$out" | head -n 1)"

# A threshold above every smoothed pixel: no spots at all.
out=$("$exe" "$frames" 250) || fail "detect_folder with threshold 250 exited with $?"
[[ $(echo "$out" | tail -n 1) == "5 frames, 0 hot spots;"* ]] || fail "threshold 250: $out"

# Failures are reported, with the file or folder named.
if out=$("$exe" "$scratch/missing" 2>&1); then fail "a missing folder was accepted"; fi
[[ $out == *"$scratch/missing"* ]] || fail "a missing folder: $out"
frame_bad=$frames/frame_20.pgm
printf 'P5\n32 32\n255\n' >"$frame_bad"
head -c 1024 /dev/zero >>"$frame_bad"
if out=$("$exe" "$frames" 2>&1); then fail "a frame of another size was accepted"; fi
[[ $out == *"frame_20.pgm: 32x32 u8, not 64x48 u8 as the first frame"* ]] ||
  fail "a frame of another size: $out"
echo "detect_folder: ok"
