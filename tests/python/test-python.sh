#!/usr/bin/env bash
# tests/python/test-python.sh LIBPLUME PLUME_CLI SOURCE_DIR [TEST_FILE]: the Python module's
# tests (python/tests/TEST_FILE, test_plume.py when not given) against this build: with a
# sanitized library, under its sanitizers (tests/python/python.sh preloads their runtime).
# Skips (77) where they cannot run: no python3 with numpy, a sanitizer runtime not found.
set -euo pipefail
lib=$1 cli=$2 src=$3 file=${4:-test_plume.py}
# shellcheck source=tests/python/python.sh
source "$(dirname "$0")/python.sh" # sets python, or skips
export PLUME_LIBRARY=$lib PLUME_CLI=$cli PYTHONPATH=$src/python
exec "$python" "$src/python/tests/$file" -v
