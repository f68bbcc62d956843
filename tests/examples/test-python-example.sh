#!/usr/bin/env bash
# tests/examples/test-python-example.sh LIBPLUME SOURCE_DIR EXAMPLE: runs examples/EXAMPLE
# (numpy_pipeline.py or torch_tensors.py) against this build's library and module, as
# examples/README.md says to run it, and checks what it prints, not only its status.
# The interpreter is chosen as the Python tests choose it (tests/python/python.sh; for
# torch_tensors.py, first one that also has torch). Skips (77), saying why, where the
# Python tests skip, and where no python3 has torch (torch_tensors.py says so itself).
set -euo pipefail
lib=$1 src=$2 example=$3
if [[ $example == torch_tensors.py ]]; then
  for candidate in ${PYTHON:-} python3 /usr/bin/python3; do
    if "$candidate" -c "import numpy, torch" 2>/dev/null; then
      export PYTHON=$candidate
      break
    fi
  done
fi
# shellcheck source=tests/python/python.sh
source "$src/tests/python/python.sh" # sets python, or skips
fail() { echo "FAIL: $*"; exit 1; }
expect() { # LINE: a line the example must print (a grep -E pattern of the whole line)
  grep -qxE -- "$1" <<<"$out" || fail "$example did not print a line matching '$1'"
}

status=0
out=$(cd "$src" && PLUME_LIBRARY=$lib PYTHONPATH=$src/python "$python" "examples/$example" 2>&1) ||
  status=$?
echo "$out"
if [[ $status -eq 77 && $out == "skipped: torch is not installed"* ]]; then
  exit 77
fi
[[ $status -eq 0 ]] || fail "$python examples/$example exited with $status"

case $example in
numpy_pipeline.py)
  expect 'plume [0-9.]+, backend (host|cuda)'
  expect 'threshold: uint8 \(96, 128\), [1-9][0-9]* pixels above 1300, equal to numpy: True'
  expect 'conv2d: float32 \(96, 128\), equal to numpy within 1e-5: True'
  [[ $(grep -cE '^frame [0-9]+: 1 hot spot\(s\) \([0-9.]+, [0-9.]+\), plume drawn at' <<<"$out") -eq 12 ]] ||
    fail "not 12 frames with one hot spot each"
  ! grep -q MISSED <<<"$out" || fail "the plume was missed in a frame"
  expect 'frame 0: 1 hot spot\(s\) \(20\.0, 30\.0\), plume drawn at \(20\.0, 30\.0\)'
  expect 'the plume found in 12 of 12 frames'
  ;;
torch_tensors.py)
  expect 'plume [0-9.]+ on (host|cuda), torch .* on (cpu|cuda)'
  expect "threshold: torch torch.uint8 \\(48, 64\\) on (cpu|cuda), equal to torch's frame > 1300: True"
  if grep -q '^plume .* on host' <<<"$out"; then
    expect "the mask is plume's memory, not a copy: True"
  fi
  expect 'pipeline: [1-9][0-9]* pixels kept, centred on \(20\.0, 30\.0\)'
  ;;
*) fail "no checks for examples/$example" ;;
esac
echo "$example: ok"
