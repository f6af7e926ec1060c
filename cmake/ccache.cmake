# Compiler caching: ccache, when it is installed, in front of the C++, C and CUDA compilers.
# Its settings travel in the launcher itself, so a build by hand and the scripts' builds share one
# cache (ccache's own folder, ~/.cache/ccache unless CCACHE_DIR says otherwise):
#   CCACHE_BASEDIR=<source tree>: paths under it are hashed relative to it, so a fresh clone at
#     another path (CI's) hits what an earlier clone compiled;
#   CCACHE_NOHASHDIR: -g builds (the sanitizer trees) would otherwise hash the build folder;
#   CCACHE_SLOPPINESS: what precompiled headers need (pch_defines, time_macros), and a clone's
#     fresh file times are not a change (include_file_mtime, include_file_ctime).
# clang stamps its .pch files with the time they were made, which ccache would see as a change:
# -fno-pch-timestamp leaves the stamp out. PINBENCH_CCACHE=OFF, or a launcher of your own
# (CMAKE_CXX_COMPILER_LAUNCHER), turns this off.
option(PINBENCH_CCACHE "Compile through ccache when it is installed" ON)
if(PINBENCH_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  find_program(PINBENCH_CCACHE_PROGRAM ccache)
  if(PINBENCH_CCACHE_PROGRAM)
    set(pinbench_ccache_launcher
        ${CMAKE_COMMAND} -E env CCACHE_BASEDIR=${PROJECT_SOURCE_DIR} CCACHE_NOHASHDIR=1
        CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
        ${PINBENCH_CCACHE_PROGRAM})
    foreach(lang CXX C CUDA)
      set(CMAKE_${lang}_COMPILER_LAUNCHER ${pinbench_ccache_launcher})
    endforeach()
    if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
      add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:SHELL:-Xclang -fno-pch-timestamp>")
    endif()
    message(STATUS "pinbench: compiling through ${PINBENCH_CCACHE_PROGRAM}")
  endif()
endif()
