#!/usr/bin/env bash
# tests/ci/test-ctest-stage.sh CTEST_STAGE SCRATCH: scripts/ctest-stage against a small CTest
# project made in SCRATCH, whose tests pass, fail, skip, lack their program, or pass only with
# or only without PLUME_REQUIRE_BACKEND, so that each way a stage can go green having run too little is
# seen to fail it: an unexpected skip, a failure, a test expected but not registered or
# registered but not expected (in every build, or in builds of one configuration: `NAME if
# VAR=VALUE`), an allowance that matches nothing, a selection of nothing;
# and a stage that allows exactly what skips passes, the tests it allows to skip running
# without the requirement and every other test with it. CMAKE (default cmake) configures.
set -uo pipefail
stage=${1:?usage: test-ctest-stage.sh CTEST_STAGE SCRATCH}
scratch=${2:?}
rm -rf "$scratch" && mkdir -p "$scratch/src" || exit 1
cd "$scratch" || exit 1
failures=0
checks=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

cat >src/CMakeLists.txt <<'CMAKE'
cmake_minimum_required(VERSION 3.21)
project(stage_fixture NONE)
enable_testing()
function(t name script)
  add_test(NAME ${name} COMMAND sh -c "${script}")
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77 LABELS "${ARGN}")
endfunction()
t(passes "exit 0" unit)
t(fails "echo broken; exit 1" bad)
t(absent.cuda "echo 'SKIP: no device'; exit 77" gpu)
t(needs_dep "echo 'skipped: no dependency'; exit 77" dep)
# Passes only with the stage's requirement, and skips only without it (as the harness does).
t(required "test \"$PLUME_REQUIRE_BACKEND\" = host" unit)
t(skips.cuda "if [ -n \"$PLUME_REQUIRE_BACKEND\" ]; then exit 1; fi; echo 'SKIP: none'; exit 77" gpu)
# A test whose program is missing: CTest reports it "not run", never an allowed skip.
add_test(NAME gone.cuda COMMAND ${CMAKE_CURRENT_BINARY_DIR}/no-such-program)
set_tests_properties(gone.cuda PROPERTIES SKIP_RETURN_CODE 77 LABELS gpu)
# Only in builds configured with FLAVOUR=extra.
set(FLAVOUR plain CACHE STRING "")
if(FLAVOUR STREQUAL "extra")
  t(extra_only "exit 0" unit)
endif()
CMAKE
"${CMAKE:-cmake}" -S src -B build >configure.log 2>&1 || { cat configure.log; exit 1; }
printf '%s\n' '# the fixture' passes fails absent.cuda needs_dep required skips.cuda gone.cuda \
  'extra_only if FLAVOUR=extra' >expected.txt
grep -v '^needs_dep$' expected.txt >short.txt
{ cat expected.txt; echo ghost; } >long.txt
sed 's/^passes$/passes if FLAVOUR=extra/' expected.txt >conditional.txt

# expect RC NEEDLE ARGS...: run ctest-stage on the fixture; check its exit code and output.
expect() {
  local want=$1 needle=$2
  shift 2
  checks=$((checks + 1))
  local rc=0
  PLUME_REQUIRE_BACKEND=host "$stage" build "$@" >out.txt 2>&1 || rc=$?
  if [[ $rc != "$want" ]] || ! grep -qF -- "$needle" out.txt; then
    fail "ctest-stage $*: exit $rc (expected $want), output without \"$needle\":"
    sed 's/^/  | /' out.txt | tail -n 12
  fi
}
cuda=(--may-skip '\.cuda$' 'no GPU in this fixture')
dep=(--may-skip '^needs_dep$' 'the fixture has no dependency')

expect 0 "fixture: 2 passed, 0 failed, 3 skipped" --stage fixture --expected expected.txt \
  "${cuda[@]}" "${dep[@]}" -- -E '^(fails|gone.cuda)$'
grep -qxF "   skipped as allowed (the fixture has no dependency): 1: needs_dep" out.txt &&
  grep -qxF "     saying: skipped: no dependency" out.txt ||
  fail "an allowed skip is not listed with its reason and message: $(cat out.txt)"
expect 1 "FAILED: unexpected skip: needs_dep: skipped: no dependency" --expected expected.txt \
  "${cuda[@]}" -- -E '^fails$'
expect 1 "FAILED: unexpected skip: absent.cuda: SKIP: no device" --expected expected.txt \
  "${dep[@]}" -- -R '^(passes|absent)'
expect 1 "FAILED: failed: fails" --expected expected.txt "${cuda[@]}" "${dep[@]}"
expect 1 "FAILED: failed: gone.cuda (notrun" --expected expected.txt "${cuda[@]}" -- -R '^gone'
expect 1 "FAILED: expected but not registered: ghost" --expected long.txt "${cuda[@]}" -- -L unit
expect 1 "FAILED: registered but not expected: needs_dep" --expected short.txt -- -L unit
expect 1 "--may-skip 'nothing' (stale) matches no registered test" --expected expected.txt \
  --may-skip nothing stale -- -L unit
expect 1 "picks no test" --expected expected.txt -- -L none
expect 0 "tests: 2 passed, 0 failed, 0 skipped" --expected expected.txt -- -L unit
# Without the allowance, skips.cuda runs with the requirement, which fails it.
expect 1 "FAILED: failed: skips.cuda" --expected expected.txt -- -R '^skips'
expect 2 "the reason is empty" --expected expected.txt --may-skip x ''
# A test of some builds only: not expected where the build's cache says otherwise.
expect 1 "FAILED: registered but not expected: passes" --expected conditional.txt -- -L unit
"${CMAKE:-cmake}" -S src -B build -DFLAVOUR=extra >>configure.log 2>&1 || { cat configure.log; exit 1; }
expect 0 "tests: 3 passed, 0 failed, 0 skipped" --expected expected.txt -- -L unit
grep -v '^extra_only' expected.txt >no-extra.txt
expect 1 "FAILED: registered but not expected: extra_only" --expected no-extra.txt -- -L unit

echo "ctest-stage: $checks checks, $failures failures"
((failures == 0))
