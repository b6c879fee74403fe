# tessel_add_strategy_plugin(NAME SOURCES src.c... [OUTPUT_DIRECTORY dir])
#
# Builds a tessel strategy plugin: the shared object libtessel-NAME.so that
# tessel loads at run time. It compiles against the plugin headers and the
# SDK's static support library (tessel/sdk.h), and links nothing of
# tessel's runtime; every symbol is hidden except the entry point
# (hidden visibility plus a version script), and -z defs turns any stray
# reference to the core into a link error. It installs into the plugin
# directory tessel searches (TESSEL_PLUGIN_DIR).
#
# Used by tessel's own build and installed with the Tessel CMake package
# (find_package(Tessel)), so in-tree and third-party plugins are built the
# same way. Expects TESSEL_PLUGIN_INCLUDE_DIR, TESSEL_PLUGIN_MAP,
# TESSEL_SDK_LIBRARY and TESSEL_PLUGIN_DIR to be set.
function(tessel_add_strategy_plugin name)
  cmake_parse_arguments(P "" "OUTPUT_DIRECTORY" "SOURCES" ${ARGN})
  if(NOT P_SOURCES)
    message(FATAL_ERROR "tessel_add_strategy_plugin(${name}): no SOURCES")
  endif()
  set(target tessel_plugin_${name})
  add_library(${target} MODULE ${P_SOURCES})
  target_include_directories(${target} PRIVATE ${TESSEL_PLUGIN_INCLUDE_DIR})
  target_link_libraries(${target} PRIVATE ${TESSEL_SDK_LIBRARY} m)
  set(no_undefined -Wl,-z,defs)
  if(TESSEL_SANITIZE)
    set(no_undefined "") # the sanitizer runtime provides symbols at load time
  endif()
  target_link_options(${target} PRIVATE ${no_undefined} -Wl,--version-script=${TESSEL_PLUGIN_MAP})
  set_target_properties(${target} PROPERTIES PREFIX "" OUTPUT_NAME libtessel-${name} C_VISIBILITY_PRESET hidden
                                             LINK_DEPENDS ${TESSEL_PLUGIN_MAP})
  if(P_OUTPUT_DIRECTORY)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${P_OUTPUT_DIRECTORY})
  endif()
  install(TARGETS ${target} LIBRARY DESTINATION ${TESSEL_PLUGIN_DIR})
endfunction()
