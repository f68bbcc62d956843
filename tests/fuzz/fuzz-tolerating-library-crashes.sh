#!/usr/bin/env bash
# tests/fuzz/fuzz-tolerating-library-crashes.sh LIBRARY KNOWN_CRASH FUZZER ARGS...: run a
# libFuzzer harness whose third-party library has a crash plume cannot guard against, and
# fail on everything else.
#
# fuzz_hdf5's libhdf5 1.10.8 dereferences NULL inside itself on some damaged old-style groups
# (support/hdf5_io.h; KNOWN_CRASH is one such file), which no check before the library's
# own walk can refuse; and on others asks malloc for the local heap size the file declares
# (known-crashes/hdf5-local-heap-oom: 3.8 GB for a file of 2.4 KB, while H5Literate walks the
# group; the read that follows fails and the block is freed, and glibc's malloc would hand
# out untouched pages), which libFuzzer reports as running out of memory. A plain run would
# stop at the first such input, and CI would go red by chance. So the harness runs in
# libFuzzer's fork mode (each job a child process), where a crash or an allocation past the
# limit is saved as an artifact and fuzzing goes on (-ignore_crashes=1 -ignore_ooms=1),
# while timeouts still stop it (-ignore_timeouts=0). Afterwards every artifact is replayed,
# and the run fails unless each is the library's alone: AddressSanitizer's SEGV on a read
# whose first frame, past the C library's copy and ASan's interceptor, is in LIBRARY (a file
# name matched as a substring, "libhdf5"), or libFuzzer's out-of-memory on a malloc whose
# caller, past the allocator's and libFuzzer's frames, is in LIBRARY. A leak, a timeout, an
# allocation by plume's code, a buffer overflow or use after free (whatever the frames), a
# SEGV on a write, UBSan's reports, a harness check, or a SEGV in plume's code fail.
#
# First the rules themselves are checked on every file of KNOWN_CRASH's folder: each must
# still fail and be tolerated, so that a library that has since been fixed is noticed (the
# script says so and the known file can go), and a rule that would tolerate nothing is
# noticed too.
#
# Exit: 0 when every artifact is tolerated; 1 otherwise, with each report's first lines.
set -uo pipefail
library=${1:?usage: fuzz-tolerating-library-crashes.sh LIBRARY KNOWN_CRASH FUZZER ARGS...}
known=${2:?known crash}
fuzzer=${3:?fuzzer}
shift 3
artifacts=$(mktemp -d)
trap 'rm -rf "$artifacts"' EXIT

# first_frame_in_library REPORT SKIP: whether the report's first stack frame that does not
# match the awk pattern SKIP (the sanitizer's, the allocator's, the C library's frames) is in
# $library. (One awk over the file, no pipeline: an early exit in one would fail by SIGPIPE
# under pipefail.)
first_frame_in_library() {
  awk -v library="$library" -v skip="$2" '
    /^ +#[0-9]+ / && $0 !~ skip { found = index($0, library) > 0; exit }
    END { exit !found }' "$1"
}

# tolerated REPORT: whether the ASan report is a SEGV on a read whose first frame outside
# the C library's copies and the sanitizer's interceptors (libhdf5's memcpy reaches libc
# through ASan's) is in $library.
tolerated() {
  grep -q "ERROR: AddressSanitizer: SEGV" "$1" &&
    grep -q "The signal is caused by a READ memory access" "$1" &&
    first_frame_in_library "$1" '__interceptor_|__asan_|__sanitizer_|/sysdeps/|libc[.]so'
}

# tolerated_oom REPORT: whether the report is libFuzzer's out-of-memory on a malloc whose
# first frame past the sanitizer's allocator, libFuzzer's hooks and malloc itself is in
# $library.
tolerated_oom() {
  grep -q "ERROR: libFuzzer: out-of-memory (malloc(" "$1" &&
    first_frame_in_library "$1" '__sanitizer|__asan|fuzzer::| in malloc | in calloc | in realloc |libc[.]so'
}

# replay FILE REPORT: run the harness on FILE once, its report into REPORT; 0 if it passed.
replay() {
  "$fuzzer" -runs=1 "$1" >"$2" 2>&1
}

for file in "$(dirname "$known")"/*; do
  if replay "$file" "$artifacts/known.txt"; then
    echo "fuzz: $file no longer fails inside $library: it has been fixed; remove the known" \
      "file (and this wrapper, if it was the last, from its fuzzer: tests/fuzz/CMakeLists.txt)" >&2
    exit 1
  fi
  if ! tolerated "$artifacts/known.txt" && ! tolerated_oom "$artifacts/known.txt"; then
    echo "fuzz: the known file $file is neither a SEGV nor an allocation past the limit" \
      "with its first frame in $library:" >&2
    head -n 30 "$artifacts/known.txt" >&2
    exit 1
  fi
done

# The fuzzing itself: -artifact_prefix given by the caller is replaced, so that this run's
# artifacts are the ones looked at; a failing one is copied there afterwards.
args=()
keep=./
for arg in "$@"; do
  if [[ $arg == -artifact_prefix=* ]]; then keep=${arg#-artifact_prefix=}; else args+=("$arg"); fi
done
"$fuzzer" -fork=1 -ignore_crashes=1 -ignore_timeouts=0 -ignore_ooms=1 \
  -artifact_prefix="$artifacts/" "${args[@]}"
status=$?

failed=0
tolerated_count=0
for artifact in "$artifacts"/crash-* "$artifacts"/leak-* "$artifacts"/timeout-* "$artifacts"/oom-*; do
  [[ -e $artifact ]] || continue
  name=$(basename "$artifact")
  report="$artifacts/report-$name.txt"
  if [[ $name == crash-* ]] && ! replay "$artifact" "$report" && tolerated "$report"; then
    tolerated_count=$((tolerated_count + 1))
    echo "fuzz: $name: a crash inside $library itself, tolerated (as $known)" >&2
    continue
  fi
  if [[ $name == oom-* ]] && ! replay "$artifact" "$report" && tolerated_oom "$report"; then
    tolerated_count=$((tolerated_count + 1))
    echo "fuzz: $name: an allocation by $library itself past the limit, tolerated" >&2
    continue
  fi
  failed=1
  cp "$artifact" "$keep$name" 2>/dev/null || true
  echo "FAIL: fuzz: $name (kept as $keep$name; $fuzzer $keep$name reproduces it):" >&2
  head -n 40 "$report" 2>/dev/null >&2 || true
done
if ((failed == 0 && status != 0 && tolerated_count == 0)); then
  echo "FAIL: fuzz: $fuzzer exited $status without an artifact" >&2
  failed=1
fi
echo "fuzz: $tolerated_count crash(es) or allocation(s) inside $library tolerated, every other" \
  "input clean" \
  "$( ((failed)) && echo ': NO, see above')" >&2
exit "$failed"
