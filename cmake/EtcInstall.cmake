# `cmake --install` lays out
#   bin/etcc bin/etc-run                the compiler and the runner
#   bin/etc-nvrtc                       etcc's toolchain worker (etcc runs it from beside itself)
#   lib/libetcrt.so*                    the runtime (C API), for programs and the Python binding
#   include/etc/                        runtime.h, runtime.hpp, abi.h (and the device headers)
#   lib/cmake/etc/                      find_package(etc): etc::etcc, etc::etcrt, etc_add_module()
#   lib/python/etc/                     the Python binding (PYTHONPATH=<prefix>/lib/python)
# Literal directory names, not GNUInstallDirs: the layout is the same under every prefix.
include(CMakePackageConfigHelpers)

# etcc and etc-run find NVRTC/nvJitLink where they were linked from (the CUDA toolkit).
set_target_properties(etcc etc-run etc-nvrtc PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)

install(TARGETS etcc etc-run EXPORT etcTargets RUNTIME DESTINATION bin)
install(TARGETS etc-nvrtc RUNTIME DESTINATION bin)
install(TARGETS etcrt EXPORT etcTargets LIBRARY DESTINATION lib)
install(FILES runtime/include/etc/runtime.h runtime/include/etc/runtime.hpp runtime/include/etc/abi.h
        DESTINATION include/etc)
install(DIRECTORY runtime/include/etc/device DESTINATION include/etc FILES_MATCHING PATTERN "*.cuh")
install(DIRECTORY python/etc DESTINATION lib/python FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
install(EXPORT etcTargets NAMESPACE etc:: DESTINATION lib/cmake/etc)
configure_package_config_file(cmake/etcConfig.cmake.in ${CMAKE_BINARY_DIR}/etcConfig.cmake
                              INSTALL_DESTINATION lib/cmake/etc)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/etcConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/etcConfig.cmake ${CMAKE_BINARY_DIR}/etcConfigVersion.cmake
        cmake/EtcAddModule.cmake DESTINATION lib/cmake/etc)
