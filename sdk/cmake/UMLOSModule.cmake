# umlos_add_module(<target> SOURCES <src>... [LINK <libs>...] [OUTPUT_NAME <name>] [INSTALL])
#
# The one way to build a UML_OS module, in tree and out of tree
# (find_package(UMLOS) provides it too). It makes a MODULE library that:
#  - exports exactly one symbol, umlos_module_entry (version script);
#  - hides every other symbol (-fvisibility=hidden);
#  - resolves all its symbols at load time (-z now) and links nothing of the
#    kernel (-z defs: an undefined kernel symbol is a link error);
#  - is compiled without FMA contraction or fast-math (bitwise determinism)
#    and with source paths mapped, so its bytes (and so its pinned SHA-256)
#    do not depend on where the tree was checked out;
#  - links UMLOS::sdk (ABI headers + <umlos/sdk.hpp>) when that target exists:
#    in tree, and out of tree after find_package(UMLOS);
#  - lands in UMLOS_MODULE_OUTPUT_DIR when that is set.
# Pinning is done afterwards by `umlos hash` / `umlos manifest pin`.
# The directory of this file (for the version script) is taken from
# CMAKE_CURRENT_FUNCTION_LIST_DIR inside the function, so the function works
# wherever it is called from, including projects that call find_package(UMLOS)
# inside a function scope.
if(CMAKE_VERSION VERSION_LESS 3.17)
  message(FATAL_ERROR "UMLOSModule.cmake needs CMake >= 3.17 (found ${CMAKE_VERSION})")
endif()

function(umlos_add_module target)
  cmake_parse_arguments(ARG "INSTALL" "OUTPUT_NAME" "SOURCES;LINK" ${ARGN})
  set(_UMLOS_MODULE_CMAKE_DIR ${CMAKE_CURRENT_FUNCTION_LIST_DIR})
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
  # INSTALL: ship the module beside an installed `umlos`
  # (<prefix>/lib/umlos/modules, where the command looks by default).
  if(ARG_INSTALL)
    include(GNUInstallDirs)
    install(TARGETS ${target} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/umlos/modules COMPONENT modules)
  endif()
  # C and C++ only: CUDA sources get their own flags (nvcc -fmad=false).
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:C,CXX>:-ffp-contract=off;-fno-fast-math;-ffile-prefix-map=${PROJECT_SOURCE_DIR}=.;-ffile-prefix-map=${PROJECT_BINARY_DIR}=build>)
  # Under UMLOS_SANITIZE (cmake/Sanitizers.cmake) the sanitizer runtime is
  # the loading process's, so a module's __asan_*/__ubsan_* references are
  # left undefined on purpose: -z defs only where no sanitizer is on.
  if(UMLOS_SANITIZE)
    set(_umlos_zdefs)
  else()
    set(_umlos_zdefs -Wl,-z,defs)
  endif()
  target_link_options(${target} PRIVATE
    -Wl,--version-script=${_UMLOS_MODULE_CMAKE_DIR}/umlos_module.map
    -Wl,-z,now ${_umlos_zdefs} -Wl,--build-id=sha1)
  set_property(GLOBAL APPEND PROPERTY UMLOS_MODULE_TARGETS ${target})
endfunction()
