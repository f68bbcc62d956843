#!/usr/bin/env bash
# tests/lint/test-library-rules.sh SOURCE_DIR: rules of the library's sources that a
# compiler does not check, each one a defect when broken.
#
#  1. The library prints nothing. It reports through plm_status, plm_last_error() and
#     the report structs; the plume command and the benchmarks print. libplume_io (io/)
#     likewise, through plm_frames_last_error(). (streams/assert.h,
#     the invariant check of debug builds that aborts, is the one exception.)
#  2. A failed CUDA runtime call in a launcher goes through kernels/cuda/launch.h
#     (plm__cuda_check_launch, plm__cuda_call_failed), and in the cuda backend through
#     cuda_fail: each empties the runtime's last-error slot, which a message built by
#     hand leaves set, so that the next launch check blames its own kernel for it.
#  3. Every file is opened through streams/file.h (plm__file_open_regular to read or
#     append, plm__file_out_* to write, or the command's support/regular_file.h and
#     support/output_file.h over them), in the library, libplume_io, the command, its support
#     library, MPI and the benchmarks: a path that is a FIFO, a device, a link or a folder is then treated
#     one way, and an output is written whole or not at all (docs/failure-behaviour.md).
#     streams/file.c, the opener itself, is one exception; support/unnamed_file.c, which
#     makes files without a name (O_TMPFILE, or created and unlinked at once) for the
#     rows rank 0 gathers under MPI, the other: it opens no path of the user's.
#     open_memstream and fdopen of a descriptor the opener gave open no path.
#  4. The library reads numbers as the C locale has them, whatever locale the program that
#     loaded it set (streams/c_numbers.h): plm__c_strtod, never strtod, strtof, strtold or
#     atof, which stop at the point of "1.5" where the decimal separator is a comma.
#     streams/c_numbers.c, where plm__c_strtod is made, is the exception.
#  5. Names are compared without case as ASCII (streams/ascii.h), never with strcasecmp or
#     strncasecmp, which follow the program's LC_CTYPE (under tr_TR ".TIF" is not ".tif"):
#     in the library, libplume_io, the command, its support library and MPI.
#
# A grep that fails (a renamed folder, a bad pattern) fails the lint: every search goes
# through `search`, which tells "nothing found" (grep's 1) from an error (2), and each
# rule's pattern is first shown to find a line that breaks it, so that a pattern broken
# by an edit cannot pass having matched nothing.
set -uo pipefail
root=${1:?usage: test-library-rules.sh SOURCE_DIR}
cd "$root" || exit 2
library=(streams pool tensor ops kernels pipeline profile)
failed=0
scratch=$(mktemp -d) || exit 2
trap 'rm -rf "$scratch"' EXIT

for folder in "${library[@]}"; do
  [[ -d $folder ]] || { echo "lint: the library folder $folder/ is missing: update the list"; exit 2; }
done

# search OUT PATTERN PATH...: the lines of C, header and CUDA files under PATH that match the
# extended regex PATTERN, as file:line:text, into OUT; exits the lint on a grep error.
search() {
  local out=$1 pattern=$2
  shift 2
  grep -rnE "$pattern" --include='*.c' --include='*.h' --include='*.cu' "$@" >"$out"
  local rc=$?
  if ((rc > 1)); then
    echo "lint: grep failed (exit $rc) searching $* for $pattern"
    exit 2
  fi
}

# drop OUT PATTERN: remove from OUT the lines matching the extended regex PATTERN.
drop() {
  grep -vE "$2" "$1" >"$1.kept"
  local rc=$?
  if ((rc > 1)); then
    echo "lint: grep -v failed (exit $rc) on $1"
    exit 2
  fi
  mv "$1.kept" "$1"
}

# Rule 1's and rule 2's searches, then a check that each finds what it must.
printing_pattern='\b(stderr|stdout)\b|\b(v?printf|puts|perror|putchar)\s*\('
printing() { # printing OUT PATH...: the printing calls of PATH, comments and assert.h left out
  local out=$1
  shift
  search "$out" "$printing_pattern" "$@"
  drop "$out" '^[^:]*:[0-9]+:\s*(/?\*|//)'
  drop "$out" '^streams/assert\.h:'
}
by_hand_pattern='cudaGetErrorString'
by_hand() { # by_hand OUT PATH...: CUDA errors reported outside launch.h and the cuda backend
  local out=$1
  shift
  search "$out" "$by_hand_pattern" "$@"
  drop "$out" '^(kernels/cuda/launch\.h|streams/backend_cuda\.c):'
}

opening_pattern='(^|[^_[:alnum:].>])(fopen|freopen|open|openat|creat|mkstemp|mkostemp)[[:space:]]*\('
opening() { # opening OUT PATH...: files opened past streams/file.h, comments left out
  local out=$1
  shift
  search "$out" "$opening_pattern" "$@"
  drop "$out" '^[^:]*:[0-9]+:\s*(/?\*|//)'
  drop "$out" '^(streams/file\.c|support/unnamed_file\.c):'
}
opened_folders=("${library[@]}" io apps support mpi benchmarks)

locale_pattern='(^|[^_[:alnum:]])(strtod|strtof|strtold|atof)[[:space:]]*\('
case_pattern='(^|[^_[:alnum:]])(strcasecmp|strncasecmp)[[:space:]]*\('
case_bound() { # case_bound OUT PATH...: names compared in the host's LC_CTYPE, comments left out
  local out=$1
  shift
  search "$out" "$case_pattern" "$@"
  drop "$out" '^[^:]*:[0-9]+:\s*(/?\*|//)'
}
locale_bound() { # locale_bound OUT PATH...: numbers read in the host's locale, comments left out
  local out=$1
  shift
  search "$out" "$locale_pattern" "$@"
  drop "$out" '^[^:]*:[0-9]+:\s*(/?\*|//)'
  drop "$out" '^streams/c_numbers\.c:'
}

mkdir -p "$scratch/probe"
cat >"$scratch/probe/probe.c" <<'C'
/* a comment that mentions printf( is not a call, nor is fopen( */
static void f(void) { fprintf(stderr, "x"); }
static const char *g(int e) { return cudaGetErrorString(e); }
static FILE *h(const char *p) { return fopen(p, "r"); }
static int i(struct ops *o) { return o->open(0) + plm__file_open_regular(0); }
static double j(const char *t) { return strtod(t, 0) + plm__c_strtod(t, 0); }
static int k(const char *t) { return strcasecmp(t, "x") + plm__ascii_casecmp(t, "x"); }
C
(cd "$scratch" && printing "$scratch/probe-printing.txt" probe && by_hand "$scratch/probe-by-hand.txt" probe &&
  opening "$scratch/probe-opening.txt" probe && locale_bound "$scratch/probe-locale.txt" probe &&
  case_bound "$scratch/probe-case.txt" probe)
[[ $(wc -l <"$scratch/probe-printing.txt") == 1 && $(wc -l <"$scratch/probe-by-hand.txt") == 1 &&
  $(wc -l <"$scratch/probe-opening.txt") == 1 && $(wc -l <"$scratch/probe-locale.txt") == 1 &&
  $(wc -l <"$scratch/probe-case.txt") == 1 ]] || {
  echo "lint: a rule's pattern misses the printing call, the CUDA error, the opening, the"
  echo "strtod or the strcasecmp of its probe:"
  cat "$scratch/probe-printing.txt" "$scratch/probe-by-hand.txt" "$scratch/probe-opening.txt" \
    "$scratch/probe-locale.txt" "$scratch/probe-case.txt"
  exit 2
}

# Calls that write to the terminal: a stdout/stderr argument, or the functions that
# write there by themselves; lines of comments ("*" first) and assert.h left out.
printing "$scratch/printing.txt" "${library[@]}" io
if [[ -s $scratch/printing.txt ]]; then
  echo "rule 1 broken: the library prints (report through plm_status and plm_last_error):"
  cat "$scratch/printing.txt"
  failed=1
fi

by_hand "$scratch/by-hand.txt" "${library[@]}"
if [[ -s $scratch/by-hand.txt ]]; then
  echo "rule 2 broken: a CUDA error reported by hand (use plm__cuda_call_failed in"
  echo "kernels/cuda/launch.h, which empties the last-error slot):"
  cat "$scratch/by-hand.txt"
  failed=1
fi

for folder in io apps support mpi benchmarks; do
  [[ -d $folder ]] || { echo "lint: the folder $folder/ is missing: update opened_folders"; exit 2; }
done
opening "$scratch/opening.txt" "${opened_folders[@]}"
if [[ -s $scratch/opening.txt ]]; then
  echo "rule 3 broken: a file opened past streams/file.h (plm__file_open_regular,"
  echo "plm__file_out_*, or support/regular_file.h and support/output_file.h):"
  cat "$scratch/opening.txt"
  failed=1
fi

locale_bound "$scratch/locale.txt" "${library[@]}" io
if [[ -s $scratch/locale.txt ]]; then
  echo "rule 4 broken: a number read in the host program's locale (use plm__c_strtod,"
  echo "streams/c_numbers.h):"
  cat "$scratch/locale.txt"
  failed=1
fi

case_bound "$scratch/case.txt" "${library[@]}" io apps support mpi
if [[ -s $scratch/case.txt ]]; then
  echo "rule 5 broken: names compared in the host program's LC_CTYPE (use plm__ascii_casecmp,"
  echo "streams/ascii.h):"
  cat "$scratch/case.txt"
  failed=1
fi

((failed)) || echo "library rules: ok (no printing, CUDA errors through launch.h, files through streams/file.h, numbers in the C locale, names compared as ASCII)"
exit $failed
