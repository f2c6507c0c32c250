# The CUDA emulator (emu.h) and the library built against it
# (pleat_emulated): the CUDA backend's .cu files compiled as C++ with this
# folder's cuda_runtime.h and cub/ in place of the toolkit's, linked with the
# host's objects of the library. Included by this folder's CMakeLists.txt and
# by fuzz/ (whose harnesses fuzz the CUDA backend on it), once.
include_guard(GLOBAL)

enable_language(CXX)

list(TRANSFORM PLEAT_CUDA_SOURCES PREPEND ${PROJECT_SOURCE_DIR}/
  OUTPUT_VARIABLE _emu_cuda_sources)
# in this folder only: the real build compiles them with nvcc
set_source_files_properties(${_emu_cuda_sources} PROPERTIES LANGUAGE CXX)

set(_emu_flags -Wall -Wextra -ffp-contract=off -fno-fast-math)

add_library(pleat_cuda_emulator STATIC ${CMAKE_CURRENT_LIST_DIR}/engine.cc
  ${CMAKE_CURRENT_LIST_DIR}/memory.cc ${CMAKE_CURRENT_LIST_DIR}/runtime.cc
  ${CMAKE_CURRENT_LIST_DIR}/streams.cc)
target_include_directories(pleat_cuda_emulator PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_compile_features(pleat_cuda_emulator PUBLIC cxx_std_17)
target_compile_options(pleat_cuda_emulator PRIVATE ${_emu_flags})
target_link_libraries(pleat_cuda_emulator PUBLIC Threads::Threads)
# Whether this is a ThreadSanitizer build (the tsan preset's flags), for
# engine.cc and the race mode's tests (CMakeLists.txt here).
if(CMAKE_CXX_FLAGS MATCHES "-fsanitize=thread")
  set(PLEAT_EMULATOR_TSAN ON CACHE INTERNAL "")
else()
  set(PLEAT_EMULATOR_TSAN OFF CACHE INTERNAL "")
endif()
# Never instrumented by ThreadSanitizer (engine.cc's top says why); in a
# build that has it, engine.cc still calls its interface.
if(PLEAT_EMULATOR_TSAN)
  set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/engine.cc PROPERTIES
    COMPILE_OPTIONS -fno-sanitize=thread COMPILE_DEFINITIONS PLEAT_EMU_TSAN=1)
endif()

# The library, its CUDA backend on the emulator. Without the real backend
# the host's objects are built again here, with the CUDA backend's entry.
set(_emu_host_objects ${PLEAT_HOST_OBJECTS})
if(NOT PLEAT_WITH_CUDA)
  list(TRANSFORM PLEAT_CORE_SOURCES PREPEND ${PROJECT_SOURCE_DIR}/
    OUTPUT_VARIABLE _emu_core_sources)
  add_library(pleat_emulated_core OBJECT ${_emu_core_sources})
  foreach(_property INCLUDE_DIRECTORIES COMPILE_DEFINITIONS COMPILE_OPTIONS
                    POSITION_INDEPENDENT_CODE C_VISIBILITY_PRESET)
    get_target_property(_value pleat_objects ${_property})
    set_property(TARGET pleat_emulated_core PROPERTY ${_property} "${_value}")
  endforeach()
  target_compile_definitions(pleat_emulated_core PRIVATE PLEAT_HAVE_CUDA)
  set(_emu_host_objects $<TARGET_OBJECTS:pleat_emulated_core> ${_pleat_kernel_objects})
endif()
add_library(pleat_emulated STATIC ${_emu_cuda_sources} ${_emu_host_objects})
target_include_directories(pleat_emulated
  PRIVATE ${PROJECT_SOURCE_DIR}
  PUBLIC ${PROJECT_SOURCE_DIR}/include)
target_compile_options(pleat_emulated PRIVATE ${_emu_flags}
  # the frame's pointers checked at each launch
  "$<$<COMPILE_LANGUAGE:CXX>:SHELL:-include ${CMAKE_CURRENT_LIST_DIR}/frame_check.h>")
target_link_libraries(pleat_emulated PUBLIC pleat_cuda_emulator ${PLEAT_HOST_LINK_DEPS})
