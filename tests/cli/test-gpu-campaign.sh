#!/usr/bin/env bash
# tests/cli/test-gpu-campaign.sh SOURCE_DIR BUILD_DIR SCRATCH [emulated]: scripts/gpu-campaign
# on a machine without a GPU, as a session rehearses it before a window: the plan fits its
# limits; prepare packs BUILD_DIR (no rebuild, no downloads); `run core` unpacks it,
# loads every binary, finds no GPU, says so in one line, exits 3 and leaves two files
# in OUT; `import` files a run's results and prints the docs' GPU tables from their JSON,
# and refuses a rehearsal's (on host, or measured on the emulator whatever its gpu= says).
# With `emulated` (BUILD_DIR an EMU build: CTest's gpu_campaign_emulated), the emulated
# rehearsal instead: prepare packs the programs of four small suites (PLUME_CAMPAIGN_SUITES),
# the carry refuses to run as a GPU's; `run core` runs every step on
# the emulated cuda device (those four suites; one op tuned,
# PLUME_CAMPAIGN_TUNE_OP) and passes; `run sanitize` runs two of them under the
# emulator's checks; import refuses the results.
# Skipped (77) on a machine with a GPU: there, run the campaign itself.
set -uo pipefail
source_dir=${1:?usage: test-gpu-campaign.sh SOURCE_DIR BUILD_DIR SCRATCH [emulated]}
build_dir=${2:?}
scratch=${3:?}
mode=${4:-gpu}
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  echo "skipped: a GPU is here; run scripts/gpu-campaign itself"
  exit 77
fi
rm -rf "$scratch" && mkdir -p "$scratch"
campaign=$source_dir/scripts/gpu-campaign
export PLUME_CAMPAIGN_CARRY=$scratch/carry PLUME_CAMPAIGN_WORK=$scratch/work
export PLUME_CAMPAIGN_BUILD=$build_dir PLUME_CAMPAIGN_RESULTS=$scratch/results
fail() { echo "FAILED: $*"; exit 1; }

# The kernels step's reader of Nsight Compute's CSV (scripts/ncu_summary.py), on a sample
# written by hand in ncu's layout (tests/cli/ncu-details-sample.csv: not a measurement):
# one line a launch, the kernel's name short, its duration in microseconds whatever ncu's
# unit, a '-' where a metric is missing, the % value of a metric two sections name (Memory
# Throughput: % and GB/s) in a % column, the stalls that cost most first (their names with
# or without ncu's .ratio), values with thousands' commas read; a CSV without ncu's columns
# is named and exits 1.
summary=$(python3 "$source_dir/scripts/ncu_summary.py" "$source_dir/tests/cli/ncu-details-sample.csv") ||
  fail "ncu_summary.py exited $? on the sample: $summary"
grep -qE '^ncu-details-sample +window_kernel<DenseCounts<false>,EntropySource,EntropySink> +\(8192, 1, 1\) +\(64, 1, 1\) +1320\.0 +84 +18\.02 +18\.75 +31\.4 +44\.12 +1\.93 +9\.31 +barrier 1020\.50, short_scoreboard 4\.10, mio_throttle 2\.05$' <<<"$summary" ||
  fail "ncu_summary.py's line for the window kernel: $summary"
grep -qE '^ncu-details-sample +plm__map_kernel<clip_elem,plm__clip_args,unsignedchar,float> +\(16384, 1, 1\) +\(256, 1, 1\) +21\.6 +16 +- +- +- +81 +- +- +-$' <<<"$summary" ||
  fail "ncu_summary.py's line for the map kernel (missing metrics as -): $summary"
printf 'Name,Value\nclip,1\n' >"$scratch/not-ncu.csv"
if python3 "$source_dir/scripts/ncu_summary.py" "$scratch/not-ncu.csv" >"$scratch/not-ncu.txt" 2>&1; then
  fail "ncu_summary.py read a CSV without ncu's columns"
fi
grep -q "not-ncu.csv: no header with 'Kernel Name' and 'Metric Name'" "$scratch/not-ncu.txt" ||
  fail "ncu_summary.py's refusal does not name the file: $(cat "$scratch/not-ncu.txt")"
if [[ $mode == emulated ]]; then
  export PLUME_CAMPAIGN_BACKEND=emulated PLUME_CAMPAIGN_PYTHON=/usr/bin/python3
  # A sanitized build (CI's emulator stage) runs its steps several times slower: the
  # plan's limits times 8 there instead of the emulator's 3.
  if grep -qE '^PLUME_SANITIZE:STRING=.+' "$build_dir/CMakeCache.txt"; then
    export PLUME_CAMPAIGN_TIME_SCALE=${PLUME_CAMPAIGN_TIME_SCALE:-8}
  fi
  "$PLUME_CAMPAIGN_PYTHON" -c 'import numpy, scipy.ndimage' 2>/dev/null ||
    fail "$PLUME_CAMPAIGN_PYTHON lacks numpy or scipy, which the peers' rehearsal needs (scripts/install-deps)"
  # Four small suites, packed and run (prepare packs only the selected suites' programs).
  export PLUME_CAMPAIGN_SUITES='^(error|stream|threshold|segment)\.cuda$'
fi

"$campaign" plan >"$scratch/plan.txt" || fail "plan exited $?: $(cat "$scratch/plan.txt")"
grep -q '^both phases' "$scratch/plan.txt" || fail "the plan prints no total"

"$campaign" prepare --no-build --no-debs >"$scratch/prepare.txt" 2>&1 ||
  fail "prepare exited $?: $(tail -n 5 "$scratch/prepare.txt")"
[[ -s $scratch/carry/plume-gpu-campaign.tar.xz ]] || fail "prepare left no archive in the carry"
[[ $(ls -A "$scratch/carry") == plume-gpu-campaign.tar.xz ]] || fail "the carry holds more than the archive"
if [[ $mode == emulated ]]; then
  grep -q '^  PLUME_CAMPAIGN_BACKEND=emulated scripts/gpu-campaign run core$' "$scratch/prepare.txt" ||
    fail "prepare prints no rehearsal command for core"
else
  grep -q 'run(command="scripts/gpu-campaign run core", carry=\[".gpu-carry"\]' "$scratch/prepare.txt" ||
    fail "prepare prints no run call for core"
fi
# The runtime packages come from the packed binaries themselves (ldd, dpkg -S), less those
# every Linux has.
mkdir -p "$scratch/unpacked"
tar -C "$scratch/unpacked" -xJf "$scratch/carry/plume-gpu-campaign.tar.xz" ./build ||
  fail "the archive's build does not unpack"
"$campaign" _runtime_packages "$scratch/unpacked/build" >"$scratch/packages.txt" ||
  fail "the runtime packages could not be listed"
grep -qx 'libjansson4' "$scratch/packages.txt" || fail "libjansson4 (plume loads libjansson.so.4) is not listed: $(tr '\n' ' ' <"$scratch/packages.txt")"
grep -qxE 'libc6|libstdc\+\+6|libgcc-s1' "$scratch/packages.txt" && fail "a package every Linux has is listed"
while IFS= read -r call; do
  command=${call#*command=\"}
  command=${command%%\"*}
  ((${#command} < 2000)) || fail "a run command of ${#command} characters"
done < <(grep 'run(command=' "$scratch/prepare.txt")
tar -tJf "$scratch/carry/plume-gpu-campaign.tar.xz" >"$scratch/packed.txt" || fail "the archive does not list"
grep -qE '\.(o|a)$|CMakeFiles' "$scratch/packed.txt" && fail "object files or CMake's files were packed"
grep -q 'gpu-tests.list$' "$scratch/packed.txt" || fail "the suites' list was not packed"
grep -q 'build/tests/test_quote$' "$scratch/packed.txt" && fail "a host suite's program (test_quote) was packed"
if [[ $mode == emulated ]]; then
  grep -q 'build/tests/test_threshold$' "$scratch/packed.txt" || fail "test_threshold, selected, was not packed"
  grep -q 'build/tests/test_pool$' "$scratch/packed.txt" && fail "test_pool was packed, though PLUME_CAMPAIGN_SUITES leaves it out"
  [[ $(tar -xJOf "$scratch/carry/plume-gpu-campaign.tar.xz" ./gpu-tests.list | wc -l) == 4 ]] ||
    fail "the packed suites' list does not hold the 4 selected suites"
else
  grep -q 'build/tests/test_pool$' "$scratch/packed.txt" || fail "test_pool was not packed"
fi

if [[ $mode == emulated ]]; then
  grep -q '^cuda=emulated$' <(tar -xJOf "$scratch/carry/plume-gpu-campaign.tar.xz" ./campaign.env) ||
    fail "the carry's campaign.env does not say cuda=emulated"
  # Run as a GPU's, the emulated carry stops at the unpack, saying why.
  PLUME_CAMPAIGN_BACKEND=cuda OUT=$scratch/out-gpu "$campaign" run core >"$scratch/run-gpu.txt" 2>&1 &&
    fail "an emulated carry ran as a GPU's"
  grep -q 'the carry is an emulated build' "$scratch/work/results/core/unpack.log" ||
    fail "no reason for refusing the emulated carry: $(tail -n 3 "$scratch/run-gpu.txt")"

  # One op's tunables (its launch shapes) and model points: the step's path whole, in
  # seconds, where every op's took two minutes of the rehearsal under the sanitizers.
  export PLUME_CAMPAIGN_TUNE_OP=entropy
  OUT=$scratch/out "$campaign" run core >"$scratch/run.txt" 2>&1 ||
    fail "the emulated core phase exited $?: $(grep -E '^step|^  ' "$scratch/run.txt" | tail -n 30)"
  summary=$scratch/out/summary.txt
  for s in unpack device suites bench_ops kernels tune bench_pipeline bench_pool bench_matmul peers; do
    grep -q "^step $s: ok" "$summary" || fail "step $s did not pass: $(grep "^step $s" "$summary")"
  done
  grep -q '^  kernels: not profiled: ' "$summary" ||
    fail "the kernels step does not say why nothing was profiled: $(grep 'kernels' "$summary")"
  grep -q '^device=emulated: a rehearsal on the CUDA emulator' "$summary" || fail "the summary does not say the device was emulated"
  grep -q '^gpu=emulated-rehearsal$' "$summary" || fail "the summary names a GPU"
  grep -q '^  suites: 4 of 4 passed' "$summary" || fail "not the 4 suites selected: $(grep 'suites:' "$summary")"
  core=$scratch/work/results/core
  grep -q 'on the CUDA emulator' "$core/device.log" || fail "device.log does not name the emulator"
  for json in "$core"/bench_ops/threshold.json "$core"/bench_pipeline.json "$core"/bench_pool.json \
    "$core"/bench_matmul.json; do
    grep -qE '"emulated": *true' "$json" || fail "${json#"$core"/} does not say it was measured on the emulator"
  done
  grep -q '"run": "smoke"' "$core/bench_pipeline.json" || fail "bench_pipeline ran larger than --smoke"
  grep -qE '"rehearsal": *true' "$core/peers.json" || fail "the peers did not run as a rehearsal"
  compgen -G "$core/tuning-*.json" >/dev/null || fail "tune kept no table"
  python3 "$source_dir/scripts/gpu_campaign_tables.py" "$scratch/work/results" >"$scratch/tables.txt" 2>&1 ||
    fail "the tables' parser failed: $(tail -n 5 "$scratch/tables.txt")"
  grep -q '^| threshold ' "$scratch/tables.txt" || fail "the tables hold no bench_ops row"
  grep -q '^\*\*A rehearsal on the CUDA emulator' "$scratch/tables.txt" || fail "the tables do not say the device was emulated"
  grep -q '^suites on cuda: 4 pass' "$scratch/tables.txt" || fail "the tables do not count the suites"

  OUT=$scratch/out-sanitize "$campaign" run sanitize >"$scratch/sanitize.txt" 2>&1 ||
    fail "the emulated sanitize phase exited $?: $(tail -n 20 "$scratch/sanitize.txt")"
  grep -q '^  sanitizers: 2 of 2 runs clean' "$scratch/out-sanitize/summary.txt" ||
    fail "not 2 clean runs: $(grep 'sanitizers' "$scratch/out-sanitize/summary.txt")"
  grep -q '^CLEAN emulator threshold .*(EMULATOR SUMMARY: 0 reports)' "$scratch/work/results/sanitize/sanitize/status" ||
    fail "threshold's run under the emulator was not parsed: $(cat "$scratch/work/results/sanitize/sanitize/status")"

  for results in "$scratch/out/gpu-results.tar.gz" "$scratch/out-sanitize/gpu-results.tar.gz"; do
    "$campaign" import "$results" >"$scratch/import.txt" 2>&1 && fail "import took an emulated rehearsal"
    grep -q 'is a rehearsal on the CUDA emulator, not a GPU' "$scratch/import.txt" ||
      fail "import's refusal does not say why: $(cat "$scratch/import.txt")"
  done
  [[ ! -e $scratch/results ]] || fail "import filed something of a rehearsal"
  echo "gpu-campaign: the emulated rehearsal, core and sanitize, and import's refusal: ok"
  exit 0
fi

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
mkdir -p "$fake/profile-bench_pool"
head -c 1500000 /dev/zero >"$fake/profile-bench_pool/pool_snapshot.json" # over 1 MiB: kept as .xz
tar -C "$scratch/fake" -czf "$scratch/fake.tar.gz" core
"$campaign" import "$scratch/fake.tar.gz" >"$scratch/import.txt" 2>&1 || fail "import exited $?: $(cat "$scratch/import.txt")"
dest=$scratch/results/2026-01-02-test-gpu-abc1234/core
[[ -f $dest/bench_ops/threshold.json && -f $dest/bench_pool.json ]] || fail "import did not file the JSON in $dest"
[[ -f $dest/profile-bench_pool/pool_snapshot.json.xz && ! -e $dest/profile-bench_pool/pool_snapshot.json ]] ||
  fail "import did not keep the file over 1 MiB xz-compressed"
grep -q '^| threshold f32' "$scratch/import.txt" || fail "no bench_ops row printed: $(head -n 20 "$scratch/import.txt")"
grep -q '^| steady_state | n 30 |' "$scratch/import.txt" || fail "no bench_pool row printed"
grep -q '1 fail, 1 pass' "$scratch/import.txt" || fail "the suites' verdicts are not counted"
grep -q 'missing or unreadable: bench_pipeline.json' "$scratch/import.txt" || fail "a missing part is not said to be missing"

# The measured times beside the emulated estimates (scripts/emulated-estimates' files): the
# filed threshold row, as an H200's, against an estimate of a quarter of its mean, counted
# at a commit git does not know ("unknown" whether its kernels changed), at the measured
# commit ("same") and at the repository's first ("changed", and said above the table);
# and a section's own commit taken before its file's (a file whose other workloads were
# counted again later).
measured=$scratch/measured
cp -r "$scratch/results/2026-01-02-test-gpu-abc1234" "$measured"
mkdir -p "$scratch/estimates"
estimate() { # COMMIT DEVICE [SECTION_COMMIT]: the fixture's estimate file
  python3 - "$measured/core/bench_ops/threshold.json" "$scratch/estimates/H200-1.json" "$1" "$2" \
    "${3:-}" <<'EOF'
import json, sys
measured_path, estimate_path, commit, device, section_commit = sys.argv[1:]
with open(measured_path) as f:
    measured = json.load(f)
measured["device"] = "NVIDIA H200"
with open(measured_path, "w") as f:
    json.dump(measured, f)
row = measured["results"][0]
estimate = {"bound": "dram", "estimate_s": row["mean_us"] * 1e-6 / 4, "floor_s": 1e-6}
with open(estimate_path, "w") as f:
    section = {"label": f"{row['op']} {row['size']}", "estimate": estimate,
               "kernels": [{"site": "kernels/cuda/threshold.cu:20"}]}
    if section_commit:
        section["commit"] = section_commit
    json.dump({"device": {"name": device}, "commit": commit, "sections": [section]}, f)
EOF
}
beside() { # EXPECTED: the row's "kernels since" column
  python3 "$source_dir/scripts/gpu_campaign_tables.py" --estimates "$scratch/estimates" "$measured" \
    >"$scratch/beside.txt" 2>&1 || fail "the tables with estimates exited $?: $(tail -n 5 "$scratch/beside.txt")"
  grep -qE "^\| threshold \| [0-9]+x[0-9]+ \| .* \| dram \| 1 \| 4 \| $1 \|\$" "$scratch/beside.txt" ||
    fail "no measured row beside its estimate, kernels $1: $(grep -A 8 'Measured beside' "$scratch/beside.txt")"
}
estimate abc1234 H200 || fail "could not make the estimates' fixture"
beside unknown
measured_commit=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["commit"])' \
  "$measured/core/bench_ops/threshold.json")
if git -C "$source_dir" cat-file -e "${measured_commit%-dirty}^{commit}" 2>/dev/null; then
  estimate "$measured_commit" H200 && beside same
  first=$(git -C "$source_dir" rev-list --max-parents=0 HEAD | tail -n 1)
  estimate "$first" H200 && beside changed
  grep -q '^\*\*1 of these rows compare kernels that changed' "$scratch/beside.txt" ||
    fail "a changed kernel is not said above the table"
  estimate "$first" H200 "$measured_commit" && beside same
fi
# A header another kernel includes (kernels/common/cfar.h, changed from 1525f5c to 8b22bb3)
# leaves threshold's estimate current: only its own source and what that includes count.
if git -C "$source_dir" cat-file -e 1525f5c^{commit} 2>/dev/null &&
  git -C "$source_dir" cat-file -e 8b22bb3^{commit} 2>/dev/null; then
  python3 - "$measured/core/bench_ops/threshold.json" <<'EOF'
import json, sys
with open(sys.argv[1]) as f:
    measured = json.load(f)
measured["commit"] = "8b22bb3"
with open(sys.argv[1], "w") as f:
    json.dump(measured, f)
EOF
  estimate 1525f5c H200 && beside same
fi
estimate abc1234 "H100 SXM"
python3 "$source_dir/scripts/gpu_campaign_tables.py" --estimates "$scratch/estimates" "$measured" \
  >"$scratch/beside.txt" 2>&1 || fail "the tables with another device's estimates exited $?"
grep -q '^(no estimate for NVIDIA H200' "$scratch/beside.txt" ||
  fail "another device's estimate was used: $(grep -A 6 'Measured beside' "$scratch/beside.txt")"

# A rehearsal on the host backend is not a GPU's result: import refuses it.
sed -i 's/^gpu=test-gpu$/gpu=host-rehearsal/' "$fake/summary.txt"
tar -C "$scratch/fake" -czf "$scratch/rehearsal.tar.gz" core
"$campaign" import "$scratch/rehearsal.tar.gz" >/dev/null 2>&1 && fail "import took a host rehearsal"
# Nor a phase whose JSON was measured on the CUDA emulator, whatever its gpu= line says.
sed -i 's/^gpu=host-rehearsal$/gpu=test-gpu/' "$fake/summary.txt"
sed -i 's/"emulated": false/"emulated": true/' "$fake/bench_pool.json"
grep -q '"emulated": true' "$fake/bench_pool.json" || fail "bench_pool's JSON has no emulated field"
tar -C "$scratch/fake" -czf "$scratch/emulated.tar.gz" core
"$campaign" import "$scratch/emulated.tar.gz" >"$scratch/import-emulated.txt" 2>&1 &&
  fail "import took results measured on the emulator"
grep -q 'measured on the CUDA emulator or in a rehearsal (bench_pool.json says so)' "$scratch/import-emulated.txt" ||
  fail "import's refusal does not say why: $(cat "$scratch/import-emulated.txt")"
echo "gpu-campaign: plan, prepare, run without a GPU, import: ok"
