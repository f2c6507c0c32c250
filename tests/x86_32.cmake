# Builds pleat and its tests for 32-bit x86 (-m32) and runs them on this
# x86-64 machine: pleat-check per ISA (every variant this machine runs) and
# the same-bits check between them, the fuzz corpus replays, the thread and
# pool stress tests, the drape sample's smoke test, size_max (counts past a
# 32-bit size_t) and, where they can, the Criterion suites (linked without
# PIE, which it checks: tests/CMakeLists.txt); then checks that pleat-check's
# result hash equals this machine's.
# A 32-bit build does its float math in SSE registers (CMakeLists.txt):
# with x87's, the bits differ.
#
# The Criterion suites need Debian's i386 Criterion unpacked in a folder
# named by the environment's PLEAT_I386_ROOT (cmake/fetch-debian-root.sh
# i386 makes one; installed, libcriterion3:i386 would remove the host's
# Criterion, as its libnanomsg5 is not multi-arch). The tests run on the
# host's 32-bit C runtime with the root's libraries on LD_LIBRARY_PATH.
# Without a root only the framework-free tests run, with a warning, or a
# failure when the environment has PLEAT_X86_32_SUITES=require (CI).
# Inputs: SOURCE_DIR, WORK_DIR, GENERATOR, NATIVE_CHECK, NATIVE_ISAS, PLEAT_M32_CC
# (a C compiler that links -m32 programs).
include(${CMAKE_CURRENT_LIST_DIR}/cross.cmake)

set(root "$ENV{PLEAT_I386_ROOT}")
if(root AND EXISTS ${root}/usr/lib/i386-linux-gnu/libcriterion.so.3)
  set(suites -DPLEAT_CRITERION=ON -DPLEAT_CRITERION_ROOT=${root})
  set(must_run size_max symbols api.scalar limits) # a suite per ISA, and one for all
  # for the tests and the processes Criterion starts, ahead of the caller's
  # (a 64-bit program passes over these 32-bit libraries), until they ran
  set(caller_path "$ENV{LD_LIBRARY_PATH}")
  set(path "${root}/usr/lib/i386-linux-gnu:${root}/lib/i386-linux-gnu")
  if(caller_path) # (an empty entry would be the current folder)
    string(APPEND path ":${caller_path}")
  endif()
  set(ENV{LD_LIBRARY_PATH} "${path}")
else()
  set(why "an i386 root with Criterion in PLEAT_I386_ROOT (cmake/fetch-debian-root.sh i386)")
  if("$ENV{PLEAT_X86_32_SUITES}" STREQUAL "require")
    message(FATAL_ERROR "32-bit x86: the Criterion suites cannot run: missing ${why}")
  endif()
  message(WARNING "32-bit x86: only the framework-free tests run; the Criterion suites need ${why}")
  set(suites -DPLEAT_CRITERION=OFF -DPLEAT_CRITERION_ROOT=)
  set(must_run size_max symbols)
endif()

cross_build_and_test(i686-linux-gnu.cmake "32-bit x86 tests" junit
                     -DCMAKE_C_COMPILER=${PLEAT_M32_CC} ${suites}
                     -DPLEAT_BUILD_FUZZ=ON -DPLEAT_FUZZ_LIBFUZZER=OFF -DPLEAT_BUILD_BENCH=OFF)
if(DEFINED caller_path)
  set(ENV{LD_LIBRARY_PATH} "${caller_path}")
endif()
# a 32-bit program (ELF class 1): else the hashes below would compare a
# 64-bit build with this one
file(READ ${WORK_DIR}/tests/pleat-check elf LIMIT 5 HEX)
if(NOT elf STREQUAL "7f454c4601")
  message(FATAL_ERROR "the -m32 build's pleat-check is not a 32-bit ELF program (${elf})")
endif()
if(suites MATCHES "PLEAT_CRITERION=ON")
  # ELF type 2, not 3: a suite linked at a fixed address (tests/CMakeLists.txt:
  # Criterion's sandbox could map its arena over a 32-bit PIE)
  file(READ ${WORK_DIR}/tests/test_pairs elf_type OFFSET 16 LIMIT 2 HEX)
  if(NOT elf_type STREQUAL "0200")
    message(FATAL_ERROR "the -m32 suites are not linked at a fixed address (ELF type ${elf_type})")
  endif()
endif()
every_isa_here_ran("${junit}" "as a 32-bit program")
foreach(test IN LISTS must_run) # size_max: counts past a 32-bit size_t
  ran_there("${junit}" ${test} "as a 32-bit program")
endforeach()
same_bits_as_here("${junit}" check.scalar "32-bit x86")
