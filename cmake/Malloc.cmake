# The allocator of the `umlos` executable (and so of every module it loads:
# they share its heap).
#
#   UMLOS_MALLOC=jemalloc  (default) link jemalloc (Debian libjemalloc-dev)
#                          where it is found; the system malloc otherwise,
#                          with a message
#   UMLOS_MALLOC=system    glibc's malloc
#
# Why: a training step allocates thousands of small, short-lived blocks
# (operand lists, shapes, names, std::function captures across the kernel,
# the SDK, the engine and the drivers); with glibc's malloc those were about
# a tenth of the digits run's main thread under `perf`, and jemalloc's
# thread caches serve them faster (bench/training/README.md, "tenth
# session"). No result depends on it: the same bits with either allocator
# (scripts/fingerprints.sh). A sanitizer build keeps the system malloc,
# which AddressSanitizer replaces.
set(UMLOS_MALLOC "jemalloc" CACHE STRING "allocator of the umlos executable: jemalloc or system")
set_property(CACHE UMLOS_MALLOC PROPERTY STRINGS jemalloc system)
if(NOT UMLOS_MALLOC STREQUAL "jemalloc" AND NOT UMLOS_MALLOC STREQUAL "system")
  message(FATAL_ERROR "UMLOS_MALLOC is '${UMLOS_MALLOC}': expected jemalloc or system")
endif()

set(UMLOS_MALLOC_LIBRARY "")
if(UMLOS_MALLOC STREQUAL "jemalloc")
  if(UMLOS_SANITIZE)
    message(STATUS "UML_OS: sanitizer build: umlos uses the system malloc (AddressSanitizer replaces it)")
  else()
    find_library(UMLOS_JEMALLOC_LIBRARY NAMES jemalloc)
    if(UMLOS_JEMALLOC_LIBRARY)
      set(UMLOS_MALLOC_LIBRARY ${UMLOS_JEMALLOC_LIBRARY})
      message(STATUS "UML_OS: umlos links jemalloc (${UMLOS_JEMALLOC_LIBRARY})")
    else()
      message(STATUS "UML_OS: jemalloc not found (Debian: libjemalloc-dev); umlos uses the system malloc")
    endif()
  endif()
endif()

# Links `target` (an executable) to the allocator chosen above, if any.
function(umlos_link_malloc target)
  if(UMLOS_MALLOC_LIBRARY)
    # Before libc in the link, so its malloc serves the process and the
    # modules it loads.
    target_link_libraries(${target} PRIVATE ${UMLOS_MALLOC_LIBRARY})
  endif()
endfunction()
