#!/usr/bin/env bash
# tests/cli/test-gpu-campaign.sh SOURCE_DIR BUILD_DIR SCRATCH: scripts/gpu-campaign on a
# machine without a GPU, as a session rehearses it before a window: the plan fits its
# limits; prepare packs BUILD_DIR (no rebuild, no downloads); `run core` unpacks it,
# loads every binary, finds no GPU, says so in one line, exits 3 and leaves two files
# in OUT; `import` files a run's results and prints the README's tables from their JSON.
# Skipped (77) on a machine with a GPU: there, run the campaign itself.
set -uo pipefail
source_dir=${1:?usage: test-gpu-campaign.sh SOURCE_DIR BUILD_DIR SCRATCH}
build_dir=${2:?}
scratch=${3:?}
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  echo "skipped: a GPU is here; run scripts/gpu-campaign itself"
  exit 77
fi
rm -rf "$scratch" && mkdir -p "$scratch"
campaign=$source_dir/scripts/gpu-campaign
export PLUME_CAMPAIGN_CARRY=$scratch/carry PLUME_CAMPAIGN_WORK=$scratch/work
export PLUME_CAMPAIGN_BUILD=$build_dir PLUME_CAMPAIGN_RESULTS=$scratch/results
export XZ_OPT=-0 # fast: this archive is thrown away
fail() { echo "FAILED: $*"; exit 1; }

"$campaign" plan >"$scratch/plan.txt" || fail "plan exited $?: $(cat "$scratch/plan.txt")"
grep -q '^both phases' "$scratch/plan.txt" || fail "the plan prints no total"

"$campaign" prepare --no-build --no-debs >"$scratch/prepare.txt" 2>&1 ||
  fail "prepare exited $?: $(tail -n 5 "$scratch/prepare.txt")"
[[ -s $scratch/carry/plume-gpu-campaign.tar.xz ]] || fail "prepare left no archive in the carry"
[[ $(ls -A "$scratch/carry") == plume-gpu-campaign.tar.xz ]] || fail "the carry holds more than the archive"
grep -q 'run(command="scripts/gpu-campaign run core", carry=\[".gpu-carry"\]' "$scratch/prepare.txt" ||
  fail "prepare prints no run call for core"
while IFS= read -r call; do
  command=${call#*command=\"}
  command=${command%%\"*}
  ((${#command} < 2000)) || fail "a run command of ${#command} characters"
done < <(grep 'run(command=' "$scratch/prepare.txt")
tar -tJf "$scratch/carry/plume-gpu-campaign.tar.xz" >"$scratch/packed.txt" || fail "the archive does not list"
grep -qE '\.(o|a)$|CMakeFiles' "$scratch/packed.txt" && fail "object files or CMake's files were packed"
grep -q 'build/tests/test_pool$' "$scratch/packed.txt" || fail "test_pool was not packed"
grep -q 'gpu-tests.list$' "$scratch/packed.txt" || fail "the suites' list was not packed"

OUT=$scratch/out "$campaign" run core >"$scratch/run.txt" 2>&1
rc=$?
((rc == 3)) || fail "run core without a GPU exited $rc, expected 3: $(tail -n 5 "$scratch/run.txt")"
grep -q '^gpu-campaign core: STOPPED: no GPU here' "$scratch/run.txt" || fail "no one-line reason: $(tail -n 3 "$scratch/run.txt")"
files=$(find "$scratch/out" -type f | wc -l)
((files == 2)) || fail "$files files in OUT, expected gpu-results.tar.gz and summary.txt"
tar -tzf "$scratch/out/gpu-results.tar.gz" >"$scratch/results.txt" || fail "the results do not list"
grep -q '^core/unpack.log$' "$scratch/results.txt" || fail "the results lack unpack.log"
grep -q '^step unpack: ok' "$scratch/out/summary.txt" || fail "the unpack step did not pass"
grep -q '^binaries: ' "$scratch/work/results/core/unpack.log" || fail "unpack.log does not count the binaries"
"$campaign" run everything >/dev/null 2>&1 && fail "an unknown phase was accepted"

# import: a core phase's folder as a GPU run leaves it (benchmark JSON from this build, on
# host), filed under <date>-<gpu>-<commit> and turned into tables.
fake=$scratch/fake/core
mkdir -p "$fake/bench_ops" "$fake/suites"
printf 'gpu-campaign core: 2026-01-02T03:04:05Z, plan 450 s\ngpu=test-gpu\n' >"$fake/summary.txt"
printf 'commit=abc1234\n' >"$fake/unpack.log"
printf 'PASS error.cuda 1s\nFAIL pool.cuda exit 1 2s: x\n' >"$fake/suites/status"
bench=$build_dir/benchmarks
"$bench/bench_ops" --smoke --backend host --op threshold --json "$fake/bench_ops/threshold.json" >/dev/null ||
  fail "bench_ops --smoke failed"
"$bench/bench_pool" --smoke --backend host --workload steady_state --json "$fake/bench_pool.json" >/dev/null ||
  fail "bench_pool --smoke failed"
tar -C "$scratch/fake" -czf "$scratch/fake.tar.gz" core
"$campaign" import "$scratch/fake.tar.gz" >"$scratch/import.txt" 2>&1 || fail "import exited $?: $(cat "$scratch/import.txt")"
dest=$scratch/results/2026-01-02-test-gpu-abc1234/core
[[ -f $dest/bench_ops/threshold.json && -f $dest/bench_pool.json ]] || fail "import did not file the JSON in $dest"
grep -q '^| threshold f32' "$scratch/import.txt" || fail "no bench_ops row printed: $(head -n 20 "$scratch/import.txt")"
grep -q '^| steady_state | n 30 |' "$scratch/import.txt" || fail "no bench_pool row printed"
grep -q '1 fail, 1 pass' "$scratch/import.txt" || fail "the suites' verdicts are not counted"
grep -q 'missing or unreadable: bench_pipeline.json' "$scratch/import.txt" || fail "a missing part is not said to be missing"

# A rehearsal on the host backend is not a GPU's result: import refuses it.
sed -i 's/^gpu=test-gpu$/gpu=host-rehearsal/' "$fake/summary.txt"
tar -C "$scratch/fake" -czf "$scratch/rehearsal.tar.gz" core
"$campaign" import "$scratch/rehearsal.tar.gz" >/dev/null 2>&1 && fail "import took a host rehearsal"
echo "gpu-campaign: plan, prepare, run without a GPU, import: ok"
