# version.cmake: writes OUT (cli/version.h) with the version and the git commit of
# SOURCE_DIR, at build time, replacing the file only when its text changes — so that
# `berth --version` names the commit built, not the one configured, and a build with
# no new commit recompiles nothing.
#
#   cmake -DSOURCE_DIR=... -DOUT=... -DVERSION=... -P cmake/version.cmake
execute_process(COMMAND git rev-parse --short=12 HEAD
  WORKING_DIRECTORY ${SOURCE_DIR} OUTPUT_VARIABLE commit
  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT commit)
  set(commit "unknown")
endif()
set(text "#pragma once\n#define BERTH_VERSION \"${VERSION}\"\n#define BERTH_GIT_COMMIT \"${commit}\"\n")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT "${old}" STREQUAL "${text}")
  file(WRITE ${OUT} "${text}")
endif()
