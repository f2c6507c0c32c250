# What the test scripts that build and run programs share: the cross-build
# tests (neon.cmake, windows.cmake, x86_32.cmake) and consumer/'s.

# Runs a command; fails the test unless it exits 0. Its output is left in `out`.
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()

# The result hash pleat-check printed in `text`, into `var`.
function(result_hash text var)
  string(REGEX MATCH "result hash ([0-9a-f]+)" _ "${text}")
  if(NOT CMAKE_MATCH_1)
    message(FATAL_ERROR "no result hash in:\n${text}")
  endif()
  set(${var} ${CMAKE_MATCH_1} PARENT_SCOPE)
endfunction()

# Configures and builds SOURCE_DIR in WORK_DIR (GENERATOR, Release, no CUDA)
# for the target of cmake/`toolchain`, with the options in ARGN, runs its
# tests two at a time and leaves their JUnit report, which keeps every
# test's output, in `junit`. `label` heads the tests' output.
function(cross_build_and_test toolchain label junit)
  run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR} -G ${GENERATOR}
      -DCMAKE_TOOLCHAIN_FILE=${SOURCE_DIR}/cmake/${toolchain} -DCMAKE_BUILD_TYPE=Release
      -DPLEAT_CUDA=OFF ${ARGN})
  run(${CMAKE_COMMAND} --build ${WORK_DIR})
  set(report ${WORK_DIR}/cross-tests.xml)
  file(REMOVE ${report})
  run(${CMAKE_CTEST_COMMAND} --test-dir ${WORK_DIR} --output-on-failure --parallel 2
      --output-junit ${report} --test-output-size-passed 1048576)
  message(STATUS "${label}:\n${out}")
  file(READ ${report} text)
  set(${junit} "${text}" PARENT_SCOPE)
endfunction()

# Fails unless the result hash that test `name` (a pleat-check run) printed,
# as `junit` holds it, is the one this machine's pleat-check (NATIVE_CHECK)
# prints: the same bits there (`label`) and here.
function(same_bits_as_here junit name label)
  string(REPLACE "." "\\." name_regex "${name}")
  string(REGEX MATCH "<testcase name=\"${name_regex}\"[^>]*>[ \t\r\n]*<system-out>[^<]*" check
         "${junit}")
  result_hash("${check}" there)
  run(${NATIVE_CHECK})
  result_hash("${out}" here)
  if(NOT there STREQUAL here)
    message(FATAL_ERROR "${label} gives ${there}, this machine ${here}")
  endif()
  message(STATUS "${label} and this machine agree: result hash ${here}")
endfunction()

# Fails unless every kernel variant that runs here (NATIVE_ISAS, through
# NATIVE_CHECK: 77 means not here) ran as a test check.<isa> in `junit`,
# the cross build's tests (`where`: how they ran, for the message). For
# cross builds to the same processor family.
function(every_isa_here_ran junit where)
  if(NOT NATIVE_ISAS)
    message(FATAL_ERROR "NATIVE_ISAS (this build's kernel variants) is not set")
  endif()
  foreach(isa IN LISTS NATIVE_ISAS)
    set(ENV{PLEAT_CPU_ISA} ${isa})
    execute_process(COMMAND ${NATIVE_CHECK} RESULT_VARIABLE rc OUTPUT_QUIET)
    unset(ENV{PLEAT_CPU_ISA})
    if(NOT rc EQUAL 77)
      ran_there("${junit}" check.${isa} "${where}, though it runs here")
    endif()
  endforeach()
endfunction()

# Fails unless test `name` ran (and so passed) in `junit`, a cross build's
# tests (`where`: how they ran).
function(ran_there junit name where)
  string(REPLACE "." "\\." name_regex "${name}")
  if(NOT junit MATCHES "<testcase name=\"${name_regex}\" [^>]*status=\"run\"")
    message(FATAL_ERROR "${name} did not run ${where}")
  endif()
endfunction()
