#!/usr/bin/env bash
# tests/cli/test-bench-profile.sh BENCH SIZE SCRATCH NAME...: `--profile DIR` of a benchmark
# binary (bench_ops, bench_pool) end to end. BENCH SIZE (--smoke or --quick) --profile DIR
# exits 0, says "profile: DIR/report.html", and writes DIR/profile.json (schema
# "plume-profile", a launch of every NAME, the A/B bars), DIR/trace.json and
# DIR/report.html, DIR created with its missing parents (bench_pool also
# DIR/pool_snapshot.json, a snapshot of every workload, drawn in report.html); no progress bar on stderr when it
# is not a terminal, and one on a terminal (when `script` is found); --help names the
# flag; a DIR that cannot be created fails (exit 1, one line on stderr) before the run,
# and --profile without a value is bad usage (exit 2).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench=$1
size=$2
cli_begin "$bench" "$3"
shift 3
prog=$cli_name
export XDG_CACHE_HOME=$PWD/cache # the calibration is measured here, not read from ~/.cache

# ---- a run with a profile ------------------------------------------------------------------
dir=profile/nested
if run 0 "$prog $size --profile" "$size" --profile "$dir"; then
  checks=$((checks + 1))
  grep -qxF "profile: $dir/report.html" out.txt || fail "no 'profile: $dir/report.html' line"
  for file in profile.json trace.json report.html; do
    checks=$((checks + 1))
    [[ -s $dir/$file ]] || fail "$dir/$file is missing or empty"
  done
  checks=$((checks + 1))
  grep -Eq '"schema": *"plume-profile"' "$dir/profile.json" ||
    fail "profile.json lacks \"schema\": \"plume-profile\""
  for name in "$@"; do
    checks=$((checks + 1))
    grep -qF "\"name\": \"$name\"" "$dir/profile.json" || fail "profile.json has no op '$name'"
    checks=$((checks + 1))
    grep -qF "\"name\": \"$name\"" "$dir/trace.json" || fail "trace.json has no slice '$name'"
  done
  checks=$((checks + 1))
  grep -q '"ab"' "$dir/profile.json" || fail "profile.json has no A/B bars"
  checks=$((checks + 1))
  grep -qF "<title>$prog (" "$dir/report.html" || fail "report.html's title is not '$prog (...'"
  if [[ $prog == bench_pool ]]; then
    checks=$((checks + 1))
    grep -Eq '"schema": *"plume-pool-snapshots"' "$dir/pool_snapshot.json" ||
      fail "no pool_snapshot.json with \"schema\": \"plume-pool-snapshots\""
    for workload in random_allocations steady_state multi_stream threads; do
      checks=$((checks + 1))
      grep -qF "\"name\": \"$workload (" "$dir/pool_snapshot.json" ||
        fail "pool_snapshot.json has no snapshot of $workload"
    done
    checks=$((checks + 1))
    grep -q '<svg[^>]*id="pool-map-0"' "$dir/report.html" && grep -q '<rect class="block"' "$dir/report.html" ||
      fail "report.html has no pool map with blocks"
  fi
  # Not a terminal: no progress bar.
  checks=$((checks + 1))
  ! grep -q "cases" err.txt || fail "a progress bar without a terminal: $(cat -v err.txt)"
fi

# ---- a progress bar on a terminal ------------------------------------------------------------
if command -v script >/dev/null; then
  checks=$((checks + 1))
  timeout -k 10 "${CLI_COMMAND_LIMIT:-150}" script -qec "'$bench' --smoke" /dev/null >tty.txt 2>&1 </dev/null
  grep -q "$prog \[-*\] 0/[0-9]* cases" tty.txt ||
    fail "no progress bar on a terminal: $(cat -v tty.txt | head -c 400)"
else
  # bsdutils, which scripts/install-deps installs: a missing check is a failure, not a note.
  fail "no 'script' command (bsdutils): the progress bar on a terminal cannot be checked"
fi

# ---- usage and bad directories ---------------------------------------------------------------
run 0 "--help" --help
checks=$((checks + 1))
grep -q -- "--profile DIR" out.txt || fail "--help does not name --profile DIR"
run 2 "--profile without a value" --smoke --profile
touch a-file
if run 1 "--profile under a file" --smoke --profile a-file/profile; then
  checks=$((checks + 1))
  [[ $(wc -l <err.txt) == 1 ]] && grep -q "^$prog: cannot create a-file/profile" err.txt ||
    fail "--profile under a file: expected one '$prog: cannot create' line: $(cat err.txt)"
  checks=$((checks + 1))
  [[ ! -s out.txt ]] || fail "--profile under a file: the run started: $(head -c 200 out.txt)"
fi

cli_end
