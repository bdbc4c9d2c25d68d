// The other replicas of hogwild (see hogwild_crew.h).
#include "train/hogwild_crew.h"

#include <utility>

#include "backend/backend_factory.h"
#include "core/error.h"
#include "nn/models.h"

namespace ts {

HogwildCrew::HogwildCrew(ReplicaOptions options, float* shared_params, int64_t param_count, int64_t batch,
                         int64_t total_steps, const LearningRate& lr)
    : options_(std::move(options)), shared_params_(shared_params), param_count_(param_count), batch_(batch),
      total_steps_(total_steps), lr_(lr) {
  errors_.resize(static_cast<size_t>(options_.replicas));
  for (int t = 1; t < options_.replicas; ++t) threads_.emplace_back([this, t] { run_replica(t); });
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
    const ReplicaOptions& o = options_;
    std::unique_ptr<Backend> backend = make_backend(o.backend, 0);
    backend->set_threads(o.threads);
    std::unique_ptr<RunData> data = open_run_data(o.data, batch_, o.replicas, o.prepared);
    start_loaders(o.data, *data, batch_, index, o.replicas);
    std::unique_ptr<Net> net = build_model(o.model, *backend, data->input, o.seed, o.dropout);
    net->set_batch(batch_);
    TS_CHECK(net->param_count() == param_count_, "hogwild: a replica's net differs from the main one");
    net->use_arena_storage(shared_params_, nullptr, /*copy_params=*/false);
    Sgd sgd(*backend, param_count_, o.sgd);
    for (int64_t step = 0; step < total_steps_ && !stop_; ++step) {
      Batch b;
      data->train_loader->next(b);
      net->forward(b.images, b.labels, b.targets, Mode::train);
      net->backward();
      sgd.step(net->params(), net->grads(), lr_.at(step));  // no lock: the race hogwild tolerates
    }
  } catch (...) {
    errors_[static_cast<size_t>(index)] = std::current_exception();
  }
}

}  // namespace ts
