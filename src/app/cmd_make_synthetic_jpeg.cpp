// `trainscale data make-synthetic-jpeg`: writes the synthetic ImageNet-shaped JPEG set
// (data/synthetic_jpegs.h, datasets/synthetic_imagenet.yaml) and prints what it wrote.
#include <boost/program_options.hpp>

#include <cstdio>
#include <iostream>

#include "app/command_options.h"
#include "app/commands.h"
#include "core/error.h"
#include "core/timer.h"
#include "data/synthetic_jpegs.h"

namespace po = boost::program_options;

namespace ts {

int command_make_synthetic_jpeg(const std::vector<std::string>& args) {
  po::options_description opts(
      "usage: trainscale data make-synthetic-jpeg --out DIR [--classes 100] [--per-class 30]\n"
      "                                         [--val-per-class 5] [--seed 1] [--quality 90]\n\n"
      "Writes a synthetic ImageNet-shaped JPEG set in the ImageFolder layout DIR/{train,val}/<class>/*.jpg\n"
      "(read it with dataset: {name: imagefolder, format: jpeg_dir, root: DIR}): images of about 500x375\n"
      "with a learnable class signal (colour and an oriented grating per class, noise per image), each\n"
      "a function of the seed, split, class and index alone (docs/data.md). Prints the images, bytes\n"
      "and a SHA-256 over the tree. Exit codes: 0 ok, 1 runtime failure, 2 usage/config error.\n\noptions");
  SyntheticJpegOptions o;
  opts.add_options()("help,h", "show this help")
      ("out", po::value<std::string>(&o.out), "folder to write")
      ("classes", po::value<int>(&o.classes)->default_value(100), "classes (subfolders)")
      ("per-class", po::value<int>(&o.per_class)->default_value(30), "training images per class")
      ("val-per-class", po::value<int>(&o.val_per_class)->default_value(5), "validation images per class")
      ("seed", po::value<uint64_t>(&o.seed)->default_value(1), "seed of every image")
      ("quality", po::value<int>(&o.quality)->default_value(90), "JPEG quality 1..100");
  const std::optional<po::variables_map> parsed = parse_command_options(args, opts);
  if (!parsed) return kExitOk;
  if (!parsed->count("out")) throw ConfigError("--out DIR is required (see trainscale data make-synthetic-jpeg --help)");
  const double start = now_seconds();
  const SyntheticJpegSummary s = make_synthetic_jpegs(o);
  std::printf("make-synthetic-jpeg: %lld images, %.1f MB in %s (%.1f s)\ntree_sha256: %s\n",
              static_cast<long long>(s.images), static_cast<double>(s.bytes) / 1e6, o.out.c_str(),
              now_seconds() - start, s.tree_sha256.c_str());
  return kExitOk;
}

}  // namespace ts
