# Reads the PTX of the CUDA kernels that compute with floats (PTX: a list of
# .ptx files) for what the CPU's bits need (DESIGN.md §2): each add,
# subtract and multiply rounded on its own (.rn: ptxas contracts only
# unrounded ones into an FMA), no FMA, no approximate instruction (IEEE
# division and square root), no flush-to-zero. Fails too unless each file
# has a kernel and the kernels' rounded arithmetic is there to read.

# What must not be there, and what each is (in the same order)
set(forbidden
  "[ \t](fma|mad)\\.[a-z0-9.]*f(32|64)"
  "[ \t](add|sub|mul)(\\.sat)?\\.f(32|64)[ \t]"
  "\\.approx\\."
  "[ \t]div\\.full\\."
  "\\.ftz\\.")
set(forbidden_what
  "a fused multiply-add"
  "an add, subtract or multiply without a rounding mode, which ptxas may fuse"
  "an approximate instruction"
  "a division of a few ulps"
  "a flush-to-zero instruction")
# What must be there (the kernels' rounded arithmetic, read)
set(required "[ \t]mul\\.rn\\.f32[ \t]" "[ \t]div\\.rn\\.f32[ \t]" "[ \t]sqrt\\.rn\\.f32[ \t]")
set(required_what "multiply rounded to nearest" "IEEE division" "IEEE square root")

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

foreach(pattern what IN ZIP_LISTS forbidden forbidden_what)
  string(REGEX MATCH "[^\n]*${pattern}[^\n]*" line "${text}")
  if(line)
    string(STRIP "${line}" line)
    string(APPEND failed "\n  ${what}: ${line}")
  endif()
endforeach()
foreach(pattern what IN ZIP_LISTS required required_what)
  if(NOT text MATCHES "${pattern}")
    string(APPEND failed "\n  no ${what} (${pattern})")
  endif()
endforeach()
if(failed)
  message(FATAL_ERROR "the kernels' PTX (${PTX}) breaks the CPU's arithmetic:${failed}")
endif()
message(STATUS "the kernels' PTX rounds each operation on its own: "
               "no FMA, no approximation, no flush-to-zero")
