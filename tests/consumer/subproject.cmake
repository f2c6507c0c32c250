# Configures, builds and runs tests/consumer/subproject (pleat built inside
# another project) with no build type set, on the CPU alone (its CUDA build
# is the top-level one's).
# Inputs: PLEAT_SOURCE_DIR, SOURCE_DIR (tests/consumer), WORK_DIR, GENERATOR,
# C_COMPILER.
include(${CMAKE_CURRENT_LIST_DIR}/../cross.cmake) # run()
# Twice: with pleat's install rules (the default), the parent installs
# pleat with its own targets, one of which links pleat; with
# PLEAT_INSTALL=OFF, the parent's install holds nothing of pleat's.
foreach(install ON OFF)
  set(dir ${WORK_DIR}/install-${install})
  file(REMOVE_RECURSE ${dir})
  set(rules)
  if(install STREQUAL "OFF")
    set(rules -DPLEAT_INSTALL=OFF)
  endif()
  run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/subproject -B ${dir} -G ${GENERATOR}
      -DCMAKE_C_COMPILER=${C_COMPILER} -DPLEAT_SOURCE_DIR=${PLEAT_SOURCE_DIR}
      -DPLEAT_CUDA=OFF -DPLEAT_CUDA_EMULATOR=OFF ${rules})
  run(${CMAKE_COMMAND} --build ${dir})
  run(${dir}/consumer_c)
  run(${dir}/consumer_cpp)
  run(${CMAKE_COMMAND} --install ${dir} --prefix ${dir}/prefix)
  file(GLOB_RECURSE installed ${dir}/prefix/*)
  list(FILTER installed INCLUDE REGEX "pleat")
  if(install STREQUAL "ON" AND NOT installed MATCHES "/include/pleat\\.h")
    message(FATAL_ERROR "pleat's install rules installed no pleat.h: ${installed}")
  elseif(install STREQUAL "OFF" AND installed)
    message(FATAL_ERROR "PLEAT_INSTALL=OFF, yet the parent installs ${installed}")
  endif()
endforeach()
