#!/usr/bin/env bash
# tests/cli/test-require-backend.sh TEST_BINARY: when a suite skips and when it fails
# before it starts (tests/harness.h). It skips only for cuda where cuda is absent; a
# PLUME_BACKEND that does not parse fails it, with or without a requirement; and
# PLUME_REQUIRE_BACKEND turns a suite that would skip, or run on another backend, into a
# failure, so that a CI stage or a GPU run (scripts/gpu-campaign) cannot pass on suites
# that never ran where they should have.
set -uo pipefail
binary=${1:?usage: test-require-backend.sh TEST_BINARY}
failed=0
expect() { # expect RC NEEDLE ENV...: run the binary with ENV; check exit code and output
  local want_rc=$1 needle=$2
  shift 2
  local output rc
  output=$(env "$@" "$binary" 2>&1)
  rc=$?
  if [[ $rc != "$want_rc" ]] || [[ $output != *"$needle"* ]]; then
    echo "FAILED: $* $binary: exit $rc (expected $want_rc), output without \"$needle\":"
    echo "$output" | head -n 5 | sed 's/^/  | /'
    failed=1
  else
    echo "ok: $* -> exit $rc"
  fi
}

# Is there a GPU here? Without the requirement a cuda run skips (77) where there is none.
env PLUME_BACKEND=cuda PLUME_REQUIRE_BACKEND= "$binary" >/dev/null 2>&1
cuda_rc=$?
if [[ $cuda_rc == 77 ]]; then
  expect 1 "FAIL: cuda backend unavailable" PLUME_BACKEND=cuda PLUME_REQUIRE_BACKEND=cuda
  expect 1 "a skip is a failure" PLUME_BACKEND=cuda PLUME_REQUIRE_BACKEND=CUDA
else
  expect 0 "backend under test: cuda" PLUME_BACKEND=cuda PLUME_REQUIRE_BACKEND=cuda
fi
expect 1 "FAIL: the suite would run on host, but PLUME_REQUIRE_BACKEND=cuda" \
  PLUME_BACKEND=host PLUME_REQUIRE_BACKEND=cuda
expect 0 "backend under test: host" PLUME_BACKEND=host PLUME_REQUIRE_BACKEND=host
# A misspelt backend is a failure, not a skip: it names the value.
expect 1 "FAIL: PLUME_BACKEND='hots' is not host, cuda or auto" PLUME_BACKEND=hots \
  PLUME_REQUIRE_BACKEND=
expect 1 "FAIL: PLUME_BACKEND='gpu' is not host, cuda or auto" PLUME_BACKEND=gpu PLUME_REQUIRE_BACKEND=host
expect 0 "backend under test: host" PLUME_BACKEND=HOST PLUME_REQUIRE_BACKEND=
expect 0 "backend under test: host" PLUME_BACKEND= PLUME_REQUIRE_BACKEND=
# Without a GPU auto is host, and a skip says why cuda is absent.
if [[ $cuda_rc == 77 ]]; then
  expect 0 "backend under test: host" PLUME_BACKEND=auto PLUME_REQUIRE_BACKEND=host
  expect 77 "SKIP: cuda backend unavailable: " PLUME_BACKEND=cuda PLUME_REQUIRE_BACKEND=
fi
expect 1 "PLUME_REQUIRE_BACKEND='gpu' is not host or cuda" PLUME_BACKEND=host PLUME_REQUIRE_BACKEND=gpu
expect 1 "PLUME_REQUIRE_BACKEND='auto' is not host or cuda" PLUME_BACKEND=host PLUME_REQUIRE_BACKEND=auto
exit $failed
