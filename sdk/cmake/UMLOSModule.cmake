# umlos_add_module(<target> SOURCES <src>... [LINK <libs>...] [OUTPUT_NAME <name>])
#
# The one way to build a UML_OS module, in tree and out of tree
# (find_package(UMLOS) provides it too). It makes a MODULE library that:
#  - exports exactly one symbol, umlos_module_entry (version script);
#  - hides every other symbol (-fvisibility=hidden);
#  - resolves all its symbols at load time (-z now) and links nothing of the
#    kernel (-z defs: an undefined kernel symbol is a link error);
#  - lands in UMLOS_MODULE_OUTPUT_DIR when that is set.
# Pinning is done afterwards by `umlos hash` / `umlos manifest pin`.
set(_UMLOS_MODULE_CMAKE_DIR ${CMAKE_CURRENT_LIST_DIR})

function(umlos_add_module target)
  cmake_parse_arguments(ARG "" "OUTPUT_NAME" "SOURCES;LINK" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "umlos_add_module(${target}): SOURCES is required")
  endif()
  add_library(${target} MODULE ${ARG_SOURCES})
  if(TARGET UMLOS::sdk)
    target_link_libraries(${target} PRIVATE UMLOS::sdk)
  endif()
  if(ARG_LINK)
    target_link_libraries(${target} PRIVATE ${ARG_LINK})
  endif()
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    LINK_DEPENDS ${_UMLOS_MODULE_CMAKE_DIR}/umlos_module.map)
  if(ARG_OUTPUT_NAME)
    set_target_properties(${target} PROPERTIES OUTPUT_NAME ${ARG_OUTPUT_NAME})
  endif()
  if(UMLOS_MODULE_OUTPUT_DIR)
    set_target_properties(${target} PROPERTIES
      LIBRARY_OUTPUT_DIRECTORY ${UMLOS_MODULE_OUTPUT_DIR})
  endif()
  target_compile_options(${target} PRIVATE -ffp-contract=off)
  target_link_options(${target} PRIVATE
    -Wl,--version-script=${_UMLOS_MODULE_CMAKE_DIR}/umlos_module.map
    -Wl,-z,now -Wl,-z,defs -Wl,--build-id=sha1)
  set_property(GLOBAL APPEND PROPERTY UMLOS_MODULE_TARGETS ${target})
endfunction()
