# Cross build for 64-bit ARM (Debian's gcc-aarch64-linux-gnu); tests run
# under qemu-user (Debian's qemu-user) through the emulator setting.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
# The AArch64 C runtime qemu runs the tests on (qemu -L): the cross
# toolchain's, or another root (tests/neon.cmake: an unpacked arm64 root that
# also holds Criterion)
set(PLEAT_QEMU_LD_PREFIX /usr/aarch64-linux-gnu CACHE PATH "AArch64 root qemu runs the tests on")
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L ${PLEAT_QEMU_LD_PREFIX})
