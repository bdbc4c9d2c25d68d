# Writes generated/core/build_info.h at build time (the `build_info` target runs this script on
# every build), so the git commit a binary reports in `trainscale info` and records in every run
# file is the one it was built from, not the one of the last cmake configure. configure_file
# leaves the header untouched when nothing changed, so nothing recompiles needlessly.
# Inputs: SOURCE_DIR, BINARY_DIR, PROJECT_VERSION, BUILD_TYPE, MPI_FLAVOR, CUDA_ENABLED.
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY ${SOURCE_DIR}
                OUTPUT_VARIABLE TRAINSCALE_GIT_SHA OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT TRAINSCALE_GIT_SHA)
  set(TRAINSCALE_GIT_SHA "unknown")
endif()
execute_process(COMMAND git status --porcelain --untracked-files=no WORKING_DIRECTORY ${SOURCE_DIR}
                OUTPUT_VARIABLE dirty OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(dirty)
  set(TRAINSCALE_GIT_SHA "${TRAINSCALE_GIT_SHA}-dirty")
endif()
set(PROJECT_VERSION ${PROJECT_VERSION})
set(CMAKE_BUILD_TYPE ${BUILD_TYPE})
set(TRAINSCALE_MPI_FLAVOR ${MPI_FLAVOR})
set(TRAINSCALE_CUDA ${CUDA_ENABLED})
set(CMAKE_SOURCE_DIR ${SOURCE_DIR})
configure_file(${SOURCE_DIR}/src/core/build_info.h.in ${BINARY_DIR}/generated/core/build_info.h @ONLY)
