# Reads the kernels' PTX (PTX: a list of .ptx files) for the memory ordering
# a GPU needs and the CUDA emulator cannot miss: there every fence is a
# no-op, blocks run one after another, and a warp's lanes take turns only
# at its intrinsics, each of which then orders memory, so deleting one of
# these leaves every emulated check passing while a GPU loses pairs.
#   - the last bounds block sees every block's box (keys.cu, last_block and
#     read_box): the ticket is taken between two fences, and the boxes are
#     read past L1;
#   - a correcting sweep's lanes read the queue entries and own sums other
#     lanes wrote after a warp barrier (sweep.cu: enqueue, finish, the own
#     sums zeroed): __ballot_sync and __shfl_sync order no memory;
#   - the sums and counters many threads add to are added atomically: the
#     emulator's lanes never interleave a read-modify-write, so a plain +=
#     there would lose no update (an atomic whose old value is unused may
#     be a red. instruction, so either counts).
# Each rule names a kernel, a pattern its PTX must match and, for a count,
# how many times at least: what the source had when this was written (a
# change that needs fewer says why here).

# kernel (a regex of its mangled name), what (a regex, with <semicolon> for the
# PTX's ';'), times (0: once, what it spans in that order; "between": what is
# A<then>B<then>C, and B must come after the last A before the first C), why
set(rules
  "pleat_bounds_kernel"
  "membar\\.gl<semicolon>[^\n]*\n([^\n]*\n)*[ \t]*atom\\.global\\.inc\\.u32[^\n]*\n([^\n]*\n)*[ \t]*membar\\.gl<semicolon>"
  0 "the bounds ticket taken between two fences (keys.cu, last_block)"

  "pleat_bounds_kernel" "ld\\.volatile\\.global\\.[fu]32" 7
  "each block's box and flags read past L1 by the last block (keys.cu, read_box)"

  "pleat_sweep_kernelIL15pleat_cuda_mode2E" "bar\\.warp\\.sync" 5
  "the correcting sweep's warp barriers around its queue and own sums (sweep.cu)"

  "pleat_sweep_kernelIL15pleat_cuda_mode2E"
  "st\\.shared\\.u64<then>bar\\.warp\\.sync<then>shfl\\.sync\\.bfly" between
  "a warp barrier between the own sums zeroed and the walk that adds to them (sweep.cu)"

  "pleat_sweep_kernelIL15pleat_cuda_mode2E" "(atom|red)\\.shared\\.add\\.u64" 6
  "the own sums added atomically, a warp's lanes adding to one another's (sweep.cu, correct)"

  "pleat_sweep_kernelIL15pleat_cuda_mode2E" "(atom|red)\\.global\\.add\\.u64" 11
  "the corrections' fixed-point sums and the pair counts added atomically (sweep.cu)"

  "pleat_sweep_kernelIL15pleat_cuda_mode1E" "(atom|red)\\.global\\.add\\.u64" 5
  "the listed pairs' slots and the pair counts taken atomically (sweep.cu)"

  "pleat_sweep_kernelIL15pleat_cuda_mode0E" "(atom|red)\\.global\\.add\\.u64" 2
  "the pair and test counts added atomically (sweep.cu, count)"

  "pleat_limit_kernel" "(atom|red)\\.global\\.add\\.u64" 1
  "the blocks' tests added atomically to the call's total (sweep.cu)"

  "pleat_bounds_kernel" "(atom|red)\\.global\\.or\\.b32" 1
  "each index claimed in the bitmap atomically, so a repeated one is found (keys.cu)")

if(NOT PTX)
  message(FATAL_ERROR "no PTX files given")
endif()
# the kernels, one list item each: the PTX's own ';' kept as <semicolon>
set(kernels)
foreach(file IN LISTS PTX)
  file(READ ${file} ptx)
  string(REPLACE ";" "<semicolon>" ptx "${ptx}")
  string(REPLACE ".entry " ";.entry " ptx "${ptx}")
  list(POP_FRONT ptx) # what comes before the first kernel
  list(APPEND kernels ${ptx})
endforeach()

set(failed "")
list(LENGTH rules n)
math(EXPR last "${n} - 1")
foreach(i RANGE 0 ${last} 4)
  math(EXPR j "${i} + 1")
  math(EXPR k "${i} + 2")
  math(EXPR l "${i} + 3")
  list(GET rules ${i} kernel)
  list(GET rules ${j} what)
  list(GET rules ${k} times)
  list(GET rules ${l} why)
  set(body "")
  foreach(text IN LISTS kernels)
    if(text MATCHES "^\\.entry [^\n(]*${kernel}")
      set(body "${text}")
    endif()
  endforeach()
  if(body STREQUAL "")
    string(APPEND failed "\n  no kernel ${kernel}")
  elseif(times STREQUAL "between")
    string(REPLACE "<then>" ";" abc "${what}")
    list(GET abc 0 a)
    list(GET abc 1 b)
    list(GET abc 2 c)
    string(REGEX REPLACE "${c}.*" "" head "${body}")
    string(REGEX REPLACE "^.*${a}" "" gap "${head}")
    if(head STREQUAL body OR gap STREQUAL head OR NOT gap MATCHES "${b}")
      string(APPEND failed "\n  ${kernel}: missing ${why}")
    endif()
  elseif(times EQUAL 0)
    if(NOT body MATCHES "${what}")
      string(APPEND failed "\n  ${kernel}: missing ${why}")
    endif()
  else()
    string(REGEX MATCHALL "${what}" found "${body}")
    list(LENGTH found count)
    if(count LESS times)
      string(APPEND failed "\n  ${kernel}: ${count} of ${what}, not ${times}: ${why}")
    endif()
  endif()
endforeach()
if(failed)
  message(FATAL_ERROR "the kernels' PTX (${PTX}) lacks ordering a GPU needs:${failed}")
endif()
message(STATUS "the kernels' PTX keeps their fences, volatile loads, warp barriers and atomics")
