# Cross-builds pleat for 64-bit Windows with Debian's MinGW-w64 GCC, as a
# DLL, and runs its framework-free tests under Wine: pleat-check per ISA
# (every x86-64 variant) and the same-bits check between them, the fuzz
# corpus replays, the thread and pool stress tests (Win32's locks and
# condition variables, cpu/thread.c), the drape sample's smoke test, a
# short pleat-bench run and the installed DLL from a C and a C++ project
# (CMake and pkg-config, tests/consumer) and from an MSVC-mode C and C++
# project through pleat.lib (tests/consumer/msvc); then checks that pleat-check's
# result hash equals this machine's: the same bits on Linux and Windows. The Criterion suites
# do not run there (no Criterion for Windows here).
# Inputs: SOURCE_DIR, WORK_DIR, GENERATOR, NATIVE_CHECK, NATIVE_ISAS, PLEAT_MINGW_GCC,
# PLEAT_MINGW_GXX, PLEAT_WINE; optional: PLEAT_CLANG_CL, PLEAT_LLD_LINK, PLEAT_LLVM_DLLTOOL.
include(${CMAKE_CURRENT_LIST_DIR}/cross.cmake)

# A Wine prefix of the test's own (made on first use, about 10 s), quiet.
# MinGW's run-time DLLs, which stress_threads (pthreads) and the C++
# consumer (libstdc++) need, are found through WINEPATH (Z: is Wine's drive
# for the root folder).
set(ENV{WINEPREFIX} ${WORK_DIR}/wine)
set(ENV{WINEDEBUG} -all)
# and with no Mono or Gecko: where a display is set, wineboot would wait on
# a dialog offering to install them
set(ENV{WINEDLLOVERRIDES} "mscoree,mshtml=")
set(runtime_dirs)
foreach(dll libwinpthread-1.dll libstdc++-6.dll libgcc_s_seh-1.dll)
  execute_process(COMMAND ${PLEAT_MINGW_GXX} -print-file-name=${dll}
                  OUTPUT_VARIABLE path OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT IS_ABSOLUTE "${path}" OR NOT EXISTS "${path}")
    message(FATAL_ERROR "${PLEAT_MINGW_GXX} has no ${dll}")
  endif()
  get_filename_component(dir "${path}" REALPATH)
  get_filename_component(dir "${dir}" DIRECTORY)
  list(APPEND runtime_dirs "Z:${dir}")
endforeach()
list(REMOVE_DUPLICATES runtime_dirs)
set(ENV{WINEPATH} "${runtime_dirs}") # a list: ;-separated, as Wine reads it

# Programs run as the cross build's tests run them (its toolchain file):
# through wine-run.sh, which starts one again when Wine failed to start it.
set(wine ${SOURCE_DIR}/cmake/wine-run.sh ${PLEAT_WINE})

# The prefix made before any test runs: Wine finishes a new prefix in the
# background of the first program, and a test started meanwhile lost its
# connection to the server (CI, once: "wine client error:0: recvmsg:
# Connection reset by peer"). wineboot --init makes it in the foreground,
# and run() returns once the server it started is gone too (the server
# keeps run()'s stderr pipe open); wineserver -w makes sure of that.
get_filename_component(wine_dir "${PLEAT_WINE}" REALPATH)
get_filename_component(wine_dir "${wine_dir}" DIRECTORY)
find_program(wineserver NAMES wineserver64 wineserver HINTS "${wine_dir}" /usr/lib/wine
             NO_CACHE REQUIRED)
file(MAKE_DIRECTORY "$ENV{WINEPREFIX}")
run(${wine} wineboot --init)
run("${wineserver}" -w)

# a shared build puts the DLL and every program in bin/ (CMakeLists.txt);
# the llvm-dlltool found here makes its pleat.lib
set(dlltool)
if(PLEAT_LLVM_DLLTOOL)
  set(dlltool -DPLEAT_LLVM_DLLTOOL=${PLEAT_LLVM_DLLTOOL})
endif()
cross_build_and_test(x86_64-w64-mingw32.cmake "Windows tests under Wine" junit
                     -DBUILD_SHARED_LIBS=ON -DPLEAT_CRITERION=OFF -DPLEAT_BUILD_FUZZ=ON
                     ${dlltool})
set(bin ${WORK_DIR}/bin)

# Every variant this machine runs must have run under Wine too (one the CPU
# lacks is skipped, 77, here and there).
every_isa_here_ran("${junit}" "under Wine")

# pleat-bench: its pairs must match the plain grid's (exit 3 otherwise)
run(${wine} ${bin}/pleat-bench.exe --scenes cloud,folded --sizes 4k --threads 1,2 --repeats 3)
message(STATUS "pleat-bench under Wine:\n${out}")

# The installed DLL, its import library, CMake package and pleat.pc, used
# by a C and a C++ program as tests/consumer/run.cmake does on Linux.
find_program(pkg_config NAMES pkg-config pkgconf REQUIRED)
string(REPLACE ";" "\\;" wine_arg "${wine}") # one argument of run(), a list in run.cmake
run(${CMAKE_COMMAND} -DBUILD_DIR=${WORK_DIR} -DSOURCE_DIR=${SOURCE_DIR}/tests/consumer
    -DWORK_DIR=${WORK_DIR}/consumer -DGENERATOR=${GENERATOR}
    -DTOOLCHAIN=${SOURCE_DIR}/cmake/x86_64-w64-mingw32.cmake -DC_COMPILER=${PLEAT_MINGW_GCC}
    -DPKG_CONFIG=${pkg_config} "-DEMULATOR=${wine_arg}" -DWINDOWS=ON -DEXE_SUFFIX=.exe
    -P ${SOURCE_DIR}/tests/consumer/run.cmake)
message(STATUS "the installed DLL from CMake and pkg-config projects under Wine:\n${out}")

# MSVC programs: tests/consumer/msvc, an MSVC-mode project (clang-cl and
# lld-link; no Windows SDK or C run-time here) that finds the installed
# pleat with find_package and builds msvc_abi.c as C and as C++, linked
# through pleat.lib; both must print what the same source built by MinGW
# GCC prints: the struct layouts, the defaults returned by value and the
# results. kernel32.lib, for the three functions they call, is made as
# pleat.lib is; CMake's other MSVC tools lie beside llvm-dlltool. Without
# the LLVM tools this is left out with a warning (an error when
# PLEAT_MSVC_CONSUMER=require, as .ci/run sets it).
function(msvc_consumer prefix abi)
  file(REMOVE_RECURSE ${abi})
  if(NOT EXISTS ${prefix}/lib/pleat.lib)
    message(FATAL_ERROR "the Windows build installed no lib/pleat.lib")
  endif()
  file(WRITE ${abi}/kernel32.def "LIBRARY kernel32.dll\nEXPORTS\nExitProcess\nGetStdHandle\n"
                                 "WriteFile\n")
  run(${PLEAT_LLVM_DLLTOOL} -m i386:x86-64 -d ${abi}/kernel32.def -l ${abi}/kernel32.lib)
  get_filename_component(llvm_dir "${PLEAT_LLVM_DLLTOOL}" REALPATH)
  get_filename_component(llvm_dir "${llvm_dir}" DIRECTORY)
  foreach(tool lib mt rc)
    find_program(llvm_${tool} llvm-${tool} HINTS ${llvm_dir} NO_CACHE REQUIRED)
  endforeach()
  # single-configuration, for the programs' paths below
  run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/consumer/msvc -B ${abi}/build -G Ninja
      -DCMAKE_TOOLCHAIN_FILE=${SOURCE_DIR}/tests/consumer/msvc/toolchain.cmake
      -DCMAKE_C_COMPILER=${PLEAT_CLANG_CL} -DCMAKE_CXX_COMPILER=${PLEAT_CLANG_CL}
      -DCMAKE_LINKER=${PLEAT_LLD_LINK} -DCMAKE_AR=${llvm_lib} -DCMAKE_MT=${llvm_mt}
      -DCMAKE_RC_COMPILER=${llvm_rc} -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${prefix}
      -DKERNEL32_LIB=${abi}/kernel32.lib)
  run(${CMAKE_COMMAND} --build ${abi}/build)
  # the MinGW one, beside its own copy of the DLL
  file(COPY ${prefix}/bin/libpleat.dll DESTINATION ${abi})
  run(${PLEAT_MINGW_GCC} -std=c99 -O2 -Wall -Wextra -Werror -I${prefix}/include
      ${SOURCE_DIR}/tests/consumer/msvc/msvc_abi.c -o ${abi}/mingw.exe -L${prefix}/lib -lpleat)
  run(${wine} ${abi}/mingw.exe)
  set(expected "${out}")
  foreach(lang c cpp)
    run(${wine} ${abi}/build/msvc_abi_${lang}.exe)
    if(NOT out STREQUAL expected)
      message(FATAL_ERROR "MSVC-mode ${lang} printed\n${out}\nMinGW C printed\n${expected}")
    endif()
  endforeach()
  message(STATUS "MSVC-mode C and C++ programs, linked through find_package and pleat.lib, "
                 "print what MinGW's does:\n${out}")
endfunction()
if(PLEAT_CLANG_CL AND PLEAT_LLD_LINK AND PLEAT_LLVM_DLLTOOL)
  msvc_consumer(${WORK_DIR}/consumer/prefix ${WORK_DIR}/msvc_consumer)
elseif("$ENV{PLEAT_MSVC_CONSUMER}" STREQUAL "require")
  message(FATAL_ERROR "no clang-cl, lld-link or llvm-dlltool: the MSVC-mode project cannot run")
else()
  message(WARNING "no clang-cl, lld-link or llvm-dlltool: the MSVC-mode project is left out")
endif()

same_bits_as_here("${junit}" check.scalar "Windows (MinGW-w64, Wine)")
