// train-internal: the replicas of `dist.strategy: hogwild` beyond the main thread's
// (docs/distributed.md "Asynchronous SGD and Hogwild"). dist.threads_per_worker - 1 threads,
// each with its own backend, net, optimizer velocity and loader (shard t of the training set);
// their nets read and write the main net's parameter arena, shared without locks (the data race
// the algorithm tolerates, dist/hogwild_strategy.h). Each runs the run's step count with the
// run's learning-rate schedule; join() waits for them (after the main thread's last step).
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <thread>
#include <vector>

#include "config/run_config.h"
#include "train/input_preparation.h"
#include "train/learning_rate.h"

namespace ts {

class HogwildCrew {
 public:
  // Starts threads 1 .. threads_per_worker - 1 over `shared_params` (param_count floats, the
  // main net's arena, host memory). `batch`: per replica; `total_steps`: per replica; `prepared`:
  // where the main thread's data was made ready (the staged copy, if any), read by every replica.
  HogwildCrew(const ResolvedConfig& config, float* shared_params, int64_t param_count, int64_t batch,
              int64_t total_steps, const LearningRate& lr, InputPreparation prepared);
  ~HogwildCrew();  // stops and joins (a run that ended early)
  HogwildCrew(const HogwildCrew&) = delete;
  HogwildCrew& operator=(const HogwildCrew&) = delete;

  // Waits for every replica to finish its steps; rethrows the first replica's error.
  void join();
  int64_t replica_steps() const { return steps_done_.load(); }  // steps of the other replicas so far

 private:
  void run_replica(int index);

  const ResolvedConfig& config_;
  float* shared_params_;
  const int64_t param_count_, batch_, total_steps_;
  const LearningRate& lr_;
  const InputPreparation prepared_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> steps_done_{0};
  std::vector<std::thread> threads_;
  std::vector<std::exception_ptr> errors_;
};

}  // namespace ts
