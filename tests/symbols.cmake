# Fails unless every global symbol the library defines is pleat's (pleat_,
# or a C++ name whose first part starts pleat_) or belongs to the CUDA
# toolkit's headers that it compiles in (CUB, Thrust, libcu++, NVTX: their
# names carry the toolkit's namespaces and versions), or to an anonymous
# namespace (nvcc names one after its file and a hash, and keeps its
# members global). Hidden visibility does
# not keep a static library's names out of an application's link, where a
# kernel or struct of the same name would clash, or be merged silently.
# NM: GNU nm or llvm-nm; LIB: the library file; SHARED: true for a shared
# library (then its dynamic symbols, which must be pleat_ functions only).
# PLUGIN, with a static library: a shared object holding all of it, which
# must export nothing (pleat.h's PLEAT_API): a plugin that links pleat
# statically would otherwise offer pleat's functions to the whole process,
# and another copy of pleat there could take their place.
if(SHARED)
  set(args -D --defined-only)
else()
  set(args --defined-only -g)
endif()
execute_process(COMMAND ${NM} ${args} ${LIB} RESULT_VARIABLE rc OUTPUT_VARIABLE out
  ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NM} ${args} ${LIB} failed (${rc}):\n${err}")
endif()

# C names, then C++ (Itanium) names by their first part: _Z, then guard
# variables (GV) and local statics (Z), type info (T[ISV]), a nested name
# (N, K), then the length and the name
# (AddressSanitizer's ODR indicators are named after the global they guard)
# (and 32-bit x86's position-independent code its compiler's hidden helpers,
# one per register, the same in every object)
set(allowed_c "^(pleat_|__odr_asan(\\.|_gen_)pleat_|nvtx|InitializeInjectionNvtx|\
DW\\.ref\\.__gxx_personality_v0$|__x86\\.get_pc_thunk\\.[a-z]+$)")
set(cxx_prefix "^_Z(GV)?Z?(T[ISV])?N?K?")
# (nvcc's host stub of a kernel is named after the kernel)
set(allowed_cxx "${cxx_prefix}([0-9]+pleat_|[0-9]+__device_stub__Z[0-9]+pleat_|3cub|4cuda|\
6thrust|5nvtx3|[0-9]+nvtx|[0-9]+_GLOBAL__N_)")
if(SHARED)
  # the linker's own markers of a shared object's sections
  set(allowed_c "^(pleat_|_init$|_fini$|_edata$|_end$|__bss_start$)")
  set(allowed_cxx "^$")
endif()

string(REPLACE "\n" ";" lines "${out}")
set(ours 0)
set(foreign)
set(members)
set(repeated)
foreach(line IN LISTS lines)
  if(line MATCHES "^(.+):$") # an archive's member
    set(member ${CMAKE_MATCH_1})
    list(FIND members ${member} at)
    if(at GREATER -1)
      list(APPEND repeated ${member})
    endif()
    list(APPEND members ${member})
    continue()
  elseif(NOT line MATCHES "^[0-9a-fA-F]* *[A-Za-z] (.+)$")
    continue() # a blank line
  endif()
  set(name ${CMAKE_MATCH_1})
  if(name MATCHES "^pleat_")
    math(EXPR ours "${ours} + 1")
  elseif(NOT name MATCHES "${allowed_c}" AND NOT name MATCHES "${allowed_cxx}")
    list(APPEND foreign ${name})
  endif()
endforeach()
# and an archive's members have names of their own: a tool that unpacks
# and repacks it (a packager's merge of static libraries) keeps one of a name
if(repeated)
  list(REMOVE_DUPLICATES repeated)
  message(FATAL_ERROR "${LIB} has more than one member named each of: ${repeated}")
endif()
if(ours EQUAL 0)
  message(FATAL_ERROR "no pleat_ symbol in ${LIB}: nm read nothing?\n${out}")
endif()
if(foreign)
  list(REMOVE_DUPLICATES foreign)
  list(JOIN foreign "\n  " text)
  message(FATAL_ERROR "${LIB} defines global symbols that are not pleat's:\n  ${text}")
endif()
message(STATUS "${ours} pleat_ symbols, none foreign")

if(PLUGIN)
  execute_process(COMMAND ${NM} -D --defined-only ${PLUGIN} RESULT_VARIABLE rc
    OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NM} -D --defined-only ${PLUGIN} failed (${rc}):\n${err}")
  endif()
  string(REGEX MATCHALL "[^\n]+" lines "${out}")
  set(exported)
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^.* " "" name "${line}")
    # (the linker's own markers of a shared object's sections)
    if(NOT name MATCHES "^(_init|_fini|_edata|_end|__bss_start)$")
      list(APPEND exported ${name})
    endif()
  endforeach()
  if(exported)
    list(JOIN exported "\n  " text)
    message(FATAL_ERROR "a plugin holding ${LIB} exports:\n  ${text}")
  endif()
  message(STATUS "a plugin holding it exports none of them")
endif()
