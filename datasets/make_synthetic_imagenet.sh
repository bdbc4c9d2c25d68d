#!/usr/bin/env bash
# Makes the synthetic ImageNet-shaped JPEG set (datasets/synthetic_imagenet.yaml) with
# `trainscale data make-synthetic-jpeg`, checks its tree SHA-256 against the descriptor (a
# mismatch is a warning, not an error, when the libjpeg-turbo build differs from the one the
# descriptor names; exit 1 otherwise), and converts it to records (its JPEG files kept, 8
# shards per split) checked with `trainscale data inspect`.
# Usage: datasets/make_synthetic_imagenet.sh OUT [TRAINSCALE_BINARY]
#   OUT: output folder, OUT/{train,val}/<class>/*.jpg; about 280 MB, a minute or two on 2 cores.
#   OUT.records: the same files as records shards + classes.txt (about 280 MB more).
#   TRAINSCALE_BINARY: default build/bin/trainscale.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: datasets/make_synthetic_imagenet.sh OUT [TRAINSCALE_BINARY]}
binary=${2:-build/bin/trainscale}
[[ -x $binary ]] || { echo "make_synthetic_imagenet.sh: $binary not found: build it (scripts/build.sh) or pass its path" >&2; exit 2; }

field() { sed -n "s/^ *$1: \([^ #]*\).*/\1/p" datasets/synthetic_imagenet.yaml | head -1; }
args=$(sed -n 's/^ *generator: trainscale data make-synthetic-jpeg \(.*\)$/\1/p' datasets/synthetic_imagenet.yaml)
expected=$(field tree_sha256)
rm -rf "${out:?}"
# shellcheck disable=SC2086  # the descriptor's options, word-split on purpose
printed=$("$binary" data make-synthetic-jpeg --out "$out" $args)
echo "$printed"
records="${out%/}.records"
rm -rf "$records"
"$binary" data convert --dataset imagefolder --from "$out" --format records --shards 8 --out "$records"
"$binary" data inspect "$records" | grep -E '^(split|classes|status)'
got=$(sed -n 's/^tree_sha256: //p' <<<"$printed")
if [[ $got == "$expected" ]]; then
  echo "make_synthetic_imagenet.sh: $out matches datasets/synthetic_imagenet.yaml"
  exit 0
fi
turbo=$(dpkg-query -W -f='${Version}' libturbojpeg0 2>/dev/null || echo unknown)
if [[ $turbo != "1:2.1.5-2" ]]; then
  echo "make_synthetic_imagenet.sh: warning: tree SHA-256 $got differs from the descriptor's; libjpeg-turbo $turbo" \
       "is not the build it names (1:2.1.5-2), whose encoder may write other bytes" >&2
  exit 0
fi
echo "make_synthetic_imagenet.sh: tree SHA-256 $got differs from the descriptor's $expected with the same" \
     "libjpeg-turbo: the generator changed; update datasets/synthetic_imagenet.yaml if that was meant" >&2
exit 1
