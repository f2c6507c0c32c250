# Run by the drape_smoke test: cmake -DDRAPE=<pleat-drape> -DOUT=<dir> -P smoke.cmake
# (EMULATOR: the command a cross build runs programs with, e.g. Wine)
file(REMOVE_RECURSE "${OUT}")

execute_process(
  COMMAND ${EMULATOR} "${DRAPE}" --res 24 --frames 40 --out "${OUT}"
  RESULT_VARIABLE rc
  OUTPUT_VARIABLE out
  ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pleat-drape exited with ${rc}")
endif()
# the demo's claim: each scene ends with fewer interpenetrations with
# pleat's self-collision than without (a pleat that pushed nothing apart
# would leave as many)
foreach(scene sphere pile)
  if(NOT out MATCHES "\n${scene} +([0-9]+) interpenetrations without self-collision, ([0-9]+) with")
    message(FATAL_ERROR "pleat-drape printed no summary line for ${scene}")
  endif()
  if(NOT CMAKE_MATCH_2 LESS CMAKE_MATCH_1)
    message(FATAL_ERROR "${scene}: ${CMAKE_MATCH_2} interpenetrations with self-collision, "
      "not fewer than the ${CMAKE_MATCH_1} without")
  endif()
endforeach()

foreach(scene sphere pile)
  foreach(ext png obj)
    set(file "${OUT}/drape-${scene}.${ext}")
    if(NOT EXISTS "${file}")
      message(FATAL_ERROR "missing ${file}")
    endif()
    file(SIZE "${file}" size)
    if(size EQUAL 0)
      message(FATAL_ERROR "empty ${file}")
    endif()
  endforeach()
  file(READ "${OUT}/drape-${scene}.png" signature LIMIT 8 HEX)
  if(NOT signature STREQUAL "89504e470d0a1a0a")
    message(FATAL_ERROR "drape-${scene}.png is not a PNG")
  endif()
endforeach()

execute_process(
  COMMAND ${EMULATOR} "${DRAPE}" --no-such-option
  RESULT_VARIABLE rc
  OUTPUT_QUIET ERROR_QUIET)
if(NOT rc EQUAL 2)
  message(FATAL_ERROR "a bad option gave exit status ${rc}, expected 2")
endif()
