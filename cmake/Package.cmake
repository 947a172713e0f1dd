# find_package(EvidenceGate CONFIG): from the build tree (for our own tests) and, when
# EVIDENCE_GATE_INSTALL is on, from an install prefix. The module uses only
# EvidenceGate::evgate, so it works the same in-tree, from a build tree and installed.
include(CMakePackageConfigHelpers)
include(GNUInstallDirs)

set_target_properties(evgate PROPERTIES EXPORT_NAME evgate)
set_target_properties(evgate-verdict PROPERTIES EXPORT_NAME evgate-verdict)  # found beside evgate by `evgate discover`
set(config_dir "${CMAKE_INSTALL_DATADIR}/EvidenceGate/cmake")

# Build tree: the module and templates stay in the source tree.
set(EVIDENCE_GATE_MODULE_DIR "${PROJECT_SOURCE_DIR}/modules")
export(TARGETS evgate evgate-verdict NAMESPACE EvidenceGate:: FILE "${PROJECT_BINARY_DIR}/EvidenceGateTargets.cmake")
configure_package_config_file(cmake/EvidenceGateConfig.cmake.in "${PROJECT_BINARY_DIR}/EvidenceGateConfig.cmake"
  INSTALL_DESTINATION "${PROJECT_BINARY_DIR}" PATH_VARS EVIDENCE_GATE_MODULE_DIR)
write_basic_package_version_file("${PROJECT_BINARY_DIR}/EvidenceGateConfigVersion.cmake"
  COMPATIBILITY SameMajorVersion)

if(EVIDENCE_GATE_INSTALL)
  install(TARGETS evgate evgate-verdict EXPORT EvidenceGateTargets RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(EXPORT EvidenceGateTargets NAMESPACE EvidenceGate:: DESTINATION ${config_dir})
  set(EVIDENCE_GATE_MODULE_DIR "${CMAKE_INSTALL_DATADIR}/EvidenceGate/modules")
  configure_package_config_file(cmake/EvidenceGateConfig.cmake.in "${PROJECT_BINARY_DIR}/install/EvidenceGateConfig.cmake"
    INSTALL_DESTINATION ${config_dir} PATH_VARS EVIDENCE_GATE_MODULE_DIR)
  install(FILES "${PROJECT_BINARY_DIR}/install/EvidenceGateConfig.cmake" "${PROJECT_BINARY_DIR}/EvidenceGateConfigVersion.cmake"
    DESTINATION ${config_dir})
  install(DIRECTORY modules/ DESTINATION ${CMAKE_INSTALL_DATADIR}/EvidenceGate/modules)
  # Beside modules/, so the module's one relative path to the plugin works installed too.
  install(DIRECTORY templates/ DESTINATION ${CMAKE_INSTALL_DATADIR}/EvidenceGate/templates
    PATTERN "__pycache__" EXCLUDE)
endif()
