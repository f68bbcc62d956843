#!/usr/bin/env bash
# tests/cli/test-plume-op.sh PLUME SCRATCH: `plume op` end to end, through the built
# binary. Inputs are .npy/PGM files written here with printf; expected outputs are
# whole .npy files written the same way and compared byte for byte. Checks exit
# codes (0 ok, 2 bad usage or bad file), one-line messages on stderr, and that no
# output (or temporary) file is left behind by a failure. Also --out - (stdout), outputs
# named for another format refused, TIFF in (tests/fixtures/tiff) and out, FITS in
# (tests/fixtures/fits), HDF5 and NetCDF-4 in (tests/fixtures/hdf5), and video in
# (tests/fixtures/video). No Python needed.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
plume=$1
fixtures=$(cd "$(dirname "${BASH_SOURCE[0]}")/../fixtures" && pwd)
cli_begin "$plume" "$2" --commands

# write_npy FILE DESCR SHAPE DATA: a version 1.0 .npy whose header is padded to 128
# bytes, as numpy pads it; DATA is a printf format of the raw bytes.
write_npy() {
  local dict="{'descr': '$2', 'fortran_order': False, 'shape': $3, }"
  local pad=$((128 - 10 - ${#dict} - 1))
  {
    printf '\x93NUMPY\x01\x00\x76\x00'
    printf '%s' "$dict"
    printf "%${pad}s\n" ''
    printf "$4"
  } >"$1"
}

# f32 V...: printf escapes of the little-endian f32 bit patterns of the integers V
# (exact below 2^24 in magnitude), computed here: -1^s * 2^e * (1 + m / 2^23).
f32() {
  local v e bits sign out=''
  for v in "$@"; do
    bits=0
    sign=0
    if ((v < 0)); then
      sign=$((1 << 31))
      v=$((-v))
    fi
    if ((v > 0)); then
      e=0
      while (((v >> (e + 1)) > 0)); do e=$((e + 1)); done
      bits=$((sign | ((127 + e) << 23) | ((v << (23 - e)) & 0x7fffff)))
    fi
    out+=$(printf '\\x%02x\\x%02x\\x%02x\\x%02x' $((bits & 255)) $((bits >> 8 & 255)) \
      $((bits >> 16 & 255)) $((bits >> 24 & 255)))
  done
  printf '%s' "$out"
}

# ---- good runs ------------------------------------------------------------------------
# u8 (2, 3) > 9
write_npy u8.npy '|u1' '(2, 3)' '\x01\x05\x0a\x64\xc8\xff'
write_npy u8.expected.npy '|u1' '(2, 3)' '\x00\x00\x01\x01\x01\x01'
run 0 "u8 threshold" op threshold --in u8.npy --out u8.out.npy --value 9 --backend host &&
  same u8.out.npy u8.expected.npy "u8 threshold"
# The same on the default backend (auto).
run 0 "u8 threshold, auto backend" op threshold --in u8.npy --out u8.auto.npy --value=9 &&
  same u8.auto.npy u8.expected.npy "u8 threshold, auto backend"

# u16 stack (2, 1, 2) <= 300
write_npy u16.npy '<u2' '(2, 1, 2)' '\x01\x00\x2c\x01\xff\xff\x00\x00'
write_npy u16.expected.npy '|u1' '(2, 1, 2)' '\x01\x01\x00\x01'
run 0 "u16 stack, le" op threshold --in u16.npy --out u16.out.npy --value 300 --cmp le \
  --backend host && same u16.out.npy u16.expected.npy "u16 stack, le"

# f32 (1, 3) = [1.0, 2.5, -1.0]: gt 1 and ge 1
write_npy f32.npy '<f4' '(1, 3)' '\x00\x00\x80\x3f\x00\x00\x20\x40\x00\x00\x80\xbf'
write_npy f32.gt.npy '|u1' '(1, 3)' '\x00\x01\x00'
write_npy f32.ge.npy '|u1' '(1, 3)' '\x01\x01\x00'
write_npy f32.lt.npy '|u1' '(1, 3)' '\x00\x00\x01'
run 0 "f32 gt" op threshold --in f32.npy --out f32.out.npy --value 1 --backend host &&
  same f32.out.npy f32.gt.npy "f32 gt"
run 0 "f32 ge" op threshold --in f32.npy --out f32.out.npy --value 1 --cmp ge --backend host &&
  same f32.out.npy f32.ge.npy "f32 ge"
run 0 "f32 lt" op threshold --in f32.npy --out f32.out.npy --value 1 --cmp lt --backend host &&
  same f32.out.npy f32.lt.npy "f32 lt"

# f64 (1, 2) = [1.5, 0.5] is read as f32
write_npy f64.npy '<f8' '(1, 2)' '\x00\x00\x00\x00\x00\x00\xf8\x3f\x00\x00\x00\x00\x00\x00\xe0\x3f'
write_npy f64.expected.npy '|u1' '(1, 2)' '\x01\x00'
run 0 "f64 input" op threshold --in f64.npy --out f64.out.npy --value 1 --backend host &&
  same f64.out.npy f64.expected.npy "f64 input"

# PGM 16-bit (1, 2) = [0x0102, 0xff00] > 1000
printf 'P5\n# plume\n2 1\n65535\n\x01\x02\xff\x00' >in.pgm
write_npy pgm.expected.npy '|u1' '(1, 2)' '\x00\x01'
run 0 "PGM input" op threshold --in in.pgm --out pgm.out.npy --value 1000 --backend host &&
  same pgm.out.npy pgm.expected.npy "PGM input"

# ---- sobel ------------------------------------------------------------------------------
# A 3x3 horizontal ramp 0 1 2 in every row: gy = 0 and gx = 4 * (in(x+1) - in(x-1)).
# reflect101 mirrors column 1 onto both sides, so gx = 0 8 0; replicate gives 4 8 4.
write_npy ramp.npy '|u1' '(3, 3)' '\x00\x01\x02\x00\x01\x02\x00\x01\x02'
write_npy ramp.r101.npy '<f4' '(3, 3)' "$(f32 0 8 0 0 8 0 0 8 0)"
write_npy ramp.repl.npy '<f4' '(3, 3)' "$(f32 4 8 4 4 8 4 4 8 4)"
run 0 "sobel reflect101 (default)" op sobel --in ramp.npy --out sobel.out.npy --backend host &&
  same sobel.out.npy ramp.r101.npy "sobel reflect101 (default)"
run 0 "sobel reflect101" op sobel --in ramp.npy --out sobel.out.npy --border reflect101 \
  --backend host && same sobel.out.npy ramp.r101.npy "sobel reflect101"
run 0 "sobel replicate" op sobel --in ramp.npy --out sobel.out.npy --border=replicate \
  --backend host && same sobel.out.npy ramp.repl.npy "sobel replicate"
run 0 "sobel, auto backend" op sobel --in ramp.npy --out sobel.auto.npy &&
  same sobel.auto.npy ramp.r101.npy "sobel, auto backend"
# A stack: the ramp, then a constant frame (all gradients 0).
write_npy ramps.npy '|u1' '(2, 3, 3)' \
  '\x00\x01\x02\x00\x01\x02\x00\x01\x02\x07\x07\x07\x07\x07\x07\x07\x07\x07'
write_npy ramps.expected.npy '<f4' '(2, 3, 3)' "$(f32 0 8 0 0 8 0 0 8 0 0 0 0 0 0 0 0 0 0)"
run 0 "sobel stack" op sobel --in ramps.npy --out sobel.stack.npy --backend host &&
  same sobel.stack.npy ramps.expected.npy "sobel stack"

# ---- conv2d -----------------------------------------------------------------------------
# A 1x1 kernel of 2 (f32, and f64 read as f32): out = 2 * in.
write_npy k2.npy '<f4' '(1, 1)' "$(f32 2)"
write_npy k2.f64.npy '<f8' '(1, 1)' '\x00\x00\x00\x00\x00\x00\x00\x40'
write_npy u8.times2.npy '<f4' '(2, 3)' "$(f32 2 10 20 200 400 510)"
run 0 "conv2d 1x1 kernel" op conv2d --in u8.npy --kernel k2.npy --out conv.out.npy \
  --backend host && same conv.out.npy u8.times2.npy "conv2d 1x1 kernel"
run 0 "conv2d f64 kernel" op conv2d --in u8.npy --kernel=k2.f64.npy --out conv.out.npy \
  --backend host && same conv.out.npy u8.times2.npy "conv2d f64 kernel"
run 0 "conv2d, auto backend" op conv2d --in u8.npy --kernel k2.npy --out conv.auto.npy &&
  same conv.auto.npy u8.times2.npy "conv2d, auto backend"

# A 3x3 box kernel on 1 2 3 / 4 5 6 / 7 8 9. Zero border, pad 1: each output is the sum
# of the pixels of its 3x3 neighbourhood that lie inside the image (12 = 1+2+4+5, ...).
write_npy nine.npy '|u1' '(3, 3)' '\x01\x02\x03\x04\x05\x06\x07\x08\x09'
write_npy box.npy '<f4' '(3, 3)' "$(f32 1 1 1 1 1 1 1 1 1)"
write_npy box.same.npy '<f4' '(3, 3)' "$(f32 12 21 16 27 45 33 24 39 28)"
write_npy box.stride2.npy '<f4' '(2, 2)' "$(f32 12 16 24 28)"
write_npy box.valid.npy '<f4' '(1, 1)' "$(f32 45)"
run 0 "conv2d box, zero border, pad 1" op conv2d --in nine.npy --kernel box.npy \
  --out conv.box.npy --pad 1,1 --border zero --backend host &&
  same conv.box.npy box.same.npy "conv2d box, zero border, pad 1"
run 0 "conv2d box, stride 2" op conv2d --in nine.npy --kernel box.npy --out conv.box.npy \
  --pad 1,1 --stride 2,2 --backend host &&
  same conv.box.npy box.stride2.npy "conv2d box, stride 2"
run 0 "conv2d box, no padding" op conv2d --in nine.npy --kernel box.npy --out conv.box.npy \
  --stride 1,1 --pad 0,0 --backend host && same conv.box.npy box.valid.npy "conv2d box, no padding"
# Replicate border, pad 1: the top-left output sees 1 1 2 / 1 1 2 / 4 4 5 = 21.
write_npy box.corner.npy '<f4' '(1, 1)' "$(f32 21)"
run 0 "conv2d box, replicate" op conv2d --in nine.npy --kernel box.npy --out conv.box.npy \
  --pad 1,1 --stride 3,3 --border replicate --backend host &&
  same conv.box.npy box.corner.npy "conv2d box, replicate"
if run 0 "conv2d --repeat" op conv2d --in nine.npy --kernel box.npy --out conv.rep.npy \
  --pad 1,1 --repeat 2 --backend host; then
  same conv.rep.npy box.same.npy "conv2d --repeat output"
  checks=$((checks + 1))
  grep -Eq '^time_ms median=[0-9]+\.[0-9]+ min=[0-9]+\.[0-9]+ max=[0-9]+\.[0-9]+$' err.txt &&
    [[ $(wc -l <err.txt) == 1 ]] || fail "conv2d --repeat: stderr is '$(cat err.txt)'"
fi
run 0 "conv2d --repeat --warmup-ms" op conv2d --in nine.npy --kernel box.npy \
  --out conv.warm.npy --pad 1,1 --repeat 3 --warmup-ms 5 --backend host &&
  same conv.warm.npy box.same.npy "conv2d --warmup-ms output"

# ---- label ------------------------------------------------------------------------------
# i32 V...: printf escapes of little-endian i32 values 0..255.
i32() {
  local v out=''
  for v in "$@"; do out+=$(printf '\\x%02x\\x00\\x00\\x00' "$v"); done
  printf '%s' "$out"
}
# d V: V (an awk expression) as %.17g, as the CSV prints doubles.
d() { awk "BEGIN { printf \"%.17g\", $1 }"; }

# A 4x5 mask whose two diagonal pairs join under 8- but not 4-connectivity:
#   1 1 0 0 1
#   0 1 0 1 0
#   0 0 0 0 0
#   1 0 0 1 1
write_npy mask.npy '|u1' '(4, 5)' \
  '\x01\x01\x00\x00\x01\x00\x01\x00\x01\x00\x00\x00\x00\x00\x00\x01\x00\x00\x01\x01'
write_npy mask.l8.npy '<i4' '(4, 5)' "$(i32 1 1 0 0 2 0 1 0 2 0 0 0 0 0 0 3 0 0 4 4)"
write_npy mask.l4.npy '<i4' '(4, 5)' "$(i32 1 1 0 0 2 0 1 0 3 0 0 0 0 0 0 4 0 0 5 5)"
# The intensity: 1..20 in raster order (u8).
write_npy inten.npy '|u1' '(4, 5)' \
  '\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14'
regions_header='label,area,min_row,min_col,max_row,max_col,centroid_row,centroid_col'
printf '%s\n' "$regions_header" \
  "1,3,0,0,1,1,$(d 1/3),$(d 2/3)" \
  "2,2,0,3,1,4,0.5,3.5" \
  "3,1,3,0,3,0,3,0" \
  "4,2,3,3,3,4,3,3.5" >regions.l8.csv
printf '%s\n' "$regions_header" \
  "1,3,0,0,1,1,$(d 1/3),$(d 2/3)" \
  "2,1,0,4,0,4,0,4" \
  "3,1,1,3,1,3,1,3" \
  "4,1,3,0,3,0,3,0" \
  "5,2,3,3,3,4,3,3.5" >regions.l4.csv
printf '%s\n' "$regions_header,sum,max,wcentroid_row,wcentroid_col" \
  "1,3,0,0,1,1,$(d 1/3),$(d 2/3),10,7,$(d 7/10),$(d 9/10)" \
  "2,2,0,3,1,4,0.5,3.5,14,9,$(d 9/14),$(d 47/14)" \
  "3,1,3,0,3,0,3,0,16,16,3,0" \
  "4,2,3,3,3,4,3,3.5,39,20,3,$(d 137/39)" >regions.l8i.csv

run 0 "label (default 8)" op label --in mask.npy --out label.out.npy --backend host &&
  same label.out.npy mask.l8.npy "label (default 8)"
run 0 "label 8, regions" op label --in mask.npy --out label.out.npy --connectivity 8 \
  --regions regions.out.csv --backend host && {
  same label.out.npy mask.l8.npy "label 8, regions: labels"
  same regions.out.csv regions.l8.csv "label 8, regions: CSV"
}
run 0 "label 4, regions" op label --in mask.npy --out label.out.npy --connectivity=4 \
  --regions regions.out.csv --backend host && {
  same label.out.npy mask.l4.npy "label 4, regions: labels"
  same regions.out.csv regions.l4.csv "label 4, regions: CSV"
}
run 0 "label, regions with intensity" op label --in mask.npy --out label.out.npy \
  --regions regions.out.csv --intensity inten.npy --backend host && {
  same label.out.npy mask.l8.npy "label, intensity: labels"
  same regions.out.csv regions.l8i.csv "label, intensity: CSV"
}
run 0 "label, auto backend" op label --in mask.npy --out label.auto.npy \
  --regions regions.auto.csv --intensity inten.npy && {
  same label.auto.npy mask.l8.npy "label, auto backend: labels"
  same regions.auto.csv regions.l8i.csv "label, auto backend: CSV"
}
run 0 "label --repeat" op label --in mask.npy --out label.rep.npy --regions regions.rep.csv \
  --repeat 2 --backend host && {
  same label.rep.npy mask.l8.npy "label --repeat: labels"
  same regions.rep.csv regions.l8.csv "label --repeat: CSV"
}
# An empty mask: labels all 0 and a CSV of the header only.
write_npy empty.npy '|u1' '(1, 2)' '\x00\x00'
write_npy empty.labels.npy '<i4' '(1, 2)' "$(i32 0 0)"
printf '%s\n' "$regions_header" >regions.empty.csv
run 0 "label empty mask" op label --in empty.npy --out label.empty.npy --regions regions.out.csv \
  --backend host && {
  same label.empty.npy empty.labels.npy "label empty mask: labels"
  same regions.out.csv regions.empty.csv "label empty mask: CSV"
}
# A stack of two 2x2 frames, [[1,0],[0,1]] and [[0,0],[1,1]]: labels restart at 1 in
# each frame, and the CSV has a frame column; the intensity is a stack too.
write_npy mstack.npy '|u1' '(2, 2, 2)' '\x01\x00\x00\x01\x00\x00\x01\x01'
write_npy mstack.labels.npy '<i4' '(2, 2, 2)' "$(i32 1 0 0 1 0 0 1 1)"
write_npy istack.npy '<u2' '(2, 2, 2)' \
  '\x01\x00\x02\x00\x03\x00\x04\x00\x05\x00\x06\x00\x07\x00\xe8\x03'
printf '%s\n' "frame,$regions_header,sum,max,wcentroid_row,wcentroid_col" \
  "0,1,2,0,0,1,1,0.5,0.5,5,4,0.80000000000000004,0.80000000000000004" \
  "1,1,2,1,0,1,1,1,0.5,1007,1000,1,$(d 1000/1007)" >regions.stack.csv
run 0 "label stack, regions" op label --in mstack.npy --out label.stack.npy \
  --regions regions.out.csv --intensity istack.npy --backend host && {
  same label.stack.npy mstack.labels.npy "label stack: labels"
  same regions.out.csv regions.stack.csv "label stack: CSV"
}

# Bad label arguments: exit 2, neither output written.
for c in 6 0 '' 44 four; do
  run 2 "label --connectivity '$c'" op label --in mask.npy --out bad.npy --regions bad.csv \
    --connectivity "$c"
  absent "label --connectivity '$c'" bad.npy bad.csv
done
run 2 "label --intensity without --regions" op label --in mask.npy --out bad.npy \
  --intensity inten.npy && { grep -q -- '--regions' err.txt || fail "intensity: $(cat err.txt)"; }
absent "label --intensity without --regions" bad.npy
run 2 "label intensity of the wrong shape" op label --in mask.npy --out bad.npy \
  --regions bad.csv --intensity nine.npy --backend host &&
  { grep -q 'shape' err.txt || fail "intensity shape: $(cat err.txt)"; }
absent "label intensity of the wrong shape" bad.npy bad.csv
run 2 "label i32 intensity" op label --in mask.npy --out bad.npy --regions bad.csv \
  --intensity mask.l8.npy --backend host
absent "label i32 intensity" bad.npy bad.csv
run 2 "label f32 mask" op label --in f32.npy --out bad.npy --regions bad.csv --backend host
absent "label f32 mask" bad.npy bad.csv
run 2 "label unwritable CSV" op label --in mask.npy --out bad.npy --regions no/such/dir/r.csv \
  --backend host
rm -f bad.npy
absent "label unwritable CSV" bad.csv
run 2 "label takes no --count" op label --in mask.npy --out bad.npy --count bad.csv
absent "label takes no --count" bad.npy bad.csv
run 0 "label --help" op label --help && { grep -q -- '--connectivity 4|8' out.txt ||
  fail "label --help: $(cat out.txt)"; }

# ---- segment ----------------------------------------------------------------------------
# The label mask's pattern as an image: foreground 100 + i, background i (i = 1..20 in
# raster order); > 50 is the mask above, and the intensity is the image itself.
write_npy seg.npy '|u1' '(4, 5)' \
  '\x65\x66\x03\x04\x69\x06\x6b\x08\x6d\x0a\x0b\x0c\x0d\x0e\x0f\x74\x11\x12\x77\x78'
seg_header="$regions_header,sum,max,wcentroid_row,wcentroid_col"
printf '%s\n' "$seg_header" \
  "1,3,0,0,1,1,$(d 1/3),$(d 2/3),310,107,$(d 107/310),$(d 209/310)" \
  "2,2,0,3,1,4,0.5,3.5,214,109,$(d 109/214),$(d 747/214)" \
  "3,1,3,0,3,0,3,0,116,116,3,0" \
  "4,2,3,3,3,4,3,3.5,239,120,3,$(d 837/239)" >seg.8.csv
printf '%s\n' "$seg_header" \
  "1,3,0,0,1,1,$(d 1/3),$(d 2/3),310,107,$(d 107/310),$(d 209/310)" \
  "2,1,0,4,0,4,0,4,105,105,0,4" \
  "3,1,1,3,1,3,1,3,109,109,1,3" \
  "4,1,3,0,3,0,3,0,116,116,3,0" \
  "5,2,3,3,3,4,3,3.5,239,120,3,$(d 837/239)" >seg.4.csv
run 0 "segment (gt, 8)" op segment --in seg.npy --out seg.out.npy --value 50 \
  --regions seg.out.csv --backend host && {
  same seg.out.npy mask.l8.npy "segment (gt, 8): labels"
  same seg.out.csv seg.8.csv "segment (gt, 8): CSV"
}
run 0 "segment ge, 4" op segment --in seg.npy --out seg.out.npy --value 101 --cmp ge \
  --connectivity 4 --regions seg.out.csv --backend host && {
  same seg.out.npy mask.l4.npy "segment ge, 4: labels"
  same seg.out.csv seg.4.csv "segment ge, 4: CSV"
}
run 0 "segment, auto backend, --repeat" op segment --in seg.npy --out seg.auto.npy --value 50 \
  --regions seg.auto.csv --repeat 2 && {
  same seg.auto.npy mask.l8.npy "segment, auto backend: labels"
  same seg.auto.csv seg.8.csv "segment, auto backend: CSV"
}
# Nothing above the threshold: labels 0 and the header only.
write_npy seg.none.npy '<i4' '(4, 5)' "$(i32 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0)"
printf '%s\n' "$seg_header" >seg.none.csv
run 0 "segment, no region" op segment --in seg.npy --out seg.out.npy --value 200 \
  --regions seg.out.csv --backend host && {
  same seg.out.npy seg.none.npy "segment, no region: labels"
  same seg.out.csv seg.none.csv "segment, no region: CSV"
}
# f32 input (1, 3) = [1.0, 2.5, -1.0] > 0: one region of two pixels.
printf '%s\n' "$seg_header" "1,2,0,0,0,1,0,0.5,3.5,2.5,0,$(d 2.5/3.5)" >seg.f32.csv
write_npy seg.f32.labels.npy '<i4' '(1, 3)' "$(i32 1 1 0)"
run 0 "segment f32" op segment --in f32.npy --out seg.out.npy --value 0 --regions seg.out.csv \
  --backend host && {
  same seg.out.npy seg.f32.labels.npy "segment f32: labels"
  same seg.out.csv seg.f32.csv "segment f32: CSV"
}

run 2 "segment without --regions" op segment --in seg.npy --out bad.npy --value 50 &&
  { grep -q -- '--regions is required' err.txt || fail "segment --regions: $(cat err.txt)"; }
absent "segment without --regions" bad.npy
run 2 "segment without --value" op segment --in seg.npy --out bad.npy --regions bad.csv
absent "segment without --value" bad.npy bad.csv
run 2 "segment --connectivity 6" op segment --in seg.npy --out bad.npy --value 1 \
  --connectivity 6 --regions bad.csv
absent "segment --connectivity 6" bad.npy bad.csv
run 2 "segment bad --cmp" op segment --in seg.npy --out bad.npy --value 1 --cmp eq \
  --regions bad.csv
absent "segment bad --cmp" bad.npy bad.csv
run 2 "segment 3-D image" op segment --in ramps.npy --out bad.npy --value 1 --regions bad.csv \
  --backend host && { grep -q '3 dimensions' err.txt || fail "segment 3-D: $(cat err.txt)"; }
absent "segment 3-D image" bad.npy bad.csv
run 2 "segment i32 image" op segment --in mask.l8.npy --out bad.npy --value 1 --regions bad.csv \
  --backend host
absent "segment i32 image" bad.npy bad.csv
run 2 "segment takes no --intensity" op segment --in seg.npy --out bad.npy --value 1 \
  --regions bad.csv --intensity seg.npy
absent "segment takes no --intensity" bad.npy bad.csv
run 0 "segment --help" op segment --help && { grep -q -- '--regions CSV' out.txt ||
  fail "segment --help: $(cat out.txt)"; }
# ---- entropy ----------------------------------------------------------------------------
# The window at (y, x) covers rows y - floor(w/2) .. y - floor(w/2) + w - 1 (and the same
# columns); pixels outside the image are left out. H = -sum (c/n) log2 (c/n) in bits.
# A constant frame: every window holds one value, H = 0.
write_npy const.npy '|u1' '(3, 3)' '\x07\x07\x07\x07\x07\x07\x07\x07\x07'
write_npy zeros33.npy '<f4' '(3, 3)' "$(f32 0 0 0 0 0 0 0 0 0)"
run 0 "entropy constant u8" op entropy --in const.npy --out ent.out.npy --window 3 \
  --backend host && same ent.out.npy zeros33.npy "entropy constant u8"
# 1x2 [0, 1], window 2: column x sees columns x-1..x, so x=0 sees {0} (H 0) and x=1
# sees {0, 1} (H 1).
write_npy pair.npy '|u1' '(1, 2)' '\x00\x01'
write_npy pair.expected.npy '<f4' '(1, 2)' "$(f32 0 1)"
run 0 "entropy 1x2 window 2" op entropy --in pair.npy --out ent.out.npy --window 2 \
  --backend host && same ent.out.npy pair.expected.npy "entropy 1x2 window 2"
run 0 "entropy, auto backend" op entropy --in pair.npy --out ent.auto.npy --window=2 &&
  same ent.auto.npy pair.expected.npy "entropy, auto backend"
# u16 1x2 [0, 65535], window 2: the same.
write_npy pair16.npy '<u2' '(1, 2)' '\x00\x00\xff\xff'
run 0 "entropy u16 window 2" op entropy --in pair16.npy --out ent.out.npy --window 2 \
  --backend host && same ent.out.npy pair.expected.npy "entropy u16 window 2"
# 2x2 [0 1; 2 3], window 2: {0}, {0,1}, {0,2}, {0,1,2,3} -> 0 1 1 2. With --bins 128
# (bin = v / 2: 0 0 1 1): {0}, {0,0}, {0,1}, {0,0,1,1} -> 0 0 1 1; --range is ignored
# for u8 input.
write_npy quad.npy '|u1' '(2, 2)' '\x00\x01\x02\x03'
write_npy quad.expected.npy '<f4' '(2, 2)' "$(f32 0 1 1 2)"
write_npy quad.bins.npy '<f4' '(2, 2)' "$(f32 0 0 1 1)"
run 0 "entropy 2x2 window 2" op entropy --in quad.npy --out ent.out.npy --window 2 \
  --backend host && same ent.out.npy quad.expected.npy "entropy 2x2 window 2"
run 0 "entropy u8 --bins 128" op entropy --in quad.npy --out ent.out.npy --window 2 --bins 128 \
  --range 5,6 --backend host && same ent.out.npy quad.bins.npy "entropy u8 --bins 128"
# Window 1: always 0.
write_npy zeros22.npy '<f4' '(2, 2)' "$(f32 0 0 0 0)"
run 0 "entropy window 1" op entropy --in quad.npy --out ent.out.npy --window 1 --backend host &&
  same ent.out.npy zeros22.npy "entropy window 1"
# f32 1x4 [0 1 2 3], window 2 (x sees x-1..x). --range 0,4 --bins 2: bins 0 0 1 1 ->
# 0 0 1 0; --bins 4: bins 0 1 2 3 -> 0 1 1 1, and so with --range auto (min 0, max 3:
# bin = floor(v * 4 / 3) = 0 1 2, and the max in bin 3).
write_npy row.npy '<f4' '(1, 4)' "$(f32 0 1 2 3)"
write_npy row.b2.npy '<f4' '(1, 4)' "$(f32 0 0 1 0)"
write_npy row.b4.npy '<f4' '(1, 4)' "$(f32 0 1 1 1)"
run 0 "entropy f32 --range 0,4 --bins 2" op entropy --in row.npy --out ent.out.npy --window 2 \
  --range 0,4 --bins 2 --backend host && same ent.out.npy row.b2.npy "entropy f32 --bins 2"
run 0 "entropy f32 --range 0.0,4e0 --bins 4" op entropy --in row.npy --out ent.out.npy \
  --window 2 --range=0.0,4e0 --bins 4 --backend host &&
  same ent.out.npy row.b4.npy "entropy f32 --bins 4"
run 0 "entropy f32 --range auto" op entropy --in row.npy --out ent.out.npy --window 2 \
  --range auto --bins 4 --backend host && same ent.out.npy row.b4.npy "entropy f32 --range auto"
# --range auto is per frame: the row, then a constant frame (min == max: all zeros).
write_npy rows.npy '<f4' '(2, 1, 4)' "$(f32 0 1 2 3 5 5 5 5)"
write_npy rows.expected.npy '<f4' '(2, 1, 4)' "$(f32 0 1 1 1 0 0 0 0)"
run 0 "entropy f32 stack --range auto" op entropy --in rows.npy --out ent.out.npy --window 2 \
  --range auto --bins 4 --backend host &&
  same ent.out.npy rows.expected.npy "entropy f32 stack --range auto"
if run 0 "entropy --repeat" op entropy --in quad.npy --out ent.rep.npy --window 2 --repeat 2 \
  --backend host; then
  same ent.rep.npy quad.expected.npy "entropy --repeat output"
  checks=$((checks + 1))
  grep -Eq '^time_ms median=[0-9]+\.[0-9]+ min=[0-9]+\.[0-9]+ max=[0-9]+\.[0-9]+$' err.txt &&
    [[ $(wc -l <err.txt) == 1 ]] || fail "entropy --repeat: stderr is '$(cat err.txt)'"
fi

# ---- cfar ----------------------------------------------------------------------------------
# 3x3 [1 0 1; 0 9 0; 1 0 1], window 3, guard 1: the centre's 8 cells have mean 0.5 and std
# 0.5, so z = 17 > k; every other pixel is below its cells' mean. Mask: the centre only.
write_npy spot.npy '|u1' '(3, 3)' '\x01\x00\x01\x00\x09\x00\x01\x00\x01'
write_npy spot.mask.npy '|u1' '(3, 3)' '\x00\x00\x00\x00\x01\x00\x00\x00\x00'
run 0 "cfar 3x3 spot" op cfar --in spot.npy --out cfar.out.npy --window 3 --guard 1 \
  --backend host && same cfar.out.npy spot.mask.npy "cfar 3x3 spot"
# The committed fixtures (tests/fixtures/make_fixtures.py, numpy's float64 CFAR): the mask of
# a u8 scene and the z-score of a u16 one, byte for byte.
run 0 "cfar u8 mask fixture" op cfar --in "$fixtures/in-u8-32x40-cfar.npy" --out cfar.mask.npy \
  --window 15 --guard 5 --k 3.5 --backend host &&
  same cfar.mask.npy "$fixtures/cfar-u8-32x40-w15-g5-k3.5.npy" "cfar u8 mask fixture"
run 0 "cfar u16 z fixture" op cfar --in "$fixtures/in-u16-32x40-cfar.npy" --out cfar.z.npy \
  --window 31 --guard 9 --output z --backend host &&
  same cfar.z.npy "$fixtures/cfar-u16-32x40-w31-g9-k2.5-z.npy" "cfar u16 z fixture"
run 0 "cfar, auto backend" op cfar --in "$fixtures/in-u8-32x40-cfar.npy" --out cfar.auto.npy \
  --window 15 --guard 5 --k 3.5 &&
  same cfar.auto.npy "$fixtures/cfar-u8-32x40-w15-g5-k3.5.npy" "cfar, auto backend"
run 2 "cfar even window" op cfar --in spot.npy --out cfar.bad.npy --window 4
expect_err "cfar even window" "window 4 is not odd in 3..255"
run 2 "cfar guard not below window" op cfar --in spot.npy --out cfar.bad.npy --window 5 --guard 5
expect_err "cfar guard not below window" "guard 5 is not below params->window 5"
run 2 "cfar k 0" op cfar --in spot.npy --out cfar.bad.npy --k 0
expect_err "cfar k 0" "k 0 is not finite and > 0"
run 2 "cfar bad output" op cfar --in spot.npy --out cfar.bad.npy --output score
absent "cfar refusals" cfar.bad.npy

# ---- nuc -------------------------------------------------------------------------------------
# u16 stack (2, 1, 2) [1 300; 65535 0], gain [2 0.5], offset [1 -1]: out = gain x + offset,
# frame by frame with the same calibration: [3 149; 131071 -1].
write_npy nuc.in.npy '<u2' '(2, 1, 2)' '\x01\x00\x2c\x01\xff\xff\x00\x00'
write_npy nuc.gain.npy '<f4' '(1, 2)' "$(f32 2)\\x00\\x00\\x00\\x3f"
write_npy nuc.offset.npy '<f4' '(1, 2)' "$(f32 1 -1)"
write_npy nuc.expected.npy '<f4' '(2, 1, 2)' "$(f32 3 149 131071 -1)"
run 0 "nuc u16 stack" op nuc --in nuc.in.npy --gain nuc.gain.npy --offset nuc.offset.npy \
  --out nuc.out.npy --backend host && same nuc.out.npy nuc.expected.npy "nuc u16 stack"
run 0 "nuc, auto backend" op nuc --in nuc.in.npy --gain nuc.gain.npy --offset=nuc.offset.npy \
  --out nuc.auto.npy && same nuc.auto.npy nuc.expected.npy "nuc, auto backend"
# The committed fixture (tests/fixtures/make_fixtures.py: exact, rounded once), byte for byte.
run 0 "nuc fixture" op nuc --in "$fixtures/in-f32-3x32x40-nuc.npy" \
  --gain "$fixtures/gain-f32-32x40-nuc.npy" --offset "$fixtures/offset-f32-32x40-nuc.npy" \
  --out nuc.fixture.npy --backend host &&
  same nuc.fixture.npy "$fixtures/nuc-f32-3x32x40.npy" "nuc fixture"
run 2 "nuc calibration of another shape" op nuc --in "$fixtures/in-u16-32x40-nuc.npy" \
  --gain nuc.gain.npy --offset nuc.offset.npy --out nuc.bad.npy
expect_err "nuc calibration of another shape" "gain is 1x2 but in's frames are 32x40"
run 2 "nuc without --offset" op nuc --in nuc.in.npy --gain nuc.gain.npy --out nuc.bad.npy
absent "nuc refusals" nuc.bad.npy

# ---- background ------------------------------------------------------------------------------
# u16 stack (3, 1, 2) [10 20; 30 20; 30 40], alpha 0.5: frame 0 initialises b = [10 20] (out 0),
# frame 1 gives [20 0] and b = [20 20], frame 2 gives [10 20].
write_npy bg.in.npy '<u2' '(3, 1, 2)' '\x0a\x00\x14\x00\x1e\x00\x14\x00\x1e\x00\x28\x00'
write_npy bg.expected.npy '<f4' '(3, 1, 2)' "$(f32 0 0 20 0 10 20)"
run 0 "background u16 stack" op background --in bg.in.npy --alpha 0.5 --out bg.out.npy \
  --backend host && same bg.out.npy bg.expected.npy "background u16 stack"
# --repeat runs each repetition from a fresh background: the same output.
run 0 "background --repeat" op background --in bg.in.npy --alpha 0.5 --out bg.rep.npy \
  --repeat 3 --backend host && same bg.rep.npy bg.expected.npy "background --repeat"
# median: b walks by --step 4 towards x: [0 0], then [20 0] with b = [14 20], then [16 20].
write_npy bg.median.npy '<f4' '(3, 1, 2)' "$(f32 0 0 20 0 16 20)"
run 0 "background median" op background --in bg.in.npy --mode median --step 4 --out bg.m.npy \
  --backend host && same bg.m.npy bg.median.npy "background median"
# The committed fixture (tests/fixtures/make_fixtures.py), byte for byte.
run 0 "background fixture" op background --in "$fixtures/in-u16-6x16x20-background.npy" \
  --alpha 0.2 --out bg.fixture.npy --backend host &&
  same bg.fixture.npy "$fixtures/background-u16-6x16x20-ema.npy" "background fixture"
run 2 "background alpha 0" op background --in bg.in.npy --alpha 0 --out bg.bad.npy
expect_err "background alpha 0" "alpha 0 is not in (0, 1]"
run 2 "background mode" op background --in bg.in.npy --mode mean --out bg.bad.npy
absent "background refusals" bg.bad.npy
# ---- badpixel --------------------------------------------------------------------------
# u16 stack (2, 2, 3) [1 2 3; 4 5 6] and ten times it, flagged (0,1) and (1,2): (0,1) takes
# the median of 1 3 4 5, (3 + 4) / 2 = 3.5 (0x40600000); (1,2) the mean of its two valid
# neighbours 3 and 5, 4; the second frame ten times that, with the same map.
write_npy bp.in.npy '<u2' '(2, 2, 3)' \
  '\x01\x00\x02\x00\x03\x00\x04\x00\x05\x00\x06\x00\x0a\x00\x14\x00\x1e\x00\x28\x00\x32\x00\x3c\x00'
write_npy bp.map.npy '|u1' '(2, 3)' '\x00\x01\x00\x00\x00\x01'
write_npy bp.expected.npy '<f4' '(2, 2, 3)' "$(f32 1)\\x00\\x00\\x60\\x40$(f32 3 4 5 4 10 35 30 40 50 40)"
run 0 "badpixel u16 stack" op badpixel --in bp.in.npy --bad bp.map.npy --out bp.out.npy \
  --backend host && same bp.out.npy bp.expected.npy "badpixel u16 stack"
run 0 "badpixel, auto backend" op badpixel --in bp.in.npy --bad=bp.map.npy --out bp.auto.npy &&
  same bp.auto.npy bp.expected.npy "badpixel, auto backend"
# The committed fixture (tests/fixtures/make_fixtures.py: numpy.median), byte for byte.
run 0 "badpixel fixture" op badpixel --in "$fixtures/in-f32-3x32x40-badpixel.npy" \
  --bad "$fixtures/bad-u8-32x40-badpixel.npy" --out bp.fixture.npy --backend host &&
  same bp.fixture.npy "$fixtures/badpixel-f32-3x32x40.npy" "badpixel fixture"
run 2 "badpixel map of another shape" op badpixel --in "$fixtures/in-u16-32x40-badpixel.npy" \
  --bad bp.map.npy --out bp.bad.npy
expect_err "badpixel map of another shape" "bad is 2x3 but in's frames are 32x40"
run 2 "badpixel map not u8" op badpixel --in bp.in.npy --bad bp.expected.npy --out bp.bad.npy
expect_err "badpixel map not u8" "bad->dtype f32 is not u8"
run 2 "badpixel without --bad" op badpixel --in bp.in.npy --out bp.bad.npy
absent "badpixel refusals" bp.bad.npy

# --repeat: one timing line on stderr, and the same output
if run 0 "--repeat" op threshold --in u8.npy --out rep.npy --value 9 --repeat 3 --backend host; then
  same rep.npy u8.expected.npy "--repeat output"
  checks=$((checks + 1))
  grep -Eq '^time_ms median=[0-9]+\.[0-9]+ min=[0-9]+\.[0-9]+ max=[0-9]+\.[0-9]+$' err.txt &&
    [[ $(wc -l <err.txt) == 1 ]] || fail "--repeat: stderr is '$(cat err.txt)'"
fi

# Help
run 0 "op --help" op threshold --help && { grep -q 'usage: plume op threshold' out.txt ||
  fail "op --help: $(cat out.txt)"; }
run 0 "plume --help" --help && { grep -q 'threshold' out.txt || fail "plume --help lacks ops"; }
run 0 "sobel --help" op sobel --help && { grep -q -- '--border' out.txt || fail "sobel --help"; }
run 0 "conv2d --help" op conv2d -h && { grep -q -- '--kernel K' out.txt || fail "conv2d --help"; }
run 0 "entropy --help" op entropy --help && { grep -q -- '--window W' out.txt || fail "entropy --help"; }
run 0 "cfar --help" op cfar --help && { grep -q -- '--output mask|z' out.txt || fail "cfar --help"; }
run 0 "nuc --help" op nuc --help && { grep -q -- '--gain GAIN' out.txt || fail "nuc --help"; }
run 0 "background --help" op background --help &&
  { grep -q -- '--mode ema|median' out.txt || fail "background --help"; }
run 0 "badpixel --help" op badpixel --help && { grep -q -- '--bad BAD' out.txt ||
  fail "badpixel --help"; }
checks=$((checks + 1))
"$plume" --help | grep -q 'sobel' && "$plume" --help | grep -q 'conv2d' &&
  "$plume" --help | grep -q 'entropy' || fail "plume --help lacks sobel, conv2d or entropy"
run 0 "plume op --help" op --help && { grep -q 'threshold' out.txt && grep -q 'entropy' out.txt ||
  fail "plume op --help"; }

# ---- bad arguments: exit 2, nothing written ----------------------------------------------
run 2 "unknown option" op threshold --in u8.npy --out bad.npy --value 9 --bogus 1
absent "unknown option" bad.npy
run 2 "missing --value" op threshold --in u8.npy --out bad.npy
absent "missing --value" bad.npy
run 2 "bad --value" op threshold --in u8.npy --out bad.npy --value abc
absent "bad --value" bad.npy
run 2 "NaN --value" op threshold --in u8.npy --out bad.npy --value nan
absent "NaN --value" bad.npy
run 2 "bad --cmp" op threshold --in u8.npy --out bad.npy --value 1 --cmp eq
absent "bad --cmp" bad.npy
run 2 "bad --repeat" op threshold --in u8.npy --out bad.npy --value 1 --repeat 0
absent "bad --repeat" bad.npy
for warmup in -1 nan 60001 5ms; do
  run 2 "bad --warmup-ms $warmup" op threshold --in u8.npy --out bad.npy --value 1 --repeat 2 \
    --warmup-ms "$warmup"
  absent "bad --warmup-ms $warmup" bad.npy
done
run 2 "bad --backend" op threshold --in u8.npy --out bad.npy --value 1 --backend gpu
absent "bad --backend" bad.npy
run 2 "no --out" op threshold --in u8.npy --value 1
run 2 "option without value" op threshold --in u8.npy --out bad.npy --value
absent "option without value" bad.npy
run 2 "positional argument" op threshold u8.npy --out bad.npy --value 1
absent "positional argument" bad.npy
run 2 "unknown op" op nosuchop --in u8.npy --out bad.npy
absent "unknown op" bad.npy

# sobel and conv2d options
run 2 "sobel bad --border" op sobel --in ramp.npy --out bad.npy --border mirror
absent "sobel bad --border" bad.npy
run 2 "sobel takes no --kernel" op sobel --in ramp.npy --out bad.npy --kernel box.npy
absent "sobel takes no --kernel" bad.npy
run 2 "conv2d missing --kernel" op conv2d --in nine.npy --out bad.npy &&
  { grep -q -- '--kernel is required' err.txt || fail "missing --kernel: $(cat err.txt)"; }
absent "conv2d missing --kernel" bad.npy
run 2 "conv2d bad --border" op conv2d --in nine.npy --kernel box.npy --out bad.npy --border nope
absent "conv2d bad --border" bad.npy
for stride in 1 1, ,1 1,1,1 0,1 1,0 -1,1 +1,1 '1, 1' ' 1,1' 1,1x a,b 1.5,1 '' , 99999999999,1; do
  run 2 "conv2d --stride '$stride'" op conv2d --in nine.npy --kernel box.npy --out bad.npy \
    --stride "$stride"
  absent "conv2d --stride '$stride'" bad.npy
done
for pad in 1 -1,0 0,-1 '1;1' 1,,1 0x1,1 '' 1,1, 2000000,0; do
  run 2 "conv2d --pad '$pad'" op conv2d --in nine.npy --kernel box.npy --out bad.npy --pad "$pad"
  absent "conv2d --pad '$pad'" bad.npy
done

# ---- bad files: exit 2, nothing written, an existing output kept --------------------------
run 2 "missing input" op threshold --in missing.npy --out bad.npy --value 1 --backend host &&
  { grep -q 'missing.npy' err.txt || fail "missing input: message lacks the file name"; }
absent "missing input" bad.npy

head -c 130 u8.npy >truncated.npy
run 2 "truncated npy" op threshold --in truncated.npy --out bad.npy --value 1 --backend host &&
  { grep -q 'truncated' err.txt || fail "truncated npy: $(cat err.txt)"; }
absent "truncated npy" bad.npy

sed 's/fortran_order/fortran_ORDER/' u8.npy >corrupt.npy
run 2 "corrupted npy header" op threshold --in corrupt.npy --out bad.npy --value 1 --backend host
absent "corrupted npy header" bad.npy

printf 'keep' >kept.npy
run 2 "failure keeps an existing output" op threshold --in corrupt.npy --out kept.npy --value 1
checks=$((checks + 1))
[[ $(cat kept.npy) == keep ]] || fail "an existing output was changed by a failed run"

write_npy i32.npy '<i4' '(1, 2)' '\x01\x00\x00\x00\x02\x00\x00\x00'
run 2 "i32 input refused by the op" op threshold --in i32.npy --out bad.npy --value 1 \
  --backend host && { grep -q 'i32' err.txt || fail "i32 input: $(cat err.txt)"; }
absent "i32 input" bad.npy

# conv2d kernels: too wide, 3-D, not f32, missing; an output smaller than 1 x 1
write_npy k32.npy '<f4' '(1, 32)' "$(f32 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1)"
run 2 "conv2d kernel 32 wide" op conv2d --in nine.npy --kernel k32.npy --out bad.npy \
  --backend host && { grep -q '31' err.txt || fail "kernel 32 wide: $(cat err.txt)"; }
absent "conv2d kernel 32 wide" bad.npy
write_npy k31.npy '<f4' '(1, 31)' "$(f32 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1)"
write_npy k31.expected.npy '<f4' '(3, 1)' "$(f32 6 15 24)"
run 0 "conv2d kernel 31 wide" op conv2d --in nine.npy --kernel k31.npy --out k31.out.npy \
  --pad 0,14 --backend host && same k31.out.npy k31.expected.npy "conv2d kernel 31 wide"
write_npy k3d.npy '<f4' '(1, 1, 1)' "$(f32 1)"
run 2 "conv2d 3-D kernel" op conv2d --in nine.npy --kernel k3d.npy --out bad.npy --backend host
absent "conv2d 3-D kernel" bad.npy
run 2 "conv2d u8 kernel" op conv2d --in nine.npy --kernel u8.npy --out bad.npy --backend host &&
  { grep -q 'u8' err.txt || fail "u8 kernel: $(cat err.txt)"; }
absent "conv2d u8 kernel" bad.npy
run 2 "conv2d missing kernel file" op conv2d --in nine.npy --kernel nokernel.npy --out bad.npy \
  --backend host && { grep -q 'nokernel.npy' err.txt || fail "missing kernel: $(cat err.txt)"; }
absent "conv2d missing kernel file" bad.npy
run 2 "conv2d truncated kernel" op conv2d --in nine.npy --kernel truncated.npy --out bad.npy \
  --backend host
absent "conv2d truncated kernel" bad.npy
run 2 "conv2d output smaller than 1x1" op conv2d --in u8.npy --kernel box.npy --out bad.npy \
  --backend host
absent "conv2d output smaller than 1x1" bad.npy
run 2 "conv2d i32 input" op conv2d --in i32.npy --kernel k2.npy --out bad.npy --backend host
absent "conv2d i32 input" bad.npy
run 2 "sobel i32 input" op sobel --in i32.npy --out bad.npy --backend host
absent "sobel i32 input" bad.npy

# entropy options: --window and --bins are plain integers (the library checks 1..255 and
# 0..65536); --range is LO,HI (two finite numbers) or auto; f32 needs --bins and --range.
run 2 "entropy missing --window" op entropy --in quad.npy --out bad.npy --backend host &&
  { grep -q -- '--window is required' err.txt || fail "missing --window: $(cat err.txt)"; }
absent "entropy missing --window" bad.npy
for window in 0 256 1000000; do
  run 2 "entropy --window $window" op entropy --in quad.npy --out bad.npy --window "$window" \
    --backend host && { grep -q 'window' err.txt || fail "--window $window: $(cat err.txt)"; }
  absent "entropy --window $window" bad.npy
done
for window in -1 +3 3x 3.0 '' ' 3' 0x3 a 99999999999; do
  run 2 "entropy --window '$window'" op entropy --in quad.npy --out bad.npy --window "$window"
  absent "entropy --window '$window'" bad.npy
done
for bins in -1 65537 1.5 x ''; do
  run 2 "entropy --bins '$bins'" op entropy --in quad.npy --out bad.npy --window 2 \
    --bins "$bins" --backend host
  absent "entropy --bins '$bins'" bad.npy
done
for range in 1 1,2,3 , 1, ,1 a,b '' ' 1,2' '1,2 ' '1;2' nan,1 1,nan 0,inf -inf,0 1e999,2 AUTO \
  auto,1; do
  run 2 "entropy --range '$range'" op entropy --in row.npy --out bad.npy --window 2 --bins 4 \
    --range "$range" --backend host
  absent "entropy --range '$range'" bad.npy
done
run 2 "entropy f32 without --bins" op entropy --in row.npy --out bad.npy --window 2 \
  --range 0,4 --backend host && { grep -q 'bins' err.txt || fail "no --bins: $(cat err.txt)"; }
absent "entropy f32 without --bins" bad.npy
run 2 "entropy f32 without --range" op entropy --in row.npy --out bad.npy --window 2 --bins 4 \
  --backend host && { grep -q 'range' err.txt || fail "no --range: $(cat err.txt)"; }
absent "entropy f32 without --range" bad.npy
run 2 "entropy f32 --range 4,0" op entropy --in row.npy --out bad.npy --window 2 --bins 4 \
  --range 4,0 --backend host && { grep -q 'range' err.txt || fail "--range 4,0: $(cat err.txt)"; }
absent "entropy f32 --range 4,0" bad.npy
run 2 "entropy i32 input" op entropy --in i32.npy --out bad.npy --window 2 --backend host
absent "entropy i32 input" bad.npy

run 2 "unwritable output" op threshold --in u8.npy --out no/such/dir/out.npy --value 1 \
  --backend host
absent "unwritable output"

# ---- ops on arrays: .npy of any rank, most with file flags of their own -------------------------
# near FILE DESCR SHAPE NAME EXPECTED...: FILE is a .npy of DESCR ('<f4' or '<f8') and
# SHAPE (as written in its header, e.g. '(1, 2)') whose values are within 1e-5 * (1 + |e|)
# of the awk expressions EXPECTED, in order; sg(x) is the logistic function, th(x) tanh.
near() {
  local file=$1 descr=$2 shape=$3 name=$4
  shift 4
  checks=$((checks + 1))
  local dict="{'descr': '$descr', 'fortran_order': False, 'shape': $shape, }"
  if [[ ! -f $file ]] || ! head -c 128 "$file" | grep -qF "$dict"; then
    fail "$name: $file does not start with $dict"
    return
  fi
  local type=f4 header e list=''
  [[ $descr == '<f8' ]] && type=f8
  header=$((10 + $(od -An -j8 -N2 -tu2 "$file")))
  for e in "$@"; do list+="want[++m] = $e; "; done
  od -An -v -j"$header" -t"$type" "$file" | awk "
    function sg(x) { return 1 / (1 + exp(-x)) }
    function th(x) { return (exp(2 * x) - 1) / (exp(2 * x) + 1) }
    BEGIN { m = 0; $list }
    { for (i = 1; i <= NF; i++) got[++n] = \$i }
    END {
      if (n != m) { printf \"%d values, expected %d\", n, m; exit 1 }
      for (i = 1; i <= n; i++) {
        d = got[i] - want[i]; a = want[i]; if (d < 0) d = -d; if (a < 0) a = -a
        if (!(d <= 1e-5 * (1 + a))) { printf \"value %d is %s, expected %.9g\", i, got[i], want[i]; exit 1 }
      }
    }" >near.txt || fail "$name: $(cat near.txt)"
}

# matmul: [[1, 2], [3, 4]] · [[5, 6], [7, 8]] = [[19, 22], [43, 50]]; bias [1, -100].
write_npy ma.npy '<f4' '(2, 2)' "$(f32 1 2 3 4)"
write_npy mb.npy '<f4' '(2, 2)' "$(f32 5 6 7 8)"
write_npy mbias.npy '<f4' '(2,)' "$(f32 1 -100)"
write_npy mab.npy '<f4' '(2, 2)' "$(f32 19 22 43 50)"
write_npy mab.bias.npy '<f4' '(2, 2)' "$(f32 20 -78 44 -50)"
write_npy mab.relu.npy '<f4' '(2, 2)' "$(f32 20 0 44 0)"
run 0 "matmul 2x2" op matmul --a ma.npy --b mb.npy --out mm.out.npy --backend host &&
  same mm.out.npy mab.npy "matmul 2x2"
run 0 "matmul, auto backend" op matmul --a ma.npy --b mb.npy --out mm.auto.npy &&
  same mm.auto.npy mab.npy "matmul, auto backend"
run 0 "matmul bias" op matmul --a ma.npy --b mb.npy --bias mbias.npy --out mm.out.npy \
  --backend host && same mm.out.npy mab.bias.npy "matmul bias"
run 0 "matmul bias relu" op matmul --a ma.npy --b mb.npy --bias=mbias.npy --act relu \
  --out mm.out.npy --backend host && same mm.out.npy mab.relu.npy "matmul bias relu"
# Small integers are exact in tf32 and bf16 (8 significant bits).
for precision in fp32 tf32 bf16 auto; do
  run 0 "matmul --precision $precision" op matmul --a ma.npy --b mb.npy --out mm.out.npy \
    --precision "$precision" --backend host && same mm.out.npy mab.npy "matmul $precision"
done
# bf16 keeps 8 significant bits: 257 (1 0000 0001b) rounds to even, 256; tf32 keeps it.
write_npy m257.npy '<f4' '(1, 1)' "$(f32 257)"
write_npy m1.npy '<f4' '(1, 1)' "$(f32 1)"
write_npy m256.npy '<f4' '(1, 1)' "$(f32 256)"
run 0 "matmul bf16 rounding" op matmul --a m257.npy --b m1.npy --out mm.out.npy \
  --precision bf16 --backend host && same mm.out.npy m256.npy "matmul bf16 rounding"
run 0 "matmul tf32 keeps 257" op matmul --a m257.npy --b m1.npy --out mm.out.npy \
  --precision tf32 --backend host && same mm.out.npy m257.npy "matmul tf32 keeps 257"
# (1, 2) · (2, 3): [1, -1] · [[1, 0, 2], [0, 1, 2]] = [1, -1, 0] through the activations.
write_npy mrow.npy '<f4' '(1, 2)' "$(f32 1 -1)"
write_npy mwide.npy '<f4' '(2, 3)' "$(f32 1 0 2 0 1 2)"
run 0 "matmul sigmoid" op matmul --a mrow.npy --b mwide.npy --out mm.sg.npy --act sigmoid \
  --backend host && near mm.sg.npy '<f4' '(1, 3)' "matmul sigmoid" 'sg(1)' 'sg(-1)' 0.5
run 0 "matmul tanh" op matmul --a mrow.npy --b mwide.npy --out mm.th.npy --act tanh \
  --backend host && near mm.th.npy '<f4' '(1, 3)' "matmul tanh" 'th(1)' 'th(-1)' 0
run 0 "matmul --act none" op matmul --a mrow.npy --b mwide.npy --out mm.none.npy --act none \
  --backend host && near mm.none.npy '<f4' '(1, 3)' "matmul --act none" 1 -1 0
if run 0 "matmul --repeat" op matmul --a ma.npy --b mb.npy --out mm.rep.npy --repeat 2 \
  --backend host; then
  same mm.rep.npy mab.npy "matmul --repeat output"
  checks=$((checks + 1))
  grep -Eq '^time_ms median=[0-9.]+ min=[0-9.]+ max=[0-9.]+$' err.txt ||
    fail "matmul --repeat: stderr is '$(cat err.txt)'"
fi
run 0 "matmul --help" op matmul --help && { grep -q -- '--precision' out.txt &&
  grep -q 'usage: plume op matmul --a A --b B --out OUT' out.txt && ! grep -q -- '--in PATH' out.txt ||
  fail "matmul --help: $(cat out.txt)"; }
run 0 "plume op --help names the array ops" op --help && {
  grep -q 'matmul' out.txt && grep -q 'lstm_cell' out.txt && grep -q 'dendritic' out.txt ||
    fail "plume op --help: $(cat out.txt)"; }
# Bad arguments.
write_npy m3x2.npy '<f4' '(3, 2)' "$(f32 1 2 3 4 5 6)"
write_npy mbias3.npy '<f4' '(3,)' "$(f32 1 2 3)"
write_npy mvec.npy '<f4' '(2,)' "$(f32 1 2)"
run 2 "matmul without --b" op matmul --a ma.npy --out bad.npy --backend host &&
  { grep -q -- '--b is required' err.txt || fail "matmul without --b: $(cat err.txt)"; }
absent "matmul without --b" bad.npy
run 2 "matmul without --a" op matmul --b mb.npy --out bad.npy --backend host &&
  { grep -q -- '--a is required' err.txt || fail "matmul without --a: $(cat err.txt)"; }
absent "matmul without --a" bad.npy
run 2 "matmul without --out" op matmul --a ma.npy --b mb.npy --backend host &&
  { grep -q -- '--out is required' err.txt || fail "matmul without --out: $(cat err.txt)"; }
run 2 "matmul takes no --in" op matmul --in ma.npy --b mb.npy --out bad.npy --backend host
absent "matmul takes no --in" bad.npy
run 2 "matmul missing file" op matmul --a no-such.npy --b mb.npy --out bad.npy --backend host
absent "matmul missing file" bad.npy
run 2 "matmul --precision fp16" op matmul --a ma.npy --b mb.npy --out bad.npy --precision fp16 \
  --backend host && { grep -q -- "--precision 'fp16'" err.txt || fail "--precision: $(cat err.txt)"; }
absent "matmul --precision fp16" bad.npy
run 2 "matmul --act gelu" op matmul --a ma.npy --b mb.npy --out bad.npy --act gelu \
  --backend host && { grep -q -- "--act 'gelu'" err.txt || fail "--act: $(cat err.txt)"; }
absent "matmul --act gelu" bad.npy
run 2 "matmul inner sizes differ" op matmul --a ma.npy --b m3x2.npy --out bad.npy --backend host
absent "matmul inner sizes differ" bad.npy
run 2 "matmul bias of the wrong length" op matmul --a ma.npy --b mb.npy --bias mbias3.npy \
  --out bad.npy --backend host
absent "matmul bias of the wrong length" bad.npy
run 2 "matmul 1-D a" op matmul --a mvec.npy --b mb.npy --out bad.npy --backend host
absent "matmul 1-D a" bad.npy
run 2 "matmul unwritable output" op matmul --a ma.npy --b mb.npy --out no/such/dir/c.npy \
  --backend host
absent "matmul unwritable output"

# lstm_cell, B = I = H = 1: the gates are x·w_ih + b_ih + h·w_hh + b_hh in the order i, f,
# g, o; c2 = sg(f) c + sg(i) th(g), h2 = sg(o) th(c2).
write_npy lx.npy '<f4' '(1, 1)' "$(f32 1)"
write_npy lh.npy '<f4' '(1, 1)' "$(f32 1)"
write_npy lc.npy '<f4' '(1, 1)' "$(f32 2)"
write_npy lwih.npy '<f4' '(4, 1)' "$(f32 1 1 1 1)"
write_npy lwhh.npy '<f4' '(4, 1)' "$(f32 1 0 0 -2)"
write_npy lbih.npy '<f4' '(4,)' "$(f32 1 0 0 0)"
write_npy lbhh.npy '<f4' '(4,)' "$(f32 0 0 -1 0)"
# No biases: gates i = 2, f = 1, g = 1, o = -1.
run 0 "lstm_cell" op lstm_cell --x lx.npy --h lh.npy --c lc.npy --w-ih lwih.npy \
  --w-hh lwhh.npy --out-h lh2.npy --out-c lc2.npy --backend host && {
  near lc2.npy '<f4' '(1, 1)' "lstm_cell out-c" '2 * sg(1) + sg(2) * th(1)'
  near lh2.npy '<f4' '(1, 1)' "lstm_cell out-h" 'sg(-1) * th(2 * sg(1) + sg(2) * th(1))'
}
# With both biases: i = 3, f = 1, g = 0, o = -1, so c2 = 2 sg(1).
run 0 "lstm_cell with biases" op lstm_cell --x lx.npy --h lh.npy --c lc.npy --w-ih lwih.npy \
  --w-hh lwhh.npy --b-ih lbih.npy --b-hh lbhh.npy --out-h lh2.npy --out-c=lc2.npy \
  --backend host && {
  near lc2.npy '<f4' '(1, 1)' "lstm_cell biases out-c" '2 * sg(1)'
  near lh2.npy '<f4' '(1, 1)' "lstm_cell biases out-h" 'sg(-1) * th(2 * sg(1))'
}
# b_ih only: i = 3, f = 1, g = 1, o = -1.
run 0 "lstm_cell, one bias, auto backend" op lstm_cell --x lx.npy --h lh.npy --c lc.npy \
  --w-ih lwih.npy --w-hh lwhh.npy --b-ih lbih.npy --out-h lh2.npy --out-c lc2.npy &&
  near lc2.npy '<f4' '(1, 1)' "lstm_cell one bias out-c" '2 * sg(1) + sg(3) * th(1)'
# A batch of 2 with H = 2 and zero weights: every gate 0, c2 = c / 2, h2 = th(c2) / 2.
write_npy lx2.npy '<f4' '(2, 3)' "$(f32 1 2 3 4 5 6)"
write_npy lh22.npy '<f4' '(2, 2)' "$(f32 1 1 1 1)"
write_npy lc22.npy '<f4' '(2, 2)' "$(f32 0 2 -2 4)"
write_npy lwih0.npy '<f4' '(8, 3)' "$(f32 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0)"
write_npy lwhh0.npy '<f4' '(8, 2)' "$(f32 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0)"
run 0 "lstm_cell batch" op lstm_cell --x lx2.npy --h lh22.npy --c lc22.npy --w-ih lwih0.npy \
  --w-hh lwhh0.npy --out-h lh2.npy --out-c lc2.npy --backend host && {
  near lc2.npy '<f4' '(2, 2)' "lstm_cell batch out-c" 0 1 -1 2
  near lh2.npy '<f4' '(2, 2)' "lstm_cell batch out-h" 0 'th(1) / 2' 'th(-1) / 2' 'th(2) / 2'
}
run 0 "lstm_cell --help" op lstm_cell --help && { grep -q -- '--w-ih' out.txt &&
  grep -q -- '--out-c' out.txt || fail "lstm_cell --help: $(cat out.txt)"; }
run 2 "lstm_cell without --out-c" op lstm_cell --x lx.npy --h lh.npy --c lc.npy \
  --w-ih lwih.npy --w-hh lwhh.npy --out-h bad.npy --backend host &&
  { grep -q -- '--out-c is required' err.txt || fail "no --out-c: $(cat err.txt)"; }
absent "lstm_cell without --out-c" bad.npy
run 2 "lstm_cell without --c" op lstm_cell --x lx.npy --h lh.npy --w-ih lwih.npy \
  --w-hh lwhh.npy --out-h bad.npy --out-c bad2.npy --backend host &&
  { grep -q -- '--c is required' err.txt || fail "no --c: $(cat err.txt)"; }
absent "lstm_cell without --c" bad.npy bad2.npy
run 2 "lstm_cell w-ih of the wrong shape" op lstm_cell --x lx.npy --h lh.npy --c lc.npy \
  --w-ih m3x2.npy --w-hh lwhh.npy --out-h bad.npy --out-c bad2.npy --backend host
absent "lstm_cell w-ih of the wrong shape" bad.npy bad2.npy
run 2 "lstm_cell bias of the wrong length" op lstm_cell --x lx.npy --h lh.npy --c lc.npy \
  --w-ih lwih.npy --w-hh lwhh.npy --b-hh mbias3.npy --out-h bad.npy --out-c bad2.npy \
  --backend host
absent "lstm_cell bias of the wrong length" bad.npy bad2.npy
run 2 "lstm_cell c of the wrong shape" op lstm_cell --x lx.npy --h lh.npy --c lc22.npy \
  --w-ih lwih.npy --w-hh lwhh.npy --out-h bad.npy --out-c bad2.npy --backend host
absent "lstm_cell c of the wrong shape" bad.npy bad2.npy

# dendritic: x = [1, 2]; one neuron of two dendrites w = [[1, -1], [0, 0]] (a = -1, 0),
# and two neurons of one dendrite w = [[2, 1]], [[1, -1]] (a = 4, then -1).
write_npy dx.npy '<f4' '(1, 2)' "$(f32 1 2)"
write_npy dw2.npy '<f4' '(1, 2, 2)' "$(f32 1 -1 0 0)"
write_npy dw1.npy '<f4' '(2, 1, 2)' "$(f32 2 1 1 -1)"
run 0 "dendritic sigmoid" op dendritic --x dx.npy --w dw2.npy --mode sigmoid --out den.npy \
  --backend host && near den.npy '<f4' '(1, 1)' "dendritic sigmoid" 'sg(-1) + 0.5'
run 0 "dendritic multiplicative" op dendritic --x dx.npy --w dw2.npy --mode multiplicative \
  --out den.npy --backend host && near den.npy '<f4' '(1, 1)' "dendritic multiplicative" \
  'sg(-1) * 0.5'
run 0 "dendritic sigmoid, one dendrite each" op dendritic --x dx.npy --w dw1.npy \
  --mode=sigmoid --out den.npy && near den.npy '<f4' '(1, 2)' "dendritic one dendrite" \
  'sg(4)' 'sg(-1)'
# active_bp, theta 1, beta 2: a + 2 max(0, a - 1) = 10 and -1, exactly.
write_npy den.abp.npy '<f4' '(1, 2)' "$(f32 10 -1)"
run 0 "dendritic active_bp" op dendritic --x dx.npy --w dw1.npy --mode active_bp --theta 1 \
  --beta 2 --out den.npy --backend host && same den.npy den.abp.npy "dendritic active_bp"
# Defaults theta 0, beta 1: 4 + 4 = 8 and -1.
write_npy den.abp0.npy '<f4' '(1, 2)' "$(f32 8 -1)"
run 0 "dendritic active_bp defaults" op dendritic --x dx.npy --w dw1.npy --mode active_bp \
  --out den.npy --backend host && same den.npy den.abp0.npy "dendritic active_bp defaults"
run 0 "dendritic nmda" op dendritic --x dx.npy --w dw1.npy --mode nmda --k 2 --theta 1 \
  --out den.npy --backend host && near den.npy '<f4' '(1, 2)' "dendritic nmda" '4 * sg(6)' \
  '-sg(-4)'
run 0 "dendritic nmda defaults" op dendritic --x dx.npy --w dw1.npy --mode nmda --out den.npy \
  --backend host && near den.npy '<f4' '(1, 2)' "dendritic nmda defaults" '4 * sg(4)' '-sg(-1)'
# A batch of two rows: x = [1, 2], [0, 1].
write_npy dx2.npy '<f4' '(2, 2)' "$(f32 1 2 0 1)"
run 0 "dendritic batch" op dendritic --x dx2.npy --w dw1.npy --mode active_bp --theta 1 \
  --beta 2 --out den.npy --backend host && near den.npy '<f4' '(2, 2)' "dendritic batch" \
  10 -1 1 -1
run 0 "dendritic --help" op dendritic --help && {
  grep -q -- '--mode sigmoid|nmda|active_bp|multiplicative' out.txt &&
  grep -q -- '--theta T' out.txt || fail "dendritic --help: $(cat out.txt)"; }
# --mode defaults to sigmoid, as in the schema (plm_dendritic_params_default, the text form).
run 0 "dendritic without --mode" op dendritic --x dx.npy --w dw1.npy --out den.npy \
  --backend host && near den.npy '<f4' '(1, 2)' "dendritic without --mode" 'sg(4)' 'sg(-1)'
run 2 "dendritic --mode relu" op dendritic --x dx.npy --w dw1.npy --out bad.npy --mode relu \
  --backend host && { grep -q -- "--mode 'relu'" err.txt || fail "--mode relu: $(cat err.txt)"; }
absent "dendritic --mode relu" bad.npy
run 2 "dendritic without --w" op dendritic --x dx.npy --out bad.npy --mode nmda --backend host
absent "dendritic without --w" bad.npy
for value in nan inf -inf 1e999 abc '' 1x; do
  run 2 "dendritic --k '$value'" op dendritic --x dx.npy --w dw1.npy --out bad.npy --mode nmda \
    --k "$value" --backend host
  absent "dendritic --k '$value'" bad.npy
done
run 2 "dendritic --theta abc" op dendritic --x dx.npy --w dw1.npy --out bad.npy \
  --mode active_bp --theta abc --backend host
absent "dendritic --theta abc" bad.npy
run 2 "dendritic --beta nan" op dendritic --x dx.npy --w dw1.npy --out bad.npy \
  --mode active_bp --beta nan --backend host
absent "dendritic --beta nan" bad.npy
# w's inputs (3) are not x's (2); w 2-D.
write_npy dw3.npy '<f4' '(1, 1, 3)' "$(f32 1 2 3)"
run 2 "dendritic w of the wrong width" op dendritic --x dx.npy --w dw3.npy --out bad.npy \
  --mode sigmoid --backend host
absent "dendritic w of the wrong width" bad.npy
run 2 "dendritic 2-D w" op dendritic --x dx.npy --w ma.npy --out bad.npy --mode sigmoid \
  --backend host
absent "dendritic 2-D w" bad.npy

# vector_add: [1, 2, 3] + [10, 20, 30]; 2 a - b; a 2-D pair.
write_npy va.npy '<f4' '(3,)' "$(f32 1 2 3)"
write_npy vb.npy '<f4' '(3,)' "$(f32 10 20 30)"
write_npy vab.npy '<f4' '(3,)' "$(f32 11 22 33)"
write_npy vaxpby.npy '<f4' '(3,)' "$(f32 -8 -16 -24)"
write_npy va2.npy '<f4' '(2, 2)' "$(f32 1 2 3 4)"
write_npy vb2.npy '<f4' '(2, 2)' "$(f32 4 3 2 1)"
write_npy vab2.npy '<f4' '(2, 2)' "$(f32 5 5 5 5)"
run 0 "vector_add" op vector_add --a va.npy --b vb.npy --out vadd.npy --backend host &&
  same vadd.npy vab.npy "vector_add"
run 0 "vector_add, auto backend" op vector_add --a va.npy --b vb.npy --out vadd.auto.npy &&
  same vadd.auto.npy vab.npy "vector_add, auto backend"
run 0 "vector_add --alpha 2 --beta -1" op vector_add --a va.npy --b vb.npy --out vadd.npy \
  --alpha 2 --beta=-1 --backend host && same vadd.npy vaxpby.npy "vector_add axpby"
run 0 "vector_add 2-D" op vector_add --a va2.npy --b vb2.npy --out vadd.npy --backend host &&
  same vadd.npy vab2.npy "vector_add 2-D"
# 0.5 a + 0.25 b = [3, 6, 9]
run 0 "vector_add fractions" op vector_add --a va.npy --b vb.npy --out vadd.npy --alpha 0.5 \
  --beta 0.25 --backend host && near vadd.npy '<f4' '(3,)' "vector_add fractions" 3 6 9
run 2 "vector_add shapes differ" op vector_add --a va.npy --b va2.npy --out bad.npy --backend host
absent "vector_add shapes differ" bad.npy
run 2 "vector_add without --b" op vector_add --a va.npy --out bad.npy --backend host &&
  { grep -q -- '--b is required' err.txt || fail "vector_add without --b: $(cat err.txt)"; }
absent "vector_add without --b" bad.npy
for value in nan inf abc ''; do
  run 2 "vector_add --alpha '$value'" op vector_add --a va.npy --b vb.npy --out bad.npy \
    --alpha "$value" --backend host
  absent "vector_add --alpha '$value'" bad.npy
done
run 2 "vector_add --beta 1e999" op vector_add --a va.npy --b vb.npy --out bad.npy \
  --beta 1e999 --backend host
absent "vector_add --beta 1e999" bad.npy

# vector_add_batched: row i of --a and --b is pair i, all in one batched call. Its rows
# are vector_add's elements, so vector_add on the whole arrays is the expectation.
run 0 "vector_add_batched 2 rows" op vector_add_batched --a va2.npy --b vb2.npy --out vbat.npy \
  --backend host && same vbat.npy vab2.npy "vector_add_batched 2 rows"
run 0 "vector_add_batched, auto backend" op vector_add_batched --a va2.npy --b vb2.npy \
  --out vbat.auto.npy && same vbat.auto.npy vab2.npy "vector_add_batched, auto backend"
run 0 "vector_add_batched 1-D: one pair" op vector_add_batched --a va.npy --b vb.npy \
  --out vbat.npy --backend host && same vbat.npy vab.npy "vector_add_batched 1-D: one pair"
write_npy vfa.npy '<f4' '(2, 3)' "$(f32 1 2 3 4 5 6)"
write_npy vfb.npy '<f4' '(2, 3)' "$(f32 1 1 1 0 1 -1)"
run 0 "vector_add_batched fractions" op vector_add_batched --a vfa.npy --b vfb.npy \
  --out vbat.npy --alpha 0.3 --beta=-0.7 --backend host &&
  run 0 "vector_add fractions, whole" op vector_add --a vfa.npy --b vfb.npy --out vwhole.npy \
    --alpha 0.3 --beta=-0.7 --backend host && same vbat.npy vwhole.npy "vector_add_batched fractions"
# 40 pairs (more than PLM_VECTOR_ADD_BATCH_INLINE: cuda's table travels in memory) of 3:
# a[i] = (i, -i, 2i), b[i] = (1, i, 3) -> 2 a[i] + b[i] = (2i + 1, -i, 4i + 3); timed.
a_values=() b_values=() want=()
for ((i = 0; i < 40; i++)); do
  a_values+=("$i" "$((-i))" "$((2 * i))")
  b_values+=(1 "$i" 3)
  want+=("$((2 * i + 1))" "$((-i))" "$((4 * i + 3))")
done
write_npy vba.npy '<f4' '(40, 3)' "$(f32 "${a_values[@]}")"
write_npy vbb.npy '<f4' '(40, 3)' "$(f32 "${b_values[@]}")"
write_npy vbwant.npy '<f4' '(40, 3)' "$(f32 "${want[@]}")"
run 0 "vector_add_batched 40 pairs, --repeat" op vector_add_batched --a vba.npy --b vbb.npy \
  --out vbat.npy --alpha 2 --repeat 3 --backend host &&
  same vbat.npy vbwant.npy "vector_add_batched 40 pairs" && {
  grep -q '^time_ms median=' err.txt || fail "vector_add_batched --repeat: $(cat err.txt)"
}
# (2, 1, 2): two pairs of (1, 2).
write_npy vb3a.npy '<f4' '(2, 1, 2)' "$(f32 1 2 3 4)"
write_npy vb3b.npy '<f4' '(2, 1, 2)' "$(f32 10 20 30 40)"
write_npy vb3want.npy '<f4' '(2, 1, 2)' "$(f32 11 22 33 44)"
run 0 "vector_add_batched 3-D" op vector_add_batched --a vb3a.npy --b vb3b.npy --out vbat.npy \
  --backend host && same vbat.npy vb3want.npy "vector_add_batched 3-D"
run 0 "vector_add_batched --help" op vector_add_batched --help && {
  grep -q 'usage: plume op vector_add_batched --a A --b B --out OUT' out.txt ||
    fail "vector_add_batched --help: $(cat out.txt)"
}
run 0 "op --help lists vector_add_batched" op --help && {
  grep -q '^    vector_add_batched$' out.txt || fail "op --help: $(cat out.txt)"
}
run 2 "vector_add_batched shapes differ" op vector_add_batched --a va2.npy --b vb3a.npy \
  --out bad.npy --backend host
absent "vector_add_batched shapes differ" bad.npy
run 2 "vector_add_batched without --b" op vector_add_batched --a va2.npy --out bad.npy \
  --backend host && { grep -q -- '--b is required' err.txt || fail "no --b: $(cat err.txt)"; }
absent "vector_add_batched without --b" bad.npy
run 2 "vector_add_batched --alpha nan" op vector_add_batched --a va2.npy --b vb2.npy \
  --out bad.npy --alpha nan --backend host
absent "vector_add_batched --alpha nan" bad.npy

# dot: rows [1, 2, 3] · [1, 1, 1] = 6 and [4, 5, 6] · [0, 1, -1] = -1, f64 (2,);
# [1, 2, 3] · [10, 20, 30] = 140, f64 (1,).
write_npy da.npy '<f4' '(2, 3)' "$(f32 1 2 3 4 5 6)"
write_npy db.npy '<f4' '(2, 3)' "$(f32 1 1 1 0 1 -1)"
run 0 "dot rows" op dot --a da.npy --b db.npy --out dot.npy --backend host &&
  near dot.npy '<f8' '(2,)' "dot rows" 6 -1
run 0 "dot 1-D, auto backend" op dot --a va.npy --b vb.npy --out dot.npy &&
  near dot.npy '<f8' '(1,)' "dot 1-D" 140
run 0 "dot --help" op dot --help && { grep -q 'usage: plume op dot --a A --b B --out OUT' out.txt ||
  fail "dot --help: $(cat out.txt)"; }
run 2 "dot shapes differ" op dot --a da.npy --b va.npy --out bad.npy --backend host
absent "dot shapes differ" bad.npy
run 2 "dot 3-D" op dot --a dw2.npy --b dw2.npy --out bad.npy --backend host
absent "dot 3-D" bad.npy
run 2 "dot takes no --alpha" op dot --a va.npy --b vb.npy --out bad.npy --alpha 2 --backend host
absent "dot takes no --alpha" bad.npy
run 2 "dot without --out" op dot --a va.npy --b vb.npy --backend host &&
  { grep -q -- '--out is required' err.txt || fail "dot without --out: $(cat err.txt)"; }

# ar_forecast, AR(1) fits exactly: doubling 1 2 4 8 16 -> 32 64; steps 1 2 3 4 5 -> 6 7;
# a constant 3 (a singular design, fitted exactly) -> 3 3.
write_npy series.npy '<f4' '(3, 5)' "$(f32 1 2 4 8 16 1 2 3 4 5 3 3 3 3 3)"
run 0 "ar_forecast AR(1)" op ar_forecast --in series.npy --lags 1 --horizon 2 --out fc.npy \
  --backend host && near fc.npy '<f4' '(3, 2)' "ar_forecast AR(1)" 32 64 6 7 3 3
run 0 "ar_forecast, auto backend" op ar_forecast --in series.npy --lags=1 --horizon=3 \
  --out fc.npy && near fc.npy '<f4' '(3, 3)' "ar_forecast, auto backend" 32 64 128 6 7 8 3 3 3
# AR(2) on 1 2 4 8 16 32 64: x[t] = 2 x[t-1] (with 0 x[t-2] and no intercept) fits exactly.
write_npy series7.npy '<f4' '(1, 7)' "$(f32 1 2 4 8 16 32 64)"
run 0 "ar_forecast AR(2)" op ar_forecast --in series7.npy --lags 2 --horizon 1 --out fc.npy \
  --backend host && near fc.npy '<f4' '(1, 1)' "ar_forecast AR(2)" 128
run 0 "ar_forecast --help" op ar_forecast --help && { grep -q -- '--lags LAGS' out.txt &&
  grep -q -- '--in IN' out.txt || fail "ar_forecast --help: $(cat out.txt)"; }
run 2 "ar_forecast without --lags" op ar_forecast --in series.npy --horizon 2 --out bad.npy \
  --backend host && { grep -q -- '--lags is required' err.txt || fail "no --lags: $(cat err.txt)"; }
absent "ar_forecast without --lags" bad.npy
run 2 "ar_forecast without --horizon" op ar_forecast --in series.npy --lags 1 --out bad.npy \
  --backend host && { grep -q -- '--horizon is required' err.txt || fail "no --horizon: $(cat err.txt)"; }
absent "ar_forecast without --horizon" bad.npy
for lags in 0 33 -1 1.5 abc ''; do
  run 2 "ar_forecast --lags '$lags'" op ar_forecast --in series.npy --lags "$lags" --horizon 2 \
    --out bad.npy --backend host
  absent "ar_forecast --lags '$lags'" bad.npy
done
for horizon in 0 1025 x; do
  run 2 "ar_forecast --horizon '$horizon'" op ar_forecast --in series.npy --lags 1 \
    --horizon "$horizon" --out bad.npy --backend host
  absent "ar_forecast --horizon '$horizon'" bad.npy
done
# T = 5 < 2 P + 1 = 7.
run 2 "ar_forecast series too short" op ar_forecast --in series.npy --lags 3 --horizon 2 \
  --out bad.npy --backend host
absent "ar_forecast series too short" bad.npy
run 2 "ar_forecast 1-D series" op ar_forecast --in va.npy --lags 1 --horizon 1 --out bad.npy \
  --backend host
absent "ar_forecast 1-D series" bad.npy

# ---- flags and values from the ops' parameter schemas -------------------------------------
run 0 "conv2d --pad same" op conv2d --in nine.npy --kernel box.npy --out conv.same.npy \
  --pad same --backend host && same conv.same.npy box.same.npy "conv2d --pad same"
run 2 "conv2d --pad same, even kernel" op conv2d --in nine.npy --kernel k32.npy --out bad.npy \
  --pad same --backend host && expect_err "--pad same, even kernel" "'same' needs a kernel of odd"
absent "conv2d --pad same, even kernel" bad.npy
run 2 "entropy --window abc" op entropy --in quad.npy --out bad.npy --window abc &&
  expect_err "entropy --window abc" "--window 'abc' is not an integer in 1..255"
absent "entropy --window abc" bad.npy
run 0 "conv2d --help shows defaults" op conv2d --help && {
  grep -q -- '--stride SY,SX.*(default 1,1)' out.txt || fail "conv2d --help: $(cat out.txt)"; }
# An option given twice is refused (as plume detect and plume scene refuse it), and a
# value too small for a double reads as 0, as the CSV readers take it.
run 2 "--value twice" op threshold --in quad.npy --out bad.npy --value 1 --value=2 &&
  expect_err "--value twice" "option --value is given twice"
absent "--value twice" bad.npy
run 0 "--value 1e-400" op threshold --in quad.npy --out tiny.npy --value 1e-400 --backend host
rm -f tiny.npy

# A write that fails (a full disk) is a runtime failure, exit 1, naming the file and the
# error, leaving nothing; an output whose folder is missing is refused before the run.
run_full_disk 1 "full disk" op threshold --in quad.npy --out full.npy --value 1 &&
  expect_err "full disk" "full.npy: writing"
absent "full disk" full.npy
run 2 "--out in a missing folder" op threshold --in quad.npy --out nowhere/x.npy --value 1 &&
  expect_err "--out in a missing folder" "--out 'nowhere/x.npy': its folder 'nowhere' does not exist"

# Several outputs are committed together: with room for the labels of 169 dots (2832
# bytes) but not for their regions CSV (over 3 KiB), neither file is replaced.
dots=''
for ((r = 0; r < 26; r++)); do
  for ((c = 0; c < 26; c++)); do
    if ((r % 2 == 0 && c % 2 == 0)); then dots+='\x01'; else dots+='\x00'; fi
  done
done
write_npy dots.npy '|u1' '(26, 26)' "$dots"
run 0 "dots: label and regions" op label --in dots.npy --out dots.labels.npy --regions dots.csv
checks=$((checks + 1))
(($(stat -c %s dots.labels.npy) < 3072 && $(stat -c %s dots.csv) > 3072)) ||
  fail "dots: the sizes do not straddle 3 KiB: $(stat -c '%n %s' dots.labels.npy dots.csv)"
echo "old labels" >L.npy
echo "old regions" >R.csv
run_disk_room 3 1 "room for one output only" op label --in dots.npy --out L.npy --regions R.csv &&
  expect_err "room for one output only" "R.csv"
checks=$((checks + 1))
[[ $(cat L.npy) == "old labels" && $(cat R.csv) == "old regions" ]] ||
  fail "room for one output only: an old file was replaced"
absent "room for one output only"
# A signal before the outputs are written (here during a minute of warm-up) keeps the
# old files and exits 128 + the signal. It is sent once the command catches it.
checks=$((checks + 1))
"$cli_program" op label --in dots.npy --out L.npy --regions R.csv --repeat 1 \
  --warmup-ms 60000 >out.txt 2>err.txt &
pid=$!
wait_catching "$pid" TERM || fail "SIGTERM during the warm-up: plume op never caught SIGTERM"
kill -TERM "$pid"
wait "$pid"
rc=$?
[[ $rc == 143 ]] || fail "SIGTERM during the warm-up: exit $rc, expected 143 ($(cat err.txt))"
expect_err "SIGTERM during the warm-up" "interrupted by signal 15"
checks=$((checks + 1))
[[ $(cat L.npy) == "old labels" && $(cat R.csv) == "old regions" ]] ||
  fail "SIGTERM during the warm-up: an old file was replaced"
absent "SIGTERM during the warm-up"
rm -f dots.npy dots.labels.npy dots.csv L.npy R.csv

# An output naming an input or another output is refused before anything runs, and the
# files are left as they were.
cp quad.npy own.npy
run 2 "--out is --in" op threshold --in own.npy --out ./own.npy --value 1 &&
  expect_err "--out is --in" "--in and --out name the same file"
same own.npy quad.npy "--out is --in: the input unchanged"
run 2 "--regions is --out" op label --in mask.npy --out x.npy --regions x.npy &&
  expect_err "--regions is --out" "name the same file"
absent "--regions is --out" x.npy
rm -f own.npy

# --out -: the .npy's bytes on stdout, as the file would hold them, and the regions CSV
# alike; one output at most on stdout, no input from stdin; an output named for another
# format than the one written is refused before anything runs.
run 0 "threshold to a file" op threshold --in quad.npy --out t.npy --value 1
run 0 "--out -" op threshold --in quad.npy --out - --value 1 && same out.txt t.npy "--out -"
run 0 "label --regions" op label --in mask.npy --out l.npy --regions r.csv
run 0 "--regions -" op label --in mask.npy --out l.npy --regions - && same out.txt r.csv "--regions -"
run 2 "two outputs on stdout" op label --in mask.npy --out - --regions - &&
  expect_err "two outputs on stdout" "--out and --regions are both - (standard output)"
run 2 "--in -" op threshold --in - --out x.npy --value 1 </dev/null &&
  expect_err "--in -" "--in -: plume op reads its inputs from files"
absent "--in -" x.npy
run 2 "--out m.jpg" op threshold --in quad.npy --out m.jpg --value 1 &&
  expect_err "--out m.jpg" "'m.jpg' ends in .jpg, but the data written is .npy, .png, .tif,"
run 2 "--regions r.npy" op label --in mask.npy --out l.npy --regions r.npy &&
  expect_err "--regions r.npy" "'r.npy' ends in .npy, but the data written is .csv"
absent "wrong extensions" m.jpg r.npy
rm -f t.npy l.npy r.csv

# TIFF (support/tiff_io.h): a stack tifffile wrote (tests/fixtures/tiff) gives what its .npy
# gives; --out NAME.tif writes a TIFF, which reads back as the .npy output's values.
tiffs=$fixtures/tiff
run 0 "threshold a TIFF stack" op threshold --in "$tiffs/u16-stack-strips-deflate.tif" \
  --value 30000 --out t.tif
run 0 "threshold its .npy" op threshold --in "$tiffs/u16-stack-strips-deflate.npy" \
  --value 30000 --out t.npy
run 0 "the TIFF output read back" op threshold --in t.tif --value 0 --out back-tif.npy
run 0 "the .npy output read back" op threshold --in t.npy --value 0 --out back-npy.npy
same back-tif.npy back-npy.npy "a TIFF read and written"
checks=$((checks + 1))
[[ $(head -c 4 t.tif | od -An -c | tr -d ' ') == 'II*\0' ]] || fail "t.tif is not a TIFF"
run 0 "f32 tiled TIFF" op threshold --in "$tiffs/f32-tiled.tif" --value 100 --out t.npy
run 0 "f32 tiled .npy" op threshold --in "$tiffs/f32-tiled.npy" --value 100 --out back-npy.npy
same t.npy back-npy.npy "f32 tiled TIFF"
run 2 "an RGB TIFF" op threshold --in "$tiffs/rgb.tif" --value 1 --out x.npy &&
  expect_err "an RGB TIFF" "rgb.tif: page 0: 3 samples per pixel"
run 2 "a TIFF of mixed pages" op threshold --in "$tiffs/mixed-shapes.tif" --value 1 --out x.npy &&
  expect_err "a TIFF of mixed pages" "page 1 is u16 6x5, but page 0 is u16 4x5"
absent "refused TIFFs" x.npy
rm -f t.tif t.npy back-tif.npy back-npy.npy

# Video in (support/video_io.h): an FFV1 gray16 Matroska file ffmpeg made gives what the .npy
# of its frames gives; an audio-only file is refused by name.
videos=$fixtures/video
run 0 "threshold a video" op threshold --in "$videos/gray16-ffv1.mkv" --value 30000 --out v.npy
run 0 "threshold its .npy" op threshold --in "$videos/gray16-ffv1.npy" --value 30000 --out t.npy
same v.npy t.npy "a video read whole"
run 2 "an audio-only file" op threshold --in "$videos/audio-only.mkv" --value 1 --out x.npy &&
  expect_err "an audio-only file" "audio-only.mkv: no video stream (1 stream: audio)"
absent "an audio-only file" x.npy
rm -f v.npy t.npy

# FITS out (support/fits_io.h): --out NAME.fits (.fit, .fts, any case) writes a FITS image,
# which reads back as the .npy output's values; f32 is BITPIX -32.
run 0 "threshold to FITS" op threshold --in "$tiffs/u16-stack-strips-deflate.tif" \
  --value 30000 --out t.fits
run 0 "threshold to .npy" op threshold --in "$tiffs/u16-stack-strips-deflate.npy" \
  --value 30000 --out t.npy
run 0 "the FITS output read back" op threshold --in t.fits --value 0 --out back-fits.npy
run 0 "the .npy output read back" op threshold --in t.npy --value 0 --out back-npy.npy
same back-fits.npy back-npy.npy "a FITS written and read"
checks=$((checks + 1))
[[ $(head -c 30 t.fits) == 'SIMPLE  =                    T' ]] || fail "t.fits is not a FITS file"
run 0 "entropy to .FTS" op entropy --in "$tiffs/f32-tiled.tif" --window 5 --bins 16 \
  --range 0,1000 --out e.FTS
checks=$((checks + 1))
grep -q 'BITPIX  =                  -32' e.FTS || fail "e.FTS is not BITPIX -32"
rm -f t.fits t.npy e.FTS back-fits.npy back-npy.npy

# HDF5 out (support/hdf5_io.h): --out NAME.h5 (or .hdf5, any case) writes one dataset, /data
# or the one named after the file as the reader names them, which reads back as the .npy
# output's values; the same result gives the same bytes. .nc, a name that is only '/' and an
# --in in the file the output would replace are refused before anything runs.
stack=$tiffs/u16-stack-strips-deflate
run 0 "threshold to HDF5" op threshold --in "$stack.tif" --value 30000 --out t.h5
run 0 "threshold to a named dataset" op threshold --in "$stack.tif" --value 30000 \
  --out t.HDF5:/masks//hot/
run 0 "threshold to .npy" op threshold --in "$stack.npy" --value 30000 --out t.npy
run 0 "the HDF5 output read back" op threshold --in t.h5 --value 0 --out back-h5.npy
run 0 "the named dataset read back" op threshold --in t.HDF5:/masks/hot --value 0 \
  --out back-named.npy
run 0 "the .npy output read back" op threshold --in t.npy --value 0 --out back-npy.npy
same back-h5.npy back-npy.npy "an HDF5 written and read"
same back-named.npy back-npy.npy "a named HDF5 dataset written and read"
checks=$((checks + 1))
[[ $(head -c 8 t.h5 | od -An -tx1 | tr -d ' ') == 894844460d0a1a0a ]] || fail "t.h5 is not HDF5"
run 0 "threshold to HDF5 again" op threshold --in "$stack.tif" --value 30000 --out again.h5
same t.h5 again.h5 "two HDF5 files of one result"
run 2 "HDF5 named .nc" op threshold --in t.npy --value 0 --out x.nc &&
  expect_err "HDF5 named .nc" "'x.nc' ends in .nc, but the data written is"
run 2 "the root group" op threshold --in t.npy --value 0 --out x.h5:/ &&
  expect_err "the root group" "--out 'x.h5:/': '/' is the root group: name a dataset in it"
run 2 "the input's HDF5 file" op threshold --in t.HDF5:/masks/hot --value 0 --out t.HDF5:/o &&
  expect_err "the input's HDF5 file" "--in and --out name the same file"
absent "refused HDF5 outputs" x.nc x.h5
rm -f t.h5 t.HDF5 again.h5 t.npy back-h5.npy back-named.npy back-npy.npy

# PNG out (support/png_io.h): --out NAME.png writes a grayscale PNG of a 2-D u8 or u16
# output, every value kept (abs_diff against zeros is the identity), read back through
# libpng; an f32 output or a stack is refused before anything runs, and nothing is written.
write_npy w16.npy '<u2' '(2, 3)' "$(printf '\\x%02x\\x%02x' 1 0 255 0 0 1 52 18 255 255 0 128)"
run 0 "zeros u16" op abs_diff --in w16.npy --ref w16.npy --out z16.npy
run 0 "u16 to PNG" op abs_diff --in w16.npy --ref z16.npy --out w16.png
checks=$((checks + 1))
[[ $(head -c 8 w16.png | od -An -tx1 | tr -d ' ') == 89504e470d0a1a0a ]] || fail "w16.png is not a PNG"
run 0 "the u16 PNG read back" op abs_diff --in w16.png --ref z16.npy --out back16.npy
same back16.npy w16.npy "a u16 PNG written and read"
run 0 "u8 to .PNG" op threshold --in "$fixtures/fits/u8-image.npy" --value 100 --out m.PNG
run 0 "u8 to .npy" op threshold --in "$fixtures/fits/u8-image.npy" --value 100 --out m.npy
run 0 "zeros u8" op abs_diff --in m.npy --ref m.npy --out z8.npy
run 0 "the u8 PNG read back" op abs_diff --in m.PNG --ref z8.npy --out back8.npy
same back8.npy m.npy "a u8 PNG written and read"
run 2 "f32 to PNG" op entropy --in "$fixtures/fits/u8-image.npy" --window 3 --bins 8 --range 0,255 \
  --out e.png && expect_err "f32 to PNG" "--out 'e.png': a PNG holds u8 or u16, not f32"
run 2 "a stack to PNG" op threshold --in "$tiffs/u16-stack-strips-deflate.tif" --value 1 \
  --out s.png && expect_err "a stack to PNG" "a PNG holds one 2-D frame, not a 3-D array"
absent "refused PNGs" e.png s.png
rm -f w16.npy z16.npy w16.png back16.npy m.PNG m.npy z8.npy back8.npy

# FITS (support/fits_io.h): cubes and images astropy wrote (tests/fixtures/fits) give what
# their .npy gives: u16 through BZERO, f32 in an extension, signed 16-bit as f32.
fitses=$fixtures/fits
for name in u16-cube f32-cube-extension i16-image; do
  run 0 "threshold $name.fits" op threshold --in "$fitses/$name.fits" --value 100 --out t.npy
  run 0 "threshold $name.npy" op threshold --in "$fitses/$name.npy" --value 100 --out back-npy.npy
  same t.npy back-npy.npy "$name.fits"
done
run 2 "a 32-bit integer FITS" op threshold --in "$fitses/i32-refused.fits" --value 1 --out x.npy &&
  expect_err "a 32-bit integer FITS" "i32-refused.fits: HDU 1: BITPIX 32"
run 2 "a tile-compressed FITS" op threshold --in "$fitses/rice-refused.fits" --value 1 \
  --out x.npy && expect_err "a tile-compressed FITS" "HDU 2: a tile-compressed image"
absent "refused FITS files" x.npy
rm -f t.npy back-npy.npy

# HDF5 and NetCDF-4 (support/hdf5_io.h): datasets h5py and netCDF4-python wrote
# (tests/fixtures/hdf5) give what their .npy gives, named (FILE:/DATASET) or the file's only
# one; a packed variable's physical values (scale_factor, add_offset, fill as NaN), or with
# --h5-values stored the values as stored.
h5s=$fixtures/hdf5
while read -r input want values; do
  run 0 "threshold $input" op threshold --in "$h5s/$input" --value 100 --h5-values "$values" \
    --out t.npy
  run 0 "threshold $want" op threshold --in "$h5s/$want" --value 100 --out back-npy.npy
  same t.npy back-npy.npy "$input"
done <<'CASES'
u16-cube.h5:/frames u16-cube.npy physical
u8-image.h5 u8-image.npy physical
f32-chunked-gzip.h5:/group/radiance f32-chunked-gzip.npy physical
i16-packed.nc i16-packed.npy physical
i16-packed.nc:radiance i16-packed-stored.npy stored
CASES
run 2 "no such dataset" op threshold --in "$h5s/u16-cube.h5:/nope" --value 1 --out x.npy &&
  expect_err "no such dataset" "u16-cube.h5: no dataset /nope (its datasets of 2 or 3 dimensions: /frames)"
run 2 "two candidate datasets" op threshold --in "$h5s/f32-chunked-gzip.h5" --value 1 --out x.npy &&
  expect_err "two candidate datasets" "2 datasets of 2 or 3 dimensions"
run 2 "a 4-D dataset" op threshold --in "$h5s/refused.h5:/rank4" --value 1 --out x.npy &&
  expect_err "a 4-D dataset" "refused.h5: dataset /rank4: 4-D (2, 2, 3, 4)"
run 2 "a NetCDF classic file" op threshold --in "$h5s/classic.nc" --value 1 --out x.npy &&
  expect_err "a NetCDF classic file" "nccopy -k nc4"
run 2 "--h5-values other" op threshold --in "$h5s/u8-image.h5" --value 1 --h5-values raw \
  --out x.npy && expect_err "--h5-values other" "--h5-values 'raw' is not physical or stored"
absent "refused HDF5 inputs" x.npy
rm -f t.npy back-npy.npy

# A FIFO named as the input is refused at once, never waited on (the command is given 20
# s: a reader that opened it blocking would wait for a writer for ever).
mkfifo fifo.npy
checks=$((checks + 1))
timeout 20 "$cli_program" op threshold --in fifo.npy --out bad.npy --value 1 >out.txt 2>err.txt
rc=$?
[[ $rc == 2 ]] || fail "a FIFO input: exit $rc, expected 2 (stderr: $(cat err.txt))"
expect_err "a FIFO input" "fifo.npy: not a regular file"
absent "a FIFO input" bad.npy
rm -f fifo.npy

# A progress bar on a terminal names the stage (reading, running, writing), and the output
# is the same; -q draws none; -q twice is refused.
if command -v script >/dev/null; then
  checks=$((checks + 1))
  script -qec "'$cli_program' op threshold --in u8.npy --out tty.npy --value 9 --backend host" \
    /dev/null >tty.txt 2>&1 </dev/null
  grep -q "threshold: reading \[-*\] 0/3 stages" tty.txt &&
    grep -q "threshold: running \[#*-*\] 1/3 stages" tty.txt &&
    grep -q "threshold: writing \[#*-*\] 2/3 stages" tty.txt ||
    fail "op: no progress bar on a terminal: $(cat -v tty.txt | head -c 400)"
  same tty.npy u8.out.npy "op with a progress bar"
  checks=$((checks + 1))
  script -qec "'$cli_program' op threshold --in u8.npy --out tty.npy --value 9 --backend host -q" \
    /dev/null >tty.txt 2>&1 </dev/null
  [[ ! -s tty.txt ]] || fail "op -q: drew $(cat -v tty.txt | head -c 400)"
  rm -f tty.npy tty.txt
else
  fail "no 'script' command (bsdutils): the progress bar on a terminal cannot be checked"
fi
run 2 "-q twice" op threshold --in u8.npy --out x.npy --value 9 -q --quiet &&
  expect_err "-q twice" "option -q is given twice"

# regions reads the count of the labelling before it (label --regions runs it), and the
# fused op is made only by the pipeline's fusion: neither is a command.
for op in regions sobel_entropy_threshold; do
  run 2 "no command $op" op "$op" --in mask.npy --out bad.npy && expect_err "no command $op" "unknown op"
  absent "no command $op" bad.npy
done

cli_end
