#!/usr/bin/env bash
# tests/python/test-pip-install.sh SOURCE_DIR SCRATCH: `pip install` of the Python module as
# a user does it, offline, then plume used with nothing in the environment to help it.
#   1. a venv with Debian's packages visible (--system-site-packages: numpy, cv2, torch);
#   2. pip install --no-build-isolation --no-index SOURCE_DIR/python, which builds
#      libplume and libplume_io with CMake (python/setup.py) and puts them in the package
#      (plume.read then reads through the package's libplume_io). To keep the test
#      short (the package is what is checked, not the code's speed) the CUDA kernels are
#      left out (-DPLUME_CUDA=OFF) and the build is CMake's Debug: -O0 compiles about four
#      times faster than the default RelWithDebInfo's -O2;
#   3. in an environment holding PATH and HOME alone (no PLUME_LIBRARY, PYTHONPATH,
#      LD_LIBRARY_PATH, GLIBC_TUNABLES or LD_PRELOAD): `python3 -m plume info`, then in
#      several orders of `import torch, cv2, plume, numpy` a pipeline and an op, the
#      library loaded being the package's own.
# CMake's folder (SCRATCH/build) is kept between runs, so that a second run only relinks;
# the venv is made again every time. Skips (77) as the other Python tests do (python.sh);
# fails when pip or venv is missing (scripts/install-deps installs python3-pip,
# python3-venv, python3-setuptools and python3-wheel). torch is optional: without it its
# orders are not tried, and the output says so.
set -euo pipefail
src=$1 scratch=$2
export python_plain_load=1 # it checks a plain environment: under sanitizers, skip (python.sh)
# shellcheck source=tests/python/python.sh
source "$(dirname "$0")/python.sh" # sets python, or skips
for module in pip venv setuptools wheel; do
  "$python" -c "import $module" 2>/dev/null ||
    { echo "FAIL: $python cannot import $module (scripts/install-deps installs it)"; exit 1; }
done
mkdir -p "$scratch"
venv=$scratch/venv
rm -rf "$venv"
"$python" -m venv --system-site-packages "$venv"
before=$(ls -a "$src/python")
PLUME_PIP_BUILD_DIR=$scratch/build PLUME_CMAKE_ARGS="-DPLUME_CUDA=OFF -DCMAKE_BUILD_TYPE=Debug" PLUME_PIP_JOBS=2 \
  "$venv/bin/pip" install --no-build-isolation --no-index "$src/python"
[[ $(ls -a "$src/python") == "$before" ]] ||
  { echo "FAIL: pip install wrote into python/ (PLUME_PIP_BUILD_DIR is the place)"; exit 1; }

plain() { env -i PATH=/usr/bin:/bin HOME="$scratch" "$venv/bin/python3" "$@"; }
cd "$scratch" # not the source tree, whose python/plume would shadow the installed one
plain -m plume info

orders=("torch cv2 plume numpy" "plume torch cv2 numpy" "cv2 plume numpy torch"
  "numpy plume cv2 torch" "plume numpy cv2 torch")
if ! plain -c "import torch" 2>/dev/null; then
  echo "note: no torch for $python (Debian: python3-torch, optional): its imports are left out"
  orders=("${orders[@]//torch/}")
fi
check='
import os, numpy as np
here = os.path.dirname(plume.__file__)
assert plume.__file__.startswith(os.path.realpath(os.environ.get("VENV", "/"))), plume.__file__
assert plume._native.lib._name == os.path.join(here, "libplume.so"), plume._native.lib._name
frame = np.zeros((32, 40), np.uint16)
frame[10:14, 20:25] = 4000
with plume.Pipeline("threshold value=3500 ! label ! regions", "u16", frame.shape) as pl:
    table, count = pl.run(frame)
assert int(count[0]) == 1 and table["area"][0] == 20, (count, table[:1])
assert int(plume.ops.threshold(frame, value=3500).sum()) == 20
np.save("frame.npy", frame)
assert np.array_equal(plume.read("frame.npy"), frame)
assert plume._frames.library()._name == os.path.join(here, "libplume_io.so"), plume._frames.library()._name
'
for order in "${orders[@]}"; do
  read -ra names <<<"$order"
  joined=$(IFS=,; echo "${names[*]}")
  imports="import ${joined//,/, }"
  env -i PATH=/usr/bin:/bin HOME="$scratch" VENV="$venv" "$venv/bin/python3" -c "$imports$check"
  echo "ok    $imports"
done
echo "pip install built libplume and libplume_io into the package; plume imports, runs and reads files in every order tried"
