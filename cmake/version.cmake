# core/version.hpp from cmake/version.hpp.in, with `git describe` of the source tree as it is
# now. Run at configure time (include) and again at every build (cmake -P, by the
# pinbench_version target), so a result names the commit its binary was built from, not the one
# last configured. configure_file rewrites the header only when its text changes: a build of the
# same commit recompiles nothing.
# In: PINBENCH_SOURCE_DIR, PINBENCH_VERSION_HEADER, PROJECT_VERSION.
execute_process(COMMAND git describe --always --dirty --tags
                WORKING_DIRECTORY ${PINBENCH_SOURCE_DIR}
                OUTPUT_VARIABLE PINBENCH_GIT OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT PINBENCH_GIT)
  set(PINBENCH_GIT "unknown")
endif()
configure_file(${PINBENCH_SOURCE_DIR}/cmake/version.hpp.in ${PINBENCH_VERSION_HEADER} @ONLY)
