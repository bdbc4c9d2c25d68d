// The gradient compressors' codec rates for calibration.h: each real compressor exchanges the
// gradient arena of a model (after one training step of its net on the cpu backend, synthetic
// inputs) as one bucket on a one-rank communicator, so its own timers (CompressionCost) hold the
// encoding and the decoding of one contribution, without a network. Gradients rather than
// random numbers: the codecs' speed depends on the values (qsgd decodes lenet's gradients 2.3x
// faster per element than normal noise), and PowerSGD works on the model's own matrices.
#include <algorithm>
#include <memory>
#include <vector>

#include "backend/backend_factory.h"
#include "core/rng.h"
#include "core/timer.h"
#include "dist/compressor.h"
#include "nn/models.h"
#include "perfmodel/calibration.h"
#include "perfmodel/compression_model.h"

namespace ts::perf {
namespace {

// The gradient arena (param_count floats) after one training step on synthetic inputs.
std::vector<float> gradients_of(const std::string& model, int64_t batch) {
  std::unique_ptr<Backend> backend = make_backend("cpu");
  backend->set_threads(1);
  const ModelInput input = model_expected_input(model);
  std::unique_ptr<Net> net = build_model(model, *backend, input, 1);
  net->set_batch(batch);
  std::vector<float> images(static_cast<size_t>(batch * input.sample.numel()));
  std::vector<int32_t> labels(static_cast<size_t>(batch));
  Rng rng(7);
  for (float& x : images) x = static_cast<float>(rng.uniform()) - 0.5f;
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int32_t>(i % static_cast<size_t>(input.outputs));
  net->forward(images.data(), labels.data(), nullptr, Mode::train);
  net->backward();
  return std::vector<float>(net->grads(), net->grads() + net->param_count());
}

// Elements of the arena (one bucket of n) PowerSGD compresses.
int64_t compressed_elements(const std::vector<WeightMatrix>& matrices, int64_t n, int rank) {
  int64_t count = 0;
  for (const WeightMatrix& m : matrices) count += powersgd_rows(m, 0, n, rank).rows * m.cols;
  return count;
}

}  // namespace

std::map<std::string, CodecRate> measure_codec_rates(const std::string& model, int64_t batch, double budget_s) {
  const std::vector<float> gradients = gradients_of(model, batch);
  const int64_t n = static_cast<int64_t>(gradients.size());
  ModelWorkRequest request;
  request.model = model;
  const std::vector<WeightMatrix> matrices = weight_matrices_of_work(model_work(request));
  std::vector<float> bucket(gradients.size());
  auto self = Communicator::self();
  std::map<std::string, CodecRate> rates;
  const std::vector<CompressionKind> kinds = {CompressionKind::fp16, CompressionKind::bf16, CompressionKind::qsgd,
                                              CompressionKind::topk, CompressionKind::powersgd};
  for (CompressionKind kind : kinds) {
    CompressionOptions o;  // the defaults of docs/config.md
    o.kind = kind;
    if (kind == CompressionKind::powersgd) o.matrices = matrices;
    std::unique_ptr<Compressor> compressor = make_compressor(o, AllreduceAlgorithm::mpi, 0);
    double encode = 1e30, decode = 1e30;
    const double end = now_seconds() + budget_s / static_cast<double>(kinds.size());
    for (int rep = 0; rep < 3 || (now_seconds() < end && rep < 100); ++rep) {
      std::copy(gradients.begin(), gradients.end(), bucket.begin());
      CompressionCost cost;
      compressor->exchange(*self, {0, n, 0, rep}, bucket.data(), nullptr, cost);
      encode = std::min(encode, cost.compress_s);
      decode = std::min(decode, cost.decompress_s);
    }
    // Per element of the bucket; PowerSGD's per element of the matrices it compresses.
    const double per = static_cast<double>(
        std::max<int64_t>(1, kind == CompressionKind::powersgd ? compressed_elements(matrices, n, o.powersgd_rank) : n));
    rates[compression_kind_name(kind)] = {encode / per, decode / per, codec_parameter(o)};
  }
  return rates;
}

}  // namespace ts::perf
