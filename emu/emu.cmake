# emu/emu.cmake: the CUDA emulator's build (PLUME_CUDA=EMU), included by the top-level
# CMakeLists.txt so that its generated kernel sources belong to the directory of the
# library that compiles them.
#
#   plume_cuda_emu          the emulator (emu/*.cpp, runtime/, device/, check/): object
#                           files that go into libplume in place of the CUDA runtime.
#   plume_emu_kernels(OUT <.cu files>)
#                           each .cu rewritten by emu/cu2cpp.pl into
#                           <build>/emu-kernels/<path>.cpp and compiled as C++17 for the
#                           CPU: cuda_emu.h force-included, the emulator's headers before
#                           the toolkit's, ThreadSanitizer's instrumentation (whose calls
#                           the emulator's checks answer, emu/check/hooks.cpp) instead of
#                           AddressSanitizer's, and -O2 whatever the build type, since an
#                           emulated kernel at -O0 is many times slower.
#   plume_emu_test(NAME TARGET <exe> SOURCES <.cpp files> KERNELS <.cu files> TIMEOUT <s>
#                  [INCLUDES <dirs>])
#                           a test program of host sources and kernels for the emulator,
#                           linked to it, run as NAME and NAME.seed2 (the second seed, two
#                           blocks at once), labels unit and emu.
# Needs only the toolkit's headers (PLUME_CUDA_INCLUDE_DIR), Perl and an assembler.

enable_language(ASM)
find_package(Perl REQUIRED)

file(GLOB plume_emu_runtime_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/emu/runtime/*.cpp)
file(GLOB plume_emu_sources CONFIGURE_DEPENDS
  ${PROJECT_SOURCE_DIR}/emu/*.cpp
  ${plume_emu_runtime_sources}
  ${PROJECT_SOURCE_DIR}/emu/device/*.cpp
  ${PROJECT_SOURCE_DIR}/emu/check/*.cpp
  ${PROJECT_SOURCE_DIR}/emu/count/*.cpp)
add_library(plume_cuda_emu OBJECT ${plume_emu_sources} ${PROJECT_SOURCE_DIR}/emu/device/fiber_x86_64.S)
set_target_properties(plume_cuda_emu PROPERTIES
  POSITION_INDEPENDENT_CODE ON
  CXX_STANDARD 17
  CXX_STANDARD_REQUIRED ON
  CXX_VISIBILITY_PRESET hidden
  VISIBILITY_INLINES_HIDDEN ON)
target_include_directories(plume_cuda_emu
  PRIVATE ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/emu/include)
target_include_directories(plume_cuda_emu SYSTEM PRIVATE ${PLUME_CUDA_INCLUDE_DIR})
# -O2 whatever the build type: the emulator's hooks run at every access of every kernel
# thread, and a debug build's -O0 would multiply the time of every emulated suite.
target_compile_options(plume_cuda_emu PRIVATE
  "$<$<COMPILE_LANGUAGE:CXX>:-O2;-Wall;-Wextra;$<$<BOOL:${PLUME_WERROR}>:-Werror>>")
target_link_libraries(plume_cuda_emu PUBLIC Threads::Threads ${CMAKE_DL_LIBS})
# The runtime (runtime/: streams, events, graphs, memory calls) runs per call, not per
# thread and access: -O1 there, which compiles its C++ in about half the time of -O2
# under the sanitizers (mempool.cpp 15 s -> 8 s of CPU) and costs the suites nothing.
set_source_files_properties(${plume_emu_runtime_sources} PROPERTIES COMPILE_OPTIONS -O1)
# What runs at every access of every emulated thread (the checks, the executor and its
# fibres, the counters) is built without the sanitizers of a sanitizer build: their checks
# of the emulator's own bookkeeping took a quarter of every emulated suite (sepconv2d.cuda
# in CI's asan build: 126 s with them, 92 s without; UndefinedBehaviorSanitizer alone kept
# it above 120 s). The library, the tests and the runtime (runtime/) stay sanitized, and
# the emulated kernels never were (ThreadSanitizer's hooks, below, answer their accesses).
file(GLOB plume_emu_per_access_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/emu/check/*.cpp
  ${PROJECT_SOURCE_DIR}/emu/device/*.cpp ${PROJECT_SOURCE_DIR}/emu/count/*.cpp)
set_source_files_properties(${plume_emu_per_access_sources} PROPERTIES COMPILE_OPTIONS -fno-sanitize=all)
# The hooks define the entry points of ThreadSanitizer's instrumentation, which a sanitizer
# build declares as built-ins with other types: they could not be built with sanitizers.

set(plume_emu_kernel_options
  -include cuda_emu.h
  -I${PROJECT_SOURCE_DIR}/emu/include
  -O2 -g
  -fno-sanitize=address
  -fsanitize=thread
  --param=tsan-instrument-func-entry-exit=0
  --param=tsan-distinguish-volatile=1)

function(plume_emu_kernels out_var)
  set(generated "")
  foreach(cu IN LISTS ARGN)
    file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR} ${cu})
    string(REGEX REPLACE "\\.cu$" ".cpp" cpp ${rel})
    set(cpp ${PROJECT_BINARY_DIR}/emu-kernels/${cpp})
    add_custom_command(OUTPUT ${cpp}
      COMMAND ${PERL_EXECUTABLE} ${PROJECT_SOURCE_DIR}/emu/cu2cpp.pl ${cu} ${cpp} ${rel}
      DEPENDS ${cu} ${PROJECT_SOURCE_DIR}/emu/cu2cpp.pl
      COMMENT "Rewriting ${rel} for the CUDA emulator"
      VERBATIM)
    set_source_files_properties(${cpp} PROPERTIES
      COMPILE_OPTIONS "${plume_emu_kernel_options}"
      OBJECT_DEPENDS "${PROJECT_SOURCE_DIR}/emu/include/cuda_emu.h;${PROJECT_SOURCE_DIR}/emu/include/mma.h")
    list(APPEND generated ${cpp})
  endforeach()
  set(${out_var} ${generated} PARENT_SCOPE)
endfunction()

function(plume_emu_test name)
  cmake_parse_arguments(ARG "" "TARGET;TIMEOUT" "SOURCES;KERNELS;INCLUDES" ${ARGN})
  plume_emu_kernels(kernels ${ARG_KERNELS})
  add_executable(${ARG_TARGET} ${ARG_SOURCES} ${kernels})
  target_include_directories(${ARG_TARGET} PRIVATE ${PROJECT_SOURCE_DIR} ${ARG_INCLUDES})
  target_include_directories(${ARG_TARGET} SYSTEM PRIVATE ${PLUME_CUDA_INCLUDE_DIR})
  target_link_libraries(${ARG_TARGET} PRIVATE plume_cuda_emu)
  set_target_properties(${ARG_TARGET} PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
  add_test(NAME ${name} COMMAND ${ARG_TARGET})
  add_test(NAME ${name}.seed2 COMMAND ${ARG_TARGET})
  set_tests_properties(${name} PROPERTIES LABELS "unit;emu" TIMEOUT ${ARG_TIMEOUT})
  set_tests_properties(${name}.seed2 PROPERTIES LABELS "unit;emu" TIMEOUT ${ARG_TIMEOUT}
    ENVIRONMENT "PLUME_EMU_SEED=2;PLUME_EMU_BLOCK_THREADS=2")
endfunction()

# ---- the emulator's own tests (emu/tests) ---------------------------------------------
if(PLUME_BUILD_TESTS)
  # The host side (emu/tests/test_emu_runtime.cpp): the emulator's objects and the test,
  # no libplume.
  add_executable(test_emu_runtime ${PROJECT_SOURCE_DIR}/emu/tests/test_emu_runtime.cpp)
  set_target_properties(test_emu_runtime PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
  target_include_directories(test_emu_runtime PRIVATE ${PROJECT_SOURCE_DIR})
  target_include_directories(test_emu_runtime SYSTEM PRIVATE ${PLUME_CUDA_INCLUDE_DIR})
  target_compile_options(test_emu_runtime PRIVATE -Wall -Wextra $<$<BOOL:${PLUME_WERROR}>:-Werror>)
  target_link_libraries(test_emu_runtime PRIVATE plume_cuda_emu)
  add_test(NAME emu_runtime COMMAND test_emu_runtime)
  set_tests_properties(emu_runtime PROPERTIES LABELS "unit;emu" TIMEOUT 300)

  # The device side and the checks: correct kernels against what CUDA documents, launches
  # over the limits, and the planted defects of emu/README.md, under two seeds (the
  # second with two blocks at once).
  plume_emu_test(emu_device TARGET test_emu_device TIMEOUT 300
    SOURCES ${PROJECT_SOURCE_DIR}/emu/tests/test_emu_device.cpp
    KERNELS ${PROJECT_SOURCE_DIR}/emu/tests/device_kernels.cu)

  # The counters of memory traffic (emu/count/) against kernels whose traffic is known,
  # and the report; the second run with two blocks at once (the counters' locks).
  plume_emu_test(emu_count TARGET test_emu_count TIMEOUT 120
    SOURCES ${PROJECT_SOURCE_DIR}/emu/tests/test_emu_count.cpp
    KERNELS ${PROJECT_SOURCE_DIR}/emu/tests/count_kernels.cu)
  # Warnings for the test, not for the toolkit's headers the rewritten kernels include.
  set_source_files_properties(${PROJECT_SOURCE_DIR}/emu/tests/test_emu_count.cpp PROPERTIES
    COMPILE_OPTIONS "-Wall;-Wextra;$<$<BOOL:${PLUME_WERROR}>:-Werror>")
endif()
