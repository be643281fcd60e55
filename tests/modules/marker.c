/*
 * marker.c — linked into libtest_marker.so beside misbehaving.c (a well
 * behaved module otherwise): a constructor that runs as soon as the module
 * is mapped, before the kernel calls its entry, and leaves a file at
 * $UMLOS_TEST_MARKER. Tests use it to show that some code was never loaded
 * (e.g. a module shipped inside a run folder under review).
 */
#include <stdio.h>
#include <stdlib.h>

__attribute__((constructor)) static void leave_marker(void) {
  const char *path = getenv("UMLOS_TEST_MARKER");
  FILE *f;
  if (path == NULL || path[0] == '\0') return;
  f = fopen(path, "w");
  if (f == NULL) return;
  fputs("module constructor ran\n", f);
  fclose(f);
}
