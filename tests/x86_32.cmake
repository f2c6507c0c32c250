# Builds pleat and its framework-free tests for 32-bit x86 (-m32) and runs
# them on this x86-64 machine: pleat-check per ISA (every variant this
# machine runs) and the same-bits check between them, the fuzz corpus
# replays, the thread and pool stress tests, the drape sample's smoke test
# and size_max (counts past a 32-bit size_t); then checks that
# pleat-check's result hash equals this machine's.
# A 32-bit build does its float math in SSE registers (CMakeLists.txt):
# with x87's, the bits differ. The Criterion suites do not run there:
# Debian 12's libcriterion3:i386 would remove the host's Criterion (its
# libnanomsg5 is not multi-arch).
# Inputs: SOURCE_DIR, WORK_DIR, GENERATOR, NATIVE_CHECK, NATIVE_ISAS, PLEAT_M32_CC
# (a C compiler that links -m32 programs).
include(${CMAKE_CURRENT_LIST_DIR}/cross.cmake)

cross_build_and_test(i686-linux-gnu.cmake "32-bit x86 tests" junit
                     -DCMAKE_C_COMPILER=${PLEAT_M32_CC} -DPLEAT_CRITERION=OFF
                     -DPLEAT_BUILD_FUZZ=ON -DPLEAT_FUZZ_LIBFUZZER=OFF -DPLEAT_BUILD_BENCH=OFF)
# a 32-bit program (ELF class 1): else the hashes below would compare a
# 64-bit build with this one
file(READ ${WORK_DIR}/tests/pleat-check elf LIMIT 5 HEX)
if(NOT elf STREQUAL "7f454c4601")
  message(FATAL_ERROR "the -m32 build's pleat-check is not a 32-bit ELF program (${elf})")
endif()
every_isa_here_ran("${junit}" "as a 32-bit program")
if(NOT junit MATCHES "<testcase name=\"size_max\" [^>]*status=\"run\"")
  message(FATAL_ERROR "size_max (counts past a 32-bit size_t) did not run")
endif()
same_bits_as_here("${junit}" check.scalar "32-bit x86")
