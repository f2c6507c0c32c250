# Builds pleat-check for AArch64 (NEON) with the cross toolchain, runs its
# tests under qemu-user (every AArch64 variant, and the same-bits check
# between them), then checks that its result hash equals this machine's:
# the same bits on x86-64 and AArch64.
# Inputs: SOURCE_DIR, WORK_DIR, GENERATOR, NATIVE_CHECK.
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()
function(result_hash text var)
  string(REGEX MATCH "result hash ([0-9a-f]+)" _ "${text}")
  if(NOT CMAKE_MATCH_1)
    message(FATAL_ERROR "no result hash in:\n${text}")
  endif()
  set(${var} ${CMAKE_MATCH_1} PARENT_SCOPE)
endfunction()

run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR} -G ${GENERATOR}
    -DCMAKE_TOOLCHAIN_FILE=${SOURCE_DIR}/cmake/aarch64-linux-gnu.cmake
    -DCMAKE_BUILD_TYPE=Release -DPLEAT_CRITERION=OFF -DPLEAT_BUILD_SAMPLES=OFF
    -DPLEAT_BUILD_BENCH=OFF -DPLEAT_CUDA=OFF)
run(${CMAKE_COMMAND} --build ${WORK_DIR} --target pleat-check)
run(${CMAKE_CTEST_COMMAND} --test-dir ${WORK_DIR} --output-on-failure)
message(STATUS "AArch64 tests under qemu:\n${out}")

set(ENV{PLEAT_CPU_ISA} neon)
run(qemu-aarch64 -L /usr/aarch64-linux-gnu ${WORK_DIR}/tests/pleat-check)
result_hash("${out}" neon)
unset(ENV{PLEAT_CPU_ISA})
run(${NATIVE_CHECK})
result_hash("${out}" native)
if(NOT neon STREQUAL native)
  message(FATAL_ERROR "NEON on AArch64 gives ${neon}, this machine ${native}")
endif()
message(STATUS "NEON (AArch64, qemu) and this machine agree: result hash ${native}")
