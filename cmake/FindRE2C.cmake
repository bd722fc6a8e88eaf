# FindRE2C: locates the re2c lexer generator.
#   RE2C_EXECUTABLE, RE2C_VERSION, RE2C_FOUND
#   re2c_target(NAME INPUT OUTPUT [OPTIONS ...]) adds a custom command generating OUTPUT.
find_program(RE2C_EXECUTABLE NAMES re2c DOC "path to the re2c executable")
mark_as_advanced(RE2C_EXECUTABLE)

if(RE2C_EXECUTABLE)
  execute_process(COMMAND ${RE2C_EXECUTABLE} --version
                  OUTPUT_VARIABLE _re2c_version_out
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  string(REGEX MATCH "[0-9]+\\.[0-9]+(\\.[0-9]+)?" RE2C_VERSION "${_re2c_version_out}")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(RE2C REQUIRED_VARS RE2C_EXECUTABLE VERSION_VAR RE2C_VERSION)

function(re2c_target name input output)
  cmake_parse_arguments(R "" "" "OPTIONS" ${ARGN})
  add_custom_command(
    OUTPUT ${output}
    COMMAND ${RE2C_EXECUTABLE} ${R_OPTIONS} -o ${output} ${input}
    DEPENDS ${input}
    COMMENT "[RE2C][${name}] generating ${output}"
    VERBATIM)
  set(RE2C_${name}_OUTPUTS ${output} PARENT_SCOPE)
endfunction()
