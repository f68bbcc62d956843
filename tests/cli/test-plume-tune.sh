#!/usr/bin/env bash
# tests/cli/test-plume-tune.sh PLUME SCRATCH: `plume tune` end to end, on host, in a cache
# directory of its own (XDG_CACHE_HOME): the quick measurement writes a table (atomically,
# where plume/tuning.h says) and says how busy the machine was (a warning when other
# processes spin on every core meanwhile), a partial run keeps the rest of it, --report
# and `plume info` show it, PLUME_TUNING=off|refresh leave it alone, a table edited to
# force a candidate is what the ops then use while their results stay byte-identical, and
# bad usage is refused with one line.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
plume=$1
cli_begin "$plume" "$2" --commands
export XDG_CACHE_HOME=$PWD/cache
unset PLUME_TUNING

run 0 "report without a table" tune --report --backend host &&
  { grep -q "no tuning table for host|" out.txt || fail "report without a table: $(cat out.txt)"; }
run 0 "info without a table" info --backend host &&
  { grep -q "^tuning: *no table: the ops' defaults" out.txt || fail "info: $(grep tuning out.txt)"; }

run 0 "tune --quick" tune --quick --backend host
checks=$((checks + 1))
for op in entropy sobel_entropy_threshold lstm_cell dendritic; do
  grep -q "^$op  *[a-z_]*  *small " out.txt || fail "tune --quick: no row for $op: $(cat out.txt)"
done
# Every op with workloads is measured for the placement model: a point per workload.
checks=$((checks + 1))
for op in sobel threshold label regions entropy matmul; do
  grep -q "^$op  *(model)  *small .* a point of the model: [0-9.]* ms modelled" out.txt ||
    fail "tune --quick: no model row for $op: $(cat out.txt)"
done
# Last, plm_pipeline_run_stream's batch of small frames (run_stream batch_bytes).
checks=$((checks + 1))
grep -Eq "^run_stream +batch_bytes +small +0 +[0-9]+ " out.txt ||
  fail "tune --quick: no row for run_stream's batch: $(cat out.txt)"
table=$(ls cache/plume/tuning-host-*.json 2>/dev/null)
checks=$((checks + 1))
[[ -n $table ]] && grep -q "table written to $PWD/$table" out.txt ||
  fail "tune --quick: no table written, or not said where: $(cat out.txt)"
checks=$((checks + 1))
grep -q '"schema": "plume-tuning"' "$table" && grep -q '"key": "host|' "$table" ||
  fail "the table has no schema or key: $(head -c 300 "$table")"
absent "tune --quick leaves no temporary file" cache/plume/*.tmp
# What the machine did meanwhile (other tests may run beside this one: no bound on it).
checks=$((checks + 1))
grep -Eq "^while measuring: other processes used [0-9]+% of the CPUs; the runs' median CV [0-9.]+%$" out.txt ||
  fail "tune --quick: no load line: $(grep -i measuring out.txt)"

# A process spinning on every core while it measures: a warning, and the table all the same.
# Each spinner ends by itself within a minute, should this script be killed first.
spinners=()
trap 'kill ${spinners[@]+"${spinners[@]}"} 2>/dev/null' EXIT
for ((core = 0; core < $(nproc); core++)); do
  timeout 60 bash -c 'while :; do :; done' &
  spinners+=($!)
done
sleep 0.2
run 0 "tune on a busy machine" tune --quick --op entropy --runs 10
kill "${spinners[@]}" 2>/dev/null
wait "${spinners[@]}" 2>/dev/null
expect_err "tune on a busy machine" "plume tune: warning: other processes used "
expect_err "tune on a busy machine" "run plume tune again on an idle machine"
checks=$((checks + 1))
grep -q "^table written to " out.txt || fail "tune on a busy machine: no table: $(tail -n 2 out.txt)"

entries=$(grep -c '"op":' "$table")
run 0 "report" tune --report && {
  grep -q "^tuning table $PWD/$table" out.txt || fail "report: $(head -n 2 out.txt)"
  grep -q "of $entries entries differ from the default" out.txt || fail "report: $(tail -n 1 out.txt)"
}
run 0 "info with a table" info --backend host &&
  { grep -q "^tuning: *table in use, $entries entries" out.txt || fail "info: $(grep tuning out.txt)"; }

# A partial run refines the table: the other ops' entries stay.
run 0 "tune --op entropy" tune --quick --op entropy && run 0 "report after --op" tune --report &&
  { grep -q "of $entries entries differ from the default" out.txt || fail "--op dropped entries: $(cat out.txt)"; }

# off: measured, not written; refresh: not read.
cp "$table" table.before
PLUME_TUNING=off run 0 "tune with PLUME_TUNING=off" tune --quick --op entropy &&
  { grep -q "table not written (PLUME_TUNING=off)" out.txt || fail "off: $(tail -n 1 out.txt)"; }
same "$table" table.before "PLUME_TUNING=off leaves the table alone"
PLUME_TUNING=refresh run 0 "report with PLUME_TUNING=refresh" tune --report &&
  { grep -q "^no tuning table .*PLUME_TUNING=refresh" out.txt || fail "refresh: $(cat out.txt)"; }
PLUME_TUNING=off run 0 "info with PLUME_TUNING=off" info --backend host &&
  { grep -q "^tuning: *off (PLUME_TUNING=off)" out.txt || fail "info off: $(grep tuning out.txt)"; }

# A table forcing entropy onto 1 band per thread (its first entry) is what runs, and the
# output is the defaults' byte for byte.
run 0 "scene for entropy" scene --frames 2 --size 96,80 --out frames.npy --truth truth.csv
PLUME_TUNING=off run 0 "entropy with the defaults" op entropy --in frames.npy \
  --out defaults.npy --window 9 --backend host
# (the entry of entropy's bands_per_thread: "op", "tunable", "size_class", "value", a line each)
force() { sed -i "/\"op\": \"entropy\"/{n;/\"bands_per_thread\"/{n;n;s/\"value\": [0-9]*/\"value\": $1/}}" "$table"; }
force 1
run 0 "report of the edited table" tune --report &&
  { grep -Eq "^entropy +bands_per_thread +small +4 +1 " out.txt || fail "edited: $(cat out.txt)"; }
run 0 "entropy with 1 band per thread" op entropy --in frames.npy --out forced.npy --window 9 \
  --backend host && same forced.npy defaults.npy "entropy with a forced candidate"
# A value that is no candidate is skipped: the default runs.
force 3
run 0 "report of a damaged entry" tune --report &&
  { grep -q "of $((entries - 1)) entries differ" out.txt || fail "damaged entry: $(tail -n 1 out.txt)"; }

# The batch alone (--op run_stream); a table edited to 64 KiB a batch is what
# `plume detect --batch auto` runs: 64x64 u16 frames (8 KiB) 8 at a time, the rows those of
# a frame at a time.
run 0 "tune --op run_stream" tune --quick --op run_stream --runs 1 &&
  { grep -Eq "^run_stream +batch_bytes +small " out.txt && [[ $(grep -c " small " out.txt) -eq 1 ]] ||
    fail "--op run_stream: $(cat out.txt)"; }
sed -i '/"op": "run_stream"/{n;n;n;s/"value": [0-9]*/"value": 65536/}' "$table"
run 0 "report of the edited batch" tune --report &&
  { grep -Eq "^run_stream +batch_bytes +small +0 +65536 " out.txt || fail "edited batch: $(cat out.txt)"; }
run 0 "scene of small frames" scene --frames 20 --size 64,64 --out small.npy --truth small.csv
run 0 "detect --batch auto" detect --frames small.npy --preset default --out auto.csv --batch auto &&
  { grep -q "batches of 8 frames (tuned)" out.txt || fail "--batch auto: $(cat out.txt)"; }
run 0 "detect a frame at a time" detect --frames small.npy --preset default --out single.csv &&
  same auto.csv single.csv "--batch auto's rows"
# A text that feeds a frame's output to the next (robust's hold=~det) has nothing to batch:
# auto runs it a frame at a time.
run 0 "detect --batch auto, robust" detect --frames small.npy --preset robust --out ra.csv \
  --batch auto && { ! grep -q "batches of" out.txt || fail "--batch auto, robust: $(cat out.txt)"; }
run 0 "robust a frame at a time" detect --frames small.npy --preset robust --out r1.csv &&
  same ra.csv r1.csv "--batch auto's rows, robust"
run 2 "detect --batch sometimes" detect --frames small.npy --preset default --out x.csv \
  --batch sometimes && expect_err "--batch sometimes" "is not a count from 1 to 65536, nor auto"

# A quick run measures again only its own workloads: the full run's larger points stay.
count_points() { grep -c '"op": "threshold"' "$table"; }
run 0 "tune --op threshold (full)" tune --op threshold --runs 3 && full=$(count_points) &&
  run 0 "tune --op threshold --quick" tune --op threshold --quick && {
  checks=$((checks + 1))
  [[ $full -eq 4 && $(count_points) -eq 4 ]] ||
    fail "threshold's points: $full after the full run, $(count_points) after the quick one"
}

run 2 "tune --runs 0" tune --runs 0 && expect_err "tune --runs 0" "--runs '0' is not a count"
run 2 "tune --op nope" tune --quick --op nope && expect_err "tune --op nope" "no op named 'nope'"
run 2 "tune --report --quick" tune --report --quick &&
  expect_err "tune --report --quick" "--report measures nothing"
run 0 "tune --op conv2d" tune --quick --op conv2d --backend host &&
  { grep -q "^conv2d  *(model)  *small " out.txt && ! grep -q "^conv2d  *[a-z_]" out.txt ||
    fail "conv2d: points of the model only: $(cat out.txt)"; }
run 0 "tune --op vector_add" tune --op vector_add --backend host &&
  { grep -q "nothing to tune on host for vector_add" out.txt || fail "vector_add: $(cat out.txt)"; }
# -q: nothing printed, the table written all the same; on a terminal a progress bar over
# the steps (on host entropy's one tunable there and its points of the model: 2).
rm -f cache/plume/tuning-*.json
run 0 "tune -q" tune --quick --op entropy --backend host -q
checks=$((checks + 1))
[[ ! -s out.txt && ! -s err.txt && -n $(ls cache/plume/tuning-*.json 2>/dev/null) ]] ||
  fail "tune -q: stdout '$(cat out.txt)', stderr '$(cat err.txt)', $(ls cache/plume)"
run 2 "tune --report -q" tune --report -q && expect_err "tune --report -q" "--report measures nothing"
if command -v script >/dev/null; then
  checks=$((checks + 1))
  script -qec "'$plume' tune --quick --op entropy --backend host" /dev/null >tty.txt 2>&1 </dev/null
  grep -q "tune \[-*\] 0/2 steps" tty.txt && grep -q "^entropy  *(model)" tty.txt ||
    fail "tune: no progress bar on a terminal: $(cat -v tty.txt | head -c 600)"
else
  fail "no 'script' command (bsdutils): the progress bar on a terminal cannot be checked"
fi
XDG_CACHE_HOME=/proc/plume-no-such-dir run 1 "tune into an unwritable cache" tune --quick \
  --op dendritic && expect_err "unwritable cache" "the tuning table"

cli_end
