/* support/launcher.h: whether an MPI launcher started this process (plume detect and
 * bench_pipeline under mpirun), read from the environment before MPI is initialised.
 *
 * Open MPI's mpirun sets OMPI_COMM_WORLD_SIZE, PMI launchers (MPICH's hydra, Slurm's
 * srun) PMI_SIZE. Reentrant. */
#ifndef PLUME_SUPPORT_LAUNCHER_H
#define PLUME_SUPPORT_LAUNCHER_H

#include <stdbool.h>

/* Whether this process is one of several ranks (a launcher's size above 1). */
bool launched_by_mpi(void);

#endif /* PLUME_SUPPORT_LAUNCHER_H */
