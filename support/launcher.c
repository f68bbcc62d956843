/* support/launcher.c: whether an MPI launcher started this process (support/launcher.h). */
#include "support/launcher.h"

#include <stddef.h>
#include <stdlib.h>

bool launched_by_mpi(void) {
  const char *names[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    const char *size = getenv(names[i]);
    if (size && atoi(size) > 1) return true;
  }
  return false;
}
