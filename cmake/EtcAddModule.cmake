# etc_add_module(NAME
#                SOURCES model.etir [more.etir ...]
#                [ARCHS sm_90a sm_80 ...]        # etcc -arch, each; default: etcc's default targets
#                [INCLUDE_DIRS dir ...]          # etcc -I, each
#                [OPTIONS --schedule=static ...] # any other etcc options
#                [OUTPUT_DIRECTORY dir])         # default: ${CMAKE_CURRENT_BINARY_DIR}
#
# Compiles each .etir file to <OUTPUT_DIRECTORY>/<file name without .etir>.fatbin at build time
# with etc::etcc, and adds the target NAME (built by `all`) that depends on them. etcc writes a
# dependency file for each (-MD), so editing any file a module includes rebuilds that fatbin.
# The target's property ETC_FATBINS lists the fatbins' absolute paths.
if(CMAKE_VERSION VERSION_LESS 3.20)
  message(FATAL_ERROR "etc_add_module needs CMake 3.20 or newer (DEPFILE with every generator)")
endif()

function(etc_add_module name)
  cmake_parse_arguments(PARSE_ARGV 1 ETC "" "OUTPUT_DIRECTORY" "SOURCES;ARCHS;INCLUDE_DIRS;OPTIONS")
  if(ETC_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "etc_add_module(${name}): unknown arguments: ${ETC_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT ETC_SOURCES)
    message(FATAL_ERROR "etc_add_module(${name}): no SOURCES")
  endif()
  if(NOT TARGET etc::etcc)
    message(FATAL_ERROR "etc_add_module(${name}): no etc::etcc target; call find_package(etc) first")
  endif()
  if(NOT ETC_OUTPUT_DIRECTORY)
    set(ETC_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  endif()
  get_filename_component(out_dir "${ETC_OUTPUT_DIRECTORY}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
  set(flags ${ETC_OPTIONS})
  foreach(arch IN LISTS ETC_ARCHS)
    list(APPEND flags --arch=${arch})
  endforeach()
  # Absolute paths everywhere, so that the dependency file names the same files CMake does.
  foreach(dir IN LISTS ETC_INCLUDE_DIRS)
    get_filename_component(dir "${dir}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND flags -I ${dir})
  endforeach()
  set(fatbins)
  foreach(src IN LISTS ETC_SOURCES)
    get_filename_component(src "${src}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    get_filename_component(stem "${src}" NAME_WE)
    set(fatbin ${out_dir}/${stem}.fatbin)
    if(fatbin IN_LIST fatbins)
      message(FATAL_ERROR "etc_add_module(${name}): two sources compile to ${fatbin}")
    endif()
    add_custom_command(
      OUTPUT ${fatbin}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${out_dir}
      COMMAND etc::etcc ${src} -o ${fatbin} ${flags} -MD -MF ${fatbin}.d -MT ${fatbin}
      DEPENDS ${src} etc::etcc
      DEPFILE ${fatbin}.d
      COMMENT "etcc ${stem}.etir -> ${stem}.fatbin"
      VERBATIM COMMAND_EXPAND_LISTS)
    list(APPEND fatbins ${fatbin})
  endforeach()
  add_custom_target(${name} ALL DEPENDS ${fatbins})
  set_target_properties(${name} PROPERTIES ETC_FATBINS "${fatbins}")
endfunction()
