#!/usr/bin/env bash
# Makes the PyTorch peer of bench/cpu_peer.py: a virtual environment bench/.venv-torch with
# `torch` from PyPI (MKL and oneDNN 3.x, eager and torch.compile), apart from the repo's .venv
# and from Debian's python3-torch (whose torch.mm runs on a reference BLAS). Idempotent and
# quiet unless something fails; prints nothing when the venv is already as asked.
#
#   bench/peer_env.sh [--torch SPEC] [--python PY] [--vision SPEC]
#
#   --torch SPEC   pip requirement for torch (default: torch==2.15.0, the version the figures
#                  in docs/benchmarks.md were taken with; `torch` for the newest)
#   --python PY    interpreter for the venv (default: python3; torch.compile also needs a C++
#                  compiler on PATH, which scripts/setup.sh installs)
#   --vision SPEC  also install torchvision (with Pillow) for bench/io_peer.py, e.g.
#                  torchvision==0.29.2 (the version docs/benchmarks.md's input-pipeline table
#                  was taken with; PyPI had none built for torch 2.15 then, so its C++ ops may
#                  warn on import; ImageFolder and the PIL transforms io_peer.py uses are Python)
#
# Why the full install: PyPI's Linux torch wheel is built with CUDA and links its libraries
# (libcudart, libcublas, libcudnn, libnccl, libcufile, ...) at import, so `pip install --no-deps
# torch` plus the pure-Python dependencies fails with "libcufile.so.0: cannot open shared
# object file". The nvidia-* packages are therefore installed too (about 5.4 GB in all; none of
# them is used on a CPU-only machine). The CPU-only wheels live outside PyPI.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
venv=$repo/bench/.venv-torch
spec=torch==2.15.0
py=python3
vision=
while [ $# -gt 0 ]; do
  case "$1" in
    --torch) spec=${2:?--torch needs a pip requirement, e.g. torch==2.15.0}; shift 2 ;;
    --python) py=${2:?--python needs an interpreter}; shift 2 ;;
    --vision) vision=${2:?--vision needs a pip requirement, e.g. torchvision==0.29.2}; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    *) echo "peer_env.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

quiet() {  # run a command, show its output only if it fails
  local log
  log=$(mktemp)
  if ! "$@" >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    echo "peer_env.sh: failed: $*" >&2
    return 1
  fi
  rm -f "$log"
}

install_vision() {  # torchvision + Pillow into the venv, keeping its torch
  [[ -z $vision ]] && return 0
  "$venv/bin/python" -c 'import torchvision, PIL' >/dev/null 2>&1 && return 0
  quiet "$venv/bin/python" -m pip install -q --disable-pip-version-check "$vision" pillow
}

stamp=$venv/.torch-spec
if [[ -x $venv/bin/python && -f $stamp && $(cat "$stamp") == "$spec" ]] &&
   "$venv/bin/python" -c 'import torch' >/dev/null 2>&1; then
  install_vision
  exit 0
fi
if ! command -v "$py" >/dev/null 2>&1; then
  echo "peer_env.sh: $py not found; install python3 and python3-venv (scripts/setup.sh)" >&2
  exit 1
fi
if [[ ! -x $venv/bin/python ]]; then
  quiet "$py" -m venv "$venv"
fi
quiet "$venv/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip
# numpy: torch warns without it and some CPU paths (tensor <-> numpy) need it.
quiet "$venv/bin/python" -m pip install -q --disable-pip-version-check "$spec" numpy
if ! "$venv/bin/python" -c 'import torch, sys; sys.exit(0 if torch.backends.mkldnn.is_available() else 1)' 2>/dev/null; then
  echo "peer_env.sh: $venv: torch imports without oneDNN (mkldnn); this is not the PyPI build" >&2
  exit 1
fi
echo "$spec" >"$stamp"
install_vision
