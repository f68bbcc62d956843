#!/usr/bin/env bash
# tests/python/test-python.sh LIBPLUME PLUME_CLI SOURCE_DIR [TEST_FILE]: the Python module's
# tests (python/tests/TEST_FILE, test_plume.py when not given) against this build. Skips (77) where they cannot run: no
# python3 with numpy, or a sanitized library (its runtime would have to be loaded first).
set -euo pipefail
lib=$1 cli=$2 src=$3 file=${4:-test_plume.py}
if [[ -n ${PLUME_SANITIZE:-} ]]; then
  echo "skipped: libplume is built with -fsanitize=$PLUME_SANITIZE, which python3 cannot dlopen"
  exit 77
fi
# The first python3 with numpy: $PYTHON, the one on PATH, then Debian's (python3-numpy).
python=
for candidate in ${PYTHON:-} python3 /usr/bin/python3; do
  if "$candidate" -c "import numpy" 2>/dev/null; then
    python=$candidate
    break
  fi
done
if [[ -z $python ]]; then
  echo "skipped: no python3 with numpy (Debian: python3-numpy)"
  exit 77
fi
export PLUME_LIBRARY=$lib PLUME_CLI=$cli PYTHONPATH=$src/python
exec "$python" "$src/python/tests/$file" -v
