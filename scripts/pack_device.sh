#!/usr/bin/env bash
# Packs the CUDA build for a GPU machine that has the NVIDIA driver and the CUDA 13 libraries
# (pip nvidia-* wheels: cudart, cuBLAS, cuDNN, NCCL) but none of this machine's Debian libraries.
#
# 1. Configures and builds build-device/: MPICH (its launcher needs no plugin directories), the
#    CUDA backend for sm_90 only (H100/H200), tests on; builds trainscale and every test_cuda_*.
# 2. Copies into .device/ (git-ignored through .git/info/exclude):
#      bin/  trainscale, test_cuda_*, MPICH's mpiexec.hydra and hydra_pmi_proxy;
#      lib/  every shared library they load (ldd) except the CUDA libraries (the device has its
#            own) and the C library family (the device's glibc must be as new as ours: the script
#            prints the newest GLIBC symbol version the package needs); UCX's shared-memory
#            transport module (lib/ucx). Libraries over 4 MiB are stored xz-compressed (*.xz);
#            scripts/device_env.sh unpacks them on the device (outside .device/).
#    fashion-mnist/  12,000 training and 2,000 test samples of Fashion-MNIST (scripts/fmnist_subset.py)
#            for the zoo part's LeNet comparison.
# 3. Prints the package's size (it travels to the device machine, limit 64 MiB with the sources).
#
# Usage: scripts/pack_device.sh [extra cmake -D options]     Then see docs/gpu.md.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=build-device
pack=.device
jobs=$(nproc 2>/dev/null || echo 2)
nvcc=/usr/local/cuda/bin/nvcc
[[ -x $nvcc ]] || { echo "pack_device.sh: $nvcc is missing; packing needs the CUDA toolkit" >&2; exit 1; }

# ---- 1. build --------------------------------------------------------------------------------
mkdir -p "$build"
log=$build/build.log
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DTRAINSCALE_MPI_FLAVOR=mpich -DTRAINSCALE_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DTRAINSCALE_TESTS=ON -DTRAINSCALE_TESTS_MPI_ONLY=OFF \
  -DCMAKE_SKIP_BUILD_RPATH=ON "$@" >"$log" 2>&1 \
  || { tail -n 40 "$log" >&2; echo "pack_device.sh: configure of $build failed (log: $log)" >&2; exit 1; }
targets=(trainscale)
for src in tests/cpp/test_cuda_*.cpp; do
  [[ -e $src ]] && targets+=("$(basename "$src" .cpp)")
done
cmake --build "$build" -j "$jobs" --target "${targets[@]}" >>"$log" 2>&1 \
  || { tail -n 60 "$log" >&2; echo "pack_device.sh: build of $build failed (log: $log)" >&2; exit 1; }
echo "built ${targets[*]} in $build"

# ---- 2. copy binaries and their libraries ------------------------------------------------
exclude=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$exclude")"
grep -qx "/$pack/" "$exclude" 2>/dev/null || echo "/$pack/" >>"$exclude"
rm -rf "$pack"
mkdir -p "$pack/bin" "$pack/lib/ucx"
for t in "${targets[@]}"; do cp "$build/bin/$t" "$pack/bin/"; done
hydra=$(command -v mpiexec.hydra || true)
proxy=$(command -v hydra_pmi_proxy || true)
[[ -n $hydra && -n $proxy ]] || { echo "pack_device.sh: MPICH's mpiexec.hydra / hydra_pmi_proxy not found (apt install mpich)" >&2; exit 1; }
cp "$hydra" "$proxy" "$pack/bin/"
ln -s mpiexec.hydra "$pack/bin/mpiexec"
# UCX (MPICH's ch4:ucx device) loads its transports as modules; shared memory through CMA is enough
# on one node (the InfiniBand modules need the verbs libraries, which a single-GPU test does not).
ucx_modules=/usr/lib/x86_64-linux-gnu/ucx
[[ -e $ucx_modules/libuct_cma.so.0 ]] && cp -L "$ucx_modules/libuct_cma.so.0" "$pack/lib/ucx/"

# Libraries the device provides itself (CUDA) or must provide (the C library family: its parts
# share private interfaces, so they come from one glibc).
skip='^(libcuda|libcudart|libcublas|libcudnn|libnccl|libnvrtc|libnvJitLink|linux-vdso|ld-linux|lib(c|m|mvec|pthread|dl|rt|resolv|util|anl|nsl|BrokenLocale|nss_[a-z]+)\.so)'
libs=$(for f in "$pack"/bin/* "$pack"/lib/ucx/*; do [[ -L $f ]] || ldd "$f" 2>/dev/null; done |
  awk '$2 == "=>" && $3 ~ /^\// {print $1 " " $3}' | sort -u)
missing=$(for f in "$pack"/bin/*; do [[ -L $f ]] || ldd "$f"; done | awk '/not found/ {print $1}' | sort -u)
[[ -z $missing ]] || { echo "pack_device.sh: libraries not found here: $missing" >&2; exit 1; }
while read -r name path; do
  [[ -z $name || $name =~ $skip ]] && continue
  cp -L "$path" "$pack/lib/$name"
done <<<"$libs"

# ---- 3. report what the device's C library must provide, compress the big ones ----------------
glibc=$(for f in "$pack"/bin/* "$pack"/lib/*.so* "$pack"/lib/ucx/*; do [[ -L $f ]] || objdump -T "$f"; done 2>/dev/null |
  grep -o 'GLIBC_[0-9.]*' | sort -Vu | tail -1)
echo "$glibc" >"$pack/GLIBC_REQUIRED"
git rev-parse --short=12 HEAD >"$pack/COMMIT"
for f in "$pack"/lib/*.so*; do
  if (($(stat -c %s "$f") > 4 * 1024 * 1024)); then xz -T"$jobs" -6 "$f"; fi
done
# The zoo part's LeNet-on-Fashion-MNIST comparison (scripts/device_zoo.sh) reads a subset carried
# here: the GPU machine has no data sets.
if [[ -d /usr/share/datasets/fashion-mnist ]]; then
  python3 scripts/fmnist_subset.py --train 12000 --test 2000 --out "$pack/fashion-mnist" >/dev/null
else
  echo "pack_device.sh: /usr/share/datasets/fashion-mnist is missing (apt install dataset-fashion-mnist);" \
    "the zoo part's Fashion-MNIST runs will fail on the device" >&2
fi
echo "packed $(ls "$pack/bin" | wc -l) programs and $(ls "$pack/lib" | grep -c '\.so') libraries into $pack/" \
  "($(du -sh --apparent-size "$pack" | cut -f1)); the device needs $glibc or newer (ldd --version there)"
echo "on the device: source scripts/device_env.sh && scripts/device_test.sh   (docs/gpu.md)"
