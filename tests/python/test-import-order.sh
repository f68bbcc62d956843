#!/usr/bin/env bash
# tests/python/test-import-order.sh LIBPLUME SOURCE_DIR: plume imports next to the
# libraries a Python user has, in every order, with nothing in the environment to help
# it: a fresh python3 per order imports plume, numpy, cv2 (python3-opencv) and, where it
# is installed, torch (python3-torch, optional), then runs a pipeline and an op through
# plume and checks the result. GLIBC_TUNABLES and LD_PRELOAD are removed from each run's
# environment. This held only in some orders while libplume linked Debian's jemalloc
# (initial-exec TLS, its own malloc/free: static TLS exhausted, or an abort on an invalid
# free in cv2's or torch's initialisers); plume's jemalloc is now private to it
# (scripts/private-jemalloc).
#
# The library is found as tests/python/test-python.sh finds it (PLUME_LIBRARY, PYTHONPATH).
# Skips (77) as that test does: a sanitized library, or no python3 with numpy; fails when
# cv2 is missing (scripts/install-deps installs python3-opencv).
set -euo pipefail
lib=$1 src=$2
# shellcheck source=tests/python/python.sh
python_plain_load=1 # a sanitized library would need its runtime preloaded: skip then
source "$(dirname "$0")/python.sh" # sets python, or skips
"$python" -c "import cv2" 2>/dev/null ||
  { echo "FAIL: $python cannot import cv2 (Debian: python3-opencv, scripts/install-deps)"; exit 1; }
modules=(plume numpy cv2)
if "$python" -c "import torch" 2>/dev/null; then
  modules+=(torch)
else
  echo "note: no torch for $python (Debian: python3-torch, optional): its orders are not checked"
fi

# What each run does once everything is imported: a pipeline and an op, checked.
check='
import numpy as np
frame = np.zeros((32, 40), np.uint16)
frame[10:14, 20:25] = 4000
with plume.Pipeline("threshold value=3500", "u16", frame.shape) as pl:
    mask = np.asarray(pl.run(frame))
assert int(mask.sum()) == 20, mask.sum()
assert int(np.asarray(plume.ops.threshold(frame, value=3500)).sum()) == 20
'

# Every order of the modules, one per line.
orders=$("$python" -c 'import itertools, sys
for order in itertools.permutations(sys.argv[1:]): print(" ".join(order))' "${modules[@]}")

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
run_order() { # ORDER INDEX: one fresh interpreter; its output in scratch/INDEX
  local order=$1 index=$2 imports
  imports="import ${order// /, }"
  if env -u GLIBC_TUNABLES -u LD_PRELOAD PLUME_LIBRARY="$lib" PYTHONPATH="$src/python" \
    "$python" -c "$imports$check" >"$scratch/$index.out" 2>&1; then
    echo "ok    $imports" >"$scratch/$index.result"
  else
    echo "FAIL  $imports (exit $?): $(tail -n 3 "$scratch/$index.out" | tr '\n' ' ')" >"$scratch/$index.result"
  fi
}

# As many interpreters at a time as there are cores.
jobs=$(nproc)
index=0
while IFS= read -r order; do
  run_order "$order" "$index" &
  index=$((index + 1))
  if ((index % jobs == 0)); then wait; fi
done <<<"$orders"
wait

failed=0
for ((i = 0; i < index; i++)); do
  cat "$scratch/$i.result"
  [[ $(cat "$scratch/$i.result") == ok* ]] || failed=$((failed + 1))
done
if ((failed)); then
  echo "FAIL: $failed of $index import orders failed"
  exit 1
fi
echo "all $index import orders of ${modules[*]} import and run a pipeline"
