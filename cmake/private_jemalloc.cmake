# plume's private jemalloc (scripts/private-jemalloc says how it is built and why): the
# pinned host pool's allocator (pool/host_pool.c), with hidden, prefixed symbols, no
# malloc/free of its own and no initial-exec TLS, so that linking or loading libplume
# never changes a program's malloc. scripts/install-deps builds it from Debian's source.
#
# Gives:
#   PLUME_JEMALLOC_ROOT     (cache) where it is installed; `scripts/private-jemalloc root`
#   plume_private_jemalloc  an INTERFACE target with its header (pool/private_jemalloc.h
#                           includes it), for libplume's objects and for the tests and
#                           benchmarks that reach the same jemalloc inside plume_static
#   PLUME_JEMALLOC_OBJECTS  its objects, extracted from libjemalloc_pic.a into the build
#                           tree: they become part of libplume.so and libplume.a alike, so
#                           neither needs a jemalloc library at link or run time
set(plume_jemalloc_script ${PROJECT_SOURCE_DIR}/scripts/private-jemalloc)
if(NOT PLUME_JEMALLOC_ROOT)
  execute_process(COMMAND ${plume_jemalloc_script} root
    OUTPUT_VARIABLE plume_jemalloc_default OUTPUT_STRIP_TRAILING_WHITESPACE COMMAND_ERROR_IS_FATAL ANY)
  set(PLUME_JEMALLOC_ROOT "${plume_jemalloc_default}" CACHE PATH
    "Where plume's private jemalloc is installed (scripts/install-deps builds it there)")
endif()

execute_process(COMMAND ${CMAKE_COMMAND} -E env PLUME_JEMALLOC_ROOT=${PLUME_JEMALLOC_ROOT}
                        ${plume_jemalloc_script} check
  RESULT_VARIABLE plume_jemalloc_missing ERROR_VARIABLE plume_jemalloc_why
  ERROR_STRIP_TRAILING_WHITESPACE)
if(plume_jemalloc_missing)
  message(FATAL_ERROR "plume's private jemalloc is not usable at ${PLUME_JEMALLOC_ROOT}: "
                      "${plume_jemalloc_why}.\nRun scripts/install-deps, which builds it "
                      "(with PLUME_JEMALLOC_ROOT in its environment for another place).")
endif()

set(plume_jemalloc_archive ${PLUME_JEMALLOC_ROOT}/lib/libjemalloc_pic.a)
set(plume_jemalloc_objects_dir ${PROJECT_BINARY_DIR}/private-jemalloc)
# Extracted again whenever the archive changes (install-deps rebuilt it): CMake then
# reconfigures.
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
  ${plume_jemalloc_archive} ${PLUME_JEMALLOC_ROOT}/plume-jemalloc.stamp)
file(REMOVE_RECURSE ${plume_jemalloc_objects_dir})
file(MAKE_DIRECTORY ${plume_jemalloc_objects_dir})
execute_process(COMMAND ${CMAKE_AR} x ${plume_jemalloc_archive}
  WORKING_DIRECTORY ${plume_jemalloc_objects_dir} COMMAND_ERROR_IS_FATAL ANY)
file(GLOB PLUME_JEMALLOC_OBJECTS ${plume_jemalloc_objects_dir}/*.o)
if(NOT PLUME_JEMALLOC_OBJECTS)
  message(FATAL_ERROR "plume: ${plume_jemalloc_archive} holds no objects: run scripts/install-deps")
endif()

add_library(plume_private_jemalloc INTERFACE)
target_include_directories(plume_private_jemalloc SYSTEM INTERFACE ${PLUME_JEMALLOC_ROOT}/include)
file(STRINGS ${PLUME_JEMALLOC_ROOT}/plume-jemalloc.stamp plume_jemalloc_source REGEX "^source ")
message(STATUS "plume: private jemalloc ${PLUME_JEMALLOC_ROOT} (${plume_jemalloc_source})")
