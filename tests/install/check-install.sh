#!/usr/bin/env bash
# Install a built plume into a scratch prefix and build an application outside the
# tree (tests/install/consumer) against it, three ways:
#   (a) CMake: find_package(plume) -> plume::plume and plume::plume_static;
#   (b) pkg-config, shared:  cc main.c $(pkg-config --cflags --libs plume);
#   (c) pkg-config, static:  cc main.c $(pkg-config --cflags --libs plume-static), as
#       written, with and without --static: the program must contain plume (no
#       libplume.so in readelf's NEEDED nor in ldd's list) with nothing edited; and
#       cc -static main.c $(pkg-config --cflags --static --libs plume), all static.
# Every binary must run and print "consumer ok <version>", and keep the C library's
# malloc: plume's jemalloc is private to it (scripts/private-jemalloc), so linking plume,
# shared or static, never changes a program's allocator. Before that, the installed
# libplume.so must export no allocator, call no jemalloc outside itself and need none.
# libplume_io.so must export plume/io.h's functions alone and carry the file format libraries
# libplume.so must not need. Then (d) the Python module in PREFIX/python (frames read through
# PREFIX/lib's libplume_io too), and (e) the C examples (examples/) built
# against the installed package as examples/README.md says, one of them run.
#
# Usage: check-install.sh <plume build dir> <scratch dir>
# The scratch dir is deleted and recreated on every run.
# Environment: CMAKE (the cmake to use), CC (the C compiler, default cc),
# PLUME_SANITIZE (the library's sanitizers: the consumers are built with them too).
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 <plume build dir> <scratch dir>" >&2
  exit 2
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$(cd "$1" && pwd)
scratch=$2
cmake=${CMAKE:-cmake}
cc=${CC:-cc}
consumer_src=$here/consumer

step() { printf '\n== %s\n' "$*"; }
run() { printf '+ %s\n' "$*" >&2; "$@"; }
fail() { echo "check-install: FAIL: $*" >&2; exit 1; }

# Sanitized libraries need the sanitizer runtime in every program that links them.
san_flags=()
if [[ -n ${PLUME_SANITIZE:-} ]]; then
  san_flags=("-fsanitize=$PLUME_SANITIZE")
fi

step "scratch dir $scratch (recreated)"
rm -rf -- "$scratch"
mkdir -p -- "$scratch"
scratch=$(cd "$scratch" && pwd)
prefix=$scratch/prefix

step "install $build into $prefix"
run "$cmake" --install "$build" --prefix "$prefix"

# The library dir is whatever GNUInstallDirs chose at configure time (lib, lib64 or
# lib/<multiarch>): find it from the installed pkg-config file rather than assume.
pc_files=()
while IFS= read -r f; do pc_files+=("$f"); done < <(find "$prefix" -path '*/pkgconfig/plume.pc' -type f)
[[ ${#pc_files[@]} -eq 1 ]] || fail "expected one installed pkgconfig/plume.pc, found ${#pc_files[@]}: ${pc_files[*]:-}"
libdir=$(dirname "$(dirname "${pc_files[0]}")")
echo "installed library dir: $libdir"
for f in "$libdir/libplume.a" "$libdir/libplume.so" "$libdir/cmake/plume/plumeConfig.cmake" \
         "$prefix/include/plume/plume.h"; do
  [[ -e $f ]] || fail "not installed: $f"
done

step "(0) libplume.so: no allocator exported, no jemalloc needed (nm -D, readelf -d)"
so=$libdir/libplume.so
# Allocator entry points: C's, jemalloc's API (plain or prefixed), C++'s operator new/delete.
allocator_re='^(malloc|free|calloc|realloc|reallocarray|posix_memalign|aligned_alloc|memalign|valloc|pvalloc|malloc_usable_size|mallocx|rallocx|xallocx|sallocx|dallocx|sdallocx|nallocx|mallctl|mallctlnametomib|mallctlbymib|malloc_stats_print|malloc_conf|malloc_message|je_.*|plm__je_.*|_Znw.*|_Zna.*|_Zdl.*|_Zda.*)$'
dynamic_symbols() { nm -D "$@" "$so" | awk '{print $NF}' | sed 's/@.*//'; }
# Defined: none (plume's jemalloc is inside, prefixed and hidden; malloc stays the program's).
exported=$(dynamic_symbols --defined-only | grep -E "$allocator_re" || true)
[[ -z $exported ]] || fail "$so exports allocator symbols: $(echo "$exported" | head -n 20 | tr '\n' ' ')"
# Undefined: no jemalloc API (a jemalloc outside libplume would have to provide it).
jemalloc_refs=$(dynamic_symbols --undefined-only | grep -E "$allocator_re" |
  grep -Ev '^(malloc|free|calloc|realloc|reallocarray|posix_memalign|aligned_alloc|_Znw.*|_Zna.*|_Zdl.*|_Zda.*)$' || true)
[[ -z $jemalloc_refs ]] || fail "$so calls a jemalloc outside itself: $(echo "$jemalloc_refs" | tr '\n' ' ')"
if readelf -d "$so" | grep -E 'NEEDED.*jemalloc'; then fail "$so needs a jemalloc library"; fi
echo "$so: $(dynamic_symbols --defined-only | wc -l) symbols exported, no allocator among them; no jemalloc needed"

step "(0b) libplume_io.so: plume/io.h's functions alone exported; libplume needs no file format library"
io_so=$libdir/libplume_io.so
[[ -e $io_so && -e $prefix/include/plume/io.h ]] || fail "libplume_io is not installed: $io_so, $prefix/include/plume/io.h"
io_exported=$(nm -D --defined-only "$io_so" | awk '{print $NF}' | sed 's/@.*//')
io_foreign=$(echo "$io_exported" | grep -Ev '^plm_frames_[a-z_]+$' || true)
[[ -z $io_foreign ]] || fail "$io_so exports more than plm_frames_*: $(echo "$io_foreign" | head -n 20 | tr '\n' ' ')"
[[ $(echo "$io_exported" | grep -c .) -ge 10 ]] || fail "$io_so exports $(echo "$io_exported" | grep -c .) plm_frames_* functions, not plume/io.h's"
readelf -d "$io_so" | grep -q 'NEEDED.*\[libplume\.so' || fail "$io_so does not take libplume's functions from libplume.so"
format_libraries='NEEDED.*\[lib(tiff|cfitsio|hdf5[^]]*|avformat|avcodec|avutil|swscale|png16)\.so'
if readelf -d "$so" | grep -E "$format_libraries"; then fail "$so needs a file format library"; fi
readelf -d "$io_so" | grep -qE "$format_libraries" || fail "$io_so needs none of the format libraries it reads with"
# Found beside it wherever it is installed: RUNPATH $ORIGIN, no LD_LIBRARY_PATH needed.
io_plume=$(env -u LD_LIBRARY_PATH ldd "$io_so" | awk '/libplume\.so/ {print $3}')
[[ $io_plume == "$libdir"/* ]] || fail "$io_so loads libplume.so from '$io_plume', not from $libdir"
echo "$io_so: $(echo "$io_exported" | wc -l) plm_frames_* functions exported; libplume.so beside it; $so needs no format library"

# The malloc a consumer's calls reach: the C library's, or a sanitizer's runtime's.
malloc_owner_re='^libc\.so\.6$'
if [[ -n ${PLUME_SANITIZE:-} ]]; then
  malloc_owner_re='^(libc\.so\.6|lib[at]san\.so\..*)$'
fi

# Run a consumer and check what it prints. Shared ones find the installed libplume.so
# through LD_LIBRARY_PATH (whatever RPATH they carry), and must resolve it there.
run_consumer() {
  local exe=$1 out
  if ldd "$exe" | grep -q 'libplume\.so'; then
    local resolved
    resolved=$(LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ldd "$exe" | awk '/libplume\.so/ {print $3}')
    echo "$exe: libplume.so -> $resolved"
    [[ $resolved == "$libdir"/* ]] || fail "$exe loads libplume.so from '$resolved', not from $libdir"
  fi
  printf '+ %s\n' "$exe" >&2
  out=$(LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$exe") || fail "$exe exited with $?"
  echo "$out"
  [[ $out == "consumer ok "* ]] || fail "$exe printed '$out', not 'consumer ok <version>'"
  local owner=${out##*(malloc from }
  owner=${owner%)}
  [[ $owner =~ $malloc_owner_re ]] ||
    fail "$exe's malloc is in '$owner', not the C library's: linking plume changed its allocator"
}

expect_shared() { # $1 exe, $2 shared or static
  if readelf -d "$1" | grep -q 'NEEDED.*libplume\.so'; then
    [[ $2 == shared ]] || fail "$1 should link libplume.a but needs libplume.so"
  else
    [[ $2 == static ]] || fail "$1 should need libplume.so but does not"
    if LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ldd "$1" | grep 'libplume\.so'; then
      fail "$1 should link libplume.a, but ldd lists libplume.so"
    fi
  fi
}

step "(a) CMake: find_package(plume) with CMAKE_PREFIX_PATH=$prefix"
cmake_c_flags=${san_flags[*]:-}
run "$cmake" -S "$consumer_src" -B "$scratch/cmake-build" \
  -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
  -DCMAKE_C_COMPILER="$cc" \
  -DCMAKE_C_FLAGS="$cmake_c_flags" \
  -DCMAKE_EXE_LINKER_FLAGS="$cmake_c_flags"
found=$(sed -n 's/^plume_DIR:PATH=//p' "$scratch/cmake-build/CMakeCache.txt")
echo "plume_DIR=$found"
[[ $found == "$prefix"/* ]] || fail "find_package(plume) found '$found', not the install in $prefix"
run "$cmake" --build "$scratch/cmake-build" --verbose
expect_shared "$scratch/cmake-build/consumer_shared" shared
expect_shared "$scratch/cmake-build/consumer_static" static
run_consumer "$scratch/cmake-build/consumer_shared"
run_consumer "$scratch/cmake-build/consumer_static"

export PKG_CONFIG_PATH=$libdir/pkgconfig
unset PKG_CONFIG_LIBDIR PKG_CONFIG_SYSROOT_DIR || true
pc=${PKG_CONFIG:-pkg-config}
mkdir -p "$scratch/pkg-config"

step "(b) pkg-config, shared: PKG_CONFIG_PATH=$PKG_CONFIG_PATH"
cflags=$(run "$pc" --cflags plume)
libs=$(run "$pc" --libs plume)
read -r -a pc_cflags <<<"$cflags"
read -r -a pc_libs <<<"$libs"
echo "cflags: ${pc_cflags[*]:-}"
echo "libs:   ${pc_libs[*]}"
run "$cc" -std=c11 -Wall -Wextra -Werror ${san_flags[@]+"${san_flags[@]}"} ${pc_cflags[@]+"${pc_cflags[@]}"} \
  "$consumer_src/main.c" -o "$scratch/pkg-config/consumer_shared" "${pc_libs[@]}"
expect_shared "$scratch/pkg-config/consumer_shared" shared
run_consumer "$scratch/pkg-config/consumer_shared"

step "(c) pkg-config, static: plume-static.pc, whose Libs name libplume.a"
for static_flag in "" --static; do
  static_libs=$(run "$pc" ${static_flag:+"$static_flag"} --libs plume-static)
  read -r -a pc_static_libs <<<"$static_libs"
  echo "libs:   ${pc_static_libs[*]}"
  archive=
  for arg in "${pc_static_libs[@]}"; do
    [[ $arg == */libplume.a ]] && archive=$(realpath "$arg")
  done
  [[ $archive == "$(realpath "$libdir/libplume.a")" ]] ||
    fail "pkg-config ${static_flag:+$static_flag }--libs plume-static does not name $libdir/libplume.a"
  exe=$scratch/pkg-config/consumer_static${static_flag:+_flag}
  run "$cc" -std=c11 -Wall -Wextra -Werror ${san_flags[@]+"${san_flags[@]}"} ${pc_cflags[@]+"${pc_cflags[@]}"} \
    "$consumer_src/main.c" -o "$exe" "${pc_static_libs[@]}"
  expect_shared "$exe" static
  run_consumer "$exe"
done
# plume.pc's own --static flags, for a program linked statically as a whole (cc -static):
# -lplume is then the archive. Its malloc must still be the C library's: the static glibc's
# malloc and __libc_malloc are one function (a malloc from anywhere else, linked first,
# would be another; dladdr cannot tell in a program without dynamic symbols).
if [[ -n ${PLUME_SANITIZE:-} ]]; then
  echo "(c) cc -static: not tried, the sanitizers' runtimes do not link statically"
else
  full_static_libs=$(run "$pc" --static --libs plume)
  read -r -a pc_full_static_libs <<<"$full_static_libs"
  echo "libs:   ${pc_full_static_libs[*]}"
  exe=$scratch/pkg-config/consumer_full_static
  # (cudart_static's warnings about dlopen in a static program are expected.)
  run "$cc" -static -std=c11 -Wall -Wextra -Werror ${pc_cflags[@]+"${pc_cflags[@]}"} \
    "$consumer_src/main.c" -o "$exe" "${pc_full_static_libs[@]}"
  readelf -d "$exe" | grep -q NEEDED && fail "$exe (cc -static) needs shared libraries"
  out=$("$exe") || fail "$exe exited with $?"
  echo "$out"
  [[ $out == "consumer ok "* ]] || fail "$exe printed '$out', not 'consumer ok <version>'"
  malloc_at=$(nm "$exe" | awk '$3 == "malloc" {print $1}')
  libc_malloc_at=$(nm "$exe" | awk '$3 == "__libc_malloc" {print $1}')
  [[ -n $malloc_at && $malloc_at == "$libc_malloc_at" ]] ||
    fail "$exe's malloc ($malloc_at) is not the C library's __libc_malloc ($libc_malloc_at)"
  echo "$exe: static, malloc is the C library's (__libc_malloc at $malloc_at)"
fi
# plume.pc keeps what the archive needs private, as pkg-config users expect: a program
# linking libplume.so is given nothing but -lplume.
grep -qx 'Requires.private: jansson' "${pc_files[0]}" || fail "plume.pc has no Requires.private: jansson"
grep -q '^Libs.private: ' "${pc_files[0]}" || fail "plume.pc has no Libs.private"
[[ " ${pc_libs[*]} " != *" -ljansson "* ]] || fail "pkg-config --libs plume gives -ljansson: ${pc_libs[*]}"

step "(d) Python: PREFIX/python holds the module, which finds PREFIX's libplume"
for f in "$prefix/python/pyproject.toml" "$prefix/python/plume/__init__.py" \
         "$prefix/python/plume/_native.py"; do
  [[ -e $f ]] || fail "not installed: $f"
done
python=
for candidate in python3 /usr/bin/python3; do
  if "$candidate" -c "import numpy" 2>/dev/null; then python=$candidate; break; fi
done
if [[ -n ${PLUME_SANITIZE:-} || -z $python ]]; then
  echo "not imported: ${PLUME_SANITIZE:+a sanitized library}${python:-no python3 with numpy}"
else
  # Outside the tree, no PLUME_LIBRARY: the module looks in PREFIX/lib (multiarch too).
  version=$(cd "$scratch" && env -u PLUME_LIBRARY -u GLIBC_TUNABLES -u LD_PRELOAD \
    PYTHONPATH="$prefix/python" "$python" -c "import plume; print(plume.version())")
  echo "import plume: version $version"
  [[ -n $version ]] || fail "import plume printed no version"
  # Frames from a file through PREFIX/lib's libplume_io, found as libplume is.
  fixture=$here/../fixtures/tiff/u16-stack-strips-deflate
  read_back=$(cd "$scratch" && env -u PLUME_LIBRARY -u PLUME_IO_LIBRARY -u GLIBC_TUNABLES -u LD_PRELOAD \
    PYTHONPATH="$prefix/python" "$python" -c "
import numpy as np, plume
frames = plume.read('$fixture.tif')
assert np.array_equal(frames, np.load('$fixture.npy')), 'frames differ from the .npy'
print(frames.shape, plume._frames.library()._name)") || fail "plume.read through the installed libplume_io failed"
  echo "plume.read: $read_back"
  [[ $read_back == *"$libdir/libplume_io.so"* ]] || fail "plume.read did not use $libdir's libplume_io: $read_back"
fi

step "(e) the C examples (examples/) against $prefix, as examples/README.md builds them"
source_dir=$(cd "$here/../.." && pwd)
run "$cmake" -S "$source_dir/examples" -B "$scratch/examples-build" \
  -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
  -DCMAKE_C_COMPILER="$cc" \
  -DCMAKE_C_FLAGS="$cmake_c_flags" \
  -DCMAKE_EXE_LINKER_FLAGS="$cmake_c_flags"
run "$cmake" --build "$scratch/examples-build"
expect_shared "$scratch/examples-build/stream_sink" shared
# No LD_LIBRARY_PATH: CMake gave the program the library's folder as its RPATH.
out=$(env -u LD_LIBRARY_PATH "$scratch/examples-build/stream_sink" 3) ||
  fail "the installed stream_sink exited with $?: $out"
echo "$out" | tail -n 2
[[ $out == *"3 frames in order, 6 of 6 plumes found, 0 false alarms"* ]] || fail "stream_sink 3: $out"

step "(f) libplume_io from C: pkg-config plume-io, and find_package(plume)'s plume::plume_io"
mkdir -p "$scratch/io"
cat >"$scratch/io/main.c" <<'C'
#include <stdio.h>
#include <stdlib.h>

#include "plume/io.h"

/* Frame by frame through plume/io.h: the sum of a TIFF stack's samples. */
int main(int argc, char **argv) {
  plm_frames *f = NULL;
  plm_frames_info info;
  if (argc != 2 || plm_frames_open(argv[1], 0, &f) != PLM_OK) {
    fprintf(stderr, "io consumer: %s\n", plm_frames_last_error());
    return 1;
  }
  plm_frames_info_get(f, &info);
  size_t bytes = plm_frames_frame_bytes(&info);
  unsigned short *frame = malloc(bytes);
  unsigned long long sum = 0;
  bool end = false;
  long frames = 0;
  while (frame && plm_frames_next(f, frame, bytes, &end) == PLM_OK && !end) {
    for (size_t i = 0; i < bytes / sizeof *frame; i++) sum += frame[i];
    frames++;
  }
  printf("io consumer ok: %ld frames of %lldx%lld %s, sum %llu\n", frames, (long long)info.height,
         (long long)info.width, plm_dtype_name(info.dtype), sum);
  free(frame);
  plm_frames_close(f);
  return end ? 0 : 1;
}
C
cat >"$scratch/io/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(io_consumer C)
find_package(plume REQUIRED)
add_executable(io_consumer main.c)
target_link_libraries(io_consumer PRIVATE plume::plume_io)
CMAKE
io_fixture=$here/../fixtures/tiff/u16-stack-strips-deflate
io_want=$("${python:-python3}" -c "
import numpy as np
a = np.load('$io_fixture.npy')
print('%d frames of %dx%d u16, sum %d' % (a.shape + (int(a.sum(dtype=np.uint64)),)))" 2>/dev/null || true)
echo "numpy reads: ${io_want:-(no python3 with numpy: the sums are not compared)}"
io_cflags=$(run "$pc" --cflags plume-io)
io_libs=$(run "$pc" --libs plume-io)
read -r -a io_cflag_list <<<"$io_cflags"
read -r -a io_lib_list <<<"$io_libs"
run "$cc" -std=c11 -Wall -Wextra -Werror ${san_flags[@]+"${san_flags[@]}"} ${io_cflag_list[@]+"${io_cflag_list[@]}"} \
  "$scratch/io/main.c" -o "$scratch/io/io_consumer_pc" "${io_lib_list[@]}" -Wl,-rpath,"$libdir"
run "$cmake" -S "$scratch/io" -B "$scratch/io/build" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_C_COMPILER="$cc" \
  -DCMAKE_C_FLAGS="$cmake_c_flags" -DCMAKE_EXE_LINKER_FLAGS="$cmake_c_flags" >/dev/null
run "$cmake" --build "$scratch/io/build" >/dev/null
for exe in "$scratch/io/io_consumer_pc" "$scratch/io/build/io_consumer"; do
  out=$(env -u LD_LIBRARY_PATH "$exe" "$io_fixture.tif") || fail "$exe exited with $?: $out"
  echo "$exe: $out"
  [[ $out == "io consumer ok: "* ]] || fail "$exe printed '$out'"
  [[ -z $io_want || $out == *"$io_want" ]] || fail "$exe read '$out', numpy has '$io_want'"
done

step "install check passed"
