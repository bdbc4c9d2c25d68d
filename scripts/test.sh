#!/usr/bin/env bash
# Set-up, build, then the whole test suite: CTest (C++ unit + integration) and pytest.
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
exit $status
