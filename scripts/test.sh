#!/usr/bin/env bash
# Set-up, build, then the whole test suite: CTest (C++ unit + integration) and pytest against
# the Open MPI build (build/), then the MPI tests again against the MPICH build (build-mpich/):
# its CTest (test_mpi_* under mpiexec.mpich) and the pytest files that launch ranks; the same for
# Intel MPI's build (build-impi/, when scripts/setup.sh installed it from PyPI); then the
# C++ suite under ASan + UBSan and TSan, and the fuzz targets on a fixed set of inputs.
# Each stage prints how long it took (the CI log shows where the minutes go).
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
stage() {  # stage NAME COMMAND...: runs it, records a failure, prints its wall time
  local name=$1 start=$SECONDS
  shift
  "$@" || status=1
  echo "test.sh: $name took $((SECONDS - start)) s"
}
stage setup scripts/setup.sh
stage build scripts/build.sh
((status == 0)) || exit 1  # nothing to test without the set-up and the builds
source scripts/env.sh
stage ctest ctest --test-dir build --output-on-failure -j 2
if compgen -G "tests/python/test_*.py" >/dev/null; then
  stage pytest .venv/bin/python -m pytest -q --durations=15 tests/python
fi
stage ctest-mpich ctest --test-dir build-mpich --output-on-failure -j 2
TRAINSCALE_BINARY=build-mpich/bin/trainscale stage pytest-mpich .venv/bin/python -m pytest -q tests/python/test_cli_mpi.py \
  tests/python/test_failures_ranks.py tests/python/test_dist_equivalence.py tests/python/test_checkpoint_mpi.py \
  tests/python/test_dist_hetero.py tests/python/test_data_storage.py::test_two_ranks_of_one_node_stage_once \
  tests/python/test_compression_training.py tests/python/test_async_ps.py tests/python/test_multihost.py
if [[ -x build-impi/bin/trainscale ]]; then  # Intel MPI from PyPI (scripts/setup.sh): its CTest and the launching tests
  stage ctest-impi ctest --test-dir build-impi --output-on-failure -j 2
  TRAINSCALE_BINARY=build-impi/bin/trainscale stage pytest-impi .venv/bin/python -m pytest -q tests/python/test_cli_mpi.py \
    tests/python/test_failures_ranks.py tests/python/test_checkpoint_mpi.py tests/python/test_multihost.py
fi
stage sanitize scripts/sanitize.sh  # ASan + UBSan C++ suite, TSan thread tests (docs/reliability.md)
FUZZ_RUNS=10000 stage fuzz scripts/fuzz.sh  # each fuzz target: the same 10000 inputs on every run
exit $status
