# Run by the fold_args test: cmake -DFOLD=<pleat-fold> -P fold_args.cmake
# (EMULATOR: the command a cross build runs programs with, e.g. Wine). Each
# case is an exit status and a command line; the runs are small (a 16 x 16
# sheet, 2 repeats).
set(small "--res 16 --repeats 2")
set(cases
  "0|--help"
  "0|${small} --backend cpu --threads 1 --layers 3"
  "0|${small} --backend auto --threads 0"
  "2|${small} --backend gpu"
  "2|--res 12abc"
  "2|--res 1"
  "2|--threads 300"
  "2|--threads abc"
  "2|--repeats 0"
  "2|--res 8 --layers 9"
  "2|--res"
  "2|--bogus 1")
foreach(case IN LISTS cases)
  string(REPLACE "|" ";" case "${case}")
  list(POP_FRONT case want)
  separate_arguments(args UNIX_COMMAND "${case}")
  execute_process(COMMAND ${EMULATOR} ${FOLD} ${args} RESULT_VARIABLE rc
    OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc STREQUAL want)
    message(FATAL_ERROR "pleat-fold ${case}: exit status ${rc}, expected ${want}\n${out}${err}")
  endif()
endforeach()
list(LENGTH cases n)
message(STATUS "pleat-fold: ${n} command lines gave the expected status")
