# Run at every build (cmake -P): write plume_git_commit.h with the current
# `git describe --always --dirty`, touching the file only when the text changes,
# so that an unchanged commit rebuilds nothing.
#   -DSOURCE_DIR=... -DOUTPUT=...
execute_process(
  COMMAND git describe --always --dirty --abbrev=12
  WORKING_DIRECTORY "${SOURCE_DIR}"
  OUTPUT_VARIABLE commit
  OUTPUT_STRIP_TRAILING_WHITESPACE
  ERROR_QUIET
  RESULT_VARIABLE result)
if(NOT result EQUAL 0 OR commit STREQUAL "")
  set(commit "unknown")
endif()
set(text "/* Written at build time by cmake/git_commit.cmake. */\n#define PLM_BUILD_GIT_COMMIT \"${commit}\"\n")
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" old)
else()
  set(old "")
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUTPUT}" "${text}")
endif()
