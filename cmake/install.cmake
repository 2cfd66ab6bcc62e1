# `cmake --install build --prefix P`: the libraries, headers under
# P/include/saturn/, the saturn command line, the shipped rules and device
# profiles (also compiled into the libraries) under P/share/saturn/, and
# P/lib/cmake/saturn/ for find_package(saturn) with namespaced targets.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# Library target -> its name in the package (saturn::NAME).
set(saturn_exported
  saturn_base=base saturn_egraph=egraph saturn_rules=rules saturn_tensor=tensor
  saturn_interpreter=interpreter saturn_json_model=json_model saturn_onnx=onnx saturn_zoo=zoo saturn_models=models
  saturn_tensor_rules=tensor_rules saturn_costmodel=costmodel saturn_extract=extract
  saturn_search=search saturn_ort=ort saturn_optimize=optimize saturn_library=saturn)
set(saturn_install_targets "")
foreach(pair IN LISTS saturn_exported)
  string(REPLACE "=" ";" pair "${pair}")
  list(GET pair 0 target)
  list(GET pair 1 name)
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name})
  list(APPEND saturn_install_targets ${target})
endforeach()
# The precompiled-header owners are built into each library: nothing to install.
install(TARGETS ${saturn_install_targets} EXPORT saturnTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
foreach(dir base egraph rules tensor onnx costmodel extract search optimize ort)
  install(DIRECTORY ${SATURN_ROOT}/${dir} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/saturn
    FILES_MATCHING PATTERN "*.h" PATTERN "fixtures" EXCLUDE)
endforeach()
install(FILES ${SATURN_ROOT}/saturn.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/saturn)
if(TARGET saturn)
  install(TARGETS saturn RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(DIRECTORY ${SATURN_ROOT}/rules/tensor/ ${SATURN_ROOT}/rules/math/
  DESTINATION ${CMAKE_INSTALL_DATADIR}/saturn/rules FILES_MATCHING PATTERN "*.rules")
install(DIRECTORY ${SATURN_ROOT}/costmodel/profiles/
  DESTINATION ${CMAKE_INSTALL_DATADIR}/saturn/profiles FILES_MATCHING PATTERN "*.json")

set(saturn_config_dir ${CMAKE_INSTALL_LIBDIR}/cmake/saturn)
install(EXPORT saturnTargets NAMESPACE saturn:: DESTINATION ${saturn_config_dir})
configure_package_config_file(${SATURN_ROOT}/cmake/saturnConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/saturnConfig.cmake INSTALL_DESTINATION ${saturn_config_dir})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/saturnConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/saturnConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/saturnConfigVersion.cmake DESTINATION ${saturn_config_dir})
