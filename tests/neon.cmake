# Cross-builds the tests for AArch64 (NEON) with Debian's toolchain and runs
# them under qemu-user (every AArch64 variant: scalar and neon, and the
# same-bits check between them), then checks that pleat-check's result hash
# equals this machine's: the same bits on x86-64 and AArch64.
#
# The Criterion suites run too where they can. They need an arm64 root with
# Criterion unpacked in it, named by the environment's PLEAT_AARCH64_ROOT
# (cmake/fetch-debian-root.sh arm64 makes one), and, because Criterion starts
# each test in a new process by exec, the kernel told to run AArch64
# programs with qemu (binfmt_misc). .ci/run sets both up. Without them only
# pleat-check runs, with a warning, or a failure when the environment has
# PLEAT_NEON_SUITES=require (CI).
# Inputs: SOURCE_DIR, WORK_DIR, GENERATOR, NATIVE_CHECK.
include(${CMAKE_CURRENT_LIST_DIR}/cross.cmake)

# What the Criterion suites lack here, if anything.
set(root "$ENV{PLEAT_AARCH64_ROOT}")
set(missing "")
if(NOT root OR NOT EXISTS ${root}/usr/lib/aarch64-linux-gnu/libcriterion.so.3)
  list(APPEND missing
       "an arm64 root with Criterion in PLEAT_AARCH64_ROOT (cmake/fetch-debian-root.sh arm64)")
endif()
set(binfmt /proc/sys/fs/binfmt_misc/qemu-aarch64)
if(EXISTS ${binfmt})
  file(STRINGS ${binfmt} state LIMIT_COUNT 1)
endif()
if(NOT EXISTS ${binfmt} OR NOT state STREQUAL "enabled")
  list(APPEND missing "qemu-aarch64 registered with binfmt_misc (as .ci/run does)")
endif()
if(missing)
  list(JOIN missing "; " why)
  if("$ENV{PLEAT_NEON_SUITES}" STREQUAL "require")
    message(FATAL_ERROR "NEON: the Criterion suites cannot run under qemu: missing ${why}")
  endif()
  message(WARNING "NEON: only pleat-check runs under qemu; the Criterion suites need ${why}")
  set(suites -DPLEAT_CRITERION=OFF -DPLEAT_CRITERION_ROOT=
             -DPLEAT_QEMU_LD_PREFIX=/usr/aarch64-linux-gnu)
else()
  set(suites -DPLEAT_CRITERION=ON -DPLEAT_CRITERION_ROOT=${root} -DPLEAT_QEMU_LD_PREFIX=${root})
  set(ENV{QEMU_LD_PREFIX} ${root}) # for the processes Criterion starts
endif()

cross_build_and_test(aarch64-linux-gnu.cmake "AArch64 tests under qemu" junit
                     ${suites} -DPLEAT_BUILD_SAMPLES=OFF -DPLEAT_BUILD_BENCH=OFF)
ran_there("${junit}" symbols "in the AArch64 build")
same_bits_as_here("${junit}" check.neon "NEON (AArch64, qemu)")
