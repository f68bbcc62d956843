# tests/python/python.sh, sourced by the Python tests' scripts: sets `python` to the first
# python3 with numpy ($PYTHON, the one on PATH, then Debian's: python3-numpy), or skips
# (exit 77) saying why: no such python3, or a sanitized libplume this test cannot load.
#
# A libplume built with sanitizers (PLUME_SANITIZE, built by PLUME_SANITIZE_CC) needs their
# runtime loaded before anything else, as a sanitized program has it: the runtime is put in
# LD_PRELOAD (gcc's libasan and libubsan; clang's build skips), with leak detection off (the
# interpreter's own allocations at exit are not plume's), so that the Python tests run
# under AddressSanitizer and UndefinedBehaviorSanitizer in CI's sanitizer stages. The CUDA
# emulator's initial-exec TLS, in an EMU build, takes more static TLS than glibc keeps for
# a library loaded late: GLIBC_TUNABLES gives it room. A script that checks how plume loads
# with nothing in the environment sets python_plain_load=1 first, and skips instead; so
# does ThreadSanitizer (not preloaded here).
preload_sanitizers() {
  local cc=${PLUME_SANITIZE_CC:-cc} runtimes=() name
  if "$cc" --version 2>/dev/null | grep -q clang; then
    # clang links the runtime into each executable: preloaded for python3, it would be
    # loaded a second time into the plume command and the Python programs the tests start
    # (inherited through LD_PRELOAD), which its own check refuses.
    echo "skipped: libplume is built by clang with -fsanitize=$PLUME_SANITIZE, whose runtime cannot be preloaded for python3 and the sanitized programs it starts alike (gcc's build runs these tests)"
    exit 77
  fi
  [[ $PLUME_SANITIZE == *address* ]] && runtimes+=(libasan.so)
  [[ $PLUME_SANITIZE == *undefined* ]] && runtimes+=(libubsan.so)
  local preload=()
  for name in "${runtimes[@]}"; do
    local path
    path=$("$cc" -print-file-name="$name" 2>/dev/null)
    if [[ $path != /* || ! -f $path ]]; then
      echo "skipped: libplume is built with -fsanitize=$PLUME_SANITIZE by $cc, whose runtime $name was not found"
      exit 77
    fi
    preload+=("$path")
  done
  export LD_PRELOAD="${preload[*]}${LD_PRELOAD:+ $LD_PRELOAD}"
  export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
  export GLIBC_TUNABLES=glibc.rtld.optional_static_tls=1048576
  echo "note: libplume is sanitized (-fsanitize=$PLUME_SANITIZE): python3 runs with LD_PRELOAD=$LD_PRELOAD"
}
if [[ -n ${PLUME_SANITIZE:-} ]]; then
  if [[ -n ${python_plain_load:-} || $PLUME_SANITIZE == *thread* ]]; then
    echo "skipped: libplume is built with -fsanitize=$PLUME_SANITIZE, which python3 cannot dlopen without its runtime preloaded"
    exit 77
  fi
  preload_sanitizers
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
