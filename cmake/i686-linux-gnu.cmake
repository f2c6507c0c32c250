# Build for 32-bit x86 Linux with the host's compiler and -m32 (Debian:
# gcc-<version>-multilib). The programs run natively on an x86-64 host.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR i686)
set(CMAKE_C_FLAGS_INIT -m32)
set(CMAKE_EXE_LINKER_FLAGS_INIT -m32)
set(CMAKE_SHARED_LINKER_FLAGS_INIT -m32)
# Debian's multiarch folder for i386 libraries (an unpacked root's too:
# PLEAT_CRITERION_ROOT), which CMake does not always learn from gcc -m32
set(CMAKE_LIBRARY_ARCHITECTURE i386-linux-gnu)
