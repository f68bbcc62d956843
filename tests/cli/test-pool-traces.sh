#!/usr/bin/env bash
# tests/cli/test-pool-traces.sh BENCH_POOL SCRATCH: bench_pool --write-trace writes one
# file per random_allocations, fragmentation and steady_state case, in the format of bench_pool.c's
# header, every block allocated once and freed once; and the same run writes the same
# bytes again (the sequences are what the timed runs do, from a fixed seed).
set -uo pipefail
bench=${1:?usage: test-pool-traces.sh BENCH_POOL SCRATCH}
scratch=${2:?usage: test-pool-traces.sh BENCH_POOL SCRATCH}
rm -rf "$scratch" && mkdir -p "$scratch"
fail() { echo "FAILED: $*"; exit 1; }

"$bench" --smoke --backend host --write-trace "$scratch/a" >"$scratch/a.out" || fail "bench_pool --write-trace exited $?"
"$bench" --smoke --backend host --write-trace "$scratch/b" >/dev/null || fail "second run exited $?"
files=("$scratch"/a/*.trace)
# --smoke: random_allocations at three sizes, fragmentation and steady_state.
((${#files[@]} == 5)) || fail "expected 5 trace files, found ${#files[@]}: ${files[*]}"
[[ -f $scratch/a/steady_state-frames30.trace ]] || fail "no steady_state-frames30.trace"
[[ -f $scratch/a/random_allocations-max4096-n200.trace ]] || fail "no random_allocations-max4096-n200.trace"
[[ -f $scratch/a/fragmentation-max16777216-n500.trace ]] || fail "no fragmentation-max16777216-n500.trace"
for f in "${files[@]}"; do
  cmp -s "$f" "$scratch/b/$(basename "$f")" || fail "$f differs between two runs"
  head -n 1 "$f" | grep -qx '# plume-pool-trace 1' || fail "$f: first line is not the format's"
  sed -n 2p "$f" | grep -q '^# workload ' || fail "$f: second line names no workload"
  awk 'NR <= 2 { next }
       $1 == "a" && NF == 3 && $3 >= 1 { if ($2 in live || $2 in done) { print "block " $2 " allocated twice"; exit 1 }
                                         live[$2] = 1; allocs++; next }
       $1 == "f" && NF == 2 { if (!($2 in live)) { print "block " $2 " freed but not live"; exit 1 }
                              delete live[$2]; done[$2] = 1; next }
       { print "line " NR " malformed: " $0; exit 1 }
       END { for (k in live) { print "block " k " never freed"; exit 1 }
             if (allocs == 0) { print "no allocation"; exit 1 } }' "$f" || fail "$f"
done
grep -q "steady_state-frames30.trace" "$scratch/a.out" || fail "the written files are not listed on stdout"
if "$bench" --write-trace "$scratch/c" --json "$scratch/x.json" 2>"$scratch/err"; then
  fail "--write-trace with --json was accepted"
fi
grep -q "takes no --json" "$scratch/err" || fail "no message for --write-trace with --json"
echo "pool traces: ${#files[@]} files, each block allocated and freed once, the same bytes twice"
