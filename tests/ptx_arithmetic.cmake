# Reads the PTX of the CUDA kernels that compute with floats (PTX: a list of
# .ptx files) for what the CPU's bits need (DESIGN.md §2): each add,
# subtract and multiply rounded on its own (.rn: ptxas contracts only
# unrounded ones into an FMA), no FMA, no approximate instruction (IEEE
# division and square root), no flush-to-zero. Fails too unless each file
# has a kernel and the kernels' rounded arithmetic is there to read.

# (a pattern, what it is) in pairs
set(forbidden
  "[ \t](fma|mad)\\.[a-z0-9.]*f(32|64)" "a fused multiply-add"
  "[ \t](add|sub|mul)(\\.sat)?\\.f(32|64)[ \t]"
  "an add, subtract or multiply without a rounding mode, which ptxas may fuse"
  "\\.approx\\." "an approximate instruction"
  "[ \t]div\\.full\\." "a division of a few ulps"
  "\\.ftz\\." "a flush-to-zero instruction")
set(required
  "[ \t]mul\\.rn\\.f32[ \t]" "multiply rounded to nearest"
  "[ \t]div\\.rn\\.f32[ \t]" "IEEE division"
  "[ \t]sqrt\\.rn\\.f32[ \t]" "IEEE square root")

if(NOT PTX)
  message(FATAL_ERROR "no PTX files given")
endif()
set(text "")
set(failed "")
foreach(file IN LISTS PTX)
  file(READ ${file} ptx)
  if(NOT ptx MATCHES "[ \t]\\.entry[ \t]")
    string(APPEND failed "\n  no kernel in ${file}")
  endif()
  string(APPEND text "${ptx}")
endforeach()

list(LENGTH forbidden n)
math(EXPR last "${n} - 1")
foreach(i RANGE 0 ${last} 2)
  math(EXPR j "${i} + 1")
  list(GET forbidden ${i} pattern)
  list(GET forbidden ${j} what)
  string(REGEX MATCH "[^\n]*${pattern}[^\n]*" line "${text}")
  if(line)
    string(STRIP "${line}" line)
    string(APPEND failed "\n  ${what}: ${line}")
  endif()
endforeach()
list(LENGTH required n)
math(EXPR last "${n} - 1")
foreach(i RANGE 0 ${last} 2)
  math(EXPR j "${i} + 1")
  list(GET required ${i} pattern)
  list(GET required ${j} what)
  if(NOT text MATCHES "${pattern}")
    string(APPEND failed "\n  no ${what} (${pattern})")
  endif()
endforeach()
if(failed)
  message(FATAL_ERROR "the kernels' PTX (${PTX}) breaks the CPU's arithmetic:${failed}")
endif()
message(STATUS "the kernels' PTX rounds each operation on its own: "
               "no FMA, no approximation, no flush-to-zero")
