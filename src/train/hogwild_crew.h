// train-internal: the replicas of `dist.strategy: hogwild` beyond the main thread's
// (docs/async.md). dist.threads_per_worker - 1 threads,
// each with its own backend, net, optimizer velocity and loader (shard t of the training set);
// their nets read and write the main net's parameter arena, shared without locks (the data race
// the algorithm tolerates, dist/hogwild_strategy.h). Each runs the run's step count with the
// run's learning-rate schedule; join() waits for them (after the main thread's last step).
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "nn/optimizer.h"
#include "train/data_setup.h"
#include "train/learning_rate.h"

namespace ts {

// What each replica builds, decided once by set_up_run (train/phase_options.h).
struct ReplicaOptions {
  int replicas = 1;         // dist.threads_per_worker: the main thread's and the crew's
  std::string backend;      // the backend's name, `threads` threads each
  int threads = 1;
  std::string model;        // built with `seed` and `dropout`, as the main thread's net
  uint64_t seed = 1;
  double dropout = 0;
  SgdOptions sgd;
  RunDataOptions data;      // each replica's loader reads shard t of the training split...
  InputPreparation prepared;  // ... where the main thread's data was made ready (the staged copy, if any)
};

class HogwildCrew {
 public:
  // Starts threads 1 .. replicas - 1 over `shared_params` (param_count floats, the main net's
  // arena, host memory). `batch`: per replica; `total_steps`: per replica.
  HogwildCrew(ReplicaOptions options, float* shared_params, int64_t param_count, int64_t batch, int64_t total_steps,
              const LearningRate& lr);
  ~HogwildCrew();  // stops and joins (a run that ended early)
  HogwildCrew(const HogwildCrew&) = delete;
  HogwildCrew& operator=(const HogwildCrew&) = delete;

  // Waits for every replica to finish its steps; rethrows the first replica's error.
  void join();

 private:
  void run_replica(int index);

  const ReplicaOptions options_;
  float* shared_params_;
  const int64_t param_count_, batch_, total_steps_;
  const LearningRate& lr_;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
  std::vector<std::exception_ptr> errors_;
};

}  // namespace ts
