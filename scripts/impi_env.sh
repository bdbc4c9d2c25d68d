# Sourced: the environment Intel MPI from PyPI needs (scripts/setup.sh installs it into
# .venv-impi; docs/multihost.md "Intel MPI"). Its compiler wrappers and launcher read I_MPI_ROOT;
# its `mpirun` script runs the first `mpiexec.hydra` on PATH, and MPICH's (/usr/bin) speaks another
# PMI dialect (two ranks abort in MPIDU_bc_table_create), so its bin/ goes first; the bundled
# libfabric 2.4 and its providers come before Debian's 1.17; the tcp provider (the wheel's default
# may pick psm3, which needs Omni-Path hardware).
_impi_repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export I_MPI_ROOT=${I_MPI_ROOT:-$_impi_repo/.venv-impi}
export PATH=$I_MPI_ROOT/bin:$I_MPI_ROOT/bin/libfabric:$PATH
export LD_LIBRARY_PATH=$I_MPI_ROOT/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export FI_PROVIDER_PATH=$I_MPI_ROOT/lib
export FI_PROVIDER=${FI_PROVIDER:-tcp}
export I_MPI_FABRICS=${I_MPI_FABRICS:-shm:ofi}
unset _impi_repo
