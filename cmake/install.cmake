# pleat's install rules (CMakeLists.txt: PLEAT_INSTALL): the library and its
# header, the CMake package (find_package(pleat)), pleat.pc, and on MinGW
# the DLL's pleat.def and MSVC import library.
install(TARGETS pleat EXPORT pleatTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  PUBLIC_HEADER DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
foreach(_file IN ITEMS "${_pleat_def}" "${_pleat_msvc_lib}")
  if(_file)
    install(FILES ${_file} DESTINATION ${CMAKE_INSTALL_LIBDIR})
  endif()
endforeach()
install(EXPORT pleatTargets
  NAMESPACE pleat::
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/pleat)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/pleatConfig.cmake.in
  ${PROJECT_BINARY_DIR}/pleatConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/pleat
  PATH_VARS CMAKE_INSTALL_LIBDIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/pleatConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/pleatConfig.cmake
  ${PROJECT_BINARY_DIR}/pleatConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/pleat)

# pkg-config, for builds without CMake: the prefix found from where the file
# lies (an absolute CMAKE_INSTALL_LIBDIR gives no such path: the configured
# prefix then), the static library's dependencies as Libs.private.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(PLEAT_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH _up /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
  string(REGEX REPLACE "/$" "" _up "${_up}")
  set(PLEAT_PC_PREFIX "\${pcfiledir}/${_up}")
endif()
foreach(_dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${_dir}}")
    set(PLEAT_PC_${_dir} "${CMAKE_INSTALL_${_dir}}")
  else()
    set(PLEAT_PC_${_dir} "\${prefix}/${CMAKE_INSTALL_${_dir}}")
  endif()
endforeach()
set(PLEAT_PC_LIBS_PRIVATE "-pthread -lm")
if(WIN32)
  set(PLEAT_PC_LIBS_PRIVATE "-lm")
endif()
if(_pleat_atomic_lib)
  string(APPEND PLEAT_PC_LIBS_PRIVATE " -latomic")
endif()
# a CUDA build's static CUDA runtime, found through a variable of its own
# so that a machine with the toolkit elsewhere can say where
set(PLEAT_PC_VARIABLES "")
if(PLEAT_WITH_CUDA)
  set(PLEAT_PC_VARIABLES "# the static CUDA runtime's folder; where the toolkit lies elsewhere:\n\
# pkg-config --define-variable=cudart_libdir=DIR --static --libs pleat\n\
cudart_libdir=${CUDAToolkit_LIBRARY_DIR}\n")
  string(APPEND PLEAT_PC_LIBS_PRIVATE
    " -L\${cudart_libdir} -lcudart_static -ldl -lrt -lstdc++")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/pleat.pc.in ${PROJECT_BINARY_DIR}/pleat.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/pleat.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
