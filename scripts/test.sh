#!/usr/bin/env bash
# Set-up, build, then the whole test suite: CTest (C++ unit + integration) and pytest against
# the Open MPI build (build/), then the MPI tests again against the MPICH build (build-mpich/):
# its CTest (test_mpi_* under mpiexec.mpich) and the pytest files that launch ranks.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
source scripts/env.sh
status=0
ctest --test-dir build --output-on-failure -j 2 || status=1
if compgen -G "tests/python/test_*.py" >/dev/null; then
  .venv/bin/python -m pytest -q tests/python || status=1
fi
ctest --test-dir build-mpich --output-on-failure -j 2 || status=1
TRAINSCALE_BINARY=build-mpich/bin/trainscale .venv/bin/python -m pytest -q tests/python/test_cli_mpi.py tests/python/test_failures_ranks.py \
  tests/python/test_dist_equivalence.py tests/python/test_checkpoint_mpi.py || status=1
scripts/sanitize.sh || status=1  # ASan + UBSan C++ suite, TSan thread tests (docs/reliability.md)
FUZZ_RUNS=10000 scripts/fuzz.sh || status=1  # each fuzz target: the same 10000 inputs on every run
exit $status
