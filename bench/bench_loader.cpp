// bench_loader: the input pipeline alone, no training: a Loader (src/data/loader.h) over one
// split of a data set, timed from the loader's construction (its threads start reading) to
// the last of --batches batches, --repeats times, each with a new loader (the page cache warm
// after the first). bench/io_peer.py compares it with PyTorch's DataLoader until
// `trainscale bench io` exists. One JSON object per repeat on stdout:
//   {"repeat": 0, "samples": 384, "seconds": 1.93, "samples_per_s": 199.0}
//
//   bench_loader --dataset imagefolder --format jpeg_dir --root DIR [--split train|test]
//                [--shape 3,224,224] [--threads 2] [--batch 32] [--batches 12] [--repeats 3]
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/timer.h"
#include "data/datasets.h"
#include "data/loader.h"

namespace {

struct Args {
  ts::DataOptions data;
  ts::Split split = ts::Split::train;
  int threads = 2, repeats = 3;
  int64_t batch = 32, batches = 12;
};

ts::Shape parse_shape(const std::string& text) {
  std::vector<int64_t> dims;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = text.find(',', at);
    dims.push_back(std::stoll(text.substr(at, comma == std::string::npos ? std::string::npos : comma - at)));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return ts::Shape(dims);
}

Args parse(int argc, char** argv) {
  Args a;
  a.data.name = "imagefolder";
  a.data.image_shape = ts::Shape{3, 224, 224};
  for (int i = 1; i < argc; ++i) {
    const std::string key = argv[i];
    if (i + 1 >= argc) throw ts::ConfigError("bench_loader: " + key + " needs a value");
    const std::string value = argv[++i];
    if (key == "--dataset") a.data.name = value;
    else if (key == "--format") a.data.format = value;
    else if (key == "--root") a.data.root = value;
    else if (key == "--split") a.split = value == "test" ? ts::Split::test : ts::Split::train;
    else if (key == "--shape") a.data.image_shape = parse_shape(value);
    else if (key == "--threads") a.threads = std::stoi(value);
    else if (key == "--batch") a.batch = std::stoll(value);
    else if (key == "--batches") a.batches = std::stoll(value);
    else if (key == "--repeats") a.repeats = std::stoi(value);
    else throw ts::ConfigError("bench_loader: unknown option " + key + " (see the top of bench/bench_loader.cpp)");
  }
  a.data.synthetic = {a.data.image_shape, 10, 0};
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Args a = parse(argc, argv);
    const auto source = ts::open_split(a.data, a.split);
    std::cerr << "bench_loader: " << source->describe() << ", " << a.threads << " thread(s)\n";
    for (int r = 0; r < a.repeats; ++r) {
      ts::LoaderOptions o;
      o.batch = a.batch;
      o.threads = a.threads;
      o.prefetch = 2;
      o.seed = static_cast<uint64_t>(r + 1);
      const double start = ts::now_seconds();
      ts::Loader loader(*source, o);
      ts::Batch b;
      for (int64_t k = 0; k < a.batches; ++k) loader.next(b);
      const double seconds = ts::now_seconds() - start;
      const int64_t samples = a.batches * a.batch;
      std::printf("{\"repeat\": %d, \"samples\": %lld, \"seconds\": %.6f, \"samples_per_s\": %.3f}\n", r,
                  static_cast<long long>(samples), seconds, static_cast<double>(samples) / seconds);
      std::fflush(stdout);
    }
    return 0;
  } catch (const ts::ConfigError& e) {
    std::cerr << "bench_loader: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "bench_loader: " << e.what() << "\n";
    return 1;
  }
}
