# Configures, builds and runs tests/consumer/subproject (pleat built inside
# another project) with no build type set, on the CPU alone (its CUDA build
# is the top-level one's).
# Inputs: PLEAT_SOURCE_DIR, SOURCE_DIR (tests/consumer), WORK_DIR, GENERATOR,
# C_COMPILER.
include(${CMAKE_CURRENT_LIST_DIR}/../cross.cmake) # run()
file(REMOVE_RECURSE ${WORK_DIR})
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/subproject -B ${WORK_DIR} -G ${GENERATOR}
    -DCMAKE_C_COMPILER=${C_COMPILER}
    -DPLEAT_SOURCE_DIR=${PLEAT_SOURCE_DIR} -DPLEAT_CUDA=OFF -DPLEAT_CUDA_EMULATOR=OFF)
run(${CMAKE_COMMAND} --build ${WORK_DIR})
run(${WORK_DIR}/consumer_c)
run(${WORK_DIR}/consumer_cpp)
# the parent's install holds nothing of pleat's (PLEAT_INSTALL is off there)
run(${CMAKE_COMMAND} --install ${WORK_DIR} --prefix ${WORK_DIR}/prefix)
file(GLOB_RECURSE installed ${WORK_DIR}/prefix/*)
if(installed)
  message(FATAL_ERROR "a subproject pleat installs files with its parent: ${installed}")
endif()
