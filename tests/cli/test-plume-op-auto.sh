#!/usr/bin/env bash
# tests/cli/test-plume-op-auto.sh PLUME SCRATCH: `plume op --backend auto` (the default)
# through the built binary. auto puts each call where the cost model predicts it faster
# (plm_op_place, plume/op_placement.h): without a GPU that is host, with nothing measured
# and nothing new printed, so a run gives exactly the files of --backend host. With a GPU
# it prints its prediction ("placement: predicted ... -> host|cuda") and the ops whose
# results are integers still give host's bytes. The CUDA emulator (-DPLUME_CUDA=EMU) is a
# cuda device that auto never picks (its times mean nothing), so there auto is as without
# a GPU, and PLUME_BACKEND=cuda runs on it. PLUME_BACKEND decides auto when set.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
plume=$1
fixtures=$(cd "$(dirname "${BASH_SOURCE[0]}")/../fixtures" && pwd)
cli_begin "$plume" "$2" --commands
unset PLUME_BACKEND
gpus=$("$plume" info | sed -n 's/^  cuda: \([0-9][0-9]*\) device.*/\1/p')
gpus=${gpus:-0}
emulated=0
if "$plume" info | grep -q '^  cuda backend: *on the CUDA emulator'; then
  emulated=1
  gpus=0 # for auto: the emulated device is never placed on
fi

# auto_like_host NAME EXACT OP ARGS...: the op on host (--out host-NAME.npy) and on the
# default backend (--out auto-NAME.npy); EXACT (1) when the backends agree bit for bit.
auto_like_host() {
  local name=$1 exact=$2 op=$3
  shift 3
  run 0 "$name on host" op "$op" "$@" --out "host-$name.npy" --backend host || return
  run 0 "$name, auto" op "$op" "$@" --out "auto-$name.npy" || return
  checks=$((checks + 1))
  if ((gpus == 0)); then
    [[ ! -s err.txt ]] || fail "$name, auto: stderr without a GPU: $(cat err.txt)"
    same "auto-$name.npy" "host-$name.npy" "$name, auto"
  else
    grep -qE '^placement: predicted [0-9.]+ ms on host, [0-9.]+ ms on cuda \(copies [0-9.]+\) -> (host|cuda)$' err.txt ||
      fail "$name, auto: no prediction on stderr: $(cat err.txt)"
    if ((exact)); then same "auto-$name.npy" "host-$name.npy" "$name, auto"; fi
  fi
}

auto_like_host threshold 1 threshold --in "$fixtures/in-u8-257x255.npy" --value 100
auto_like_host entropy 0 entropy --in "$fixtures/in-u8-257x255.npy" --window 16
auto_like_host label 1 label --in "$fixtures/in-u8-257x255.npy"
auto_like_host conv2d 0 conv2d --in "$fixtures/in-u8-257x255.npy" --kernel "$fixtures/kernel-3x3.npy"
auto_like_host matmul 0 matmul --a "$fixtures/in-f32-33x65x17-matmul-a.npy" \
  --b "$fixtures/in-f32-33x65x17-matmul-b.npy"
run 0 "--backend auto named" op threshold --in "$fixtures/in-u8-257x255.npy" --value 100 \
  --backend auto --out named-auto.npy && same named-auto.npy host-threshold.npy "--backend auto"

# PLUME_BACKEND decides auto: host runs on host (the same bytes, nothing printed, even
# with a GPU); cuda runs on cuda (without a GPU: the cuda backend's failure); a bad value
# is refused; an explicit --backend is not auto and keeps its backend.
export PLUME_BACKEND=host
run 0 "PLUME_BACKEND=host" op entropy --in "$fixtures/in-u8-257x255.npy" --window 16 \
  --out env-host.npy && same env-host.npy host-entropy.npy "PLUME_BACKEND=host"
checks=$((checks + 1))
[[ ! -s err.txt ]] || fail "PLUME_BACKEND=host: stderr: $(cat err.txt)"
export PLUME_BACKEND=gpu
run 2 "PLUME_BACKEND=gpu" op threshold --in "$fixtures/in-u8-257x255.npy" --value 100 \
  --out env-gpu.npy && expect_err "PLUME_BACKEND=gpu" "PLUME_BACKEND='gpu' is not host, cuda or auto"
absent "PLUME_BACKEND=gpu" env-gpu.npy
run 0 "PLUME_BACKEND=gpu, --backend host" op threshold --in "$fixtures/in-u8-257x255.npy" \
  --value 100 --backend host --out env-explicit.npy &&
  same env-explicit.npy host-threshold.npy "PLUME_BACKEND=gpu, --backend host"
if ((emulated)); then
  export PLUME_BACKEND=cuda
  run 0 "PLUME_BACKEND=cuda, emulated" op threshold --in "$fixtures/in-u8-257x255.npy" \
    --value 100 --out env-cuda.npy && same env-cuda.npy host-threshold.npy "PLUME_BACKEND=cuda, emulated"
elif ((gpus == 0)); then
  export PLUME_BACKEND=cuda
  checks=$((checks + 1))
  "$plume" op threshold --in "$fixtures/in-u8-257x255.npy" --value 100 --out env-cuda.npy \
    >out.txt 2>err.txt && fail "PLUME_BACKEND=cuda ran without a GPU"
  absent "PLUME_BACKEND=cuda" env-cuda.npy
fi
unset PLUME_BACKEND

# A file that cannot be read is the same error under auto as under host.
run 2 "missing input, auto" op threshold --in missing.npy --value 100 --out missing-out.npy &&
  expect_err "missing input, auto" "missing.npy"
absent "missing input, auto" missing-out.npy

# The help says what auto does.
run 0 "help" op threshold --help &&
  {
    checks=$((checks + 1))
    grep -qF "predicts faster for this call" out.txt || fail "help lacks auto's model: $(cat out.txt)"
  }

cli_end
