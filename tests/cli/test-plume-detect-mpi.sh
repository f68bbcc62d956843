#!/usr/bin/env bash
# tests/cli/test-plume-detect-mpi.sh PLUME SCRATCH: `plume detect` under `mpirun -n 2` and
# `-n 3` (and more ranks than frames): the CSV byte for byte what one process writes, from a
# stack and from a folder, with --progress over all the ranks' frames; a bad frame on one
# rank (exit 2, one line naming the rank and the file, no output file, an old one kept); a
# stateful pipeline refused; an interrupted run (no output, no temporary file). Skips (77)
# when mpirun is missing. Ranks oversubscribe the cores (--oversubscribe) and may run as
# root (--allow-run-as-root), as in CI.
#
# Under AddressSanitizer the ranks run without its leak check: Open MPI keeps memory past
# MPI_Finalize in components it has unloaded by then, which no suppression can name. Every
# other check of ASan and UBSan stays on; plume's own paths are leak-checked by the
# single-process tests (plume_detect_cli) and tests/test_pipeline_devices.c.
set -u
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
command -v mpirun >/dev/null || { echo "skip: no mpirun"; exit 77; }
cli_begin "$1" "$2" --commands
plume=$cli_program

# mpi_run EXPECTED_RC RANKS NAME ARGS...: plume under mpirun, as `run` does for one process;
# a usage or input failure (2) must be one "plume detect: rank R: ..." line on stderr.
mpi_run() {
  local expected=$1 ranks=$2 name=$3
  shift 3
  checks=$((checks + 1))
  mpirun --allow-run-as-root --oversubscribe --quiet -n "$ranks" "$plume" "$@" >out.txt 2>err.txt
  local rc=$?
  if [[ $rc != "$expected" ]]; then
    fail "$name: exit $rc, expected $expected (stderr: $(head -c 1000 err.txt))"
    return 1
  fi
  if [[ $expected == 2 ]] && [[ $(grep -c '^plume detect: ' err.txt) != 1 ||
                                $(grep -v '^plume detect: ' err.txt | grep -c .) != 0 ]]; then
    fail "$name: expected one 'plume detect: ...' line on stderr, got: $(cat err.txt)"
  fi
  return 0
}

N=24
H=64
W=64
frame_bytes=$((H * W * 2))
pipeline="conv2d kernel=log:9:1.5 pad=same border=replicate ! threshold value=25 ! label ! regions capacity=64"
run 0 "scene" scene --frames $N --size $H,$W --out s.npy --truth t.csv
run 0 "one process" detect --frames s.npy --pipeline "$pipeline" --out one.csv --backend host

# ---- the same CSV from several ranks -----------------------------------------------------
for ranks in 2 3; do
  mpi_run 0 $ranks "-n $ranks" detect --frames s.npy --pipeline "$pipeline" --out n$ranks.csv \
    --backend host && same n$ranks.csv one.csv "-n $ranks"
  checks=$((checks + 1))
  grep -q "over $ranks ranks (rank 0 " out.txt || fail "-n $ranks: no frames/s per rank: $(cat out.txt)"
done
# --progress: rank 0 draws the bar over every rank's frames, though mpirun pipes its stderr.
mpi_run 0 3 "--progress" detect --frames s.npy --pipeline "$pipeline" --out p3.csv --progress &&
  expect_err "--progress" "$N/$N frames" && same p3.csv one.csv "--progress"
# --mpi asks for it by name; one rank is one process.
mpi_run 0 1 "--mpi, -n 1" detect --frames s.npy --pipeline "$pipeline" --out m1.csv --mpi &&
  same m1.csv one.csv "--mpi, -n 1"
# More ranks than frames: the last ones have none.
run 0 "short scene" scene --frames 2 --size $H,$W --out two.npy --truth two_t.csv
run 0 "short, one process" detect --frames two.npy --pipeline "$pipeline" --out two1.csv
mpi_run 0 3 "-n 3, 2 frames" detect --frames two.npy --pipeline "$pipeline" --out two3.csv &&
  same two3.csv two1.csv "-n 3, 2 frames"

# A folder of the same frames, one .npy each: each rank reads its own files.
frame() { tail -c +$((129 + $1 * frame_bytes)) s.npy | head -c $frame_bytes; }
npy_header() {
  printf '\x93NUMPY\x01\x00\x76\x00'
  printf "%-117s\n" "{'descr': '<u2', 'fortran_order': False, 'shape': ($H, $W), }"
}
mkdir -p frames
for ((k = 0; k < N; k++)); do { npy_header; frame "$k"; } >"$(printf 'frames/f_%04d.npy' "$k")"; done
mpi_run 0 3 "-n 3, a folder" detect --frames frames --pipeline "$pipeline" --out f3.csv &&
  same f3.csv one.csv "-n 3, a folder"

# ---- failures ------------------------------------------------------------------------------
# Frame 20 is rank 2's of three (frames 16-23): every rank stops, rank 0 says which failed.
cp -r frames bad
echo "garbage" >bad/f_0020.npy
echo "old" >x.csv
mpi_run 2 3 "a bad frame on rank 2" detect --frames bad --pipeline "$pipeline" --out x.csv &&
  expect_err "a bad frame on rank 2" "plume detect: rank 2: bad/f_0020.npy"
checks=$((checks + 1))
[[ $(cat x.csv) == old ]] || fail "a bad frame on rank 2: the old output was changed"
rm -f x.csv
mpi_run 2 2 "a bad frame, -n 2" detect --frames bad --pipeline "$pipeline" --out x.csv &&
  expect_err "a bad frame, -n 2" "plume detect: rank 1: bad/f_0020.npy" && absent "a bad frame" x.csv
# Frame 0 is rank 0's: the same, and the writing rank cleans up.
cp -r frames bad0
echo "garbage" >bad0/f_0001.npy
mpi_run 2 3 "a bad frame on rank 0" detect --frames bad0 --pipeline "$pipeline" --out x.csv &&
  expect_err "a bad frame on rank 0" "plume detect: rank 0: bad0/f_0001.npy" &&
  absent "a bad frame on rank 0" x.csv
# A state carried from frame to frame cannot be split.
mpi_run 2 2 "stateful" detect --frames s.npy --out x.csv \
  --pipeline "background alpha=0.1 ! threshold value=300 ! label ! regions capacity=64" &&
  expect_err "stateful" "rank 0: the pipeline has 1 stateful step (background)" &&
  absent "stateful" x.csv
mpi_run 2 2 "--profile" detect --frames s.npy --pipeline "$pipeline" --out x.csv --profile p &&
  expect_err "--profile" "rank 0: --profile is for one process" && absent "--profile" x.csv p

# ---- an interrupted run: mpirun passes the signal on, no rank leaves a file ----------------
# mpirun sends SIGTERM to the ranks 1 s after its own SIGINT (SIGKILL later), so the run must
# still be going then on any machine: a folder of 20,000 frames (links to one 128 x 128 frame)
# through a 91 x 91 entropy window is about a minute per rank here and seconds on the
# fastest machine, and the signal ends it at once. It is sent when the run is ready for it:
# rank 0 has opened the output's temporary file.
run 0 "one frame" scene --frames 1 --size 128,128 --out one.npy --truth one.csv
mkdir -p many
perl -e 'for (1 .. 20000) { symlink("../one.npy", sprintf("many/f_%05d.npy", $_)) or die "$!\n" }' ||
  fail "cannot make the folder of frames"
slow="entropy window=91 bins=64 ! threshold value=4 ! label ! regions capacity=64"
echo "old detections" >kept.csv
checks=$((checks + 1))
mpirun --allow-run-as-root --oversubscribe --quiet -n 2 "$plume" detect --frames many \
  --pipeline "$slow" --out kept.csv --backend host >out.txt 2>err.txt &
pid=$!
for ((waited = 0; waited < 6000; waited++)); do
  compgen -G 'kept.csv.tmp-*' >/dev/null && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.01
done
if compgen -G 'kept.csv.tmp-*' >/dev/null; then
  kill -INT "$pid"
  # Stopped within 30 s of the signal, else it did not pass the signal on.
  for ((waited = 0; waited < 3000; waited++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.01
  done
  if kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid"
    fail "interrupted: mpirun was still running 30 s after SIGINT"
  fi
  wait "$pid"
  rc=$?
  ((rc != 0)) || fail "interrupted: exit 0"
  [[ $(cat kept.csv) == "old detections" ]] || fail "interrupted: the old CSV was replaced"
  absent "interrupted"
else
  kill -KILL "$pid" 2>/dev/null
  wait "$pid"
  fail "interrupted: the run never opened its output (stderr: $(head -c 1000 err.txt))"
fi
rm -rf many one.npy one.csv kept.csv

cli_end
