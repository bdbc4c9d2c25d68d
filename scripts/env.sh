# Sourced by the other scripts: environment for running trainscale and its tests on this machine.
# mpirun refuses to run as root unless told it is deliberate (containers, CI).
export OMPI_ALLOW_RUN_AS_ROOT=1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Open MPI singletons and small jobs on a laptop-sized machine: no network probing.
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_rmaps_base_oversubscribe=1
