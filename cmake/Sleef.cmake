# SLEEF (Debian libsleef-dev): vectorised elementary functions whose
# "deterministic" variants (Sleef_finz_*) give the same bits for an element
# whatever the vector width or instruction set, including the scalar
# `purecfma` one. cpu_driver's GELU uses them (modules/lib/cpu_reference/
# gelu.hpp): libm's erf and exp one element at a time were a sixth of a
# GPT-2-small block's step outside its products, and a vectorised libm
# (glibc's libmvec) gives other bits on each instruction set.
find_path(UMLOS_SLEEF_INCLUDE_DIR sleef.h PATH_SUFFIXES ${CMAKE_LIBRARY_ARCHITECTURE})
find_library(UMLOS_SLEEF_LIBRARY NAMES sleef)
if(NOT UMLOS_SLEEF_INCLUDE_DIR OR NOT UMLOS_SLEEF_LIBRARY)
  message(FATAL_ERROR "SLEEF not found (sleef.h and libsleef): install Debian's libsleef-dev "
                      "(scripts/install-deps.sh does)")
endif()
add_library(UMLOS::sleef UNKNOWN IMPORTED)
set_target_properties(UMLOS::sleef PROPERTIES IMPORTED_LOCATION "${UMLOS_SLEEF_LIBRARY}"
                                              INTERFACE_INCLUDE_DIRECTORIES "${UMLOS_SLEEF_INCLUDE_DIR}")
message(STATUS "UML_OS: SLEEF ${UMLOS_SLEEF_LIBRARY}")
