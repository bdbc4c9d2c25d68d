#!/usr/bin/env bash
# Installs everything trainscale needs on a fresh Debian 12 machine: system packages with
# apt-get (as root), Python packages with pip into .venv. Idempotent and quiet unless something
# fails. Without root (a cluster login node, environment modules) it only checks and lists what
# is missing, with the package names to ask for.
#   scripts/setup.sh          everything: the builds, the test suite, the benchmarks' peers
#   scripts/setup.sh --main   only what the main job needs (scripts/quickstart.sh): the driver's
#                             build, Open MPI, the data set, Python for the report
#   scripts/setup.sh --system only the Debian packages (scripts/test.sh starts its background
#                             builds after them, while pip installs the Python packages)
set -euo pipefail
cd "$(dirname "$0")/.."
main_only=0 system_only=0
case ${1:-} in
  --main) main_only=1 ;;
  --system) system_only=1 ;;
  "") ;;
  *) echo "setup.sh: unknown option '$1'; accepted: --main, --system" >&2; exit 2 ;;
esac

# Debian packages: build tools (and GNU time: /usr/bin/time -v reports peak RSS), the libraries
# the driver links, the data set, MPI launchers, SimGrid's SMPI (trainscale-sim; without it
# CMake builds everything else and says so).
APT_PACKAGES=(
  build-essential cmake pkg-config git time
  ccache  # the builds compile through it (CMakeLists.txt): build-mpich/ and build-impi/ reuse build/'s objects
  libboost-program-options-dev libyaml-cpp-dev libhdf5-dev libdnnl-dev zlib1g-dev
  libopenmpi-dev openmpi-bin
  libmpich-dev mpich
  libsimgrid-dev
  slurm-wlm munge
  python3-torch
  libgtest-dev
  dataset-fashion-mnist
  python3 python3-venv python3-pip
  chromium
  clang-14 libclang-rt-14-dev  # scripts/fuzz.sh: libFuzzer and clang's sanitizer runtimes
  libturbojpeg0-dev libcurl4-openssl-dev  # jpeg_dir and JPEG records; blob storage (HTTP, S3)
  nginx openssh-server sshfs fuse3  # the tests' real servers on 127.0.0.1: HTTP, and an sshfs mount as nfs
  iproute2 util-linux iperf3  # scripts/testbed.sh: hosts in network namespaces, shaped links, the link-rate peer
)
# The main job's share of them: the driver (no tests, simulator or second MPI), the data set,
# Python for the report.
if ((main_only)); then
  APT_PACKAGES=(
    build-essential cmake pkg-config git
    libboost-program-options-dev libyaml-cpp-dev libhdf5-dev libdnnl-dev zlib1g-dev
    libopenmpi-dev openmpi-bin
    libturbojpeg0-dev libcurl4-openssl-dev
    dataset-fashion-mnist
    python3 python3-venv python3-pip
  )
fi

quiet() {  # run a command, show its output only if it fails
  local log
  log=$(mktemp)
  if ! "$@" >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    echo "setup.sh: failed: $*" >&2
    return 1
  fi
  rm -f "$log"
}

missing_packages() {
  local p
  for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
  done
}

if command -v dpkg-query >/dev/null 2>&1; then
  mapfile -t missing < <(missing_packages)
  if ((${#missing[@]})); then
    if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
      export DEBIAN_FRONTEND=noninteractive
      quiet apt-get update -qq
      quiet apt-get install -y -qq --no-install-recommends "${missing[@]}"
    else
      echo "setup.sh: not root, so nothing was installed. Missing Debian packages:" >&2
      printf '  %s\n' "${missing[@]}" >&2
      echo "Ask an administrator to install them, or load the equivalent environment modules" >&2
      echo "(a C++20 compiler, CMake >= 3.20, Boost.Program_options, yaml-cpp, HDF5, oneDNN, MPI)." >&2
      exit 1
    fi
  fi
else
  # Not Debian: check for the tools and libraries by name.
  need=()
  for tool in cmake c++ mpicxx; do command -v "$tool" >/dev/null 2>&1 || need+=("$tool"); done
  if ((${#need[@]})); then
    echo "setup.sh: not a Debian system and these are missing: ${need[*]}" >&2
    echo "Load modules providing: C++20 compiler, CMake, Boost, yaml-cpp, HDF5, oneDNN, MPI." >&2
    exit 1
  fi
fi

((system_only)) && exit 0

# Python: a virtual environment for the analysis package and the Python tests.
PY=${TRAINSCALE_PYTHON:-python3}
if [[ ! -x .venv/bin/python ]]; then
  quiet "$PY" -m venv .venv
fi
reqs=()
requirement_files=(analysis/requirements.txt tests/python/requirements.txt)
((main_only)) && requirement_files=(analysis/requirements.txt)
for f in "${requirement_files[@]}"; do
  [[ -f $f ]] && reqs+=(-r "$f")
done
if ((${#reqs[@]})); then
  stamp=.venv/.requirements.sha
  sum=$(cat "${requirement_files[@]}" 2>/dev/null | sha256sum | cut -d" " -f1)
  if [[ ! -f $stamp || $(cat "$stamp") != "$sum" ]]; then
    quiet .venv/bin/python -m pip install -q --disable-pip-version-check "${reqs[@]}"
    [[ -f analysis/pyproject.toml ]] && quiet .venv/bin/python -m pip install -q --disable-pip-version-check -e analysis
    echo "$sum" >"$stamp"
  fi
fi

# Intel MPI from PyPI, the third MPI flavor (docs/multihost.md "Intel MPI"): its own venv, so
# that its `mpirun` never shadows Open MPI's. 2021.18.1 is pinned: 2021.19 requires a libfabric
# >= 2.6 that is not on PyPI (pip would fall back to 2021.18.1 silently); 2021.18.1 ships its
# libfabric 2.4. scripts/impi_env.sh sets the variables it needs; scripts/build.sh builds
# build-impi/ against it. TRAINSCALE_IMPI=0 skips it.
IMPI_VERSION=2021.18.1
if [[ ${TRAINSCALE_IMPI:-1} != 0 ]] && ((!main_only)); then
  if [[ ! -f .venv-impi/.impi-$IMPI_VERSION ]]; then
    rm -rf .venv-impi
    quiet "$PY" -m venv .venv-impi
    quiet .venv-impi/bin/python -m pip install -q --disable-pip-version-check "impi-rt==$IMPI_VERSION" "impi-devel==$IMPI_VERSION"
    touch ".venv-impi/.impi-$IMPI_VERSION"
  fi
fi
