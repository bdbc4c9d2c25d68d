// The other replicas of hogwild (see hogwild_crew.h).
#include "train/hogwild_crew.h"

#include <utility>

#include "backend/backend_factory.h"
#include "core/error.h"
#include "nn/models.h"
#include "nn/optimizer.h"
#include "train/data_setup.h"

namespace ts {

HogwildCrew::HogwildCrew(const ResolvedConfig& config, float* shared_params, int64_t param_count, int64_t batch,
                         int64_t total_steps, const LearningRate& lr, InputPreparation prepared)
    : config_(config), shared_params_(shared_params), param_count_(param_count), batch_(batch),
      total_steps_(total_steps), lr_(lr), prepared_(std::move(prepared)) {
  const int replicas = static_cast<int>(config.run.dist.threads_per_worker);
  errors_.resize(static_cast<size_t>(replicas));
  for (int t = 1; t < replicas; ++t) threads_.emplace_back([this, t] { run_replica(t); });
}

HogwildCrew::~HogwildCrew() {
  stop_ = true;
  for (std::thread& t : threads_)
    if (t.joinable()) t.join();
}

void HogwildCrew::join() {
  for (std::thread& t : threads_)
    if (t.joinable()) t.join();
  for (const std::exception_ptr& e : errors_)
    if (e) std::rethrow_exception(e);
}

void HogwildCrew::run_replica(int index) {
  try {
    const RunConfig& r = config_.run;
    const int replicas = static_cast<int>(r.dist.threads_per_worker);
    std::unique_ptr<Backend> backend = make_backend(backend_kind_name(r.backend), 0);
    backend->set_threads(r.threads);
    std::unique_ptr<RunData> data = open_run_data(config_, batch_, replicas, prepared_);
    start_loaders(config_, *data, batch_, index, replicas);
    std::unique_ptr<Net> net = build_model(r.model, *backend, data->input, r.seed, r.dropout);
    net->set_batch(batch_);
    TS_CHECK(net->param_count() == param_count_, "hogwild: a replica's net differs from the main one");
    net->use_arena_storage(shared_params_, nullptr, /*copy_params=*/false);
    SgdOptions sgd_options;
    sgd_options.momentum = r.momentum;
    sgd_options.weight_decay = r.weight_decay;
    sgd_options.nesterov = r.nesterov;
    Sgd sgd(*backend, param_count_, sgd_options);
    for (int64_t step = 0; step < total_steps_ && !stop_; ++step) {
      Batch b;
      data->train_loader->next(b);
      net->forward(b.images, b.labels, b.targets, Mode::train);
      net->backward();
      sgd.step(net->params(), net->grads(), lr_.at(step));  // no lock: the race hogwild tolerates
      ++steps_done_;
    }
  } catch (...) {
    errors_[static_cast<size_t>(index)] = std::current_exception();
  }
}

}  // namespace ts
