#!/usr/bin/env bash
# tests/cli/test-plume-op.sh PLUME SCRATCH: `plume op` end to end, through the built
# binary. Inputs are .npy/PGM files written here with printf; expected outputs are
# whole .npy files written the same way and compared byte for byte. Checks exit
# codes (0 ok, 2 bad usage or bad file), one-line messages on stderr, and that no
# output (or temporary) file is left behind by a failure. No Python needed.
set -u
plume=$1
scratch=$2
rm -rf "$scratch"
mkdir -p "$scratch"
cd "$scratch" || exit 1

failures=0
checks=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

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

# run EXPECTED_RC NAME ARGS...: run plume, check the exit code; stderr goes to err.txt.
run() {
  local expected=$1 name=$2
  shift 2
  checks=$((checks + 1))
  "$plume" "$@" >out.txt 2>err.txt
  local rc=$?
  if [[ $rc != "$expected" ]]; then
    fail "$name: exit $rc, expected $expected (stderr: $(cat err.txt))"
    return 1
  fi
  if [[ $expected == 2 ]]; then
    if [[ $(wc -l <err.txt) != 1 ]] || ! grep -q '^plume op' err.txt; then
      fail "$name: expected one 'plume op...' line on stderr, got: $(cat err.txt)"
    fi
  fi
  return 0
}

# same FILE EXPECTED NAME: the two files are byte-identical.
same() {
  checks=$((checks + 1))
  if ! cmp -s "$1" "$2"; then
    fail "$3: $1 differs from $2: $(od -An -v -tu1 "$1" | tail -c 80) vs $(od -An -v -tu1 "$2" | tail -c 80)"
  fi
}

# absent NAME FILES...: none of the files exists, and no temporary file is left.
absent() {
  local name=$1
  shift
  checks=$((checks + 1))
  for f in "$@"; do [[ -e $f ]] && fail "$name: $f was created"; done
  if compgen -G '*.tmp-*' >/dev/null; then fail "$name: a temporary file was left: $(ls ./*.tmp-*)"; fi
  rm -f "$@"
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
run 0 "plume op --help" op --help && { grep -q 'threshold' out.txt || fail "plume op --help"; }

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
run 2 "bad --backend" op threshold --in u8.npy --out bad.npy --value 1 --backend gpu
absent "bad --backend" bad.npy
run 2 "no --out" op threshold --in u8.npy --value 1
run 2 "option without value" op threshold --in u8.npy --out bad.npy --value
absent "option without value" bad.npy
run 2 "positional argument" op threshold u8.npy --out bad.npy --value 1
absent "positional argument" bad.npy
run 2 "unknown op" op nosuchop --in u8.npy --out bad.npy
absent "unknown op" bad.npy

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

run 2 "unwritable output" op threshold --in u8.npy --out no/such/dir/out.npy --value 1 \
  --backend host
absent "unwritable output"

if ((failures > 0)); then
  echo "test-plume-op: $failures of $checks checks failed" >&2
  exit 1
fi
echo "test-plume-op: $checks checks passed"
