# Runs one fuzz harness (cmake -P).
#   MODE=replay: every file under INPUTS (a list of folders; missing ones are
#     skipped) once through FUZZER; LIBFUZZER says whether FUZZER is a
#     libFuzzer binary (it then gets the files as arguments) or a replay
#     runner (it gets the folders, and is run with EMULATOR, if any: a cross
#     build's, e.g. Wine).
#   MODE=fuzz: libFuzzer for SECONDS seconds on WORK/corpus (kept between
#     runs) plus the seed folder SEEDS (read only); a crash input is saved in
#     WORK/artifacts (emptied first) and fails the test, which prints it in
#     hex with the run's seed. Prints the executions run.
if(MODE STREQUAL "replay")
  set(files)
  set(dirs)
  foreach(dir IN LISTS INPUTS)
    if(IS_DIRECTORY ${dir})
      file(GLOB_RECURSE found LIST_DIRECTORIES false ${dir}/*)
      list(SORT found)
      list(APPEND files ${found})
      list(APPEND dirs ${dir})
    endif()
  endforeach()
  list(LENGTH files n)
  if(n EQUAL 0)
    message(FATAL_ERROR "no inputs under ${INPUTS}")
  endif()
  if(LIBFUZZER)
    execute_process(COMMAND ${FUZZER} -runs=1 ${files} RESULT_VARIABLE rc
      OUTPUT_VARIABLE out ERROR_VARIABLE out)
  else()
    execute_process(COMMAND ${EMULATOR} ${FUZZER} ${dirs} RESULT_VARIABLE rc
      OUTPUT_VARIABLE out ERROR_VARIABLE out)
  endif()
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "replay failed (${rc}):\n${out}")
  endif()
  # the runner counts what it ran: a file it skipped would pass unseen
  if(NOT LIBFUZZER AND NOT out MATCHES "(^|\n)${n} inputs ran")
    message(FATAL_ERROR "the runner did not run the ${n} inputs found:\n${out}")
  endif()
  message(STATUS "${n} inputs replayed without a finding")
elseif(MODE STREQUAL "fuzz")
  file(REMOVE_RECURSE ${WORK}/artifacts) # what a failure prints is this run's
  file(MAKE_DIRECTORY ${WORK}/corpus ${WORK}/artifacts)
  execute_process(COMMAND ${FUZZER}
      -max_total_time=${SECONDS} -print_final_stats=1 -timeout=30 -rss_limit_mb=4096
      -max_len=8192 -artifact_prefix=${WORK}/artifacts/
      ${WORK}/corpus ${SEEDS}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  string(REGEX MATCH "stat::number_of_executed_units: *([0-9]+)" _ "${out}")
  set(execs ${CMAKE_MATCH_1})
  string(REGEX MATCH "stat::new_units_added: *([0-9]+)" _ "${out}")
  set(added ${CMAKE_MATCH_1})
  if(NOT rc EQUAL 0)
    # the run's seed (printed first) and each input it saved, in hex (xxd -r
    # -p makes the file again), for a log that outlives the build folder
    string(REGEX MATCH "Seed: [0-9]+" seed "${out}")
    if(NOT seed)
      set(seed "no seed printed")
    endif()
    string(LENGTH "${out}" len)
    if(len GREATER 12000)
      math(EXPR from "${len} - 12000")
      string(SUBSTRING "${out}" ${from} -1 out)
    endif()
    file(GLOB crashes ${WORK}/artifacts/*)
    set(saved)
    foreach(crash IN LISTS crashes)
      file(READ "${crash}" bytes HEX)
      string(APPEND saved "${crash} (hex): ${bytes}\n")
    endforeach()
    message(FATAL_ERROR "fuzzer failed (${rc}) after ${execs} executions (${seed})\n"
      "${saved}${out}")
  endif()
  message(STATUS "${FUZZER}: ${execs} executions in ${SECONDS} s, ${added} new corpus inputs")
else()
  message(FATAL_ERROR "MODE must be replay or fuzz")
endif()
