#!/usr/bin/env bash
# Makes every format of Fashion-MNIST (datasets/fashion_mnist.yaml) from the Debian package's
# IDX files with `trainscale data convert`, after checking the files' SHA-256 against the
# descriptor, then checks each output with `trainscale data inspect` (every record read).
# Usage: datasets/make_fashion_mnist.sh OUT [TRAINSCALE_BINARY]
#   OUT: output directory (OUT/records, OUT/records_jpeg, OUT/hdf5, OUT/jpeg_dir); about 250 MB.
#   TRAINSCALE_BINARY: default build/bin/trainscale.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: datasets/make_fashion_mnist.sh OUT [TRAINSCALE_BINARY]}
binary=${2:-build/bin/trainscale}
src=/usr/share/datasets/fashion-mnist
[[ -x $binary ]] || { echo "make_fashion_mnist.sh: $binary not found: build it (scripts/build.sh) or pass its path" >&2; exit 2; }
[[ -d $src ]] || { echo "make_fashion_mnist.sh: $src missing: apt-get install dataset-fashion-mnist (scripts/setup.sh)" >&2; exit 1; }

# The descriptor's checksums, as "HASH  FILE" lines for sha256sum -c.
sed -n 's/^    \([a-z0-9-]*\.gz\): \([0-9a-f]\{64\}\)$/\2  \1/p' datasets/fashion_mnist.yaml >"${TMPDIR:-/tmp}/fashion_mnist.sha256.$$"
(cd "$src" && sha256sum --quiet -c "${TMPDIR:-/tmp}/fashion_mnist.sha256.$$") \
  || { echo "make_fashion_mnist.sh: $src differs from datasets/fashion_mnist.yaml" >&2; exit 1; }
rm -f "${TMPDIR:-/tmp}/fashion_mnist.sha256.$$"

convert() {  # convert NAME ARGS...: OUT/NAME from the IDX files, then inspect it
  local name=$1
  shift
  rm -rf "${out:?}/$name"
  "$binary" data convert --dataset fashion_mnist --from "$src" --out "$out/$name" "$@"
  "$binary" data inspect "$out/$name" >"$out/$name.inspect.txt"
  echo "make_fashion_mnist.sh: $out/$name ok (inspect: $out/$name.inspect.txt)"
}
mkdir -p "$out"
convert records --format records --shards 4
convert records_jpeg --format records --shards 4 --jpeg-quality 90
convert hdf5 --format hdf5 --compression gzip
convert jpeg_dir --format jpeg_dir --jpeg-quality 90
