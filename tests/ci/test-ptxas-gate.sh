#!/usr/bin/env bash
# tests/ci/test-ptxas-gate.sh PTXAS_GATE SCRATCH: scripts/ptxas-gate on ptxas reports
# recorded from nvcc 13.0 (tests/ci/ptxas/), so that the gate the nvcc build runs is seen to
# refuse what it must and to pass what it must:
#   - entropy-before: entropy.cu under __launch_bounds__(128, 8), whose window kernel spilled
#     for sm_90 (fused dense: 52 bytes stored, 28 loaded), refused by its spills;
#   - forecast-before: ar_forecast_scratch_kernel at 96 registers for sm_90, refused against
#     a budget of 80;
#   - entropy-after and forecast-after, the same files as fixed, pass under that budget;
#   - a budget line that matches no kernel, a kernel two lines match, a malformed line, an
#     object of a .cu without its report: refused; objects of other languages passed over;
#   - reports without sm_90 code are checked for spills alone, and say so;
#   - a spill in a function a kernel calls (callee.cu, a __noinline__ helper) is refused;
#   - --stamp is written when the check passes, removed when it fails;
#   - `record` keeps ptxas's lines out of the compiler's output and in OBJECT.ptxas, passes
#     everything else and the compiler's status through, and keeps every line of a failed
#     compile in its output.
# The before files were recorded at 1bcf875 (entropy.cu with `nvcc -O3 -arch=sm_90
# -Xptxas -v`, forecast.cu for sm_80 and sm_90 with --fmad=false), callee.cu (a kernel and
# the helper it calls) for both, the after files by the nvcc build's launcher
# (RelWithDebInfo, 80-real and 90) with the launch bounds fixed.
# Needs python3 and c++filt (binutils); runs in every build, nvcc or not (about 4 CPU
# seconds, most of them starting python3 twenty times).
set -uo pipefail
gate=${1:?usage: test-ptxas-gate.sh PTXAS_GATE SCRATCH}
scratch=${2:?}
data=$(cd "$(dirname "$0")/ptxas" && pwd)
# The interpreter itself, not a version manager's shim (pyenv's costs a second a call).
python=$(python3 -c 'import sys; print(sys.executable)') || exit 1
rm -rf "$scratch" && mkdir -p "$scratch" || exit 1
failures=0
checks=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# expect STATUS PATTERN... -- ARGS...: the gate exits with STATUS and a line of its output
# matches each PATTERN (grep -E).
expect() {
  local want=$1 patterns=() pattern out status
  shift
  while [[ $1 != -- ]]; do
    patterns+=("$1")
    shift
  done
  shift
  out=$("$python" "$gate" "$@" 2>&1)
  status=$?
  checks=$((checks + 1))
  if [[ $status != "$want" ]]; then
    fail "ptxas-gate $* exited $status, expected $want:"$'\n'"$out"
  fi
  for pattern in ${patterns[@]+"${patterns[@]}"}; do
    checks=$((checks + 1))
    grep -qE -- "$pattern" <<<"$out" || fail "ptxas-gate $*: no line matches /$pattern/ in:"$'\n'"$out"
  done
}

budgets=$scratch/budgets.txt
cat >"$budgets" <<'EOF'
# the fixtures' budgets
window_kernel<*,FusedSource,FusedSink>      96  fused
window_kernel<*,EntropySource,EntropySink>  88  entropy
warp_kernel                                 64  warp-owned histograms
ar_forecast_scratch_kernel                  80  12 blocks of 64
ar_forecast_shared_kernel                   64  shared memory bounds it
EOF

# The fixed files pass, with their figures in the table.
expect 0 '^window_kernel<DenseHist,FusedSource,FusedSink> +entropy-after\.cu +sm_90 +96 +0 +0 .* 96$' \
  '^ar_forecast_scratch_kernel +forecast-after\.cu +sm_90 +80 ' \
  'no spill; 7 sm_90 kernels, 7 of them with a budget, all within it' \
  -- check --budgets "$budgets" "$data/entropy-after.cu.o.ptxas" "$data/forecast-after.cu.o.ptxas"

# The spills before the fix, named with their numbers.
expect 1 'kernel window_kernel<DenseHist,FusedSource,FusedSink> \(entropy-before\.cu, sm_90\) spills: 52 bytes stored, 28 loaded' \
  'FAILED, 3 problem' \
  -- check --budgets "$budgets" "$data/entropy-before.cu.o.ptxas" "$data/forecast-after.cu.o.ptxas"

# A kernel over its budget, with no spill.
expect 1 'kernel ar_forecast_scratch_kernel \(forecast-before\.cu, sm_90\) uses 96 registers, over its budget of 80 \(.*budgets\.txt:5\)' \
  'FAILED, 1 problem' \
  -- check --budgets "$budgets" "$data/entropy-after.cu.o.ptxas" "$data/forecast-before.cu.o.ptxas"

# A stale line and a kernel of two lines; a malformed line, a line without its reason.
cp "$budgets" "$scratch/stale.txt"
echo "label_flatten_kernel 32 gone" >>"$scratch/stale.txt"
echo "ar_forecast_* 80 again" >>"$scratch/stale.txt"
expect 1 'budget line .*stale\.txt:7 \(label_flatten_kernel\) matches no kernel for sm_90' \
  'kernel ar_forecast_scratch_kernel matches budget lines 5, 8 of' \
  'kernel ar_forecast_shared_kernel matches budget lines 6, 8 of' \
  -- check --budgets "$scratch/stale.txt" "$data/entropy-after.cu.o.ptxas" "$data/forecast-after.cu.o.ptxas"
echo "warp_kernel sixty-four" >"$scratch/malformed.txt"
expect 2 'malformed\.txt:1: not PATTERN REGISTERS REASON' \
  -- check --budgets "$scratch/malformed.txt" "$data/forecast-after.cu.o.ptxas"
echo "warp_kernel 64" >"$scratch/no-reason.txt"
expect 2 'no-reason\.txt:1: not PATTERN REGISTERS REASON' \
  -- check --budgets "$scratch/no-reason.txt" "$data/forecast-after.cu.o.ptxas"

# Objects: a .cu object's report is read beside it; a C object is passed over; a .cu
# object without a report is refused.
mkdir -p "$scratch/objects"
cp "$data/forecast-after.cu.o.ptxas" "$scratch/objects/forecast.cu.o.ptxas"
: >"$scratch/objects/forecast.cu.o"
: >"$scratch/objects/pool.c.o"
grep -v window_kernel "$budgets" | grep -v warp_kernel >"$scratch/forecast-budgets.txt"
expect 0 '^ar_forecast_scratch_kernel +forecast\.cu +sm_90 +80 ' \
  -- check --budgets "$scratch/forecast-budgets.txt" "$scratch/objects/forecast.cu.o" "$scratch/objects/pool.c.o"
: >"$scratch/objects/entropy.cu.o"
expect 2 'no ptxas report for .*entropy\.cu\.o' \
  -- check --budgets "$scratch/forecast-budgets.txt" "$scratch/objects/forecast.cu.o" "$scratch/objects/entropy.cu.o"

# Without sm_90 code (the sm_80 half of a report): spills only, said so.
sed '/sm_90/,$d' "$data/forecast-after.cu.o.ptxas" >"$scratch/sm80.cu.o.ptxas"
expect 0 'no sm_90 code in these reports: register budgets not checked' \
  -- check --budgets "$budgets" "$scratch/sm80.cu.o.ptxas"
sed '/sm_90/,$d' "$data/forecast-before.cu.o.ptxas" >"$scratch/sm80-before.cu.o.ptxas"
sed -i 's/0 bytes spill stores/8 bytes spill stores/' "$scratch/sm80-before.cu.o.ptxas"
expect 1 'ar_forecast_shared_kernel \(sm80-before\.cu, sm_80\) spills: 8 bytes stored, 0 loaded' \
  -- check --budgets "$budgets" "$scratch/sm80-before.cu.o.ptxas"

# A function the kernel calls (not inlined) has a frame of its own, reported after the
# kernel's (callee.cu: recorded from a __noinline__ helper): its spills fail the gate too,
# under the architecture of the run that reported them.
echo "kern 32 the fixture's kernel" >"$scratch/callee-budgets.txt"
expect 0 '^helper \(called\) +callee\.cu +sm_90 ' '^kern +callee\.cu +sm_90 +32 +0 +0 +256 +1024 +32$' \
  -- check --budgets "$scratch/callee-budgets.txt" "$data/callee.cu.o.ptxas"
awk '/Function properties for _Z6helper/ { n++ } { if (n == 2 && !done && /spill stores/) {
  sub(/0 bytes spill stores/, "12 bytes spill stores"); done = 1 } print }' \
  "$data/callee.cu.o.ptxas" >"$scratch/callee.cu.o.ptxas"
expect 1 'function helper \(callee\.cu, sm_90\) spills: 12 bytes stored, 0 loaded' 'FAILED, 1 problem' \
  -- check --budgets "$scratch/callee-budgets.txt" "$scratch/callee.cu.o.ptxas"

# --stamp: written on a pass, removed on a failure.
stamp=$scratch/usage.txt
expect 0 -- check --budgets "$budgets" --stamp "$stamp" \
  "$data/entropy-after.cu.o.ptxas" "$data/forecast-after.cu.o.ptxas"
checks=$((checks + 1))
grep -q '^ar_forecast_scratch_kernel ' "$stamp" 2>/dev/null || fail "--stamp wrote no table on a pass"
expect 1 -- check --budgets "$budgets" --stamp "$stamp" "$data/entropy-before.cu.o.ptxas"
checks=$((checks + 1))
[[ ! -e $stamp ]] || fail "--stamp left its file after a failure"

# record: a compiler that writes ptxas's lines, a warning and an object.
compiler=$scratch/fake-nvcc
cat >"$compiler" <<'EOF'
#!/usr/bin/env bash
# fake-nvcc ... -o OBJECT [fail]: ptxas's report and a warning on stderr, a line on stdout.
out=
while (($#)); do
  [[ $1 == -o ]] && out=$2
  [[ $1 == fail ]] && { echo "ptxas info    : Used 9 registers" >&2; echo "error: broken" >&2; exit 3; }
  shift
done
cat "$FIXTURE" >&2
echo "kernel.cu(3): warning: something" >&2
echo "on stdout"
: >"$out"
EOF
chmod +x "$compiler"
checks=$((checks + 1))
out=$(FIXTURE=$data/forecast-after.cu.o.ptxas "$python" "$gate" record -- "" "$compiler" -c k.cu -o "$scratch/k.cu.o" 2>"$scratch/stderr")
status=$?
if [[ $status != 0 ]]; then
  fail "record exited $status"
elif ! cmp -s "$scratch/k.cu.o.ptxas" "$data/forecast-after.cu.o.ptxas"; then
  fail "record's report differs from what ptxas wrote"
elif [[ $(cat "$scratch/stderr") != "kernel.cu(3): warning: something" || $out != "on stdout" ]]; then
  fail "record did not pass the compiler's other output through: stderr [$(cat "$scratch/stderr")] stdout [$out]"
fi
checks=$((checks + 1))
: >"$scratch/empty"
FIXTURE=$scratch/empty "$python" "$gate" record -- "$compiler" -c k.cu -o "$scratch/bad.cu.o" fail 2>"$scratch/stderr"
status=$?
if [[ $status != 3 ]]; then
  fail "record of a failed compile exited $status, expected the compiler's 3"
elif ! grep -q 'Used 9 registers' "$scratch/stderr" || ! grep -q 'error: broken' "$scratch/stderr"; then
  fail "record of a failed compile kept lines back: $(cat "$scratch/stderr")"
elif [[ -e $scratch/bad.cu.o.ptxas ]]; then
  fail "record of a failed compile wrote a report"
fi

if ((failures)); then
  echo "$failures of $checks checks failed"
  exit 1
fi
echo "all $checks checks passed"
