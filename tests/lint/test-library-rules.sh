#!/usr/bin/env bash
# tests/lint/test-library-rules.sh SOURCE_DIR: rules of the library's sources that a
# compiler does not check, each one a defect when broken.
#
#  1. The library prints nothing. It reports through plm_status, plm_last_error() and
#     the report structs; the plume command and the benchmarks print. (streams/assert.h,
#     the invariant check of debug builds that aborts, is the one exception.)
#  2. A failed CUDA runtime call in a launcher goes through kernels/cuda/launch.h
#     (plm__cuda_check_launch, plm__cuda_call_failed), and in the cuda backend through
#     cuda_fail: each empties the runtime's last-error slot, which a message built by
#     hand leaves set, so that the next launch check blames its own kernel for it.
set -uo pipefail
root=${1:?usage: test-library-rules.sh SOURCE_DIR}
cd "$root" || exit 2
library=(streams pool ops kernels pipeline profile)
failed=0

# Calls that write to the terminal: a stdout/stderr argument, or the functions that
# write there by themselves; lines of comments ("*" first) and assert.h left out.
printing=$(grep -rnE '\b(stderr|stdout)\b|\b(v?printf|puts|perror|putchar)\s*\(' \
             --include='*.c' --include='*.h' --include='*.cu' "${library[@]}" |
           grep -vE '^[^:]*:[0-9]+:\s*(/?\*|//)' | grep -v '^streams/assert\.h:')
if [[ -n $printing ]]; then
  echo "rule 1 broken: the library prints (report through plm_status and plm_last_error):"
  echo "$printing"
  failed=1
fi

by_hand=$(grep -rn 'cudaGetErrorString' --include='*.c' --include='*.h' --include='*.cu' \
            "${library[@]}" | grep -vE '^(kernels/cuda/launch\.h|streams/backend_cuda\.c):')
if [[ -n $by_hand ]]; then
  echo "rule 2 broken: a CUDA error reported by hand (use plm__cuda_call_failed in"
  echo "kernels/cuda/launch.h, which empties the last-error slot):"
  echo "$by_hand"
  failed=1
fi

((failed)) || echo "library rules: ok (no printing, CUDA errors through launch.h)"
exit $failed
