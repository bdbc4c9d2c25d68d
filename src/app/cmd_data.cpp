// `trainscale data convert`, `inspect` and `make-synthetic-jpeg` (app/cmd_make_synthetic_jpeg.cpp):
// thin command lines over data/convert.h and data/synthetic_jpegs.h (docs/data.md "Converting and inspecting").
#include <boost/program_options.hpp>

#include <iostream>

#include "app/command_options.h"
#include "app/commands.h"
#include "core/error.h"
#include "data/convert.h"

namespace po = boost::program_options;

namespace ts {
namespace {

const char* kDataUsage =
    "usage: trainscale data convert --dataset NAME --from DIR --format records|hdf5|jpeg_dir --out DIR\n"
    "                              [--from-format F] [--shards N] [--jpeg-quality Q] [--compression C] [--limit N]\n"
    "       trainscale data convert --dataset imagefolder --from DIR --format records --out DIR [--shards N]\n"
    "                              [--test-fraction F] [--limit N]\n"
    "       trainscale data inspect PATH\n"
    "       trainscale data make-synthetic-jpeg --out DIR [options]   (see its --help)\n\n"
    "convert reads both splits (train, test) of a stored data set (fashion_mnist, mnist, cifar10) from DIR in\n"
    "its own format (or --from-format) and writes them to --out: records shards with index files, hdf5 files\n"
    "(train.h5, test.h5) or a jpeg_dir tree (train/<class>/<index>.jpg, test/...). An ImageFolder (--dataset\n"
    "imagefolder, DIR a jpeg_dir tree) becomes records holding its JPEG files byte for byte, in the order the\n"
    "jpeg_dir reader gives them, with the class names in classes.txt. inspect prints the format,\n"
    "samples, shapes, labels, shards and the SHA-256 of every file of such a directory (or one .rec shard or\n"
    ".h5 file), reading and checking every record; a damaged file or record is an error naming it (exit 1).\n"
    "docs/data.md \"Converting and inspecting\". Exit codes: 0 ok, 1 runtime failure or corrupt data,\n"
    "2 usage/config error.\n";

int data_convert(const std::vector<std::string>& args) {
  po::options_description opts(std::string(kDataUsage) + "\ntrainscale data convert options");
  ConvertOptions o;
  opts.add_options()("help,h", "show this help")
      ("dataset", po::value<std::string>(&o.dataset)->default_value("fashion_mnist"), "data set (fashion_mnist, mnist, cifar10, imagefolder)")
      ("from", po::value<std::string>(&o.from), "directory of the source files")
      ("from-format", po::value<std::string>(&o.from_format)->default_value(""), "format of the source (default: the data set's own)")
      ("format", po::value<std::string>(&o.format), "output format: records, hdf5 or jpeg_dir")
      ("out", po::value<std::string>(&o.out), "output directory (created)")
      ("shards", po::value<int>(&o.shards)->default_value(1), "records: shards per split")
      ("jpeg-quality", po::value<int>(&o.jpeg_quality)->default_value(0),
       "jpeg_dir: JPEG quality 1..100 (0: 90); records: JPEG payloads at this quality (0: raw pixels)")
      ("compression", po::value<std::string>(&o.compression)->default_value("none"), "hdf5: none, gzip, or lz4 where the HDF5 build has it")
      ("limit", po::value<int64_t>(&o.limit)->default_value(0), "convert only the first N samples of each split (0: all)")
      ("test-fraction", po::value<double>(&o.test_fraction)->default_value(0.1),
       "imagefolder in the ROOT/<class> layout: the share of files held out as the test split (dataset.test_fraction)");
  const std::optional<po::variables_map> parsed = parse_command_options(args, opts);
  if (!parsed) return kExitOk;
  if (!parsed->count("from") || !parsed->count("format") || !parsed->count("out"))
    throw ConfigError("--from DIR, --format FORMAT and --out DIR are required (see trainscale data --help)");
  for (const ConvertedSplit& s : convert_dataset(o)) {
    std::cout << "split " << s.split << ": " << s.samples << " samples ->";
    for (const std::string& f : s.files) std::cout << " " << f;
    std::cout << "\n";
  }
  return kExitOk;
}

int data_inspect(const std::vector<std::string>& args) {
  if (args.size() != 1 || args[0].empty() || args[0][0] == '-') {
    const bool help = args.size() == 1 && (args[0] == "--help" || args[0] == "-h");
    (help ? std::cout : std::cerr) << kDataUsage;
    return help ? kExitOk : kExitUsage;
  }
  for (const auto& [key, value] : inspect_data(args[0]).facts) std::cout << key << ": " << value << "\n";
  return kExitOk;
}

}  // namespace

int command_data(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    (args.empty() ? std::cerr : std::cout) << kDataUsage;
    return args.empty() ? kExitUsage : kExitOk;
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (args[0] == "convert") return data_convert(rest);
  if (args[0] == "inspect") return data_inspect(rest);
  if (args[0] == "make-synthetic-jpeg") return command_make_synthetic_jpeg(rest);
  throw ConfigError("trainscale data: unknown subcommand '" + args[0] +
                    "'; accepted: convert, inspect, make-synthetic-jpeg");
}

}  // namespace ts
