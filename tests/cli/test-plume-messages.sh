#!/usr/bin/env bash
# tests/cli/test-plume-messages.sh PLUME SCRATCH: the values a user gives, echoed in the
# plume command's messages (support/quote.h), through the built binary. A value holding a
# newline, a tab or another control character is refused with exit 2 and exactly one
# line on stderr, holding the value quoted and escaped ('thr\nesh', '1\x1b[2J') and no
# control character; a huge value is cut with "..."; other UTF-8 is shown as it is. No
# Python needed.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cli_begin "$1" "$2"

# refused NAME NEEDLE ARGS...: plume ARGS exits 2 with one line on stderr, which holds
# NEEDLE (a fixed string) and no control character.
refused() {
  local name=$1 needle=$2
  shift 2
  checks=$((checks + 1))
  "$cli_program" "$@" >out.txt 2>err.txt
  local rc=$?
  [[ $rc == 2 ]] || fail "$name: exit $rc, expected 2 (stderr: $(head -c 1000 err.txt))"
  [[ $(wc -l <err.txt) == 1 ]] || fail "$name: expected one line on stderr, got: $(cat -A err.txt)"
  LC_ALL=C grep -q '[[:cntrl:]]' err.txt && fail "$name: a control character on stderr: $(cat -A err.txt)"
  grep -qF -- "$needle" err.txt || fail "$name: stderr lacks '$needle': $(cat -A err.txt)"
}

# Inputs for the commands that read a file before they look at the value.
"$cli_program" scene --frames 2 --size 16,16 --out frames.npy --truth truth.csv >/dev/null ||
  fail "scene for the inputs"

# ---- each command ------------------------------------------------------------------------
refused "unknown command" "plume: unknown command 'sc\nene'" $'sc\nene'
refused "info --backend" "backend 'x\ny' is not host" info --backend $'x\ny'
refused "info argument" "unknown argument '--x\ty'" info $'--x\ty'

refused "op name" "plume op: unknown op 'thr\nesh' (see plume op --help)" op $'thr\nesh'
refused "op --value" "plume op threshold: --value '1\n2' is not a finite number" \
  op threshold --in frames.npy --out out.npy --value $'1\n2'
refused "op --cmp" "--cmp 'g\tt' is not one of" op threshold --in frames.npy --out out.npy \
  --value 1 --cmp $'g\tt'
refused "op --repeat" "--repeat '1\r' is not a count" op threshold --in frames.npy \
  --out out.npy --value 1 --repeat $'1\r'
refused "op --backend" "--backend 'ho\x1bst' is not host" op threshold --in frames.npy \
  --out out.npy --value 1 --backend $'ho\x1bst'
refused "op unknown option" "unknown option '--bo\tgus'" op threshold --in frames.npy \
  --out out.npy --value 1 $'--bo\tgus' 1
refused "op stray argument" "unexpected argument 'stray\n'" op threshold $'stray\n'
refused "op --out folder" "--out 'no\nsuch/out.npy': its folder 'no\nsuch' does not exist" \
  op threshold --in frames.npy --out $'no\nsuch/out.npy' --value 1

refused "scene --size" "plume scene: --size '6\n4,64' is not H,W" \
  scene --frames 1 --size $'6\n4,64' --out a.npy --truth a.csv
refused "scene --frames" "--frames '1\t' is not a count" \
  scene --frames $'1\t' --size 16,16 --out a.npy --truth a.csv
refused "scene --seed" "--seed '1\x1b[2J' is not an integer" \
  scene --frames 1 --size 16,16 --seed $'1\x1b[2J' --out a.npy --truth a.csv
refused "scene unknown argument" "unknown argument '--fr\names'" scene $'--fr\names' 1
refused "scene same file" "name the same file 'a\n.npy'" \
  scene --frames 1 --size 16,16 --out $'a\n.npy' --truth $'a\n.npy'
refused "score --radius" "plume score: --radius '3\n' is not a number > 0" \
  score --truth truth.csv --detections truth.csv --radius $'3\n'
# A file's path, in a message about the file, has its control characters escaped, as every
# message does (support/regular_file.h, support/quote.h): the name shown is the file's.
printf 'frame,row\n0,1\n' >$'bad\ntruth.csv'
refused "score, a file's path" "plume score: bad\\ntruth.csv: no column 'col' in the header" \
  score --truth $'bad\ntruth.csv' --detections truth.csv

# The pipeline's text: a newline separates words, as a space does; a word holding a control
# character is quoted by the library's parser, and escaped on the way out.
refused "detect --pipeline" "key 'value': '1\x01' is not a finite number" \
  detect --frames frames.npy --pipeline $'threshold value=1\x01\n ! label ! regions' --out d.csv
refused "detect --tensor" "--tensor 'k\n=x.npy': the name is not" \
  detect --frames frames.npy --pipeline 'label ! regions' --tensor $'k\n=x.npy' --out d.csv
refused "detect --out" "--out 'no\nsuch/d.csv': its folder 'no\nsuch'" \
  detect --frames frames.npy --pipeline 'label ! regions' --out $'no\nsuch/d.csv'
refused "detect --streams" "--streams '2\t' is not a count" \
  detect --frames frames.npy --pipeline 'label ! regions' --out d.csv --streams $'2\t'
refused "demo --size" "plume demo: --size '64,\t64' is not H,W" demo --size $'64,\t64'
cp truth.csv $'truth\n.csv'
refused "demo --workdir" "--workdir 'truth\n.csv': not a directory" demo --workdir $'truth\n.csv'

# ---- length and UTF-8 --------------------------------------------------------------------
# A 5000-byte value: its first 200 bytes, then "...".
long=$(printf 'x%.0s' {1..5000})
refused "a long op name" "unknown op '$(printf 'x%.0s' {1..200})'..." op "$long"
checks=$((checks + 1))
(($(wc -c <err.txt) < 300)) || fail "a long op name: $(wc -c <err.txt) bytes on stderr"
# Other UTF-8 as it is; a C1 control (CSI, U+009B) escaped.
refused "UTF-8" $'unknown op \'donn\xc3\xa9es\'' op $'donn\xc3\xa9es'
refused "C1 control" "unknown op 'a\xc2\x9b2J'" op $'a\xc2\x9b2J'

cli_end
