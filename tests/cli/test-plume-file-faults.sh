#!/usr/bin/env bash
# tests/cli/test-plume-file-faults.sh PLUME SCRATCH: outputs and cache files that are not
# plain regular files (issue 39, items 1 and 2), as streams/file.h's one opener and one
# writer treat them, through op, detect, scene, score, tune, info and detect --profile:
#   - an output that is a symbolic link is written where the link leads (atomically
#     there) and stays a link; a dangling link creates the file at its end;
#   - an output that is a character device or a FIFO is written in place (tee's way) and
#     stays what it was; a write error there (a /dev/full) fails naming the file and
#     strerror; a socket is refused before anything runs;
#   - a FIFO, a folder or (as an ordinary user) a mode-000 file at the tuning table's
#     path never blocks info, op or detect, is reported by info and tune, and is never
#     replaced by tune; a FIFO calibration.tsv never blocks tune or detect --profile;
#   - a table that cannot be written fails with the file's name and strerror.
# Runs as root and as an ordinary user: as root the character devices are the scratch
# folder's own (mknod: never /dev's, which a faulty plume would replace), else links to
# /dev/null and /dev/full; the mode-000 table only as an ordinary user (root reads it all
# the same). Every command that could block runs under `timeout`.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
plume=$1
cli_begin "$plume" "$2" --commands
export XDG_CACHE_HOME=$PWD/cache
unset PLUME_TUNING PLUME_CALIBRATION_CACHE
root=$([[ $(id -u) == 0 ]] && echo 1 || echo 0)

# run_within SECONDS EXPECTED_RC NAME ARGS...: run, failing (exit 124) when it blocks.
run_within() {
  local seconds=$1 expected=$2 name=$3
  shift 3
  checks=$((checks + 1))
  timeout "$seconds" "$cli_program" "$@" >out.txt 2>err.txt
  local rc=$?
  [[ $rc == 124 ]] && { fail "$name: blocked for $seconds s"; return 1; }
  [[ $rc == "$expected" ]] || { fail "$name: exit $rc, expected $expected (stderr: $(head -c 1000 err.txt))"; return 1; }
}
kind_is() { # kind_is NAME PATH TEST: [[ TEST PATH ]] holds (-L, -c, -p, -f)
  checks=$((checks + 1))
  test "$3" "$2" || fail "$1: $2 is no longer what it was: $(ls -l "$2")"
}
no_temporary() { # no_temporary NAME FOLDER: no *.tmp-* left in FOLDER
  checks=$((checks + 1))
  ! compgen -G "$2/*.tmp-*" >/dev/null || fail "$1: a temporary file was left: $(ls "$2"/*.tmp-*)"
}

run 0 "scene" scene --frames 3 --size 64,64 --out frames.npy --truth truth.csv
run 0 "detect into a file" detect --frames frames.npy --preset default --out plain.csv

# ---- item 1: outputs that are links, devices, FIFOs and sockets ----------------------------
mkdir -p sub other
ln -s sub/target.csv link.csv
run 0 "detect through a link" detect --frames frames.npy --preset default --out link.csv
kind_is "detect through a link" link.csv -L
same sub/target.csv plain.csv "detect through a link writes its target"
run 0 "detect through the link again" detect --frames frames.npy --preset default --out link.csv
kind_is "detect through the link again" link.csv -L
same sub/target.csv plain.csv "the target replaced"
absent "links leave no temporary file"
no_temporary "links" sub
ln -s ../other/made.csv sub/dangling.csv
ln -s sub/dangling.csv chain.csv
run 0 "detect through a dangling chain" detect --frames frames.npy --preset default --out chain.csv
kind_is "detect through a dangling chain" chain.csv -L
kind_is "detect through a dangling chain" sub/dangling.csv -L
same other/made.csv plain.csv "a dangling chain creates the file at its end"
ln -s loop.csv loop.csv
run 2 "a link that loops" detect --frames frames.npy --preset default --out loop.csv &&
  expect_err "a link that loops" "--out 'loop.csv': its symbolic links loop"

ln -s frames.npy frames-link.npy
run 0 "scene through links" scene --frames 3 --size 64,64 --out frames-link.npy --truth link.csv
kind_is "scene through links" frames-link.npy -L
kind_is "scene through links" link.csv -L
same sub/target.csv truth.csv "scene's truth through a link"

# Devices of the scratch folder's own, never /dev's: a plume that replaced its output
# would turn the machine's /dev/null into a file (as root the rename succeeds). As an
# ordinary user, links to /dev's (which such a plume could not replace).
if ((root)); then
  mknod null c 1 3 # /dev/null's numbers
  mknod full c 1 7 # /dev/full's
else
  ln -s /dev/null null
  ln -s /dev/full full
fi
run 0 "op into a character device" op threshold --in frames.npy --out null --value 3
kind_is "op into a character device" null -c
run 0 "detect into a character device" detect --frames frames.npy --preset default --out null
kind_is "detect into a character device" null -c

run 1 "detect into a full device" detect --frames frames.npy --preset default --out full &&
  expect_err "detect into a full device" "full: writing failed: No space left on device"
kind_is "detect into a full device" full -c
run 1 "op into a full device" op threshold --in frames.npy --out full --value 3 &&
  expect_err "op into a full device" "full: writing failed: No space left on device"

mkfifo pipe.csv
timeout 60 cat pipe.csv >from-pipe.csv &
reader=$!
run_within 60 0 "detect into a FIFO" detect --frames frames.npy --preset default --out pipe.csv
wait "$reader"
kind_is "detect into a FIFO" pipe.csv -p
same from-pipe.csv plain.csv "what detect wrote into the FIFO"

if python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' sock.csv 2>/dev/null; then
  run 2 "detect into a socket" detect --frames frames.npy --preset default --out sock.csv &&
    expect_err "detect into a socket" "--out 'sock.csv': is a socket"
  run 2 "op into a socket" op threshold --in frames.npy --out sock.csv --value 3 &&
    expect_err "op into a socket" "is a socket"
fi

# The profile writers: through a link, into a device.
mkdir -p prof real
ln -s ../real/profile.json prof/profile.json
ln -s ../null prof/trace.json
run 0 "detect --profile through links" detect --frames frames.npy --preset default \
  --out prof.csv --profile prof
kind_is "detect --profile through links" prof/profile.json -L
kind_is "detect --profile through links" prof/trace.json -L
checks=$((checks + 1))
grep -q '"ops"' real/profile.json || fail "profile.json not written through its link: $(head -c 200 real/profile.json)"
no_temporary "profile writers" prof
no_temporary "profile writers" real
ln -sf ../full prof/report.html
# (exit 1: a profile that cannot be written after the run is a runtime failure, as the
# CSV's would be: docs/failure-behaviour.md)
run 1 "a profile report into a full device" detect --frames frames.npy --preset default \
  --out prof.csv --profile prof &&
  expect_err "a profile report into a full device" "report.html: writing failed: No space left on device"
kind_is "a profile report into a full device" full -c

# score reads: a FIFO input is refused at once.
mkfifo truth-pipe.csv
run_within 20 2 "score from a FIFO" score --truth truth-pipe.csv --detections plain.csv &&
  expect_err "score from a FIFO" "truth-pipe.csv: not a regular file (it is a FIFO)"

# ---- item 2: hostile tuning tables and calibration caches ------------------------------------
run_within 300 0 "tune --quick --op threshold" tune --quick --op threshold --backend host
table=$(ls cache/plume/tuning-host-*.json 2>/dev/null)
checks=$((checks + 1))
[[ -n $table ]] || fail "tune wrote no table: $(cat out.txt)"
cp "$table" table.saved

rm -f "$table"
mkfifo "$table"
run_within 20 0 "info beside a FIFO table" info --backend host &&
  { grep -q "^tuning: *the table $PWD/$table: not a regular file (it is a FIFO)" out.txt ||
    fail "info beside a FIFO table: $(grep tuning out.txt)"; }
run_within 30 0 "op entropy beside a FIFO table" op entropy --in frames.npy --out e.npy --window 9 \
  --backend host
run_within 30 0 "detect beside a FIFO table" detect --frames frames.npy --preset default \
  --out fifo-table.csv --backend host
run_within 30 1 "tune beside a FIFO table" tune --quick --op threshold --backend host &&
  expect_err "tune beside a FIFO table" "not a regular file (it is a FIFO): not replaced"
kind_is "tune beside a FIFO table" "$table" -p
no_temporary "tune beside a FIFO table" cache/plume
run_within 30 1 "tune --report beside a FIFO table" tune --report --backend host &&
  expect_err "tune --report beside a FIFO table" "not a regular file (it is a FIFO)"
rm -f "$table"

mkdir "$table"
run_within 20 0 "info beside a folder table" info --backend host &&
  { grep -q "^tuning: *the table .*: not a regular file (it is a folder)" out.txt ||
    fail "info beside a folder table: $(grep tuning out.txt)"; }
PLUME_TUNING=refresh run_within 30 1 "tune (refresh) beside a folder table" tune --quick \
  --op threshold --backend host &&
  expect_err "tune (refresh) beside a folder table" "not a regular file (it is a folder): not replaced"
rmdir "$table"

if ((!root)); then
  cp table.saved "$table"
  chmod 000 "$table"
  run_within 20 0 "info beside an unreadable table" info --backend host &&
    { grep -q "^tuning: *the table .*: cannot open: Permission denied" out.txt ||
      fail "info beside an unreadable table: $(grep tuning out.txt)"; }
  run_within 30 1 "tune beside an unreadable table" tune --quick --op threshold --backend host &&
    expect_err "tune beside an unreadable table" "cannot open: Permission denied: not replaced"
  chmod 600 "$table"
  same "$table" table.saved "an unreadable table is never replaced"
  rm -f "$table"
fi

# A table that cannot be written: the file and strerror.
cp table.saved "$table"
run_full_disk 1 "tune onto a full disk" tune --quick --op threshold --backend host &&
  expect_err "tune onto a full disk" "cannot write the tuning table $PWD/$table: writing failed: File too large"
same "$table" table.saved "a failed write keeps the table"
no_temporary "a failed table write" cache/plume

# A FIFO calibration cache: measured again, never waited on.
rm -f cache/plume/calibration.tsv
mkfifo cache/plume/calibration.tsv
run_within 300 0 "tune beside a FIFO calibration cache" tune --quick --op threshold --backend host
run_within 60 0 "detect --profile beside a FIFO calibration cache" detect --frames frames.npy \
  --preset default --out cal.csv --profile prof-cal --backend host
kind_is "the calibration cache" cache/plume/calibration.tsv -p

cli_end
