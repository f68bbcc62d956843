#!/usr/bin/env bash
# tests/lint/test-layers.sh SOURCE_DIR: the include-order check. plume's top-level folders
# are layers; a file may include from its own folder or from a folder on a lower layer,
# never from one above it nor from another folder on its own layer (two folders on one
# layer that include each other would be a circle). README.md's Layout section states the
# same order.
#
# A public header (include/plume/X.h) is the contract of a folder, on the ground floor: a
# source that includes it is not named X.c (or X.cu, X.cpp). A reader, and farm-studio,
# takes a header to be the header of the source of its name, which would file the contract
# with that source, on its layer, and turn every include of it from include/ into one
# that points up (tensor/descriptor.c implements plume/tensor.h, not tensor/tensor.c).
#
# Each #include "..." of a C, header, CUDA or C++ file is resolved as the compiler's
# include path would find it (the file's own folder, the source root, include/,
# mpi/include/, emu/include/); an include that names no file of the tree (a generated
# header, a system header) is not a layer's and is skipped.
set -uo pipefail
root=${1:?usage: test-layers.sh SOURCE_DIR}
cd "$root" || exit 2

# The layers, lowest first; folders on one line share a layer and may not include each other.
layers=(
  "include emu"          # public headers; the CUDA emulator (a test tool, plume-free)
  "streams"              # devices, backends, streams, events, the CPU thread pool
  "pool kernels tensor"  # the memory pools; the compute; tensors and DLPack
  "ops"                  # the op framework and the operations
  "profile"              # timing, statistics, calibration, tuning
  "pipeline"             # graphs, plans, executors
  "support"              # the C support library of apps, benchmarks and tests
  "mpi io"               # plume_mpi, beside apps, over pipeline; libplume_io, over support
  "benchmarks"           # the benchmark binaries and their libraries (pipeline_bench)
  "apps"                 # the plume command (plume demo runs pipeline_bench)
  "tests examples docs"  # suites and programs, over everything
)

# Known exceptions, one "FILE INCLUDE reason" a line: an include that breaks the order and
# cannot be fixed yet. An exception that no longer occurs fails the check, so the list
# cannot go stale.
exceptions=(
)

declare -A rank
for i in "${!layers[@]}"; do
  for folder in ${layers[$i]}; do
    [[ -d $folder ]] || { echo "layers: the folder $folder/ is missing: update the list"; exit 2; }
    rank[$folder]=$i
  done
done

declare -A excepted used
for line in "${exceptions[@]}"; do
  read -r file include _ <<<"$line"
  excepted["$file $include"]=1
done

# resolve FILE INCLUDE: sets target to the tree's file that INCLUDE names from FILE, with
# "." and ".." folded away, or to nothing (no subshells: the check runs in a second).
resolve() {
  local candidate part
  local -a parts kept
  target=
  for candidate in "${1%/*}/$2" "$2" "include/$2" "mpi/include/$2" "emu/include/$2"; do
    [[ -f $candidate ]] || continue
    IFS=/ read -ra parts <<<"$candidate"
    kept=()
    for part in "${parts[@]}"; do
      case $part in
        . | '') ;;
        ..) ((${#kept[@]} > 0)) && unset 'kept[-1]' ;;
        *) kept+=("$part") ;;
      esac
    done
    printf -v target "%s/" "${kept[@]}"
    target=${target%/}
    return
  done
}

folders=()
for i in "${!layers[@]}"; do
  folders+=(${layers[$i]})
done
sources=$(find "${folders[@]}" -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' \
  -o -name '*.cuh' -o -name '*.cpp' -o -name '*.hpp' \)) || {
  echo "layers: find failed under $root"
  exit 2
}
[[ -n $sources ]] || { echo "layers: no sources found under $root"; exit 2; }

failed=0
checked=0
while IFS=: read -r file number include; do
  from=${file%%/*}
  [[ -n ${rank[$from]+x} ]] || continue
  resolve "$file" "$include"
  [[ -n $target ]] || continue
  if [[ $target == include/plume/* ]]; then
    stem=${target##*/}
    stem=${stem%.h}
    name=${file##*/}
    if [[ ${name%.*} == "$stem" && $name != *.h ]]; then
      echo "$file:$number: includes the public header $target and is named like it: name the source for what it does"
      failed=1
    fi
  fi
  to=${target%%/*}
  [[ $to == "$from" ]] && continue
  checked=$((checked + 1))
  if [[ -z ${rank[$to]+x} ]]; then
    echo "$file:$number: includes \"$include\" ($target) from $to/, a folder on no layer"
    failed=1
  elif ((rank[$to] >= rank[$from])); then
    if [[ -n ${excepted["$file $include"]+x} ]]; then
      used["$file $include"]=1
      continue
    fi
    if ((rank[$to] == rank[$from])); then
      echo "$file:$number: includes \"$include\" from $to/, on the layer of $from/ (folders of one layer may not include each other)"
    else
      echo "$file:$number: includes \"$include\" from $to/, a layer above $from/"
    fi
    failed=1
  fi
done < <(xargs -d '\n' grep -HnoE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]+"' <<<"$sources" |
  sed -E 's/^([^:]*):([0-9]+):.*"([^"]+)"$/\1:\2:\3/')

for key in "${!excepted[@]}"; do
  if [[ -z ${used[$key]+x} ]]; then
    echo "layers: the known exception \"$key\" no longer occurs: remove it from the list"
    failed=1
  fi
done

((checked > 0)) || { echo "layers: no include between folders was found: the search is broken"; exit 2; }
((failed == 0)) && echo "layers: $checked includes between folders, all pointing down the order"
exit $failed
