# Compiles the README's first example (the C block under "## Using it") as
# C99 and, with CXX_COMPILER, as C++11, every warning an error, so that the
# README shows code that builds.
# Inputs: README, INCLUDE_DIR (pleat.h's), WORK_DIR, C_COMPILER, CXX_COMPILER.
file(READ ${README} text)
string(FIND "${text}" "\n## Using it\n" at)
if(at LESS 0)
  message(FATAL_ERROR "no \"## Using it\" section in ${README}")
endif()
string(SUBSTRING "${text}" ${at} -1 text)
if(NOT text MATCHES "\n```c\n(.*)")
  message(FATAL_ERROR "no C block under \"## Using it\" in ${README}")
endif()
set(text "${CMAKE_MATCH_1}")
string(FIND "${text}" "\n```" end)
string(SUBSTRING "${text}" 0 ${end} code)
file(MAKE_DIRECTORY ${WORK_DIR})
file(WRITE ${WORK_DIR}/readme_example.c "${code}\n")

function(compile compiler)
  execute_process(COMMAND ${compiler} ${ARGN} -Wall -Wextra -pedantic -Werror -I${INCLUDE_DIR}
    -c ${WORK_DIR}/readme_example.c -o ${WORK_DIR}/readme_example.o
    RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the README's example does not compile (${compiler}):\n"
      "${err}\n--- the code ---\n${code}")
  endif()
  string(JOIN " " flags ${ARGN})
  message(STATUS "compiles: ${compiler} ${flags}")
endfunction()
compile(${C_COMPILER} -std=c99)
if(CXX_COMPILER)
  compile(${CXX_COMPILER} -x c++ -std=c++11)
endif()
