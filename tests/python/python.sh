# tests/python/python.sh, sourced by the Python tests' scripts: sets `python` to the first
# python3 with numpy ($PYTHON, the one on PATH, then Debian's: python3-numpy), or skips
# (exit 77) saying why: no such python3, or a libplume built with sanitizers (PLUME_SANITIZE),
# which python3 cannot dlopen (their runtime would have to be loaded first).
if [[ -n ${PLUME_SANITIZE:-} ]]; then
  echo "skipped: libplume is built with -fsanitize=$PLUME_SANITIZE, which python3 cannot dlopen"
  exit 77
fi
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
