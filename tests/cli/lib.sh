# shellcheck shell=bash
# tests/cli/lib.sh: what the command-line tests (tests/cli/test-*.sh) share. Sourced by
# each, after `set -u`:
#
#   cli_begin PROGRAM SCRATCH [--commands]
#       PROGRAM is the binary under test; SCRATCH is emptied and becomes the working
#       directory; `checks` and `failures` start at 0. --commands: PROGRAM's first
#       argument is a command whose usage errors name it ("plume op: ...", "plume scene:
#       ..."), else they start with PROGRAM's name alone ("bench_ops: ...").
#   fail MESSAGE
#       a failed check: "FAIL: MESSAGE" on stderr, counted in `failures`.
#   run EXPECTED_RC NAME ARGS...
#       runs PROGRAM ARGS, stdout to out.txt and stderr to err.txt, and checks the exit
#       code (returns 1 when it is wrong, so `run ... && more checks` skips the rest). A
#       usage error (EXPECTED_RC 2) must print one line on stderr, starting as above.
#       A command still running after CLI_COMMAND_LIMIT seconds (default 150) is killed
#       and fails as hung, named, rather than the whole script running into ctest's
#       timeout without saying which command never returned.
#   expect_err NAME NEEDLE
#       err.txt contains NEEDLE (a fixed string).
#   same FILE EXPECTED NAME
#       the two files are byte-identical.
#   absent NAME FILES...
#       none of FILES exists, and no temporary file (*.tmp-*) is left in . or a folder
#       below it; FILES are removed.
#   run_full_disk EXPECTED_RC NAME ARGS...
#       as run, with every write failing as on a full disk (ulimit -f 0); no stderr check.
#   run_disk_room KIB EXPECTED_RC NAME ARGS...
#       as run_full_disk, with room for files of up to KIB KiB each (ulimit -f KIB).
#   run_interrupted SIGNAL WATCH EXPECTED_RC NAME ARGS...
#       runs PROGRAM ARGS in the background, waits (up to 60 s) for a file matching the
#       glob WATCH to appear (the command's temporary output: it is mid-run), stops it,
#       checks that WATCH still matches (it has not finished), sends SIGNAL, lets it go
#       on, and checks the exit code (stdout to out.txt, stderr to err.txt).
#   cli_end
#       prints "SCRIPT: N checks, M failures"; its status (the script's last command) is
#       0 only when no check failed.
#
# Each of these checks counts 1 in `checks`; a script's own checks add theirs
# (checks=$((checks + 1))) before each condition.

cli_begin() {
  cli_program=$1
  cli_name=$(basename "$1")
  cli_commands=$([[ ${3-} == --commands ]] && echo 1 || echo 0)
  rm -rf "$2"
  mkdir -p "$2"
  cd "$2" || exit 1
  checks=0
  failures=0
}

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

run() {
  local expected=$1 name=$2
  shift 2
  checks=$((checks + 1))
  timeout -k 10 "${CLI_COMMAND_LIMIT:-150}" "$cli_program" "$@" >out.txt 2>err.txt
  local rc=$?
  if [[ $rc == 124 || $rc == 137 ]]; then
    fail "$name: still running after ${CLI_COMMAND_LIMIT:-150} s, killed (a hang?): $*"
    return 1
  fi
  if [[ $rc != "$expected" ]]; then
    fail "$name: exit $rc, expected $expected (stderr: $(head -c 1000 err.txt))"
    return 1
  fi
  if [[ $expected == 2 ]]; then
    local prefix=$cli_name
    if ((cli_commands)); then prefix="$cli_name ${1-}"; fi
    if [[ $(wc -l <err.txt) != 1 || $(head -n 1 err.txt) != "$prefix"* ]]; then
      fail "$name: expected one '$prefix...' line on stderr, got: $(cat err.txt)"
    fi
  fi
  return 0
}

expect_err() {
  checks=$((checks + 1))
  grep -qF -- "$2" err.txt || fail "$1: stderr lacks '$2': $(cat err.txt)"
}

same() {
  checks=$((checks + 1))
  if ! cmp -s "$1" "$2"; then
    fail "$3: $1 differs from $2: $(od -An -v -tu1 "$1" | tail -c 80) vs $(od -An -v -tu1 "$2" | tail -c 80)"
  fi
}

absent() {
  local name=$1
  shift
  checks=$((checks + 1))
  for f in "$@"; do [[ -e $f ]] && fail "$name: $f was created"; done
  if compgen -G '*.tmp-*' >/dev/null || compgen -G '*/*.tmp-*' >/dev/null; then
    fail "$name: a temporary file was left: $(ls ./*.tmp-* ./*/*.tmp-* 2>/dev/null)"
  fi
  rm -f "$@"
}

# run_full_disk EXPECTED_RC NAME ARGS...: run, but with no file allowed to grow (ulimit -f
# 0, SIGXFSZ ignored: a write fails with EFBIG, as on a full disk); checks the exit code.
run_full_disk() {
  run_disk_room 0 "$@"
}

run_disk_room() {
  local room=$1 expected=$2 name=$3
  shift 3
  checks=$((checks + 1))
  # stderr through a pipe to cat, which the limit does not bind (err.txt is a file).
  (trap '' XFSZ; ulimit -f "$room"; exec "$cli_program" "$@") 2>&1 >/dev/null | cat >err.txt
  local rc=${PIPESTATUS[0]}
  [[ $rc == "$expected" ]] || { fail "$name: exit $rc, expected $expected (stderr: $(cat err.txt))"; return 1; }
}

run_interrupted() {
  local signal=$1 watch=$2 expected=$3 name=$4
  shift 4
  checks=$((checks + 1))
  "$cli_program" "$@" >out.txt 2>err.txt &
  local pid=$! waited=0
  until compgen -G "$watch" >/dev/null; do
    if ! kill -0 "$pid" 2>/dev/null || ((waited >= 6000)); then
      wait "$pid"
      fail "$name: $watch never appeared (exit $?; stderr: $(head -c 1000 err.txt))"
      return 1
    fi
    sleep 0.01
    waited=$((waited + 1))
  done
  kill -STOP "$pid"
  if ! compgen -G "$watch" >/dev/null; then
    kill -CONT "$pid"
    wait "$pid"
    fail "$name: finished before the signal could be sent (make its work longer)"
    return 1
  fi
  kill "-$signal" "$pid"
  kill -CONT "$pid"
  wait "$pid"
  local rc=$?
  [[ $rc == "$expected" ]] || { fail "$name: exit $rc, expected $expected (stderr: $(head -c 1000 err.txt))"; return 1; }
}

# wait_catching PID SIGNAL: wait until process PID catches SIGNAL (its handler is installed:
# the signal's bit of SigCgt in /proc/PID/status), so that a signal sent next reaches the
# handler, however slow the start (sanitizers, a loaded machine), instead of the default
# action. Returns 1 when PID ends first or after 60 s.
wait_catching() {
  local pid=$1 number mask line deadline=$((SECONDS + 60))
  number=$(kill -l "$2") || return 1
  while ((SECONDS < deadline)); do
    mask=
    while read -r line; do
      [[ $line == SigCgt:* ]] && mask=${line#SigCgt:} && mask=${mask//[[:space:]]/}
    done 2>/dev/null <"/proc/$pid/status"
    [[ -n $mask ]] || return 1
    (((16#$mask >> (number - 1)) & 1)) && return 0
    sleep 0.01
  done
  return 1
}

cli_end() {
  echo "$(basename "$0" .sh): $checks checks, $failures failures"
  ((failures == 0))
}
