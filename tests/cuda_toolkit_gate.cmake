# Configures pleat with a stand-in nvcc that says it is CUDA 11.7 and
# compiles nothing. An nvcc that old cannot compile the default GPU
# architectures, and enable_language(CUDA) would stop the configure: AUTO
# must build the CPU backend alone, and ON must fail, saying why.
# Inputs: SOURCE_DIR, WORK_DIR, GENERATOR, C_COMPILER.
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
set(nvcc ${WORK_DIR}/nvcc)
file(WRITE ${nvcc} [[#!/bin/sh
if [ "$1" = --version ]; then
  echo "Cuda compilation tools, release 11.7, V11.7.99"
  exit 0
fi
echo "stand-in nvcc: compiles nothing" >&2
exit 1
]])
file(CHMOD ${nvcc} PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)

foreach(mode AUTO ON)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=CUDAARCHS --unset=CUDACXX
      ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/${mode} -G ${GENERATOR}
      -DCMAKE_C_COMPILER=${C_COMPILER} -DCMAKE_CUDA_COMPILER=${nvcc} -DPLEAT_CUDA=${mode}
      -DPLEAT_BUILD_TESTS=OFF -DPLEAT_BUILD_SAMPLES=OFF -DPLEAT_BUILD_BENCH=OFF
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(mode STREQUAL "AUTO" AND NOT (rc EQUAL 0 AND out MATCHES "nvcc is CUDA 11\\.7" AND
                                   out MATCHES "CUDA backend OFF"))
    message(FATAL_ERROR "AUTO with CUDA 11.7's nvcc did not build the CPU alone (${rc}):\n"
                        "${out}\n${err}")
  elseif(mode STREQUAL "ON" AND (rc EQUAL 0 OR NOT err MATCHES "nvcc is CUDA 11\\.7"))
    message(FATAL_ERROR "ON with CUDA 11.7's nvcc did not fail on it (${rc}):\n${out}\n${err}")
  endif()
endforeach()
message(STATUS "AUTO builds the CPU alone with CUDA 11.7's nvcc, and ON fails on it")
