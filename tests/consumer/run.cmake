# Installs the built pleat into a scratch prefix, then configures, builds and
# runs the consumer project against it with find_package(pleat CONFIG), and
# builds and runs its C program once more with the compiler alone and the
# flags of `pkg-config --static` (the installed pleat.pc), as a Makefile
# would (where pkg-config was found: PKG_CONFIG).
# Inputs: BUILD_DIR, SOURCE_DIR, WORK_DIR, GENERATOR, C_COMPILER, PKG_CONFIG,
# WINDOWS (true for a Windows pleat), EXE_SUFFIX (.exe there); for a cross
# build (tests/windows.cmake) also TOOLCHAIN (its toolchain file, for the
# consumer project) and EMULATOR (what runs its programs).
include(${CMAKE_CURRENT_LIST_DIR}/../cross.cmake) # run()
file(REMOVE_RECURSE ${WORK_DIR})
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix)
if(TOOLCHAIN)
  set(compiler -DCMAKE_TOOLCHAIN_FILE=${TOOLCHAIN})
else()
  set(compiler -DCMAKE_C_COMPILER=${C_COMPILER})
endif()
run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/build -G ${GENERATOR}
    ${compiler} -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix)
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run(${EMULATOR} ${WORK_DIR}/build/consumer_c${EXE_SUFFIX})
run(${EMULATOR} ${WORK_DIR}/build/consumer_cpp${EXE_SUFFIX})

function(pkg_config out)
  execute_process(COMMAND ${PKG_CONFIG} ${ARGN} pleat RESULT_VARIABLE rc
    OUTPUT_VARIABLE flags OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "pkg-config ${ARGN} pleat failed (${rc})")
  endif()
  separate_arguments(flags UNIX_COMMAND "${flags}")
  set(${out} ${flags} PARENT_SCOPE)
endfunction()
if(NOT PKG_CONFIG) # tests/CMakeLists.txt said so when it registered the test
  message(STATUS "no pkg-config: the pkg-config half is left out")
  return()
endif()
file(GLOB_RECURSE _pc ${WORK_DIR}/prefix/*/pleat.pc)
get_filename_component(_pc_dir "${_pc}" DIRECTORY)
set(ENV{PKG_CONFIG_PATH} ${_pc_dir})
pkg_config(cflags --cflags)
pkg_config(libs --static --libs)
# a CUDA build's file finds the static CUDA runtime through a variable that a
# machine with the toolkit elsewhere can set
pkg_config(cudart_libdir --variable=cudart_libdir)
if(cudart_libdir)
  pkg_config(moved --define-variable=cudart_libdir=/elsewhere --static --libs)
  list(FIND moved -L/elsewhere _elsewhere)
  list(FIND moved -L${cudart_libdir} _here)
  if(_elsewhere EQUAL -1 OR NOT _here EQUAL -1)
    message(FATAL_ERROR "cudart_libdir does not move the CUDA runtime's folder: ${moved}")
  endif()
endif()
# a shared build's library, found at run time: through the rpath, or on
# Windows as a DLL beside the program
if(WINDOWS)
  file(GLOB _dlls ${WORK_DIR}/prefix/bin/*.dll)
  file(COPY ${_dlls} DESTINATION ${WORK_DIR})
else()
  pkg_config(libdir --variable=libdir)
  list(APPEND libs -Wl,-rpath,${libdir})
endif()
string(JOIN " " _shown ${cflags} ${libs})
message(STATUS "pkg-config flags: ${_shown}")
run(${C_COMPILER} -std=c99 ${cflags} ${SOURCE_DIR}/main.c -o ${WORK_DIR}/consumer_pc${EXE_SUFFIX}
    ${libs})
run(${EMULATOR} ${WORK_DIR}/consumer_pc${EXE_SUFFIX})
