# Environment for the packed build (.device/, made by scripts/pack_device.sh) on a GPU machine.
# Source it from the repository root:  source scripts/device_env.sh
#
# * unpacks the xz-compressed libraries of .device/lib once (into $TMPDIR);
# * LD_LIBRARY_PATH: .device/lib, then the CUDA libraries of the pip nvidia-* wheels (found
#   through python3's `nvidia` package: site-packages/nvidia/*/lib), then /usr/local/cuda's;
# * PATH: .device/bin first (trainscale, mpiexec -> MPICH's mpiexec.hydra and its proxy),
#   HYDRA_LAUNCHER=fork (one node, no ssh), UCX_MODULE_DIR for the packed UCX transport;
# * TRAINSCALE_BINARY for the pytest helpers (tests/python/trainscale_cli.py);
# * says which of the binaries' libraries are still missing, and whether this machine's glibc is
#   as new as the package needs.
_ts_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
_ts_pack=$_ts_root/.device
if [[ ! -x $_ts_pack/bin/trainscale ]]; then
  echo "device_env.sh: $_ts_pack/bin/trainscale is missing; run scripts/pack_device.sh on the build machine" \
       "and bring .device/ along" >&2
  return 1 2>/dev/null || exit 1
fi

# The xz-compressed libraries unpack once per packed commit into a directory outside the
# repository (.device/ stays as packed, small enough to carry again).
_ts_unpacked=${TMPDIR:-/tmp}/trainscale-device-$(cat "$_ts_pack/COMMIT" 2>/dev/null || echo unknown)-$(id -u)
mkdir -p "$_ts_unpacked"
for _ts_xz in "$_ts_pack"/lib/*.xz; do
  _ts_so=$_ts_unpacked/$(basename "${_ts_xz%.xz}")
  [[ -e $_ts_xz && ! -e $_ts_so ]] || continue
  if command -v xz >/dev/null; then
    xz -dc "$_ts_xz" >"$_ts_so.tmp"
  else
    python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' \
      "$_ts_xz" "$_ts_so.tmp"
  fi && mv "$_ts_so.tmp" "$_ts_so"
done

_ts_nvidia=$(python3 - <<'EOF' 2>/dev/null
import glob, os
try:
    import nvidia
    roots = list(nvidia.__path__)
except ImportError:
    roots = []
dirs = []
for root in roots:
    for d in sorted(glob.glob(os.path.join(root, "*", "lib"))):
        if glob.glob(os.path.join(d, "lib*.so*")) and d not in dirs:
            dirs.append(d)
print(":".join(dirs))
EOF
)
_ts_path=$_ts_pack/lib:$_ts_unpacked
[[ -n $_ts_nvidia ]] && _ts_path=$_ts_path:$_ts_nvidia
for _ts_dir in /usr/local/cuda/lib64 /usr/local/cuda/lib; do
  [[ -d $_ts_dir ]] && _ts_path=$_ts_path:$_ts_dir
done
export LD_LIBRARY_PATH=$_ts_path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=$_ts_pack/bin:$PATH
export HYDRA_LAUNCHER=fork
export UCX_MODULE_DIR=$_ts_pack/lib/ucx
export TRAINSCALE_BINARY=$_ts_pack/bin/trainscale

_ts_missing=$(for _ts_bin in "$_ts_pack"/bin/*; do ldd "$_ts_bin" 2>/dev/null; done | awk '/not found/ {print $1}' | sort -u | tr '\n' ' ')
echo "device_env.sh: .device from commit $(cat "$_ts_pack/COMMIT" 2>/dev/null), needs $(cat "$_ts_pack/GLIBC_REQUIRED" 2>/dev/null)" \
     "(here: glibc $(ldd --version 2>/dev/null | head -1 | awk '{print $NF}')); nvidia wheel libraries: ${_ts_nvidia:-none found}"
_ts_need=$(sed 's/GLIBC_//' "$_ts_pack/GLIBC_REQUIRED" 2>/dev/null)
_ts_have=$(ldd --version 2>/dev/null | head -1 | awk '{print $NF}')
if [[ -n $_ts_need && -n $_ts_have && $(printf '%s\n%s\n' "$_ts_need" "$_ts_have" | sort -V | head -1) != "$_ts_need" ]]; then
  echo "device_env.sh: this machine's glibc $_ts_have is older than the $_ts_need the package was built against;" \
       "the packed programs cannot start here" >&2
fi
if [[ -n $_ts_missing ]]; then
  echo "device_env.sh: still missing: $_ts_missing(pip install the nvidia-* CUDA 13 wheels, or add their lib dirs to LD_LIBRARY_PATH)" >&2
fi
unset _ts_root _ts_pack _ts_unpacked _ts_so _ts_need _ts_have _ts_xz _ts_nvidia _ts_path _ts_dir _ts_bin _ts_missing
