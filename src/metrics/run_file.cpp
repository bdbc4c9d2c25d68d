// Writes a RunResult as an HDF5 file of schema trainscale-run/1 (docs/hdf5-schema.md),
// atomically: everything goes to "<path>.tmp-<pid>", which is renamed over `path` only once
// complete and closed, so a run file that exists is never half-written.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>

#include "core/error.h"
#include "metrics/hdf5_file.h"
#include "metrics/run_result.h"

namespace ts {
namespace {

constexpr const char* kSchema = "trainscale-run/1";

// Summary attributes every run file has (NaN where the result lacks them).
constexpr const char* kSummaryKeys[] = {
    "images_per_s",     "images_per_s_per_worker", "step_time_median", "step_time_p90",
    "warmup_steps",     "final_train_loss",        "min_train_loss",   "final_accuracy",
    "best_accuracy",    "time_to_target"};

[[noreturn]] void bad_result(const std::string& path, const std::string& what) {
  throw RuntimeError("run file " + path + ": inconsistent result, not written: " + what);
}

// Shapes must agree before anything is written.
void validate(const std::string& path, const RunResult& r) {
  const size_t S = r.step.size();
  auto same = [&](size_t n, const char* name) {
    if (n != S)
      bad_result(path, std::string("/train/") + name + " has " + std::to_string(n) +
                           " entries, /train/step has " + std::to_string(S));
  };
  same(r.samples.size(), "samples");
  same(r.epoch.size(), "epoch");
  same(r.time.size(), "time");
  same(r.loss.size(), "loss");
  same(r.lr.size(), "lr");
  if (r.world_size < 1) bad_result(path, "world_size " + std::to_string(r.world_size) + " < 1");
  for (const auto& [phase, v] : r.timing) {
    if (phase.empty() || phase.find('/') != std::string::npos)
      bad_result(path, "timing phase name '" + phase + "' is empty or contains '/'");
    if (v.size() != S * static_cast<size_t>(r.world_size))
      bad_result(path, "/timing/" + phase + " has " + std::to_string(v.size()) +
                           " entries, expected steps x ranks = " + std::to_string(S) + " x " +
                           std::to_string(r.world_size));
  }
  const size_t E = r.eval_step.size();
  for (size_t n : {r.eval_epoch.size(), r.eval_time.size(), r.eval_loss.size(), r.eval_accuracy.size()})
    if (n != E)
      bad_result(path, "the /eval arrays differ in length (/eval/step has " + std::to_string(E) + ")");
}

void check_directory(const std::string& path) {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw RuntimeError("output directory " + dir.string() + " for run file " + path +
                       " does not exist; create it or pass another --out directory");
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw RuntimeError("output directory " + dir.string() + " for run file " + path +
                       " is not writable (" + std::strerror(errno) +
                       "); fix its permissions or pass another --out directory");
}

void write_contents(h5::File& file, const RunResult& r) {
  // Root attributes: all strings of result.attrs, the schema, then the integer facts.
  for (const auto& [key, value] : r.attrs) {
    if (key == "schema" || key == "world_size" || key == "threads" || key == "seed") continue;
    file.set_attr(key, value);
  }
  file.set_attr("schema", kSchema);
  file.set_attr("world_size", r.world_size);
  file.set_attr("threads", r.threads);
  file.set_attr("seed", r.seed);

  {
    h5::Group config = file.create_group("config");
    for (const auto& [key, value] : r.config) config.set_attr(key, value);
  }

  const int64_t S = static_cast<int64_t>(r.step.size());
  {
    h5::Group train = file.create_group("train");
    train.write("step", r.step).set_attr("units", "steps");
    train.write("epoch", r.epoch).set_attr("units", "epochs");
    train.write("samples", r.samples).set_attr("units", "samples");
    train.write("time", r.time).set_attr("units", "seconds");
    train.write("loss", r.loss).set_attr("units", "loss");
    train.write("lr", r.lr).set_attr("units", "learning rate");
  }
  {
    h5::Group timing = file.create_group("timing");
    for (const auto& [phase, v] : r.timing)
      timing.write(phase, {S, r.world_size}, v.data()).set_attr("units", "seconds");
  }
  {
    h5::Group eval = file.create_group("eval");
    eval.write("step", r.eval_step).set_attr("units", "steps");
    eval.write("epoch", r.eval_epoch).set_attr("units", "epochs");
    eval.write("time", r.eval_time).set_attr("units", "seconds");
    eval.write("loss", r.eval_loss).set_attr("units", "loss");
    eval.write("accuracy", r.eval_accuracy).set_attr("units", "fraction");
  }
  {
    h5::Group summary = file.create_group("summary");
    for (const char* key : kSummaryKeys)
      if (!r.summary.count(key)) summary.set_attr(key, std::numeric_limits<double>::quiet_NaN());
    for (const auto& [key, value] : r.summary) {
      if (key == "diverged") continue;
      summary.set_attr(key, value);
    }
    summary.set_attr("diverged", static_cast<int64_t>(r.diverged ? 1 : 0));
  }
  {
    h5::Group model = file.create_group("model");
    model.set_attr("name", r.model_name);
    model.set_attr("parameters", r.model_parameters);
    model.set_attr("flops_per_sample", r.model_flops_per_sample);
    std::vector<std::string> name, kind, descriptor;
    std::vector<int64_t> parameters, flops;
    for (const auto& l : r.layers) {
      name.push_back(l.name);
      kind.push_back(l.kind);
      descriptor.push_back(l.descriptor);
      parameters.push_back(l.parameters);
      flops.push_back(l.flops);
    }
    model.write_table("layers", {h5::Column::of("name", std::move(name)),
                                 h5::Column::of("kind", std::move(kind)),
                                 h5::Column::of("descriptor", std::move(descriptor)),
                                 h5::Column::of("parameters", std::move(parameters)),
                                 h5::Column::of("flops", std::move(flops))});
  }
}

// Flushes the finished temp file to stable storage before it is renamed into place.
void sync_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

void write_run_file(const std::string& path, const RunResult& result) {
  validate(path, result);
  check_directory(path);
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  try {
    h5::File file = h5::File::create(tmp);
    write_contents(file, result);
    file.close();
    sync_file(tmp);
    if (std::rename(tmp.c_str(), path.c_str()) != 0)
      throw RuntimeError("run file " + path + ": cannot rename the finished temporary file " +
                         tmp + " into place (" + std::strerror(errno) + ")");
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    throw;
  }
}

std::string failed_marker_path(const std::string& run_path) {
  std::filesystem::path p(run_path);
  if (p.extension() == ".h5") p.replace_extension();
  return p.string() + ".FAILED";
}

}  // namespace ts
